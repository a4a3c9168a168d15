"""Test flow for Pushgateway export from Metaflow: ``train`` is tracked with
``@track_resources(export="pushgateway")`` and holds 100 MiB for about a second; the
Pushgateway's address comes from RESOURCE_TRACKER_PUSHGATEWAY_URL (set by the test)."""

import time

from metaflow import FlowSpec, step, track_resources


class ExportFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.train)

    @track_resources(interval=0.2, export="pushgateway", create_card=False, history=False)
    @step
    def train(self):
        ballast = bytearray(100 * 1024 * 1024)
        for i in range(0, len(ballast), 4096):
            ballast[i] = 1
        time.sleep(1.0)
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    ExportFlow()
