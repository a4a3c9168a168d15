"""Size and render time of `resource-tracker dashboard` at fleet scale: 50 steps x 1,000
runs each (issue 30: <= 2 s to render, <= 5 MB, downsampled with every anomaly kept).

    python bench/bench_dashboard.py [--steps 50] [--runs 1000] [--json out.json]

The runs are synthetic RunRecords (seeded noise around each step's level, a spike every
~97 runs, one step in ten growing 1% a run, a few failed and killed runs), priced on the
embedded catalog (RESOURCE_TRACKER_KEEPER_URL=off). Measured: Python's time to build the
fleet (tuning, anomalies, trends, prices) and to render the page, the page's size, and, when
Chromium is installed, the time until dashboard.js has drawn every chart
(data-rt-rendered-ms) in a headless Chromium with no network, and the anomaly rings drawn
against the anomalies found (every one must be drawn).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "report"))
os.environ.setdefault("RESOURCE_TRACKER_KEEPER_URL", "off")
os.environ.setdefault("RESOURCE_TRACKER_DISCOVER_CLOUD", "0")

BARS = {"render_s": 2.0, "bytes": 5_000_000}


def records(steps, runs, seed=30):
    """Synthetic runs of ``steps`` steps, ``runs`` each, one a day."""
    from resource_tracker.dashboard import RunRecord

    rng = random.Random(seed)
    out = []
    start = 1.7e9
    for s in range(steps):
        level = rng.choice((512, 2048, 6000, 14000))
        ask = {
            "cpu": float(rng.choice((2, 4, 8))),
            "memory_mib": float(level * rng.choice((1.5, 3, 6))),
        }
        for i in range(runs):
            grow = 1.01**i if s % 10 == 0 else 1.0
            mem = level * grow * rng.uniform(0.95, 1.05) * (2.5 if i % 97 == 50 else 1.0)
            status = "killed" if i % 331 == 7 else ("failed" if i % 211 == 5 else "ok")
            out.append(RunRecord(
                step=f"Flow{s // 5}/step{s % 5}", run_id=f"Flow{s // 5}/{i}/step{s % 5}/1",
                started=start + i * 86400 + s, duration_s=600 * rng.uniform(0.9, 1.1),
                status=status, source="metaflow", peak_memory_mib=mem,
                mean_cpu_cores=ask["cpu"] * 0.3 * rng.uniform(0.9, 1.1),
                peak_cpu_cores=ask["cpu"] * 0.6, p90_cpu_cores=ask["cpu"] * 0.4, ask=ask,
            ))  # fmt: skip
    return out


def chromium(path, expected_rings):
    try:
        from report_browser import Browser, chromium_path
    except Exception:
        return None
    if chromium_path() is None:
        return None
    ready = "document.documentElement.getAttribute('data-rt-rendered-ms')"
    with Browser() as b:
        b.load("file://" + path, ready, timeout=120)
        rings = b.eval("document.querySelectorAll('circle.rt-anomaly').length")
        errors = len(b.console_errors())
        return {"render_ms": float(b.eval(ready)), "anomaly_rings": rings,
                "anomalies_found": expected_rings, "console_errors": errors}  # fmt: skip


def main(argv=None):
    from resource_tracker.cli.dashboard import price_for
    from resource_tracker.dashboard._fleet import build_fleet
    from resource_tracker.dashboard._page import render_dashboard

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    recs = records(args.steps, args.runs)
    t0 = time.perf_counter()
    fleet = build_fleet(recs, price_for(None))
    t1 = time.perf_counter()
    page = render_dashboard(fleet, ["bench"], now=1.8e9)
    t2 = time.perf_counter()
    path = os.path.join(tempfile.mkdtemp(prefix="rt-bench-dash-"), "dashboard.html")
    page.save(path)
    drawn_metrics = ("memory_peak_mib", "cpu_mean_cores", "duration_s", "vram_peak_mib", "gpu_peak")
    found = sum(1 for s in fleet.steps for a in s.anomalies if a.metric in drawn_metrics)
    result = {
        "steps": args.steps, "runs_per_step": args.runs, "fleet_s": round(t1 - t0, 3),
        "render_s": round(t2 - t1, 3), "bytes": len(page.encode()),
        "browser": chromium(path, found), "bars": BARS,
    }  # fmt: skip
    total = (
        result["fleet_s"]
        + result["render_s"]
        + (result["browser"] or {}).get("render_ms", 0) / 1000
    )
    result["total_s"] = round(total, 3)
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
