"""`resource-tracker dashboard` without Metaflow: the trend fit, the downsampling, `--runs`
over saved snapshots, `--check` / `--json`, bad input. (The Metaflow source, the anomaly on
a real run, the trend against the truth and the browser checks: tests/metaflow/
test_metaflow_dashboard.py.)

The snapshots: ONE real short tracked run (`resource-tracker run` of a process holding
150 MiB), saved by our own code; copies of it are edited only where the scenario needs it:
the job name (``label``), the ask (``extra["resources_asked"]``: far above the peak for an
over-provisioned job, just above it for an at-risk one) and the start time (runs a day
apart). Its measured figures are not edited.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "report"))

from resource_tracker.dashboard import RunRecord, _trend
from resource_tracker.dashboard._fleet import build_fleet
from resource_tracker.dashboard._page import MAX_POINTS, kept_points, step_data

HOLD = """import time
b = bytearray(150 * 1024 * 1024)
for i in range(0, len(b), 4096): b[i] = 1
time.sleep(0.5)
"""


def _cli(*args, cwd=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "resource_tracker", "dashboard", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)  # fmt: skip


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A folder of snapshots: jobs `etl` (asks 4x its peak) and a risky one (asks 1.05x),
    three runs each a day apart, and one file that is not a snapshot."""
    root = tmp_path_factory.mktemp("saved")
    script = root / "hold.py"
    script.write_text(HOLD)
    done = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "run", "-q", "--interval", "0.1", "--format",
         "json", "-o", str(root / "real"), "--", sys.executable, str(script)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    snap = json.loads((root / "real" / "resource-tracker.json").read_text())
    from resource_tracker.tracker import ResourceTracker

    peak = ResourceTracker.from_snapshot(snap).stats()["process_memory"]["max"] / 1024
    runs = root / "runs"
    for job, share in (("etl", 4.0), ("risky\x1b[31m job", 1.05)):
        for day in range(3):
            copy = dict(snap, label=job, start_time=snap["start_time"] + day * 86400,
                        stop_time=snap["stop_time"] + day * 86400)  # fmt: skip
            copy["extra"] = dict(
                snap.get("extra") or {}, resources_asked={"memory": peak * share, "cpu": 1}
            )
            folder = runs / f"{job.split()[0][:5]}-{day}"
            folder.mkdir(parents=True)
            (folder / "resource-tracker.json").write_text(json.dumps(copy))
    (runs / "notes.json").write_text('{"not": "a snapshot"}')
    return {"runs": str(runs), "peak": peak, "root": root}


def test_trend_is_exact_on_steady_growth_and_robust_to_an_outlier():
    values = [500 * 1.05**i for i in range(12)]
    values[7] *= 3  # one odd run
    trend = _trend.fit(values, line=500 * 1.05**20)
    assert abs(trend.growth - 0.05) < 1e-9
    assert math.isclose(trend.level, 500 * 1.05**11, rel_tol=1e-9)
    assert trend.runs_to_line == 9
    assert _trend.fit(values[:4]) is None  # too few runs
    assert _trend.fit([100.0] * 10, line=200).runs_to_line is None  # flat: never
    assert _trend.fit(values, line=500 * 1.05**60).runs_to_line is None  # beyond the horizon


def test_runs_check_lists_the_at_risk_job_only_in_printable_lines(saved):
    done = _cli("--runs", saved["runs"], "--check")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("risky job: at risk: Peak memory"), lines
    assert "% of the " in lines[0] and "it asks" in lines[0], lines
    assert all(line.isprintable() for line in lines)
    assert "notes.json" in done.stderr and "not a resource-tracker snapshot" in done.stderr


def test_runs_json_page_and_money(saved, tmp_path):
    page = tmp_path / "fleet.html"
    done = _cli("--runs", saved["runs"], "--json", "-o", str(page))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    steps = {s["step"]: s for s in data["steps"]}
    assert set(steps) == {"etl", "risky\x1b[31m job"}
    etl = steps["etl"]
    assert etl["runs"] == 3 and etl["alerts"] == [] and etl["waste_usd_per_month"] > 0
    # the need is the tuning rule's: the highest peak + 15% or more (issue 37: was 20%),
    # rounded up; never below the peak
    assert saved["peak"] * 1.15 <= etl["need"]["memory"] < etl["ask"]["memory_mib"]
    assert steps["risky\x1b[31m job"]["newest_at_risk"] and data["steps_at_risk"] == 1
    assert math.isclose(data["waste_usd_per_month"],
                        sum(s["waste_usd_per_month"] or 0 for s in data["steps"]))  # fmt: skip
    assert data["skipped"] and "notes.json" in data["skipped"][0]
    html = page.read_text()
    assert "\x1b" not in html and "risky job" in html  # control sequences taken out
    assert data["headline"].replace("<", "&lt;") in html  # "< $0.01 a month ...", escaped


def test_bad_sources_are_one_clear_line(tmp_path):
    done = _cli("--runs", str(tmp_path / "missing"))
    assert done.returncode == 2 and "not a directory" in done.stderr, done.stderr
    done = _cli("--check")
    assert done.returncode == 2 and "give a source" in done.stderr
    done = _cli("--runs", str(tmp_path), "--since", "soon")
    assert done.returncode == 2 and "--since" in done.stderr
    empty = _cli("--runs", str(tmp_path), "-o", str(tmp_path / "p.html"))
    assert empty.returncode == 1 and "no tracked run" in empty.stderr


def _records(n, spikes, slow):
    """n runs an hour apart: peak memory 1000-1006 MiB (4x on `spikes`), 60 s long (600 s
    on `slow`: their memory is mid-range, so only the anomaly rule keeps them)."""
    return [
        RunRecord(step="big/step", run_id=f"r{i}", started=1.7e9 + i * 3600,
                  duration_s=600.0 if i in slow else 60.0, status="ok", source="runs",
                  peak_memory_mib=1000.0 * (4 if i in spikes else 1) + (3 if i in slow else i % 7),
                  mean_cpu_cores=1.0, ask={"memory_mib": 8000.0, "cpu": 2.0})
        for i in range(n)
    ]  # fmt: skip


def test_downsampling_keeps_every_anomaly_on_its_run():
    spikes, slow = {40, 777, 1500, 2999}, {123, 1234, 2345}
    view = build_fleet(_records(3000, spikes, slow)).steps[0]
    assert {a.index for a in view.anomalies if a.metric == "memory_peak_mib"} == spikes
    assert {a.index for a in view.anomalies if a.metric == "duration_s"} == slow
    kept = kept_points(view)
    assert len(kept) <= MAX_POINTS + len(view.anomalies) + 2
    data = step_data(view, 0)
    assert {data["runs"][a["i"]] for a in data["anomalies"]} == {f"r{i}" for i in spikes | slow}
    charts = {c["id"]: c for c in data["charts"]}
    for a in data["anomalies"]:
        run = view.runs[int(a["run"][1:])]
        assert data["runs"][a["i"]] == a["run"]
        assert charts["memory"]["v"][a["i"]] == pytest.approx(run.peak_memory_mib)
        assert charts["duration"]["v"][a["i"]] == pytest.approx(run.duration_s)


def _a_run(saved, folder, name, **changes):
    """A copy of the real snapshot in folder/name (bytes: a name need not be UTF-8), edited."""
    snap = json.loads((saved["root"] / "real" / "resource-tracker.json").read_text())
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(os.fsencode(folder), name), "w") as f:
        json.dump(dict(snap, **changes), f)


def test_runs_refuses_a_fifo_and_a_device_named_json_unopened(saved, tmp_path):
    """A FIFO named *.json (the old reader: blocked for ever in open()) and a symlink to
    /dev/zero (read without end): each skipped with one line, the real run read. The deadline
    makes a regression fail instead of hanging the suite."""
    folder = tmp_path / "runs"
    _a_run(saved, folder, b"real.json")
    os.mkfifo(folder / "a-fifo.json")
    os.symlink("/dev/zero", folder / "zero.json")
    done = _cli("--runs", str(folder), "--json", timeout=60)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [s["runs"] for s in data["steps"]] == [1]
    assert data["skipped"] == ["a-fifo.json: not a regular file (a FIFO)",
                               "zero.json: not a regular file (a character device)"]  # fmt: skip
    assert "Traceback" not in done.stderr


def test_check_says_when_nothing_could_be_read(tmp_path):
    """--check (and --check --json) over sources that gave no run (an empty folder, only
    damaged files): exit 3, not 0 ("OK": monitoring green while its source is broken) nor 1
    (an alert)."""
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "cut.json").write_text('{"format": "resource-tracker-snapshot", "proc')
    (damaged / "other.json").write_text("[1, 2, 3]")
    (tmp_path / "empty").mkdir()
    for folder in ("empty", "damaged"):
        for extra in ((), ("--json",)):
            done = _cli("--runs", str(tmp_path / folder), "--check", *extra)
            assert done.returncode == 3, (folder, extra, done.stderr)
            assert "no tracked run found" in done.stderr and "Traceback" not in done.stderr


def test_check_lines_hold_no_bidi_override_and_stay_one_line(saved, tmp_path):
    """A job name with a right-to-left override (U+202E), a zero-width joiner and a newline:
    the --check line shows the name without them, on one line (the old line carried U+202E to
    the terminal, and the newline split it); a file named with a newline is one skipped
    line."""
    folder = tmp_path / "runs"
    peak = saved["peak"]
    _a_run(saved, folder, b"r.json", label="evil\u202etxt.exe\u200d\nrisky job",
           extra={"resources_asked": {"memory": peak * 1.05, "cpu": 1}})  # fmt: skip
    (folder / "bad\nname.json").write_text("{}")
    done = _cli("--runs", str(folder), "--check")
    assert done.returncode == 1, done.stderr
    assert len(done.stdout.splitlines()) == 1, done.stdout
    assert done.stdout.startswith("eviltxt.exe risky job: at risk: Peak memory"), done.stdout
    assert "\u202e" not in done.stdout + done.stderr and "\u200d" not in done.stdout
    assert "resource-tracker: dashboard: skipped bad name.json: " in done.stderr, done.stderr


def test_a_subnormal_or_overflowing_oom_count_is_no_alert(saved, tmp_path):
    """Snapshots whose cgroup figures say ``oom_kills`` 5e-324 (the old check: exit 1, an
    at-risk alert for a kill that never was) or 1.797e308 (refused by loads()): each skipped
    with one line naming the figure; the real run is judged alone (no alert: exit 0)."""
    folder = tmp_path / "runs"
    snap = json.loads((saved["root"] / "real" / "resource-tracker.json").read_text())
    _a_run(saved, folder, b"real.json")
    for name, kills in ((b"tiny.json", 5e-324), (b"huge.json", 1.797e308)):
        _a_run(saved, folder, name, cgroup_metrics=dict(snap["cgroup_metrics"] or {},
                                                        oom_kills=kills))  # fmt: skip
    done = _cli("--runs", str(folder), "--check", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [s["runs"] for s in data["steps"]] == [1] and data["alerting"] == 0
    assert data["skipped"] == ["huge.json: not a resource-tracker snapshot: cgroup_metrics."
                               "oom_kills must be a number (or null), got 1.797e+308",
                               "tiny.json: oom_kills is subnormal (4.94066e-324): no measured "
                               "figure"]  # fmt: skip


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_a_file_name_that_is_not_utf8_reaches_page_and_json_as_a_replacement(saved, tmp_path):
    """A snapshot named b"\\xff\\xfe.json" (not UTF-8: Python reads it with lone surrogates):
    the page and the JSON show U+FFFD; a real headless Chromium dumps the page's DOM (the old
    page held the surrogates in its data and Chromium died of SIGILL, exit -4)."""
    folder = tmp_path / "runs"
    _a_run(saved, folder, b"\xff\xfe.json")
    page = tmp_path / "page.html"
    done = _cli("--runs", str(folder), "--json", "-o", str(page))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["steps"][0]["runs"] == 1
    html = page.read_text(encoding="utf-8")
    assert "\\udcff" not in html and "\\udcfe" not in html
    dom = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
         f"--user-data-dir={tmp_path / 'profile'}", "--proxy-server=127.0.0.1:9",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--no-first-run", "--dump-dom",
         page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert dom.returncode == 0, dom.returncode
    assert "\ufffd\ufffd.json" in dom.stdout


def test_money_is_written_as_the_report_writes_it_and_unpriced_is_not_zero():
    """A step asking for twice what it needs on a $0.0416/h server (1 run an hour of 60 s:
    about $0.01 a month unused) reads as the report writes an amount, not '$0.000846/month';
    a fleet nothing could be priced for says so, not '$0/month'."""
    from resource_tracker.dashboard._page import render_dashboard
    from resource_tracker.insights import Pricing

    server = Pricing(hourly_usd=0.0416, vcpus=2, memory_mib=4096, server="aws t3.medium")
    records = _records(8, spikes=(), slow=())
    priced = build_fleet(records, lambda need: server)
    waste = priced.waste_usd_month
    assert waste is not None and 0 < waste < 0.05, waste
    money = "< $0.01" if waste < 0.005 else f"${waste:,.2f}"
    assert priced.headline().startswith(f"{money} a month asked but unused across 1 step")
    page = str(render_dashboard(priced, ["runs in test"]))
    assert (
        f"{money} a month asked but unused (priced on aws t3.medium)".replace("<", "&lt;") in page
    )
    assert "/month" not in page.replace("Unused $/month", "")  # a price's form, not an amount's
    unpriced = build_fleet(records)
    assert unpriced.waste_usd_month is None
    assert unpriced.headline().startswith("unused asks not priced across 1 step")
    page = str(render_dashboard(unpriced, ["runs in test"]))
    assert "$0" not in page and "asked but unused" not in page.replace("Asked but unused", "")


LAYOUT_390 = """(function () {
  var out = {scroll: document.documentElement.scrollWidth, inner: innerWidth, cut: [],
             overlaps: [], repeats: [], ticks: []};
  document.querySelectorAll('table.rt-fleet tbody th, table.rt-fleet td').forEach(function (c) {
    var r = c.getBoundingClientRect();
    if (r.width > 0 && (r.right > innerWidth + 0.5 || c.scrollWidth > c.clientWidth + 1)) {
      out.cut.push(c.textContent);
    }
  });
  var wrap = document.querySelector('#rt-fleet .rt-scroll');
  out.hidden = wrap.scrollWidth - wrap.clientWidth;
  document.querySelectorAll('.rt-chart svg').forEach(function (svg) {
    /* the time axis' labels: the texts lowest in the chart */
    var texts = Array.from(svg.querySelectorAll('text'));
    var low = Math.max.apply(null, texts.map(function (t) { return +t.getAttribute('y'); }));
    var labels = texts.filter(function (t) { return +t.getAttribute('y') === low; });
    labels = labels.map(function (t) {
      var b = t.getBBox(); return {text: t.textContent, left: b.x, right: b.x + b.width}; });
    labels.sort(function (a, b) { return a.left - b.left; });
    out.ticks.push(labels.length);
    for (var i = 1; i < labels.length; i++) {
      if (labels[i].left < labels[i - 1].right + 2) {
        out.overlaps.push([labels[i - 1], labels[i]]);
      }
    }
    var words = labels.map(function (l) { return l.text; });
    if (new Set(words).size !== words.length) { out.repeats.push(words); }
  });
  return out;
})()"""


def test_the_dashboard_at_390_px_cuts_no_column_and_no_axis_label(tmp_path):
    """On a phone (390 px, light and dark; and at 1280 px): every cell of the fleet table on
    screen and whole (no column scrolled out of sight, "Changed" not cut to "Chang..."), the
    time axis' labels apart and none repeated (a one-run step's chart too)."""
    from report_browser import Browser, chromium_path

    if chromium_path() is None:
        pytest.skip("chromium is not installed")
    from resource_tracker.dashboard._page import render_dashboard

    records = _records(8, spikes=(5,), slow=())
    once = RunRecord(step="once/only_step_with_a_long_name", run_id="one", started=1.7e9,
                     duration_s=60.0, status="ok", source="runs", peak_memory_mib=300.0,
                     mean_cpu_cores=0.5, ask={"memory_mib": 4000.0, "cpu": 1.0})  # fmt: skip
    records.append(once)
    records += [  # runs minutes apart: the axis reads to the second ('MM-DD HH:MM:SS')
        RunRecord(step="quick/step", run_id=f"q{i}", started=1.7e9 + i * 300, duration_s=20.0,
                  status="ok", source="runs", peak_memory_mib=500.0 + i, mean_cpu_cores=1.0,
                  ask={"memory_mib": 1000.0, "cpu": 1.0})
        for i in range(6)
    ]  # fmt: skip
    page = tmp_path / "fleet.html"
    page.write_text(str(render_dashboard(build_fleet(records), ["runs in test"])))
    ready = "document.documentElement.getAttribute('data-rt-rendered-ms')"
    with Browser() as b:
        for width, dark in ((390, False), (390, True), (1280, False)):
            b.viewport(width, 800, dark=dark)
            b.events.clear()
            b.load("file://" + str(page), ready)
            got = b.eval(LAYOUT_390)
            assert got["scroll"] <= got["inner"] and got["hidden"] <= 0, got
            assert got["cut"] == [], got["cut"]
            assert got["overlaps"] == [] and got["repeats"] == [], got
            assert min(got["ticks"]) >= 1 and max(got["ticks"]) >= 2, got["ticks"]
            assert b.console_errors() == []
            b.screenshot(str(tmp_path / f"dashboard-{width}-{dark}.png"))
