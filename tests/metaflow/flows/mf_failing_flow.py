"""Test flow: a tracked step that allocates 100 MB, works a little, then raises."""

import time

from metaflow import FlowSpec, step, track_resources


class FailingFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.boom)

    @track_resources(interval=0.2)
    @step
    def boom(self):
        data = bytearray(100 * 1024 * 1024)
        time.sleep(1.0)
        # markup and a terminal escape in the message: the card escapes it, makes it printable
        raise RuntimeError(f"boom after holding {len(data)} bytes <b>of</b> \x1b[31mdata")
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    FailingFlow()
