"""A tuned step that asks 256 MiB and needs ~RT_TEST_ALLOC_MIB (350) MiB more than Python:
the tuning loop tests. RT_TEST_RETRIES: @retry times (0); RT_TEST_MIN_MEMORY: the tuning's
min_memory guardrail (unset)."""

import os
import time

from metaflow import FlowSpec, resources, retry, step, track_resources


class OomTuneFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.work)

    @retry(times=int(os.environ.get("RT_TEST_RETRIES", "0")), minutes_between_retries=0)
    @track_resources(
        tune=True, interval=0.2, live=False, history_timeout=60,
        min_memory=os.environ.get("RT_TEST_MIN_MEMORY"),
    )  # fmt: skip
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
    OomTuneFlow()
