"""A step that asks 256 MiB and needs ~350 MiB more than Python (a @retry attempt after an OOM kill)."""

import os
import time

from metaflow import FlowSpec, resources, retry, step, track_resources


class OomRetryFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.work)

    @retry(times=1, minutes_between_retries=0)
    @track_resources(tune=True, interval=0.2, live=False, history_timeout=60)
    @resources(memory=256)
    @step
    def work(self):
        chunks = []
        for _ in range(int(os.environ.get("RT_TEST_ALLOC_MIB", "350")) // 25):
            block = bytearray(25 * 2**20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            chunks.append(block)
            time.sleep(0.05)
        time.sleep(0.5)
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    OomRetryFlow()
