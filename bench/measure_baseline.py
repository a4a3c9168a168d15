"""One measurement of the original resource-tracker 0.5.0, run in the bench venv by run.py.

Usage: .bench-venv/bin/python bench/measure_baseline.py TASK --backend procfs|psutil [options];
prints one JSON line. Same tasks as bench/measure_ours.py. The original is only driven here
(its public functions and classes), never copied.

Backends: the original picks psutil whenever it can import it; for --backend procfs psutil is
made unimportable before the original is imported (its helper processes are forks, so they
inherit that). Cloud discovery is switched off (discover_cloud=False); run.py also runs this
script in a network namespace of its own when it can, so no request can leave the machine.
"""

from __future__ import annotations

import argparse
import sys
import time

import workloads as wl


def _backend(name):
    """Makes the original use the named backend; returns its (process, system) functions."""
    if name == "procfs":
        sys.modules["psutil"] = None  # find_spec("psutil") is None: the original uses procfs
        from resource_tracker.tracker_procfs import get_process_stats, get_system_stats
    else:
        from resource_tracker.tracker_psutil import get_process_stats, get_system_stats
    return get_process_stats, get_system_stats


def _check_original():
    import resource_tracker

    version = getattr(resource_tracker, "__version__", None)
    if version is None:
        from resource_tracker._version import __version__ as version
    if version != "0.5.0":
        raise SystemExit(f"expected the original resource-tracker 0.5.0, found {version}")


def _raw_psutil(pid):
    """What a plain psutil script reads for a tree: CPU times and PSS of every process."""
    import psutil

    root = psutil.Process(pid)
    procs = [root] + root.children(recursive=True)
    cpu = pss = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            cpu += t.user + t.system
            pss += p.memory_full_info().pss
        except psutil.Error:
            pass
    return {"children": len(procs) - 1, "memory_mib": pss / 2**20}


def persample(args):
    if args.backend == "rawpsutil":
        one = lambda: _raw_psutil(args.pid)  # noqa: E731
        one()
        if args.gap > 0:
            n, cpu, wall = wl.timed_calls_apart(one, n=args.n, gap=args.gap)
        else:
            n, cpu, wall = wl.timed_loop(one, min_cpu=args.min_cpu)
        last = one()
        wl.emit({"n": n, "cpu_s": cpu, "wall_s": wall, **last})
        return
    get_process_stats, get_system_stats = _backend(args.backend)
    _check_original()
    calls = []
    if args.part != "system":
        calls.append(lambda: get_process_stats(args.pid, True))
    if args.part != "process":
        calls.append(get_system_stats)

    def one_sample():
        for call in calls:
            call()

    for _ in range(2):
        one_sample()
    if args.gap > 0:
        n, cpu, wall = wl.timed_calls_apart(one_sample, n=args.n, gap=args.gap)
    else:
        n, cpu, wall = wl.timed_loop(one_sample, min_cpu=args.min_cpu)
    last = get_process_stats(args.pid, True) if args.part != "system" else {}
    wl.emit(
        {
            "n": n,
            "cpu_s": cpu,
            "wall_s": wall,
            "children": last.get("children"),
            "memory_mib": last.get("memory_mib"),
        }
    )


def _tracker(args, interval):
    _backend(args.backend)
    _check_original()
    from resource_tracker import ResourceTracker

    return ResourceTracker(interval=interval, autostart=False, discover_cloud=False)


def _helpers(tracker):
    return [
        getattr(tracker, f"{name}_process").pid
        for name in ("process_tracker", "system_tracker")
        if hasattr(tracker, f"{name}_process")
    ]


def share(args):
    sleepers = wl.spawn_sleepers(10)
    try:
        tracker = _tracker(args, args.interval)
        tracker.start()
        tracker.wait_for_samples(1, timeout=args.interval * 3 + 5)
        helpers = _helpers(tracker)
        c0, h0, w0 = wl.cpu_now(), sum(map(wl.proc_cpu_seconds, helpers)), time.perf_counter()
        time.sleep(args.duration)
        c1, h1, w1 = wl.cpu_now(), sum(map(wl.proc_cpu_seconds, helpers)), time.perf_counter()
        n = tracker.n_samples
        tracker.stop()
        children = tracker.process_metrics["children"][-1] if n else None
    finally:
        wl.stop_all(sleepers)
    wall = w1 - w0
    wl.emit(
        {
            "wall_s": wall,
            "helper_share": (h1 - h0) / wall,
            "process_share": (c1 - c0) / wall,
            "samples": n,
            "children": children,
        }
    )


def memory(args):
    buf = wl.hold_touched(args.hold_mib)
    before = wl.rollup()
    tracker = _tracker(args, args.interval)
    imported = wl.rollup()
    tracker.start()
    tracker.wait_for_samples(args.samples, timeout=120)
    many = wl.rollup()
    helpers = [wl.rollup(pid) for pid in _helpers(tracker)]
    many_n = tracker.n_samples
    tracker.stop()
    del buf
    wl.emit(
        {
            "before": before,
            "imported": imported,
            "many": many,
            "many_n": many_n,
            "helpers": helpers,
        }
    )


def startstop(args):
    tracker = _tracker(args, 1.0)  # import outside the timing, as for ours
    del tracker
    from resource_tracker import ResourceTracker

    t0 = time.perf_counter()
    tracker = ResourceTracker(interval=1.0, discover_cloud=False)
    tracker.start()
    t1 = time.perf_counter()
    time.sleep(0.3)
    t2 = time.perf_counter()
    tracker.stop()
    t3 = time.perf_counter()
    wl.emit({"start_s": t1 - t0, "stop_s": t3 - t2})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=["persample", "share", "memory", "startstop"])
    parser.add_argument("--backend", default="procfs", choices=["procfs", "psutil", "rawpsutil"])
    parser.add_argument("--pid", type=int)
    parser.add_argument("--part", default="both", choices=["process", "system", "both"])
    parser.add_argument("--min-cpu", type=float, default=1.0)
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between samples")
    parser.add_argument("--n", type=int, default=40, help="samples when --gap is set")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--hold-mib", type=int, default=200)
    args = parser.parse_args()
    globals()[args.task](args)


if __name__ == "__main__":
    main()
