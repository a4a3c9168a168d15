"""Test flow: two tracked steps asking far more than they use (@resources), for the
insights, @track_resources(tune=True) (on when MF_TUNE=1) and `recommend --metaflow`.

`start` asks memory=16000, cpu=8 and holds ~500 MiB while spinning on one core for 1.5 s;
it stores the @resources attributes it sees inside the task (`asked_inside`). `train`
asks memory=8000, cpu=4 and holds MF_TRAIN_MIB (default 200) MiB for 1 s, idle."""

import os
import time

from metaflow import FlowSpec, resources, step, track_resources

TUNE = os.environ.get("MF_TUNE") == "1"


def hold(mib, seconds, spin=True):
    """Holds mib MiB for seconds, spinning or idle: the share of a core it got meanwhile (its
    own CPU time over the wall time: less than one on a busy machine)."""
    block = bytearray(mib * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    wall0, cpu0 = time.time(), time.process_time()
    end, x = wall0 + seconds, 0
    while spin and time.time() < end:
        x += 1
    share = (time.process_time() - cpu0) / (time.time() - wall0)
    time.sleep(max(0.0, end - time.time()))
    del block
    return share


def own_resources(flow, step_name):
    """The attributes of the @resources decorator of the running step, as the task sees
    them (the step function's decorators)."""
    func = getattr(type(flow), step_name)
    for deco in func.decorators:
        if deco.name == "resources":
            return {k: deco.attributes.get(k) for k in ("cpu", "memory", "gpu")}
    return None


class RightsizeFlow(FlowSpec):
    @track_resources(interval=0.2, tune=TUNE, live=False)
    @resources(memory=16000, cpu=8)
    @step
    def start(self):
        self.asked_inside = own_resources(self, "start")
        self.spin_share = hold(500, 1.5)
        self.next(self.train)

    @track_resources(interval=0.2, create_card=False)
    @resources(memory=8000, cpu=4)
    @step
    def train(self):
        hold(int(os.environ.get("MF_TRAIN_MIB", "200")), 1.0, spin=False)
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    RightsizeFlow()
