"""Sampling cost at scale (issue 19), side by side: ours, the original resource-tracker 0.5.0
(procfs and psutil backends) and raw psutil, CPU per sample (tree + system, samples 50 ms
apart: caches cold, as at a 1 s interval):

- trees of 1 to 2,000 sleeping processes (a shell and its `sleep` children), and ours' slope
  in microseconds per tracked process (process part, from 1 to 2,000);
- a busy machine: 2,000 unrelated sleeping processes and a neighbour creating ~200
  short-lived processes a second, tracking a 10-process tree;
- 10 ms sampling of a 10-process tree: ours' share of a core and the jitter (standard
  deviation of the intervals between samples);
- a tree in its own cgroup (10, 100, 1,000 processes in new v1 cpuacct, memory, blkio and
  pids cgroups; root only, else skipped): ours reading the cgroup, ours walking the processes, the
  original procfs backend.

Usage (`make bench` runs it): python bench/bench_scale.py --baseline-python .bench-venv/bin/python
[--quick] (trees up to 1,000 and 1,000 neighbours).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

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


def _v1_cgroups(name):
    """New cgroups for the tree in the v1 cpuacct, memory, blkio and pids hierarchies (under this
    process's own), or None when they cannot be made (not root, a cgroup v2 machine)."""
    if os.geteuid() != 0:
        return None
    with open("/proc/self/cgroup") as f:
        own = {c: p.strip().strip("/") for line in f for _, cs, p in [line.split(":", 2)]
               for c in cs.split(",")}  # fmt: skip
    made = []
    with open("/proc/self/mountinfo") as f:
        mounts = {c: line.split()[4] for line in f if " - cgroup " in line
                  for c in line.split(" - ")[1].split()[2].split(",")}  # fmt: skip
    for controller in ("cpuacct", "memory", "blkio", "pids"):
        if controller not in mounts:
            return None
        path = os.path.join(mounts[controller], own.get(controller, ""), name)
        try:
            os.mkdir(path)
        except OSError:
            return None
        made.append(path)
    return made


def _remove(cgroups):
    for path in cgroups:
        for _ in range(50):
            try:
                os.rmdir(path)
                break
            except OSError:
                time.sleep(0.1)


def cgroup_rows(r, sizes):
    """CPU per sample of a tree in its own cgroup: ours from the cgroup, ours walking, the
    original procfs backend (None when no cgroup could be made)."""
    rows = []
    for size in sizes:
        cgroups = _v1_cgroups(f"rt-bench-{os.getpid()}-{size}")
        if cgroups is None:
            return None
        progress(f"tree of {size} processes in its own cgroup")
        tree = wl.spawn_tree(size - 1, cgroups=cgroups)
        try:
            n = 40 if size <= 100 else 12
            args = ("persample", "--pid", tree.pid, "--gap", 0.05, "--n", n)
            res = {
                "cgroup": r.ours(*args, "--part", "both", "--cgroup"),
                "walk": r.ours(*args, "--part", "both"),
                "procfs": r.original("procfs", *args, "--part", "both"),
                "cgroup_process": r.ours(*args, "--part", "process", "--cgroup"),
                "walk_process": r.ours(*args, "--part", "process"),
            }
        finally:
            wl.stop_group(tree)
            _remove(cgroups)
        rows.append((size, res))
    return rows


def print_cgroup_rows(rows):
    if rows is None:
        print("\ntree in its own cgroup: skipped (needs root and v1 cpuacct, memory, blkio)")
        return
    print("\nCPU per sample (tree + system; process part only in brackets), samples 50 ms "
          "apart, tree in its own cgroup\n")  # fmt: skip
    print("| case | ours, from the cgroup | ours, walking | original procfs | ratio procfs |")
    print("|---|---|---|---|---|")
    for size, res in rows:
        assert res["cgroup"]["tree_source"] == "cgroup", res["cgroup"]
        print(
            f"| tree in its own cgroup: {size:,} processes | {cell(res, 'cgroup')} "
            f"({cell(res, 'cgroup_process')}) | {cell(res, 'walk')} ({cell(res, 'walk_process')})"
            f" | {cell(res, 'procfs')} | {res['procfs']['cpu_s'] / res['cgroup']['cpu_s']:.1f}x |"
        )


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
    parser.add_argument("--cgroup-only", action="store_true", help="only the cgroup rows")
    args = parser.parse_args()
    r = Runner(os.path.abspath(args.baseline_python), quick=args.quick)
    sizes = [1, 10, 100, 1000] if args.quick else [1, 10, 100, 1000, 2000]
    others = 1000 if args.quick else 2000
    if args.cgroup_only:
        print_cgroup_rows(cgroup_rows(r, [10, 100, 1000]))
        return
    rows, ours_process = tree_rows(r, sizes, original_max=max(sizes))
    busy = busy_row(r, others)
    progress("10 ms sampling of a 10-process tree")
    fast = r.ours("share", "--interval", "0.01", "--duration", "10")
    in_cgroup = cgroup_rows(r, [10, 100, 1000])
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
    print_cgroup_rows(in_cgroup)


if __name__ == "__main__":
    main()
