"""Test flow: a tracked step whose worker process uses ~0.4 core (busy 40 ms of every 100
ms, by its own clock) for RT_TEST_SECONDS (8 s), with the live card on (RT_TEST_LIVE=1,
refreshed every second) or off. The step stores the kernel's CPU bandwidth counters of its
cgroup (``cpu.stat`` at RT_TEST_CPU_STAT) before and after the worker."""

import os
import subprocess
import sys

from metaflow import FlowSpec, step, track_resources

WORKER = """
import sys, time
end = time.perf_counter() + float(sys.argv[1])
while time.perf_counter() < end:
    busy = time.perf_counter() + 0.04
    while time.perf_counter() < busy:
        pass
    time.sleep(0.06)
"""


def cpu_stat():
    with open(os.environ["RT_TEST_CPU_STAT"]) as f:
        return {k: int(v) for k, v in (line.split() for line in f if line.strip())}


class LiveCpuFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.work)

    @track_resources(interval=0.25, live=os.environ.get("RT_TEST_LIVE") == "1", live_interval=1.0)
    @step
    def work(self):
        before = cpu_stat()
        seconds = os.environ.get("RT_TEST_SECONDS", "8")
        subprocess.run([sys.executable, "-c", WORKER, seconds], check=True)
        after = cpu_stat()
        self.cpu_stat = {k: after[k] - before[k] for k in after}
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    LiveCpuFlow()
