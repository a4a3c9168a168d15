"""The Python API on examples/workload.py (and its child): track it, then show what was found.

`make demo` runs the same workload through the command line (`resource-tracker run`); this
script does it from Python: ``python examples/demo.py``. It prints the samples, the
statistics and the recommendation, and writes report.html in the current directory.
"""

import os
import subprocess
import sys

from resource_tracker import ResourceTracker
from resource_tracker.tuning import resources_line

HERE = os.path.dirname(os.path.abspath(__file__))


def track_workload():
    """Runs the workload in a child process and tracks it (and its descendants)."""
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "workload.py")])
    tracker = ResourceTracker(pid=proc.pid, interval=0.5)
    # wait for the exit without reaping, so the last reading sees all of its CPU time
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    tracker.stop()
    proc.wait()
    return tracker


def show(tracker):
    """Prints the tables, statistics, recommendations; writes report.html when it can."""
    print()
    print(tracker.process_metrics)
    print()
    print(tracker.system_metrics[["timestamp", "cpu_usage", "memory_used", "disk_write_bytes"]])
    stats = tracker.stats()
    print()
    print(f"duration        {stats['timestamp']['duration']:.1f} s")
    print(
        f"CPU (cores)     mean {stats['process_cpu_usage']['mean']:.2f}, "
        f"peak {stats['process_cpu_usage']['max']:.2f}"
    )
    print(f"memory (MiB)    peak {stats['process_memory']['max'] / 1024:.0f}")
    print(f"disk written    {stats['process_write_bytes']['sum'] / 2**20:.0f} MiB")
    print(f"children        up to {stats['process_children']['max']:.0f}")
    rec = tracker.recommend_resources()
    print(f"recommendation  {rec}")
    print(f"as Metaflow     {resources_line(rec)}")  # as the report, card and CLI print it
    try:
        server = tracker.recommend_server()
        print(
            f"cheapest server {server['vendor_id']} {server['server_id']} "
            f"(${server['price']:.4f}/h)"
        )
    except Exception as exc:  # no catalog here: say so, never fail the demo
        print(f"cheapest server unavailable: {exc}")
    path = os.path.abspath("report.html")
    tracker.report().save(path)
    print(f"report          {path}")


if __name__ == "__main__":
    show(track_workload())
