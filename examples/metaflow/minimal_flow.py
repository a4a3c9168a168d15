"""The blog post's flow: one heavy step tracked among untracked ones.

Run with ``python minimal_flow.py run`` and open the card with
``python minimal_flow.py card view do_heavy_computation``.
"""

import time

from metaflow import FlowSpec, step, track_resources


class MinimalFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.do_heavy_computation)

    @track_resources
    @step
    def do_heavy_computation(self):
        # 3 seconds of CPU time of pure Python work on one core, holding ~100 MB
        data = bytearray(100 * 1024 * 1024)
        deadline = time.process_time() + 3
        total = 0
        while time.process_time() < deadline:
            total += sum(range(10000))
        self.total = total
        del data
        self.next(self.end)

    @step
    def end(self):
        print("total", self.total)


if __name__ == "__main__":
    MinimalFlow()
