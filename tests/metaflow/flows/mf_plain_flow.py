"""Test flow without any decorator: tracked through `run --with track_resources:...`.

``--artifact legacy`` stores a resource_tracker_data artifact in the format of older
versions (as the docs page shows it), ``--artifact junk`` one that is not a dict.
"""

import time

from metaflow import FlowSpec, Parameter, step

LEGACY = {
    "stats": {
        "cpu_usage": {"mean": 1.42, "max": 6.11},
        "memory_usage": {"mean": 342509.0, "max": 591621.0},
        "gpu_usage": {"mean": 0.0, "max": 0.0},
        "gpu_vram": {"mean": 0.0, "max": 0.0},
        "gpu_utilized": {"mean": 0.0, "max": 0.0},
        "duration": 9.89,
    }
}


class PlainFlow(FlowSpec):
    artifact = Parameter("artifact", default="")

    @step
    def start(self):
        time.sleep(0.5)
        if self.artifact == "legacy":
            self.resource_tracker_data = LEGACY
        elif self.artifact == "junk":
            self.resource_tracker_data = "not a dict"
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    PlainFlow()
