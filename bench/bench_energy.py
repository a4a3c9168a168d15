"""CPU per sample that reading power and energy adds: per GPU (the NVML stand-in of the tests,
built with and without its power and energy functions) and for powercap (a fake tree of two
packages and their DRAM), beside the sample with neither (no GPU library, no powercap), and
optionally that last figure of another checkout (the code before the energy columns).

Usage: python bench/bench_energy.py [--gpus 8] [--samples 3000] [--rounds 7]
                                    [--compare /path/to/checkout (with its .venv)]

Each figure is the median over rounds of a fresh interpreter taking ``samples`` readings
back to back with ``sample_now()`` (the thread's CPU time over the readings); the
configurations alternate within a round, so that all see the same load. Say the load
(/proc/loadavg) beside the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STUB = os.path.join(HERE, "..", "tests", "gpu_cloud", "nvml_stub.c")

MEASURE = """
import os, sys, time
from resource_tracker import _core
lib, sys_root, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = _core.Sampler(os.getpid(), 60.0, nvml_library=lib, sys_root=sys_root)
s.sample_now()
for _ in range(50):
    s.sample_now()
t = time.thread_time()
for _ in range(n):
    s.sample_now()
print((time.thread_time() - t) / n * 1e6)
"""


def compile_stub(out_dir, name, *defines, stub=STUB):
    """A stand-in library of tests/gpu_cloud (stub: its C file) built into out_dir."""
    path = os.path.join(out_dir, name)
    cmd = ["gcc", "-shared", "-fPIC", "-O2", "-fvisibility=hidden", *defines, "-o", path, stub]
    subprocess.run(cmd, check=True)
    return path


def fake_powercap(root):
    """Two packages and their DRAM, as /sys/class/powercap lays them out."""
    for entry, name in (
        ("intel-rapl:0", "package-0"),
        ("intel-rapl:0:1", "dram"),
        ("intel-rapl:1", "package-1"),
        ("intel-rapl:1:1", "dram"),
    ):
        zone = os.path.join(root, "class", "powercap", entry)
        os.makedirs(zone)
        for file, text in (("name", name), ("energy_uj", 1), ("max_energy_range_uj", 2**32)):
            with open(os.path.join(zone, file), "w") as f:
                f.write(f"{text}\n")
    return root


def per_sample_us(python, lib, sys_root, samples, env, measure=MEASURE):
    """CPU us a sample of measure (a script: argv lib, sys_root, samples) run by python."""
    done = subprocess.run(
        [python, "-c", measure, lib, sys_root, str(samples)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=600,
    )
    return float(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--compare", help="another checkout, measured with its .venv")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-energy-")
    control = os.path.join(tmp, "control")
    with open(control, "w") as f:
        f.write(f"tree_pid=0\nother_pid=1\ngpus={args.gpus}\n")
    env = dict(os.environ, NVML_STUB_CONTROL=control)
    empty = os.path.join(tmp, "nosys")
    os.makedirs(empty)
    ours = sys.executable
    configs = {
        "GPUs, power+energy": (ours, compile_stub(tmp, "with.so"), empty),
        "GPUs, no power functions": (ours, compile_stub(tmp, "without.so", "-DSTUB_NO_POWER")),
        "no GPU, powercap (4 zones)": (ours, "/nonexistent.so", fake_powercap(tmp + "/pc")),
        "no GPU, no powercap": (ours, "/nonexistent.so", empty),
    }
    configs["GPUs, no power functions"] += (empty,)
    if args.compare:
        other = os.path.join(args.compare, ".venv", "bin", "python")
        configs["no GPU, no powercap (--compare)"] = (other, "/nonexistent.so", empty)
    figures = {name: [] for name in configs}
    for _ in range(args.rounds):
        for name, (python, lib, root) in configs.items():
            figures[name].append(per_sample_us(python, lib, root, args.samples, env))
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"load {' '.join(load)}; {args.gpus} stand-in GPUs; median of {args.rounds} rounds")
    med = {name: statistics.median(v) for name, v in figures.items()}
    for name, value in med.items():
        print(f"  {name:34s} {value:8.2f} us/sample")
    per_gpu = (med["GPUs, power+energy"] - med["GPUs, no power functions"]) / args.gpus
    print(f"  power+energy per GPU: {per_gpu:.2f} us/sample (bar: <= 5)")
    powercap = med["no GPU, powercap (4 zones)"] - med["no GPU, no powercap"]
    print(f"  powercap, 4 zones:    {powercap:.2f} us/sample")


if __name__ == "__main__":
    main()
