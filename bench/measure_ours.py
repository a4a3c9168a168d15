"""One measurement of this project's tracker, run in a fresh interpreter by bench/run.py.

Usage: python3 bench/measure_ours.py TASK [options]; prints one JSON line. Tasks:
  persample --pid P --part process|system|both   CPU cost of one sample (C sampler;
            [--discovery auto|listing])
  share --interval S --duration D                tracker CPU share while tracking an idle tree
  memory --interval S --few F --samples N --hold-mib M   extra memory of the tracked
                                                 process after F and after N samples
  startstop                                      ResourceTracker() start and stop() times
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # this checkout's resource_tracker, not another one

import workloads as wl  # noqa: E402


def _check_ours(module):
    """Raises when the imported package is not this checkout's (a stale install, say)."""
    expected = os.path.join(os.path.dirname(HERE), "resource_tracker")
    if os.path.dirname(os.path.abspath(module.__file__)) != expected:
        raise SystemExit(f"imported {module.__file__}, expected the package in {expected}")


def persample(args):
    from resource_tracker import _core

    _check_ours(_core)
    sampler = _core.Sampler(
        args.pid,
        1.0,
        track_processes=args.part != "system",
        track_system=args.part != "process",
        discovery=args.discovery,
    )
    if args.cgroup:  # the tree in its own cgroup: read from it (v1 blkio taken as it is)
        from resource_tracker._tree_cgroup import tree_cgroup_plan

        version, dirs, _ = tree_cgroup_plan(args.pid, "cgroup")
        sampler.use_cgroup(version, dirs["cpu"], dirs["memory"], dirs["io"], dirs["pids"])
    last = None
    for _ in range(3):  # baseline reading, then the first full readings
        last = sampler.sample_now()
    if args.gap > 0:
        n, cpu, wall = wl.timed_calls_apart(sampler.sample_now, n=args.n, gap=args.gap)
    else:
        n, cpu, wall = wl.timed_loop(sampler.sample_now, min_cpu=args.min_cpu)
    last = sampler.sample_now()
    children = last[0][2] if args.part != "system" else None
    wl.emit(
        {
            "n": n,
            "cpu_s": cpu,
            "wall_s": wall,
            "children": children,
            "memory_mib": last[0][6] / 1024 if args.part != "system" else None,
            "pss_reads": sampler.pss_reads,
            "pss_s": sampler.pss_seconds,
            "tree_source": sampler.tree_source()["source"],
            "listings": sampler.listings,
            "probes": sampler.probes,
            "children_scans": sampler.children_scans,
        }
    )


def share(args):
    sleepers = wl.spawn_sleepers(10)
    try:
        import resource_tracker

        _check_ours(resource_tracker)
        tracker = resource_tracker.ResourceTracker(interval=args.interval)
        tracker.wait_for_samples(1, timeout=args.interval * 3 + 2)
        c0, s0, w0 = wl.cpu_now(), tracker._sampler.cpu_seconds, time.perf_counter()
        time.sleep(args.duration)
        c1, s1, w1 = wl.cpu_now(), tracker._sampler.cpu_seconds, time.perf_counter()
        n = tracker.n_samples
        tracker.stop()
        children = tracker.process_metrics["children"][-1]
        stamps = list(tracker.process_metrics["timestamp"])
    finally:
        wl.stop_all(sleepers)
    wall = w1 - w0
    wl.emit(
        {
            "wall_s": wall,
            "sampler_share": (s1 - s0) / wall,
            "process_share": (c1 - c0) / wall,
            "samples": n,
            "children": children,
            "jitter_s": _std([b - a for a, b in zip(stamps[1:-2], stamps[2:-1])]),
        }
    )


def _std(values):
    """Standard deviation of the intervals between samples (0 for fewer than 2)."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5


def memory(args):
    buf = wl.hold_touched(args.hold_mib)  # the workload's own memory, as in DESIGN.md
    before = wl.rollup()
    import resource_tracker

    _check_ours(resource_tracker)
    imported = wl.rollup()
    tracker = resource_tracker.ResourceTracker(interval=args.interval)
    tracker.wait_for_samples(20, timeout=30)  # as many samples as the original's reading
    first = wl.rollup()
    first_n = tracker.n_samples
    tracker.wait_for_samples(args.few, timeout=60)
    few = wl.rollup()
    few_n = tracker.n_samples
    tracker.wait_for_samples(args.samples, timeout=120)
    many = wl.rollup()
    many_n = tracker.n_samples
    tracker.stop()
    del buf
    wl.emit(
        {
            "before": before,
            "imported": imported,
            "first": first,
            "first_n": first_n,
            "few": few,
            "few_n": few_n,
            "many": many,
            "many_n": many_n,
        }
    )


def startstop(args):
    import resource_tracker

    _check_ours(resource_tracker)
    t0 = time.perf_counter()
    tracker = resource_tracker.ResourceTracker(interval=1.0)
    t1 = time.perf_counter()
    time.sleep(0.3)
    t2 = time.perf_counter()
    tracker.stop()
    t3 = time.perf_counter()
    wl.emit({"start_s": t1 - t0, "stop_s": t3 - t2})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=["persample", "share", "memory", "startstop"])
    parser.add_argument("--pid", type=int)
    parser.add_argument("--part", default="both", choices=["process", "system", "both"])
    parser.add_argument("--min-cpu", type=float, default=1.0)
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between samples")
    parser.add_argument("--n", type=int, default=40, help="samples when --gap is set")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--few", type=int, default=2000, help="first memory reading after")
    parser.add_argument("--hold-mib", type=int, default=200)
    parser.add_argument(
        "--cgroup", action="store_true", help="persample: read the tree from its cgroup"
    )
    parser.add_argument(
        "--discovery", default="auto", choices=["auto", "listing"], help="persample: how new "
        "members are found (the children lists, or listing /proc)"
    )  # fmt: skip
    args = parser.parse_args()
    globals()[args.task](args)


if __name__ == "__main__":
    main()
