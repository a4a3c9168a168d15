"""What export costs the tracked job: wall time of the workload and CPU of the tracking
process, without export and with each target against a working, a down (nothing listens),
a failing (HTTP 500) and a hanging (never answers) endpoint — all on loopback.

Usage (`make bench` runs it): python bench/bench_export.py [--rounds 5] [--json out.json]

The workload is a child Python process that touches 100 MiB and spins a fixed amount of
CPU; the tracker (interval 0.1 s) runs in this process, so the CPU figure (getrusage of this
process) is the sampler's plus the export threads'. Each configuration runs once to warm up
(imports), then all run interleaved ``--rounds`` times; the table shows medians. A
configuration is "within noise" when its median wall time differs from the no-export median
by no more than the no-export runs' spread (max - min) or 5%, whichever is larger, and the
CPU export adds stays within the no-export runs' CPU spread or below 1% of one core over the
run (``+CPU % core``). Servers: Debian's prometheus-pushgateway when
installed, and the OTLP receiver of tests/export/servers.py (official opentelemetry-proto
decoding); the fault modes are that receiver answering 500 or never answering.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "export"))

WORKLOAD = """
import time
block = bytearray(100 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
end = time.thread_time() + 3.0
x = 0
while time.thread_time() < end:
    x += 1
"""
DEAD = "http://127.0.0.1:9"
#: what export may add to the tracker's CPU: this share of one core over the run
CPU_BUDGET = 0.01


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def one_run(export):
    """(workload wall seconds, tracker CPU seconds, stop seconds, export report)."""
    from resource_tracker import ResourceTracker

    cpu0 = cpu_seconds()
    began = time.monotonic()
    child = subprocess.Popen([sys.executable, "-c", WORKLOAD])
    tracker = ResourceTracker(pid=child.pid, interval=0.1, export=export, discover_cloud=False)
    child.wait()
    wall = time.monotonic() - began
    stop_began = time.monotonic()
    tracker.stop()
    stop = time.monotonic() - stop_began
    cpu = cpu_seconds() - cpu0
    report = (tracker.export_report() or {}).get("targets", {})
    return wall, cpu, stop, report


def configurations(folder):
    """[(name, export, {env}), ...] and the servers to close."""
    from servers import OtlpReceiver, start_pushgateway

    closers = []
    configs = [("no export", "", {})]
    ok = OtlpReceiver("ok")
    fail = OtlpReceiver("fail")
    hang = OtlpReceiver("hang")
    closers += [ok.close, fail.close, hang.close]
    try:
        gateway = start_pushgateway(folder)
        closers.append(gateway.stop)
        configs.append(
            ("pushgateway ok", "pushgateway", {"RESOURCE_TRACKER_PUSHGATEWAY_URL": gateway.url})
        )
    except BaseException as exc:  # pytest.skip when the binary is missing
        print(f"(no Pushgateway: {exc})", file=sys.stderr)
    for fault, url in (("down", DEAD), ("500", fail.url), ("hanging", hang.url)):
        configs.append(
            (f"pushgateway {fault}", "pushgateway", {"RESOURCE_TRACKER_PUSHGATEWAY_URL": url})
        )
    configs.append(("otlp ok", "otlp", {"OTEL_EXPORTER_OTLP_ENDPOINT": ok.url}))
    for fault, url in (("down", DEAD), ("500", fail.url), ("hanging", hang.url)):
        configs.append((f"otlp {fault}", "otlp", {"OTEL_EXPORTER_OTLP_ENDPOINT": url}))
    return configs, closers


def run(rounds):
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-export-") as folder:
        configs, closers = configurations(folder)
        try:
            for _, export, env in configs:  # warm-up: imports and first-use costs stay out
                os.environ.update(env)
                one_run(export)
            for r in range(rounds):
                for name, export, env in configs:
                    os.environ.update(env)
                    print(f"round {r + 1}/{rounds}: {name}", file=sys.stderr, flush=True)
                    results.setdefault(name, []).append(one_run(export))
        finally:
            for close in closers:
                close()
    return results


def table(results):
    """The table; a configuration passes when its median wall time is within the no-export
    runs' noise and the CPU it adds to the tracker stays below CPU_BUDGET of one core over
    the run (or within the no-export runs' CPU noise)."""
    base = results["no export"]
    base_wall = [r[0] for r in base]
    base_cpu = statistics.median(r[1] for r in base)
    noise_wall = max(max(base_wall) - min(base_wall), 0.05 * statistics.median(base_wall))
    noise_cpu = max(r[1] for r in base) - min(r[1] for r in base)
    rows = []
    head = f"{'configuration':<22}{'wall s':>9}{'CPU s':>9}{'+CPU % core':>12}"
    print(f"{head}{'stop s (max)':>14}  {'dropped rows':>12}  verdict")
    for name, runs in results.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        extra = 100.0 * (cpu - base_cpu) / wall
        stop = max(r[2] for r in runs)
        dropped = sum(t.get("dropped_rows", 0) for r in runs for t in r[3].values())
        ok = (
            abs(wall - statistics.median(base_wall)) <= noise_wall
            and (cpu - base_cpu <= noise_cpu or extra <= 100.0 * CPU_BUDGET)
            and stop <= 2.5
        )
        verdict = "within noise" if ok else "OUTSIDE NOISE"
        print(
            f"{name:<22}{wall:>9.3f}{cpu:>9.3f}{extra:>12.2f}{stop:>14.3f}  {dropped:>12}  "
            f"{verdict}"
        )
        rows.append(
            dict(name=name, wall=wall, cpu=cpu, extra_cpu_percent=extra, stop_max=stop,
                 dropped_rows=dropped, ok=ok)
        )  # fmt: skip
    print(f"noise (no export): wall {noise_wall:.3f} s, CPU {noise_cpu:.3f} s")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="write the rows here too")
    args = parser.parse_args()
    os.environ.update(
        RESOURCE_TRACKER_DISCOVER_CLOUD="0",
        RESOURCE_TRACKER_METADATA_URL=DEAD,
        RESOURCE_TRACKER_KEEPER_URL=DEAD,
        RESOURCE_TRACKER_CATALOG_URL=DEAD + "/catalog.db.bz2",
    )
    for name in ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS"):
        os.environ.pop(name, None)
    rows = table(run(args.rounds))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
