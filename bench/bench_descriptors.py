"""CPU per sample of the C sampler over a tree of many members, whose stat (and io) files it
keeps open between readings: what checking every kept descriptor before its use costs (one
fstat each, csrc/fd_budget.h), beside another checkout's figure (the code before the check).

Usage: python bench/bench_descriptors.py [--children 200] [--rounds 5]
                                         [--compare /path/to/checkout (with its .venv)]

Each figure is the median over rounds of a fresh subprocess (bench/measure_ours.py persample,
samples back to back for 1 s of CPU); the checkouts alternate, so that both see the same
load. Say the load (/proc/loadavg) beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import workloads as wl  # noqa: E402


def per_sample_us(checkout, python, pid):
    """Microseconds of CPU per sample (process and system tables) from one fresh run."""
    script = os.path.join(checkout, "bench", "measure_ours.py")
    args = [python, script, "persample", "--pid", str(pid), "--part", "both"]
    done = subprocess.run(args, capture_output=True, text=True, check=True, timeout=600)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return got["cpu_s"] * 1e6, int(got["children"])  # cpu_s: per sample


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compare", help="another checkout with its .venv")
    args = parser.parse_args()
    checkouts = {"this": (os.path.dirname(HERE), sys.executable)}
    if args.compare:
        other = os.path.abspath(args.compare)
        checkouts["compare"] = (other, os.path.join(other, ".venv", "bin", "python"))
    tree = wl.spawn_tree(args.children)
    figures = {name: [] for name in checkouts}
    try:
        for _ in range(args.rounds):
            for name, (checkout, python) in checkouts.items():
                us, children = per_sample_us(checkout, python, tree.pid)
                figures[name].append(us)
    finally:
        wl.stop_group(tree)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"tree of {children} children, {args.rounds} rounds, load {load}")
    for name, values in figures.items():
        rounded = ", ".join(f"{v:.0f}" for v in values)
        print(f"{name:8} median {statistics.median(values):7.0f} us/sample  ({rounded})")


if __name__ == "__main__":
    main()
