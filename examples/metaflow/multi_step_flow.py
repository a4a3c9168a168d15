"""A multi-step flow with different resource shapes, every step tracked.

- ``load``: memory-heavy (holds ~300 MB for 2 s)
- ``train``: a foreach of CPU-heavy tasks; each uses 2 worker processes (the tracker follows
  the task's child processes)
- ``io``: writes and reads back 200 MB on disk
- ``join`` / ``end``: light

Run with ``python multi_step_flow.py run``; then compare the recommendations of the steps:

    from metaflow import Flow
    run = Flow("MultiStepFlow").latest_run
    for step in run:
        for task in step:
            print(task.pathspec, task.data.resource_tracker_data["recommendations"]["resources"])
"""

import os
import tempfile
import time
from multiprocessing import Pool

from metaflow import FlowSpec, step, track_resources


def _burn(cpu_seconds):
    """Computes for cpu_seconds of CPU time (longer in wall time on a busy machine)."""
    deadline = time.process_time() + cpu_seconds
    total = 0
    while time.process_time() < deadline:
        total += sum(range(5000))
    return total


class MultiStepFlow(FlowSpec):
    @track_resources
    @step
    def start(self):
        self.sizes = [1, 2]
        self.next(self.load)

    @track_resources
    @step
    def load(self):
        blob = bytearray(300 * 1024 * 1024)
        time.sleep(2)
        self.blob_size = len(blob)
        self.next(self.train, foreach="sizes")

    @track_resources(interval=0.5)
    @step
    def train(self):
        self.cpu_seconds = 2 * 1.5 * self.input  # two workers, each 1.5 s per unit of input
        with Pool(2) as pool:
            self.result = sum(pool.map(_burn, [self.cpu_seconds / 2] * 2))
        self.next(self.join)

    @track_resources
    @step
    def join(self, inputs):
        self.results = [i.result for i in inputs]
        self.next(self.io)

    @track_resources(interval=0.5)
    @step
    def io(self):
        chunk = os.urandom(1024 * 1024)
        with tempfile.NamedTemporaryFile() as f:
            for _ in range(200):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
            f.seek(0)
            while f.read(8 * 1024 * 1024):
                pass
        self.next(self.end)

    @track_resources
    @step
    def end(self):
        print("results", self.results)


if __name__ == "__main__":
    MultiStepFlow()
