"""Size and render time of the HTML report and the Metaflow card: a short step (60 samples)
and a 24 h run at 1 s (86,400 samples), against the bars of issue 18 (card < 300 KB for a
short step, < 2 MB for 24 h; the page needs no network).

    python bench/bench_report.py [--json out.json]

Measured: the page's size (report and card), Python's time to build the summary (the
catalog lookup, offline: RESOURCE_TRACKER_KEEPER_URL=off, the embedded catalog) and to
render the page from it, and, when Chromium is installed, the time until the charts are
drawn after navigation (report.js sets data-rt-rendered-ms) in a headless Chromium with no
network (an empty network namespace where `unshare -n` works). The runs are synthetic
snapshots (tests/report/report_data.py) turned into stopped trackers by from_snapshot.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "report"))
os.environ.setdefault("RESOURCE_TRACKER_KEEPER_URL", "off")
os.environ.setdefault("RESOURCE_TRACKER_DISCOVER_CLOUD", "0")

BARS = {"short": 300_000, "24h": 2_000_000}  # card bytes


def _card_html(tracker):
    """The card's page (the Metaflow card module's renderer) or None without Metaflow."""
    try:
        from metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card import (
            tracked_resources_card as card,
        )
    except Exception:
        return None
    return card._report_html(tracker, {"tracker": {"summary": tracker.summary().to_dict()}})


def _chromium_ms(path):
    try:
        from report_browser import Browser, chromium_path
    except Exception:
        return None
    if chromium_path() is None:
        return None
    ready = "document.documentElement.getAttribute('data-rt-rendered-ms')"
    with Browser() as b:
        b.load("file://" + path, ready)
        return float(b.eval(ready))


def measure(name, rows):
    from report_data import long_run_snapshot

    from resource_tracker import ResourceTracker
    from resource_tracker.report._render import render_summary

    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=rows))
    t0 = time.perf_counter()
    summary = tracker.summary()
    t1 = time.perf_counter()
    page = render_summary(summary, tracker.process_metrics, tracker.system_metrics)
    t2 = time.perf_counter()
    card = _card_html(tracker)
    with tempfile.TemporaryDirectory() as tmp:
        path = page.save(os.path.join(tmp, f"{name}.html"))
        drawn = _chromium_ms(path)
    return {
        "run": name,
        "samples": rows,
        "report_bytes": len(page.encode("utf-8")),
        "card_bytes": None if card is None else len(card.encode("utf-8")),
        "summary_s": round(t1 - t0, 3),
        "render_s": round(t2 - t1, 3),
        "chromium_drawn_ms": drawn,
        "card_bar_bytes": BARS[name],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    rows = [measure("short", 60), measure("24h", 86_400)]
    print(f"{'run':<6} {'samples':>8} {'report':>10} {'card':>10} {'bar':>10} "
          f"{'summary':>8} {'render':>8} {'drawn':>8}  ok")  # fmt: skip
    ok = True
    for r in rows:
        size = r["card_bytes"] if r["card_bytes"] is not None else r["report_bytes"]
        passed = size < r["card_bar_bytes"]
        ok &= passed
        drawn = "n/a" if r["chromium_drawn_ms"] is None else f"{r['chromium_drawn_ms']:.0f} ms"
        card = "n/a" if r["card_bytes"] is None else f"{r['card_bytes'] / 1e3:,.0f} kB"
        print(
            f"{r['run']:<6} {r['samples']:>8,} {r['report_bytes'] / 1e3:>7,.0f} kB {card:>10} "
            f"{r['card_bar_bytes'] / 1e3:>7,.0f} kB {r['summary_s']:>6.2f} s "
            f"{r['render_s']:>6.2f} s {drawn:>8}  {'yes' if passed else 'NO'}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
