"""Test flow: a long tracked step whose card is re-rendered live every second."""

import time

from metaflow import FlowSpec, step, track_resources


class LiveFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.long_step)

    @track_resources(interval=0.25, live_interval=1.0)
    @step
    def long_step(self):
        blocks = []
        deadline = time.time() + 9.0
        while time.time() < deadline:
            blocks.append(bytearray(5 * 1024 * 1024))  # grows ~5 MB per 0.5 s
            time.sleep(0.5)
        self.held_mb = 5 * len(blocks)
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    LiveFlow()
