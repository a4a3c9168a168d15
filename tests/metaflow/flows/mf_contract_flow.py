"""Test flow for the artifact as the docs page documents it.

``start`` is a trivial tracked step (a few milliseconds: the short-run case); ``work`` holds
64 MiB and keeps one core busy for about 1.2 s; ``end`` is not tracked (the run-level data
of the docs page, ``latest_run.data.resource_tracker_data``, is the last tracked step's).
"""

import time

from metaflow import FlowSpec, step, track_resources


class ContractFlow(FlowSpec):
    @track_resources(interval=0.2)
    @step
    def start(self):
        self.value = 1
        self.next(self.work)

    @track_resources(interval=0.2)
    @step
    def work(self):
        ballast = bytearray(64 * 1024 * 1024)
        for i in range(0, len(ballast), 4096):
            ballast[i] = 1
        deadline = time.time() + 1.2
        total = 0
        while time.time() < deadline:
            total += sum(range(2000))
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    ContractFlow()
