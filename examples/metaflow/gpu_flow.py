"""A GPU-shaped flow: a training step asking for a GPU, tracked with @track_resources.

On a machine with an NVIDIA GPU and PyTorch the step multiplies matrices on the GPU and the
card shows GPU utilisation and VRAM of the step's process. Without a GPU (as on the
development machines) run it with the stand-in NVML library of the tests, which speaks the
NVML C interface and reports GPU 1 as used by the step's process:

    gcc -shared -fPIC -o /tmp/libnvidia-ml-stub.so.1 ../../tests/gpu_cloud/nvml_stub.c
    export RESOURCE_TRACKER_NVML_LIBRARY=/tmp/libnvidia-ml-stub.so.1
    export NVML_STUB_CONTROL=/tmp/nvml-control
    python gpu_flow.py run
"""

import os
import time

from metaflow import FlowSpec, resources, step, track_resources


def _tell_stub_nvml(pid):
    """With the stand-in NVML library: report this process as the GPU user."""
    control = os.environ.get("NVML_STUB_CONTROL")
    if control:
        with open(control, "w") as f:
            f.write(f"tree_pid={pid}\n")


class GpuFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.train)

    @track_resources(interval=0.5)
    @resources(gpu=1, memory=4096)
    @step
    def train(self):
        _tell_stub_nvml(os.getpid())
        try:
            import torch

            use_gpu = torch.cuda.is_available()
        except ImportError:
            use_gpu = False
        deadline = time.time() + 4
        if use_gpu:
            a = torch.randn(4096, 4096, device="cuda")
            while time.time() < deadline:
                a = (a @ a).clamp_(-1, 1)
            torch.cuda.synchronize()
        else:
            total = 0
            while time.time() < deadline:
                total += sum(range(5000))
        self.used_gpu = use_gpu
        self.next(self.end)

    @step
    def end(self):
        data = self.resource_tracker_data
        print("GPU recommendation:", data["recommendations"]["resources"])


if __name__ == "__main__":
    GpuFlow()
