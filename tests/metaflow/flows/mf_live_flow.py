"""Test flow: a long tracked step whose card is re-rendered live every second. The step runs
9 s at least, then until the file named by MF_LIVE_DONE exists (the test has seen the live
versions it wants: a busy machine slows the renders), 120 s at most."""

import os
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
        start, done = time.time(), os.environ.get("MF_LIVE_DONE", "")
        while time.time() < start + 9.0 or (
            done and not os.path.exists(done) and time.time() < start + 120
        ):
            if len(blocks) < 18:  # grows ~5 MB per 0.5 s, to ~90 MB
                blocks.append(bytearray(5 * 1024 * 1024))
            time.sleep(0.5)
        self.held_mb = 5 * len(blocks)
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    LiveFlow()
