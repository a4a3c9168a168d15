"""The code profile's attribution is computed once per report, in C, with the figures of the
rule (issue 38 point 2): a real run in this interpreter (tests/codeprofile/workload.py: three
CPU phases, a thread in a C call, recursion, a 160 MiB allocation) and a simulated day
(bench/bench_long.py's code profile of a training job: 2,000 call paths, a second thread).

- ``_core.code_segments`` (the per-sample work) is called once for a report, however many
  views the report reads, and not again while the run does not change (counted by wrapping
  it: the real function still does the work);
- every figure equals the rule's, written out one sample at a time in Python
  (attribution_reference.py, as the package computed it before);
- the Python work of a summary does not grow with the samples: the Python function calls of
  a run of 40,000 samples are those of 10,000 (per-sample work is C's).
"""

from __future__ import annotations

import math
import os
import sys

import pytest
from attribution_reference import Reference

from resource_tracker import ResourceTracker, _core

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.join(HERE, "..", "..", "bench"))  # after tests/ (bench has workloads.py)
import bench_long  # noqa: E402
import workload  # noqa: E402

pytestmark = pytest.mark.skipif(not _core.HAVE_PROCFS, reason="the C sampler (procfs) only")
INTERVAL = 0.02


@pytest.fixture(scope="module")
def run():
    """A run of this process alone: no forked child, whose record (a worker's, taken by the
    tracker when the child lived long enough to sample, as under ASan) the rule leaves out."""
    tracker = ResourceTracker(interval=INTERVAL, discover_server=False, discover_cloud=False)
    workload.run(0.5, fork=False)
    tracker.stop()
    return tracker


@pytest.fixture
def count_segments(monkeypatch):
    calls = []
    real = _core.code_segments

    def counted(*args):
        calls.append(len(args[0]))
        return real(*args)

    monkeypatch.setattr(_core, "code_segments", counted)
    return calls


def _long_run(rows):
    return ResourceTracker.loads(bench_long.long_run_text(rows, 86_400.0 / rows))


def test_a_report_attributes_the_samples_once(run, count_segments):
    tracker = ResourceTracker.loads(run.dumps())  # nothing computed yet
    tracker.report()
    assert count_segments == [len(tracker._code_record()["samples"])]
    tracker.code_profile("line", user_code=True)
    tracker.code_timeline()
    tracker.code_peak()
    tracker.code_between(tracker.start_time, tracker.stop_time)
    assert len(count_segments) == 1  # the stopped run's attribution is kept


def test_a_running_tracker_s_report_attributes_once(count_segments):
    tracker = ResourceTracker(interval=INTERVAL, discover_server=False, discover_cloud=False)
    try:
        workload.run(0.2, fork=False)
        tracker.report()
        assert len(count_segments) == 1
    finally:
        tracker.stop()


def _same(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _check_against_the_rule(tracker):
    record = tracker._code_record()
    columns = {k: list(v) for k, v in tracker._table_columns("process").items()}
    rule = Reference(record, columns, tracker.start_time)
    middle = rule.segments[len(rule.segments) // 2]["timestamp"]
    for by, user_code, span in [
        ("function", False, (None, None)),
        ("line", False, (None, None)),
        ("function", True, (None, None)),
        ("line", True, (None, middle)),
        ("function", True, (middle, None)),
    ]:
        want = rule.profile(by, user_code, *span)
        got = {
            (r["function"], r["file"], r["line"]): r
            for r in (
                tracker.code_between(span[0] or 0, span[1] or math.inf, by, user_code)
                if span != (None, None)
                else tracker.code_profile(by, user_code)
            ).rows()
        }
        assert set(got) == set(want), (by, user_code, span)
        for key, figures in want.items():
            for name, value in figures.items():
                assert _same(got[key][name], value), (by, user_code, key, name)
    timeline = [tuple(r.values()) for r in tracker.code_timeline().rows()]
    assert len(timeline) == len(rule.timeline())
    for got_row, want_row in zip(timeline, rule.timeline()):
        assert got_row[1:4] == want_row[1:4]
        assert all(_same(got_row[i], want_row[i]) for i in (0, 4, 5))
    top = max(rule.segments, key=lambda s: s["peak"])
    peak = tracker.code_peak()
    assert (peak["function"], peak["file"], peak["line"]) == rule.running(top)
    assert peak["memory_peak"] == top["peak"] and peak["timestamp"] == top["timestamp"]


def test_a_real_run_s_figures_are_the_rule_s(run):
    _check_against_the_rule(run)


def test_the_sampler_s_compact_record_gives_the_same_figures(run):
    """The attribution reads a live sampler's samples as bytes (Sampler.stacks(True)): the
    same figures as from the record's lists."""
    from resource_tracker.code_profile import Attribution, sources

    columns, start = run._table_columns("process"), run.start_time
    listed, compact = run._sampler.stacks(), run._sampler.stacks(True)
    assert isinstance(compact["samples"], bytes) and len(compact["samples"]) == 16 * len(
        listed["samples"]
    )
    views = []
    for record in (listed, compact):
        record.update(status="recorded", note=None)
        made = Attribution(sources(record, columns, start))
        tables = [made.profile(by, user) for by in ("function", "line") for user in (0, 1)]
        views.append(([list(t.rows()) for t in tables], list(made.timeline().rows()), made.peak()))
    assert views[0] == views[1]


def test_a_simulated_day_s_figures_are_the_rule_s():
    _check_against_the_rule(_long_run(3_000))


def _python_calls(tracker):
    calls = [0]

    def count(frame, event, arg):
        calls[0] += event == "call"

    sys.setprofile(count)
    try:
        tracker.summary(lookup_server=False)
    finally:
        sys.setprofile(None)
    return calls[0]


def test_a_longer_run_s_summary_makes_no_more_python_calls():
    shorter, longer = _python_calls(_long_run(10_000)), _python_calls(_long_run(40_000))
    assert longer <= 1.1 * shorter, (shorter, longer)
