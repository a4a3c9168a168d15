"""Smoke test of an installed resource-tracker, run from outside the source tree.

    python smoke.py SOURCE_DIR OUT_DIR

Run by check_dists.py in each venv it makes (a wheel install, an sdist install): the README's
promises on a real child workload. SOURCE_DIR is the checkout that must NOT be the one
imported; OUT_DIR receives the report and the CLI outputs. Prints one line per step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

BUSY_CHILD = """
import os, time
buf = bytearray(80 * 1024 * 1024)
for i in range(0, len(buf), 4096):
    buf[i] = 1
t = time.monotonic()
while time.monotonic() - t < 2.0:
    pass
print(sum(os.times()[:2]))  # the CPU seconds it used: the truth to compare with
"""


def step(name, detail):
    print(f"  smoke: {name:<22} {detail}", flush=True)


def main(source_dir, out_dir):
    import resource_tracker
    from resource_tracker import ResourceTracker

    where = os.path.realpath(resource_tracker.__file__)
    assert not where.startswith(os.path.realpath(source_dir) + os.sep), where
    assert where.startswith(os.path.realpath(sys.prefix)), where
    step("import", f"resource_tracker {resource_tracker.__version__} from {where}")

    child = subprocess.Popen([sys.executable, "-c", BUSY_CHILD], stdout=subprocess.PIPE)
    tracker = ResourceTracker(pid=child.pid, interval=0.2)
    truth = float(child.communicate(timeout=60)[0])
    tracker.stop()
    cpu = sum(tracker.process_metrics["utime"]) + sum(tracker.process_metrics["stime"])
    # a busy machine may give the child less than a core: compare with what it really used
    assert child.returncode == 0 and 0.6 * truth < cpu < truth + 0.3, (child.returncode, cpu, truth)
    step(
        "track 2 s child",
        f"{cpu:.2f} of {truth:.2f} CPU s ({tracker.method}), {tracker.n_samples} samples",
    )

    stats = tracker.stats()
    duration = stats["timestamp"]["duration"]
    # the mean is the CPU the child got over the run (its share of a busy machine)
    assert abs(stats["process_cpu_usage"]["mean"] - cpu / duration) < 0.15, (stats, cpu, duration)
    assert stats["process_memory"]["max"] > 0
    step("stats()", f"cpu mean {stats['process_cpu_usage']['mean']:.2f} cores")

    rec = tracker.recommend_resources()
    assert rec["cpu"] >= 1 and rec["memory"] >= 128, rec
    step("recommend_resources()", json.dumps(rec))

    server = tracker.recommend_server()  # offline: the catalog embedded in the package answers
    assert server and server.get("price") is not None, server
    assert server["catalog_source"] == "embedded" and "2024-02" in server["price_source"], server
    keys = ("vendor_id", "server_id", "price", "catalog_source")
    step("recommend_server()", json.dumps({k: server[k] for k in keys}))

    path = tracker.report().save(os.path.join(out_dir, "report.html"))
    with open(path, encoding="utf-8") as f:
        page = f.read()
    assert page.lstrip().lower().startswith("<!doctype html") and len(page) > 10_000
    step("report().save()", f"{path} ({len(page) // 1024} KiB)")

    cli = os.path.join(os.path.dirname(sys.executable), "resource-tracker")
    cli_out = os.path.join(out_dir, "cli")
    started = time.monotonic()
    done = subprocess.run(
        [cli, "run", "--interval", "0.2", "-o", cli_out, "-f", "html,json", "--"]
        + [sys.executable, "-c", "import time; time.sleep(1)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    written = sorted(os.listdir(cli_out))
    assert written == ["resource-tracker.html", "resource-tracker.json"], written
    step("CLI run", f"{written} in {time.monotonic() - started:.1f} s")

    import metaflow

    assert callable(metaflow.track_resources)
    step("metaflow", f"metaflow {metaflow.__version__}: metaflow.track_resources is there")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
    print("  smoke: passed", flush=True)
