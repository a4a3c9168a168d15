"""Test flow: a tracked step whose work is done by its workers: a multiprocessing Pool (fork)
and Metaflow's own parallel_map (a bare fork ending with os._exit). Each worker function
burns a known CPU time of its own; the step keeps the truth as an artifact."""

import multiprocessing
import time

from metaflow import FlowSpec, step, track_resources
from metaflow.multicore_utils import parallel_map


def _burn(seconds):
    start = time.thread_time()
    while time.thread_time() < start + seconds:
        pass
    return time.thread_time() - start


def pool_worker_work(seconds):
    return _burn(seconds)


def parallel_map_work(seconds):
    return _burn(seconds)


class WorkersFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.crunch)

    @track_resources(interval=0.1)
    @step
    def crunch(self):
        with multiprocessing.get_context("fork").Pool(2) as pool:
            pool_cpu = sum(pool.map(pool_worker_work, [0.6, 0.6], chunksize=1))
            pool.close()  # the workers end on their own and write their records
            pool.join()
        mapped_cpu = sum(parallel_map(parallel_map_work, [0.6, 0.6], max_parallel=2))
        self.worker_truth = {"pool_worker_work": pool_cpu, "parallel_map_work": mapped_cpu}
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    WorkersFlow()
