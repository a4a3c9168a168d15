"""The phases finding's code when one function does both phases (issue 40): each phase is
named at the line it ran for most of the phase, not the same function twice; spans are
written as the finding writes them ("0 s to 7.5 s", not "0-8 s"). One real tracked run: a
script whose one function spins its thread's CPU in a loop, then maps 400 MiB (filled at
once) and holds it for 1 s; the phases are taken from the function's own wall-clock marks
(the truth), so the labels are checked whatever the load does to the samples."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from resource_tracker import ResourceTracker, _core
from resource_tracker.code_view import code_view, label_phases, phase_texts
from resource_tracker.insights import Insight

pytestmark = pytest.mark.skipif(not _core.HAVE_PROCFS, reason="the C sampler (procfs) only")

SCRIPT = textwrap.dedent(
    """
    import json, mmap, sys, time
    from resource_tracker import ResourceTracker
    FLAGS = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE
    MARKS = []
    def work():
        MARKS.append(time.time())
        start, x = time.thread_time(), 0
        while time.thread_time() < start + 1.0:  # SPIN
            x += 1  # SPIN
        MARKS.append(time.time())
        held = mmap.mmap(-1, 400 << 20, flags=FLAGS)
        time.sleep(1.0)  # HOLD
        MARKS.append(time.time())
        del held
    tracker = ResourceTracker(interval=0.05, discover_server=False, discover_cloud=False)
    tracker.wait_for_samples(2, timeout=30)
    work()
    tracker.wait_for_samples(tracker.n_samples + 2, timeout=30)
    tracker.stop()
    with open(sys.argv[1], "w") as f:
        f.write(tracker.dumps())
    with open(sys.argv[2], "w") as f:
        json.dump(MARKS, f)
    """
)


def _lines(tag):
    return [i for i, text in enumerate(SCRIPT.splitlines(), 1) if f"# {tag}" in text]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    project = tmp_path_factory.mktemp("project")
    (project / "work.py").write_text(SCRIPT)
    saved, marks = project / "run.json", project / "marks.json"
    subprocess.run(
        [sys.executable, "work.py", str(saved), str(marks)], cwd=project, check=True, timeout=300
    )
    return ResourceTracker.loads(saved.read_text()), json.loads(marks.read_text())


def test_one_function_s_two_phases_are_told_apart_by_line(run):
    tracker, marks = run
    numbers = {"phases": 2}
    for i, (began, ended) in enumerate(zip(marks, marks[1:]), 1):
        numbers[f"phase{i}_start_time"] = began
        numbers[f"phase{i}_duration_s"] = ended - began
        numbers[f"phase{i}_start_s"] = began - tracker.start_time
    finding = Insight("phases", "warning", "2 phases.", numbers)
    view = code_view(tracker, [finding])
    first, second = view["phases"]
    assert first["function"] == second["function"] == "work", view["phases"]
    assert first["line"] in _lines("SPIN"), (first, _lines("SPIN"))
    assert second["line"] in _lines("HOLD"), (second, _lines("HOLD"))
    (labelled,) = label_phases([finding], view)
    assert f"work() at work.py:{first['line']}" in labelled.message, labelled.message
    assert f"work() at work.py:{second['line']}" in labelled.message, labelled.message
    assert f"Split: the second step would start with work() (work.py:{second['line']})" in (
        labelled.message
    )


def test_a_span_is_written_as_the_finding_writes_it():
    view = {
        "phases": [
            {"phase": 1, "start_s": 0.0, "end_s": 7.5, "function": "f", "file": "a.py", "line": 3},
            {"phase": 2, "start_s": 7.5, "end_s": 75.0, "same_as": 1, "function": "f"},
        ]
    }
    texts = phase_texts(view, lambda text: text)
    assert texts == [
        "phase 1, 0 s to 7.5 s: f() at a.py:3",
        "phase 2, 7.5 s to 1 min 15 s: the same code as phase 1",
    ]
