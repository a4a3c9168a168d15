"""Tracks one process tree until it exits, with whichever resource_tracker this Python
imports (ours, or the original 0.5.0 in the bench venv); prints one JSON line: peak memory
(MiB), CPU seconds, peak children. Used by bench/bench_accuracy.py.

Usage: python bench/track_pid.py --pid PID --interval S [--backend procfs|psutil] --ready PATH
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--interval", type=float, required=True)
    parser.add_argument("--backend", default="procfs")
    parser.add_argument("--ready", required=True)
    args = parser.parse_args()
    if args.backend == "procfs":
        sys.modules.setdefault("psutil", None)  # the original picks procfs without psutil
    import resource_tracker
    from resource_tracker import ResourceTracker

    original = not hasattr(resource_tracker, "_core")
    kwargs = dict(pid=args.pid, interval=args.interval, discover_cloud=False)
    kwargs["discover_server"] = False
    tracker = ResourceTracker(autostart=False, **kwargs)
    tracker.start()
    tracker.wait_for_samples(1, timeout=args.interval * 3 + 10)
    open(args.ready, "w").close()
    while not gone(args.pid):
        time.sleep(0.02)
    if not original:
        tracker.stop()
    else:
        time.sleep(args.interval * 1.5)  # the original's last sample comes from its helper
        df = tracker.process_metrics
        tracker.stop()
    df = tracker.process_metrics

    def column(name):  # the original's CSV-backed table may hold text for a missing value
        values = []
        for v in df[name]:
            try:
                values.append(float(v))
            except (TypeError, ValueError):
                pass
        return values or [0.0]

    memory = column("memory_mib") if original else [m / 1024 for m in column("memory")]
    hwm = None if original else (tracker.stats().get("process_memory_hwm") or {}).get("max")
    print(
        json.dumps(
            {
                "peak_mib": max(memory),
                "cpu_s": sum(column("utime")) + sum(column("stime")),
                "children": max(column("children")),
                "cores_max": max(column("cpu_usage")),
                "hwm_mib": None if hwm is None else hwm / 1024,
            }
        )
    )


if __name__ == "__main__":
    main()
