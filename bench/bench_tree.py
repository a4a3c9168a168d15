"""CPU per sample of a copy-on-write tree: a parent holding a touched 400 MiB buffer and 4
forked workers reading it (5 x 400 MiB of RSS, 400 MiB of memory), side by side: ours, the
original resource-tracker 0.5.0 (procfs and psutil backends) and raw psutil (CPU times and
PSS of every process, as a plain script would read them).

Usage (`make bench` runs it): python bench/bench_tree.py --baseline-python .bench-venv/bin/python

Each figure comes from a fresh subprocess (bench/measure_ours.py, bench/measure_baseline.py).
Samples are 50 ms apart (caches cold, as at a 1 s interval). Ours reads smaps_rollup only in
rounds when the tree changes, within its CPU budget (docs/metrics.md); the original reads it
for every process at every sample, so its cost grows with the memory of the tree.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import workloads as wl  # noqa: E402
from run import Runner, machine, progress  # noqa: E402


def measure(r, pid, n):
    args = ("persample", "--pid", pid, "--part", "process", "--gap", "0.05", "--n", n)
    out = {"ours": r.ours(*args)}
    for backend in ("procfs", "psutil", "rawpsutil"):
        out[backend] = r.original(backend, *args)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-python", required=True, help="python of the bench venv")
    parser.add_argument("--n", type=int, default=40, help="samples per tool")
    args = parser.parse_args()
    r = Runner(os.path.abspath(args.baseline_python), quick=False)
    progress("copy-on-write tree: 400 MiB parent + 4 forked workers")
    tree = wl.spawn_cow_tree(400, 4)
    try:
        res = measure(r, tree.pid, args.n)
    finally:
        wl.stop_group(tree)
    names = {
        "ours": "ours",
        "procfs": "original 0.5.0 (procfs)",
        "psutil": "original 0.5.0 (psutil)",
        "rawpsutil": "raw psutil (cpu_times + memory_full_info)",
    }
    print(f"5 x 400 MiB copy-on-write tree, samples 50 ms apart, on {machine()}\n")
    print("| tool | CPU per sample | ratio to ours | memory read | children |")
    print("|---|---|---|---|---|")
    base = res["ours"]["cpu_s"]
    for key, name in names.items():
        v = res[key]
        mem = v.get("memory_mib")
        print(
            f"| {name} | {v['cpu_s'] * 1e3:.3f} ms | {v['cpu_s'] / base:.1f}x | "
            f"{'n/a' if mem is None else f'{mem:.0f} MiB'} | {v.get('children')} |"
        )
    o = res["ours"]
    print(
        f"\nours: {o['pss_reads']:.0f} smaps_rollup reads in {o['pss_s'] * 1e3:.1f} ms of CPU over "
        f"the {o['n'] + 4} readings (one round of the 5 processes when the tree was first seen; "
        "then none while it did not change)"
    )


if __name__ == "__main__":
    main()
