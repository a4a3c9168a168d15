"""Test flow for `--with track_resources:...` on a step that has @track_resources already:
``train`` is tracked with options of its own and no export; the test adds
``--with track_resources:export=pushgateway,interval=0.5`` on the command line."""

import time

from metaflow import FlowSpec, step, track_resources


class WithFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.train)

    @track_resources(interval=0.2, create_card=False, history=False)
    @step
    def train(self):
        ballast = bytearray(100 * 1024 * 1024)
        for i in range(0, len(ballast), 4096):
            ballast[i] = 1
        time.sleep(1.5)
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    WithFlow()
