"""The report section "Where the time and memory went", the phases finding's code and the CLI
summary's code lines, from one real tracked run: a script (train.py in a directory of its
own, run by a fresh interpreter that creates the tracker, so its stacks are sampled) whose
functions burn known amounts of their thread's CPU time, each in its own loop
(time.thread_time(): the truth of the same run, on any load) and one that allocates and
holds 400 MiB between two phases of low memory. The run is saved with dumps() and loaded
here (what `resource-tracker report` does), and the page is looked at in a real Chromium
(one per module)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
from report_browser import Browser, chromium_path

from resource_tracker import ResourceTracker, _core
from resource_tracker.cli.summary import lines_of
from resource_tracker.summary import RunSummary

pytestmark = pytest.mark.skipif(not _core.HAVE_PROCFS, reason="the C sampler (procfs) only")

READY = "document.documentElement.getAttribute('data-rt-rendered-ms')"
HOLD_MIB = 400

SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    from resource_tracker import ResourceTracker

    TRUTH = {}

    def parse_records():
        start = time.thread_time()
        x = 0
        while time.thread_time() < start + 0.4:
            x += 1
        TRUTH["parse_records"] = time.thread_time() - start

    def load_dataset():
        start = time.thread_time()
        held = b"\\x01" * (HOLD_MIB << 20)
        x = 0
        while time.thread_time() < start + 0.5:
            x += 1
        TRUTH["load_dataset"] = time.thread_time() - start
        del held

    def train_model():
        start = time.thread_time()
        x = 0
        while time.thread_time() < start + 1.0:
            x += 1
        TRUTH["train_model"] = time.thread_time() - start

    tracker = ResourceTracker(interval=0.05, discover_server=False, discover_cloud=False)
    tracker.wait_for_samples(2, timeout=30)
    before = os.times()
    parse_records()
    load_dataset()
    train_model()
    after = os.times()
    TRUTH["process_cpu"] = after.user + after.system - before.user - before.system
    tracker.wait_for_samples(tracker.n_samples + 2, timeout=30)
    tracker.stop()
    with open(sys.argv[1], "w") as f:
        f.write(tracker.dumps())
    with open(sys.argv[2], "w") as f:
        json.dump(TRUTH, f)
    """
).replace("HOLD_MIB", str(HOLD_MIB))


def _lines_of_def(name):
    """(first, last) line of the function `name` in SCRIPT."""
    lines = SCRIPT.splitlines()
    first = next(i for i, text in enumerate(lines, 1) if text.startswith(f"def {name}("))
    last = first
    while last < len(lines) and (lines[last].startswith(" ") or not lines[last].strip()):
        last += 1
    return first, last


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(the loaded tracker, its summary, the truth, the project directory)."""
    project = tmp_path_factory.mktemp("project")
    (project / "train.py").write_text(SCRIPT)
    saved, truth = project / "run.json", project / "truth.json"
    subprocess.run(
        [sys.executable, "train.py", str(saved), str(truth)], cwd=project, check=True, timeout=300
    )
    tracker = ResourceTracker.loads(saved.read_text())
    summary = tracker.summary(lookup_server=False)
    return tracker, summary, json.loads(truth.read_text()), str(project)


@pytest.fixture(scope="module")
def page(run, tmp_path_factory):
    tracker, summary, _, _ = run
    path = str(tmp_path_factory.mktemp("page") / "report.html")
    tracker.report().save(path)
    return path


def test_the_peak_is_named_at_the_allocating_function(run):
    tracker, summary, _, _ = run
    peak = summary.code["peak"]
    assert peak["function"] == "load_dataset"
    assert peak["file"] == "train.py"  # relative to the script's directory
    first, last = _lines_of_def("load_dataset")
    assert first <= peak["line"] <= last
    # the run's peak memory (the process tree's, as the statistics show it)
    memory = tracker.process_metrics.column_array("memory")
    assert peak["memory_kib"] == max(memory)
    assert peak["memory_kib"] >= HOLD_MIB * 1024


def test_top_cpu_follows_the_functions_own_cpu_time(run):
    _, summary, truth, _ = run
    cpu = {row["function"]: row for row in summary.code["cpu"]}
    burners = ("parse_records", "load_dataset", "train_model")
    assert set(burners) <= set(cpu)
    # the same order as the truth (each function's own thread CPU time)
    by_truth = sorted(burners, key=lambda name: -truth[name])
    assert [r["function"] for r in summary.code["cpu"] if r["function"] in burners] == by_truth
    assert summary.code["cpu"][0]["function"] == by_truth[0]
    total = sum(row["cpu_self_seconds"] for row in summary.code["cpu"])
    for name in burners:
        # its CPU time within 0.15 s of its own clock (its first and last interval are shared)
        assert abs(cpu[name]["cpu_self_seconds"] - truth[name]) <= 0.15 + 0.1 * truth[name]
        assert cpu[name]["share"] <= cpu[name]["cpu_self_seconds"] / total + 1e-9


def test_each_phase_is_labelled_with_its_code(run):
    _, summary, _, _ = run
    phases = summary.code["phases"]
    assert [p["function"] for p in phases] == ["parse_records", "load_dataset", "train_model"]
    finding = next(i for i in summary.insights if i.kind == "phases")
    first, _ = _lines_of_def("load_dataset")
    assert "phase 2, " in finding.message
    assert f"load_dataset() at train.py:{first}" in finding.message
    assert finding.numbers["phase3_code"].startswith("train_model() train.py:")
    for p in phases:  # spans as the finding states them
        assert p["start_s"] == pytest.approx(finding.numbers[f"phase{p['phase']}_start_s"])


def test_the_view_survives_the_stored_summary(run):
    tracker, summary, _, _ = run
    stored = RunSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert stored.code == summary.code
    damaged = summary.to_dict()
    damaged["code"]["cpu"][0]["function"] = {"<script>": 1}
    assert RunSummary.from_dict(damaged).code is None  # no section, no crash


def test_cli_summary_names_the_code(run):
    _, summary, _, _ = run
    code = [line for line in lines_of(summary, server=False) if line.split()[:1] == ["code"]]
    assert len(code) == 2
    assert re.search(r"peak .+ reached in load_dataset\(\) at train\.py:\d+", code[0])
    assert "most CPU in train_model() at train.py:" in code[1]
    phases = [line for line in lines_of(summary, server=False) if "Code: phase 1" in line]
    assert phases and "parse_records()" in phases[0]


def test_no_section_when_the_code_profile_is_off():
    tracker = ResourceTracker(
        interval=0.05, discover_server=False, discover_cloud=False, code_profile=False
    )
    tracker.wait_for_samples(3, timeout=30)
    tracker.stop()
    summary = tracker.summary(lookup_server=False)
    assert summary.code is None
    assert "Where the time and memory went" not in tracker.report()
    assert not [line for line in lines_of(summary, server=False) if line.split()[:1] == ["code"]]


@pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed")
def test_the_section_in_chromium(run, page, tmp_path_factory):
    _, summary, _, _ = run
    shot = str(tmp_path_factory.mktemp("shots") / "codeview.png")
    with Browser(width=1280, height=900) as b:
        b.load("file://" + page, READY)
        found = b.eval(
            "(function () { var s = document.getElementById('rt-codeview');"
            " s.scrollIntoView(); var r = s.getBoundingClientRect();"
            " return {text: s.innerText, visible: r.height > 100 && r.width > 300,"
            " y: r.top + window.scrollY, h: r.height,"
            " cpu: Array.from(s.querySelectorAll('table')[0].querySelectorAll('tbody th'))"
            "   .map(function (e) { return e.innerText; }),"
            " memory: Array.from(s.querySelectorAll('table')[1].querySelectorAll('tbody th'))"
            "   .map(function (e) { return e.innerText; })}; })()"
        )
        b.screenshot(shot, clip={"x": 0, "y": found["y"], "width": 1280, "height": found["h"]})
        assert b.console_errors() == []
    assert found["visible"]
    text = found["text"]
    assert "Where the time and memory went" in text
    assert re.search(r"Peak .+ reached in load_dataset\(\) at train\.py:\d+", text)
    assert "phase 2, " in text and "load_dataset() at train.py:" in text
    assert found["cpu"][0].startswith("train_model()\ntrain.py:")
    assert found["memory"][0].startswith("load_dataset()\ntrain.py:")
    assert os.path.getsize(shot) > 10_000
    print(f"screenshot: {shot}")
