"""Test flow for `resource-tracker dashboard --metaflow`: one tracked step holding a given
amount of memory (the `mib` parameter), so the test decides each run's peak.

MF_DASH_FLOW names the flow class (two flows from one file: DashGrowFlow, DashSteadyFlow);
MF_DASH_ASK is the step's @resources(memory=...) in MiB, cpu=1. `--fail True` raises after
holding (a failed run), `--die True` SIGKILLs the task (a killed run: its tuning record
never becomes final). When MF_DASH_TRUTH names a
file, the step appends its ground truth to it (one JSON line: the run id, the MiB held, the
task process's own peak RSS, VmHWM). A killed run waits until its tuning record in the
local datastore holds what it held (the test sets RESOURCE_TRACKER_RECORD_CHECK_S short), then
kills itself: a condition, not a sleep past the record's check period."""

import glob
import json
import os
import signal
import time

from metaflow import FlowSpec, Parameter, current, resources, step, track_resources

ASK = int(os.environ.get("MF_DASH_ASK", "4000"))


def hold(mib, seconds):
    """Touches mib MiB and keeps them for seconds."""
    block = bytearray(mib * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    time.sleep(seconds)
    del block


def record_peak_mib():
    """The memory peak in this attempt's tuning record in the local datastore (0 before)."""
    root = os.environ["METAFLOW_DATASTORE_SYSROOT_LOCAL"]
    name = f"{current.retry_count}.resource_tracker_record.json"
    pattern = os.path.join(root, "**", current.flow_name, current.run_id, current.step_name,
                           current.task_id, name)  # fmt: skip
    for path in glob.glob(pattern, recursive=True):
        try:
            with open(path) as f:
                return json.load(f).get("memory_peak_mib") or 0.0
        except ValueError:  # caught between the datastore's write and its rename
            return 0.0
    return 0.0


def wait_for_the_record(mib, timeout=120.0):
    """Returns once the record holds a peak of at least mib MiB (or after timeout: the test
    then finds the killed run without its peak and fails)."""
    deadline = time.monotonic() + timeout
    while record_peak_mib() < mib and time.monotonic() < deadline:
        time.sleep(0.02)


def own_hwm_mib():
    """This process's peak resident memory (VmHWM) in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


class _DashFlow(FlowSpec):
    mib = Parameter("mib", type=int, default=200, help="MiB the step holds")
    fail = Parameter("fail", type=bool, default=False, help="raise after holding (a failed run)")
    die = Parameter("die", type=bool, default=False, help="SIGKILL itself (a killed run)")

    @track_resources(interval=0.1, create_card=False, live=False, history=False)
    @resources(memory=ASK, cpu=1)
    @step
    def start(self):
        hold(self.mib, 0.3)
        truth = os.environ.get("MF_DASH_TRUTH")
        if truth:
            with open(truth, "a") as f:
                line = {
                    "flow": current.flow_name,
                    "run": current.run_id,
                    "mib": self.mib,
                    "hwm_mib": own_hwm_mib(),
                }
                f.write(json.dumps(line) + "\n")
        if self.fail:
            raise RuntimeError("failed on purpose (the test's failed run)")
        if self.die:  # once the tuning record holds the peak, as the OOM killer would
            wait_for_the_record(self.mib)
            os.kill(os.getpid(), signal.SIGKILL)
        self.next(self.end)

    @step
    def end(self):
        pass


DashGrowFlow = type("DashGrowFlow", (_DashFlow,), {})
DashSteadyFlow = type("DashSteadyFlow", (_DashFlow,), {})

if __name__ == "__main__":
    {"DashGrowFlow": DashGrowFlow, "DashSteadyFlow": DashSteadyFlow}[os.environ["MF_DASH_FLOW"]]()
