"""CPU per sample that AMD GPUs add: the amdsmi and ROCm SMI stand-ins of the tests (2 GPUs,
the tracked process on one of them, its process list read at every sample), beside the sample
with no GPU library at all, and optionally that last figure of another checkout (the code
before AMD GPUs were read).

Usage: python bench/bench_gpu_amd.py [--samples 3000] [--rounds 7]
                                     [--compare /path/to/checkout (with its .venv)]

Measured as bench/bench_energy.py measures (its builder and its per-sample figure: medians
over rounds of fresh interpreters, the configurations alternating). Say the load
(/proc/loadavg) beside the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

from bench_energy import compile_stub, per_sample_us

HERE = os.path.dirname(os.path.abspath(__file__))
STUB = os.path.join(HERE, "..", "tests", "gpu_cloud", "amdsmi_stub.c")
GPUS = 2  # the stand-in's

MEASURE = """
import os, sys, time
from resource_tracker import _core
lib, control, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(control, "w") as f:
    f.write(f"tree_pid={os.getpid()}\\nother_pid=1\\n")
kwargs = {"amd_library": lib} if lib != "-" else {}
s = _core.Sampler(os.getpid(), 60.0, nvml_library="/nonexistent.so", **kwargs)
s.sample_now()
for _ in range(50):
    s.sample_now()
t = time.thread_time()
for _ in range(n):
    s.sample_now()
print((time.thread_time() - t) / n * 1e6)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--compare", help="another checkout, measured with its .venv")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-amd-")
    control = os.path.join(tmp, "control")
    env = dict(os.environ, AMDSMI_STUB_CONTROL=control)
    ours = sys.executable
    configs = {
        "amdsmi, 2 GPUs": (ours, compile_stub(tmp, "libamd_smi.so", stub=STUB)),
        "ROCm SMI, 2 GPUs": (
            ours,
            compile_stub(tmp, "librocm_smi64.so", "-DSTUB_ROCM_SMI", stub=STUB),
        ),
        "no GPU library": (ours, "/nonexistent-amd.so"),
        "no GPU library (default names)": (ours, "-"),
    }
    if args.compare:
        other = os.path.join(args.compare, ".venv", "bin", "python")
        configs["no GPU library (--compare)"] = (other, "-")
    figures = {name: [] for name in configs}
    for _ in range(args.rounds):
        for name, (python, lib) in configs.items():
            figures[name].append(
                per_sample_us(python, lib, control, args.samples, env, measure=MEASURE)
            )
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"load {' '.join(load)}; median of {args.rounds} rounds")
    med = {name: statistics.median(v) for name, v in figures.items()}
    for name, value in med.items():
        print(f"  {name:34s} {value:8.2f} us/sample")
    for name in ("amdsmi, 2 GPUs", "ROCm SMI, 2 GPUs"):
        per_gpu = (med[name] - med["no GPU library"]) / GPUS
        print(f"  {name} per GPU: {per_gpu:.2f} us/sample (bar: <= 5)")


if __name__ == "__main__":
    main()
