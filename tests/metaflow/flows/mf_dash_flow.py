"""Test flow for `resource-tracker dashboard --metaflow`: one tracked step holding a given
amount of memory (the `mib` parameter), so the test decides each run's peak.

MF_DASH_FLOW names the flow class (two flows from one file: DashGrowFlow, DashSteadyFlow);
MF_DASH_ASK is the step's @resources(memory=...) in MiB, cpu=1."""

import os
import time

from metaflow import FlowSpec, Parameter, resources, step, track_resources

ASK = int(os.environ.get("MF_DASH_ASK", "4000"))


def hold(mib, seconds):
    """Touches mib MiB and keeps them for seconds."""
    block = bytearray(mib * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    time.sleep(seconds)
    del block


class _DashFlow(FlowSpec):
    mib = Parameter("mib", type=int, default=200, help="MiB the step holds")

    @track_resources(interval=0.1, create_card=False, live=False)
    @resources(memory=ASK, cpu=1)
    @step
    def start(self):
        hold(self.mib, 0.6)
        self.next(self.end)

    @step
    def end(self):
        pass


DashGrowFlow = type("DashGrowFlow", (_DashFlow,), {})
DashSteadyFlow = type("DashSteadyFlow", (_DashFlow,), {})

if __name__ == "__main__":
    {"DashGrowFlow": DashGrowFlow, "DashSteadyFlow": DashSteadyFlow}[os.environ["MF_DASH_FLOW"]]()
