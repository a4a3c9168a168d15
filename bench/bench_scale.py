"""Sampling cost at scale (issue 19), side by side: ours, the original resource-tracker 0.5.0
(procfs and psutil backends) and raw psutil, CPU per sample (tree + system, samples 50 ms
apart: caches cold, as at a 1 s interval):

- trees of 1 to 2,000 sleeping processes (a shell and its `sleep` children), and ours' slope
  in microseconds per tracked process (process part, from 1 to 2,000);
- a busy machine: 2,000 unrelated sleeping processes and a neighbour creating ~200
  short-lived processes a second, tracking a 10-process tree;
- 10 ms sampling of a 10-process tree: ours' share of a core and the jitter (standard
  deviation of the intervals between samples).

Usage (`make bench` runs it): python bench/bench_scale.py --baseline-python .bench-venv/bin/python
[--quick] (trees up to 1,000 and 1,000 neighbours).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import workloads as wl  # noqa: E402
from run import Runner, machine, progress  # noqa: E402

# ~200 short-lived processes a second (fork, exit, reap, 4 ms pause)
FORKER = """
import os, time
while True:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    time.sleep(0.004)
"""
TOOLS = ("ours", "procfs", "psutil", "rawpsutil")


def per_sample(r, pid, part, n, tools=TOOLS, gap=0.05):
    args = ("persample", "--pid", pid, "--part", part, "--gap", gap, "--n", n)
    out = {}
    for tool in tools:
        out[tool] = r.ours(*args) if tool == "ours" else r.original(tool, *args)
    return out


def tree_rows(r, sizes, original_max):
    rows, ours_process = [], {}
    for size in sizes:
        progress(f"tree of {size} processes")
        tree = wl.spawn_tree(size - 1) if size > 1 else wl.spawn_tree(0)
        try:
            tools = TOOLS if size <= original_max else ("ours",)
            n = 40 if size <= 100 else 12
            res = per_sample(r, tree.pid, "both", n, tools)
            ours_process[f"{size}"] = per_sample(r, tree.pid, "process", n, ("ours",))["ours"]
            if size in (1, max(sizes)):  # as at a 1 s interval (idle members' io every 2 s)
                ours_process[f"{size} at 1 s"] = per_sample(
                    r, tree.pid, "process", 8, ("ours",), gap=1.0
                )["ours"]
        finally:
            wl.stop_group(tree)
        rows.append((f"{size}-process tree", res))
    return rows, ours_process


def busy_row(r, others):
    progress(f"busy machine: {others} unrelated processes and a forking neighbour")
    unrelated = wl.spawn_tree(others)
    forker = subprocess.Popen([sys.executable, "-c", FORKER], start_new_session=True)
    tree = wl.spawn_tree(9)
    try:
        res = per_sample(r, tree.pid, "both", 20)
        res["ours_process"] = per_sample(r, tree.pid, "process", 20, ("ours",))["ours"]
    finally:
        for p in (tree, unrelated, forker):
            wl.stop_group(p)
    return res


def cell(res, key):
    v = res.get(key)
    if v is None:
        return "-"
    s = v["cpu_s"]
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} us"


def ratio(res, key):
    if res.get(key) is None:
        return "-"
    return f"{res[key]['cpu_s'] / res['ours']['cpu_s']:.1f}x"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-python", required=True, help="python of the bench venv")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    r = Runner(os.path.abspath(args.baseline_python), quick=args.quick)
    sizes = [1, 10, 100, 1000] if args.quick else [1, 10, 100, 1000, 2000]
    others = 1000 if args.quick else 2000
    rows, ours_process = tree_rows(r, sizes, original_max=max(sizes))
    busy = busy_row(r, others)
    progress("10 ms sampling of a 10-process tree")
    fast = r.ours("share", "--interval", "0.01", "--duration", "10")
    print(f"CPU per sample (tree + system), samples 50 ms apart, on {machine()}\n")
    print("| case | ours | original procfs | original psutil | raw psutil | ratio procfs "
          "| ratio psutil | ratio raw psutil |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    busy_name = f"10-process tree, {others} other processes, a neighbour forking ~200/s"
    for name, res in rows + [(busy_name, busy)]:
        print(
            f"| {name} | {cell(res, 'ours')} | {cell(res, 'procfs')} | {cell(res, 'psutil')} | "
            f"{cell(res, 'rawpsutil')} | {ratio(res, 'procfs')} | {ratio(res, 'psutil')} | "
            f"{ratio(res, 'rawpsutil')} |"
        )
    first, last = min(sizes), max(sizes)

    def slope(suffix=""):
        a, b = ours_process[f"{first}{suffix}"], ours_process[f"{last}{suffix}"]
        return (b["cpu_s"] - a["cpu_s"]) / (last - first) * 1e6

    print("\nours, process part only, 50 ms apart: " + ", ".join(
        f"{k}: {ours_process[str(k)]['cpu_s'] * 1e6:.0f} us" for k in sizes))  # fmt: skip
    print(f"ours, slope from {first} to {last} processes: {slope():.2f} us per process 50 ms "
          f"apart, {slope(' at 1 s'):.2f} us 1 s apart (goal <= 5 us)")  # fmt: skip
    print(f"ours, busy machine, 10-process tree, process part: "
          f"{busy['ours_process']['cpu_s'] * 1e3:.3f} ms per sample (goal <= 0.4 ms); "
          f"children seen {busy['ours_process']['children']:.0f}")  # fmt: skip
    print(f"ours, 10 ms sampling of a 10-process tree: {fast['sampler_share'] * 100:.2f}% of a "
          f"core (goal <= 3%), jitter (std of intervals) {fast['jitter_s'] * 1e3:.2f} ms, "
          f"{fast['samples']} samples in {fast['wall_s']:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
