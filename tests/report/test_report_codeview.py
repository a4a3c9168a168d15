"""The report section "Where the time and memory went", the phases finding's code and the CLI
summary's code lines, from one real tracked run: a script (train.py in a directory of its
own, run by a fresh interpreter that creates the tracker, so its stacks are sampled) whose
functions burn known amounts of their thread's CPU time, each in its own loop
(time.thread_time(): the truth of the same run, on any load), and between them one that
maps 600 MiB (filled at once) and holds them for 1 s: a phase of high memory between two
of low memory. The run is saved with dumps() and loaded here (what `resource-tracker report`
does), and the page is looked at in a real Chromium (one per module). The labels of the
phases are checked on the functions' own spans (the truth) and on the phases the run's
finding found."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import replace

import pytest
from report_browser import Browser, chromium_path

from resource_tracker import ResourceTracker, _core
from resource_tracker import formatting as fmt
from resource_tracker.cli.summary import lines_of
from resource_tracker.code_view import code_view, label_phases, phase_texts
from resource_tracker.insights import Insight
from resource_tracker.report._render import render_summary
from resource_tracker.summary import RunSummary

pytestmark = pytest.mark.skipif(not _core.HAVE_PROCFS, reason="the C sampler (procfs) only")

READY = "document.documentElement.getAttribute('data-rt-rendered-ms')"
HOLD_MIB = 600

SCRIPT = textwrap.dedent(
    """
    import json, mmap, os, sys, time
    from resource_tracker import ResourceTracker

    TRUTH = {}
    SPANS = []  # (function, wall start, wall end)
    FLAGS = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE

    def parse_records():
        start, wall = time.thread_time(), time.time()
        x = 0
        while time.thread_time() < start + 0.5:
            x += 1
        TRUTH["parse_records"] = time.thread_time() - start
        SPANS.append(("parse_records", wall, time.time()))

    def load_dataset():
        start, wall = time.thread_time(), time.time()
        # one system call maps and fills it (MAP_POPULATE): a short ramp between the phases
        held = mmap.mmap(-1, HOLD_MIB << 20, flags=FLAGS)
        time.sleep(1.0)  # holds it: a phase of its own, whatever the load
        TRUTH["load_dataset"] = time.thread_time() - start
        SPANS.append(("load_dataset", wall, time.time()))
        del held

    def train_model():
        start, wall = time.thread_time(), time.time()
        x = 0
        while time.thread_time() < start + 1.2:
            x += 1
        TRUTH["train_model"] = time.thread_time() - start
        SPANS.append(("train_model", wall, time.time()))

    tracker = ResourceTracker(interval=0.05, discover_server=False, discover_cloud=False)
    tracker.wait_for_samples(2, timeout=30)
    before = os.times()
    parse_records()
    load_dataset()
    train_model()
    after = os.times()
    TRUTH["process_cpu"] = after.user + after.system - before.user - before.system
    TRUTH["spans"] = SPANS
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
    # the first is the one that used the most by its own clock (more than twice any other)
    assert summary.code["cpu"][0]["function"] == max(burners, key=lambda name: truth[name])
    total = sum(row["cpu_self_seconds"] for row in summary.code["cpu"])
    for name in burners:
        # its CPU time within 0.15 s of its own clock (its first and last interval are shared)
        assert abs(cpu[name]["cpu_self_seconds"] - truth[name]) <= 0.15 + 0.1 * truth[name]
        assert cpu[name]["share"] <= cpu[name]["cpu_self_seconds"] / total + 1e-9


def _phases_of(tracker, truth, severity):
    """The phases finding as the functions' own wall-clock spans make it (the truth), so the
    labels are checked whatever the change-point search of the samples finds."""
    numbers = {"phases": len(truth["spans"])}
    for i, (_, began, ended) in enumerate(truth["spans"], 1):
        numbers.update(
            {f"phase{i}_start_time": began, f"phase{i}_duration_s": ended - began},
            **{f"phase{i}_start_s": began - tracker.start_time},
        )
    return Insight("phases", severity, "3 phases.", numbers)


def test_each_phase_is_labelled_with_its_code(run):
    tracker, _, truth, _ = run
    finding = _phases_of(tracker, truth, "info")
    view = code_view(tracker, [finding])
    assert [p["function"] for p in view["phases"]] == [f for f, _, _ in truth["spans"]]
    (labelled,) = label_phases([finding], view)
    first, _ = _lines_of_def("load_dataset")
    assert f"phase 2, {fmt.duration(finding.numbers['phase2_start_s'])} to " in labelled.message
    assert f"load_dataset() at train.py:{first}" in labelled.message
    assert labelled.numbers["phase3_code"].startswith("train_model() train.py:")
    assert "Split" not in labelled.message  # no split advised: no split named


def test_the_summary_labels_the_phases_it_found(run):
    """The run's own phases finding (from its samples) names the code of each phase it found:
    the code that was running for most of the phase."""
    tracker, summary, truth, _ = run
    finding = next((i for i in summary.insights if i.kind == "phases"), None)
    found = summary.code["phases"]
    if finding is None:  # the samples showed no phases (a machine busy enough to blur them):
        assert found == []  # nothing to label; test_each_phase_is_labelled_... still checks
        return
    assert len(found) == finding.numbers["phases"] >= 2
    stamps = tracker.code_timeline().column_array("timestamp")
    checked = 0
    for p in found:
        began = finding.numbers[f"phase{p['phase']}_start_time"]
        ended = began + finding.numbers[f"phase{p['phase']}_duration_s"]
        assert f"phase {p['phase']}, " in finding.message
        assert p["start_s"] == pytest.approx(finding.numbers[f"phase{p['phase']}_start_s"])
        if "function" not in p:  # no stack sample in it (the GIL not granted: a busy machine)
            assert not any(began < t <= ended for t in stamps)
            continue
        # the function whose own wall-clock span covers most of the phase
        overlap = {f: min(ended, b) - max(began, a) for f, a, b in truth["spans"]}
        ranked = sorted(overlap.values(), reverse=True)
        if ranked[0] - ranked[1] > 0.3:  # clear of the sampling interval's blur
            assert p["function"] == max(overlap, key=overlap.get), (finding.message, overlap)
            checked += 1
    assert checked >= 1, finding.message


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
    assert len(phases) == (1 if summary.code["phases"] else 0)
    for label in phase_texts(summary.code, str):  # the view's labels, as the page shows them
        assert label in phases[0]


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
    for label in phase_texts(summary.code, str):
        assert label in text
    assert found["cpu"][0].startswith("train_model()\ntrain.py:")
    assert found["memory"][0].startswith("load_dataset()\ntrain.py:")
    assert os.path.getsize(shot) > 10_000
    print(f"screenshot: {shot}")


def test_split_advice_names_where_the_second_step_starts(run):
    """When the phases finding advises a split, the finding and the page name the code the
    second step would start with."""
    tracker, summary, truth, _ = run
    finding = _phases_of(tracker, truth, "warning")
    view = code_view(tracker, [finding])
    (labelled,) = label_phases([finding], view)
    first, _ = _lines_of_def("load_dataset")
    split = f"Split: the second step would start with load_dataset() (train.py:{first})."
    assert split in labelled.message
    advised = replace(summary, insights=(labelled,), code=view)
    page = render_summary(advised, tracker.process_metrics, tracker.system_metrics)
    assert "Split advice: the second step would start with <code>load_dataset()</code>" in page


def test_hostile_names_are_escaped(run, capsys):
    """A file or function name is text from outside: escaped on the page, made printable in
    the CLI lines (a file can be named anything; a stored view can hold anything)."""
    tracker, summary, _, _ = run
    hostile = '<img src=x onerror="alert(1)">\x1b[31m'
    view = json.loads(json.dumps(summary.code))
    for item in [view["peak"], *view["cpu"], *view["memory"], *view["phases"]]:
        item.update(function=hostile, file=hostile)
    page = render_summary(replace(summary, code=view), tracker.process_metrics)
    section = page[page.index('id="rt-codeview"') : page.index('class="rt-details-title"')]
    assert "<img" not in section and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in section
    from resource_tracker.cli.common import say

    say("\n".join(lines_of(replace(summary, code=view), server=False)))  # as `run` prints it
    printed = capsys.readouterr().err
    assert "code        peak" in printed and "onerror" in printed and "\x1b" not in printed
