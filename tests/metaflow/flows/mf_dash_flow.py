"""Test flow for `resource-tracker dashboard --metaflow`: one tracked step holding a given
amount of memory (the `mib` parameter), so the test decides each run's peak.

MF_DASH_FLOW names the flow class (two flows from one file: DashGrowFlow, DashSteadyFlow);
MF_DASH_ASK is the step's @resources(memory=...) in MiB, cpu=1. `--fail True` raises after
holding (a failed run), `--die True` SIGKILLs the task (a killed run: its tuning record
never becomes final). When MF_DASH_TRUTH names a
file, the step appends its ground truth to it (one JSON line: the run id, the MiB held, the
task process's own peak RSS, VmHWM)."""

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
        if self.die:  # once the tuning record holds the peak (checked every 2 s), as OOM would
            time.sleep(2.4)
            os.kill(os.getpid(), signal.SIGKILL)
        self.next(self.end)

    @step
    def end(self):
        pass


DashGrowFlow = type("DashGrowFlow", (_DashFlow,), {})
DashSteadyFlow = type("DashSteadyFlow", (_DashFlow,), {})

if __name__ == "__main__":
    {"DashGrowFlow": DashGrowFlow, "DashSteadyFlow": DashSteadyFlow}[os.environ["MF_DASH_FLOW"]]()
