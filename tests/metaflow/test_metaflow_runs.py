"""@track_resources in real Metaflow runs (pip-installed metaflow, local datastore/metadata).

Each flow runs once per module (module-scoped fixtures) and several tests read the same run:
artifacts through the Metaflow client, cards through get_cards(). See mf_harness.py for the
hermetic environment.
"""

from __future__ import annotations

import os

import pytest
from mf_harness import (
    DOCUMENTED_HISTORY,
    FLOWS,
    blank_card_texts,
    chromium_check,
    query,
    run_flow,
    task_of,
)

from resource_tracker import TinyDataFrame
from resource_tracker import formatting as fmt

ARTIFACT_KEYS = {
    "process_metrics",
    "system_metrics",
    "cloud_info",
    "server_info",
    "stats",
    "historical_stats",
    "recommendations",
    "step_failed",
}


def _cards(task, card_type=None):
    return [c for c in task["cards"] if card_type is None or c["type"] == card_type]


@pytest.fixture(scope="module")
def tracked_run(tmp_path_factory):
    """One run of TrackedFlow: @card both sides of ours, @resources, foreach, @retry, @catch."""
    root = tmp_path_factory.mktemp("mf-tracked")
    done = run_flow(root, os.path.join(FLOWS, "mf_tracked_flow.py"))
    assert done.returncode == 0, done.stdout[-4000:]
    (run,) = query(root, "TrackedFlow")
    return run


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory):
    """One run of FailingFlow: the tracked step holds 100 MB for 1 s and raises."""
    root = tmp_path_factory.mktemp("mf-failing")
    done = run_flow(root, os.path.join(FLOWS, "mf_failing_flow.py"))
    assert done.returncode != 0, "the flow must fail"
    assert "boom after holding" in done.stdout
    (run,) = query(root, "FailingFlow")
    return run


@pytest.fixture(scope="module")
def history_runs(tmp_path_factory):
    """HistoryFlow run 3 times, then once with tracking broken (an invalid sampling method)."""
    root = tmp_path_factory.mktemp("mf-history")
    flow = os.path.join(FLOWS, "mf_history_flow.py")
    for _ in range(3):
        done = run_flow(root, flow)
        assert done.returncode == 0, done.stdout[-4000:]
    done = run_flow(root, flow, env={"RESOURCE_TRACKER_METHOD": "bogus"})
    assert done.returncode == 0, done.stdout[-4000:]
    runs = query(root, "HistoryFlow", all_runs=True)
    assert len(runs) == 4
    return runs  # newest first


def test_metaflow_artifact_has_the_documented_shape(tracked_run):
    data = task_of(tracked_run, "start")["artifacts"]["resource_tracker_data"]
    assert ARTIFACT_KEYS <= set(data)
    assert isinstance(data["process_metrics"], TinyDataFrame)
    assert isinstance(data["system_metrics"], TinyDataFrame)
    assert len(data["process_metrics"].columns) == 13
    assert len(data["system_metrics"].columns) == 24
    assert len(data["process_metrics"]) >= 1
    assert set(DOCUMENTED_HISTORY) <= set(data["historical_stats"])
    assert data["historical_stats"]["runs_analyzed"] == 0  # first run of this flow
    assert set(data["recommendations"]["resources"]) == {"cpu", "memory", "gpu", "vram"}
    assert data["step_failed"] is False
    assert data["error"] is None
    assert data["server_info"]["vcpus"] == os.cpu_count()
    # the tracked process is the task process (its pid is in every row)
    pid = data["tracker"]["pid"]
    assert set(data["process_metrics"]["pid"]) == {float(pid)}


def test_metaflow_user_card_below_ours_keeps_working(tracked_run):
    """@track_resources above @card: both cards render and the user's card has its content."""
    task = task_of(tracked_run, "start")
    assert len(_cards(task, "tracked_resources")) == 1
    (user_card,) = _cards(task, "blank")
    assert user_card["id"] == "mine"
    texts = blank_card_texts(user_card["html"])
    assert "# user card above" in texts
    assert any("hello from config" in t for t in texts)  # the flow's Config reached the card
    # current.card.append still reaches the user's card (the default editable one)
    assert any("appended to the default editable card" in t for t in texts)


def test_metaflow_user_card_above_ours_keeps_working(tracked_run):
    """@card above @track_resources (the user's card is counted first by Metaflow)."""
    task = task_of(tracked_run, "fan_out")
    assert len(_cards(task, "tracked_resources")) == 1
    (user_card,) = _cards(task, "blank")
    assert "# user card below" in blank_card_texts(user_card["html"])


def test_metaflow_foreach_gives_one_card_and_artifact_per_task(tracked_run):
    tasks = [t for t in tracked_run["tasks"] if t["step"] == "each"]
    assert len(tasks) == 3
    pids = set()
    for task in tasks:
        assert len(_cards(task, "tracked_resources")) == 1
        data = task["artifacts"]["resource_tracker_data"]
        assert data["step_failed"] is False
        assert data["detailed_stats"]["timestamp"]["duration"] >= 0.3
        pids.add(data["tracker"]["pid"])
    assert len(pids) == 3  # each task tracked its own process


def test_metaflow_create_card_false_gives_artifact_without_card(tracked_run):
    task = task_of(tracked_run, "join")
    assert task["cards"] == []
    data = task["artifacts"]["resource_tracker_data"]
    assert data["step_failed"] is False and len(data["process_metrics"]) >= 1


def test_metaflow_retry_and_catch(tracked_run):
    flaky = task_of(tracked_run, "flaky")
    assert flaky["successful"]
    # the artifact is the successful attempt's; the failed attempt left its own card
    assert flaky["artifacts"]["resource_tracker_data"]["step_failed"] is False
    cards = _cards(flaky, "tracked_resources")
    assert len(cards) == 2
    assert sum("The step failed" in c["html"] for c in cards) == 1
    caught = task_of(tracked_run, "caught")
    assert tracked_run["successful"]  # @catch handled the error: the run went on to `end`
    assert caught["artifacts"]["resource_tracker_data"]["step_failed"] is True
    (card,) = _cards(caught, "tracked_resources")
    assert "The step failed" in card["html"]


def test_metaflow_resources_and_artifact_name(tracked_run):
    big = task_of(tracked_run, "big_memory")["artifacts"]["resource_tracker_data"]
    assert big["detailed_stats"]["process_memory"]["max"] >= 64 * 1024  # KiB: the 64 MB bytearray
    end = task_of(tracked_run, "end")
    assert "rt_end" in end["artifacts"]
    assert end["artifacts"]["rt_end"]["tracker"]["pid"] != big["tracker"]["pid"]


def test_metaflow_failed_step_has_artifact_and_card(failing_run):
    assert failing_run["successful"] is False
    task = task_of(failing_run, "boom")
    assert task["successful"] is False
    data = task["artifacts"]["resource_tracker_data"]
    assert data["step_failed"] is True
    assert data["detailed_stats"]["process_memory"]["max"] >= 100 * 1024  # KiB: held before raising
    assert data["detailed_stats"]["timestamp"]["duration"] >= 0.9
    (card,) = _cards(task, "tracked_resources")
    assert "The step failed" in card["html"]


def test_metaflow_failed_step_card_in_headless_chromium(failing_run, tmp_path):
    (card,) = _cards(task_of(failing_run, "boom"), "tracked_resources")
    dom, errors, shot = chromium_check(card["html"], tmp_path)
    assert errors == []
    assert "The step failed" in dom
    assert os.path.getsize(shot) > 1000


def test_metaflow_failed_step_card_says_why(failing_run):
    """The card of the failed step names the exception (type and message, escaped and
    printable), marks the recommendation of the cut-short run, and shows the flow's step, not
    Metaflow's internal task command line."""
    task = task_of(failing_run, "boom")
    data = task["artifacts"]["resource_tracker_data"]
    message = f"boom after holding {100 * 1024 * 1024} bytes <b>of</b> \x1b[31mdata"
    assert data["step_error"] == {"type": "RuntimeError", "message": message}
    (card,) = _cards(task, "tracked_resources")
    page = card["html"]
    shown = f'with <code class="rt-error">RuntimeError: boom after holding {100 * 2**20} bytes'
    assert shown + " &lt;b&gt;of&lt;/b&gt; data</code>" in page
    assert "<b>of</b>" not in page and "\x1b" not in page and "[31m" not in page
    assert "cut short by its failure" in page
    assert "python mf_failing_flow.py, step boom" in page and "--datastore" not in page


def test_metaflow_history_counts_earlier_runs(history_runs):
    fourth, third, second, first = history_runs
    counts = [
        r and task_of(r, "start")["artifacts"]["resource_tracker_data"]["historical_stats"]
        for r in (first, second, third)
    ]
    assert [c["runs_analyzed"] for c in counts] == [0, 1, 2]
    assert counts[0]["available"] is False and counts[2]["available"] is True
    assert counts[2]["runs"] == [second["id"], first["id"]]
    third_data = task_of(third, "start")["artifacts"]["resource_tracker_data"]
    assert 0 <= third_data["historical_stats"]["lookup_cpu_s"] < 1.0
    # the mean of the earlier runs' own durations (each ~0.5 s of sleep; longer on a busy machine)
    earlier = [
        task_of(r, "start")["artifacts"]["resource_tracker_data"]["detailed_stats"]["timestamp"]
        for r in (first, second)
    ]
    assert all(t["duration"] >= 0.4 for t in earlier), earlier
    mean = (earlier[0]["duration"] + earlier[1]["duration"]) / 2
    assert counts[2]["avg_duration"] == pytest.approx(mean, abs=0.006)  # 2 decimals, as stored
    assert counts[2]["max_memory_max"] > 0
    # history=False on the other step
    off = task_of(third, "no_history")["artifacts"]["resource_tracker_data"]
    assert off["historical_stats"]["runs_analyzed"] == 0
    assert third_data["recommendations"]["resources"]["memory"] >= 128


def test_metaflow_step_succeeds_when_tracking_cannot_start(history_runs):
    fourth = history_runs[0]
    assert fourth["successful"]
    data = task_of(fourth, "start")["artifacts"]["resource_tracker_data"]
    assert "resource tracking could not start" in data["error"]
    assert "bogus" in data["error"]
    assert data["process_metrics"] is None
    # history still works without tracking
    assert data["historical_stats"]["runs_analyzed"] == 3


def test_metaflow_artifact_carries_the_cgroup_figures(tracked_run):
    """The step ran in this machine's cgroup: the container's figures ride in the artifact's
    stats (the two tables keep their seed shape), and the card's tracker rebuilt from the
    artifact shows them too."""
    from metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card import (
        tracked_resources_card as card,
    )
    from resource_tracker.cgroup_usage import read_cgroup

    if read_cgroup(os.getpid()) is None:
        pytest.skip("this machine shows no cgroup for its processes")
    data = task_of(tracked_run, "start")["artifacts"]["resource_tracker_data"]
    cg = data["detailed_stats"]["cgroup"]
    assert cg["version"] in (1, 2)
    assert {"memory_peak_mib", "memory_limit_mib", "cpu_throttled_periods", "oom_kills"} <= set(cg)
    assert card.tracker_from_artifact(data).stats()["cgroup"] == cg


def test_metaflow_failed_step_card_one_value_per_figure(failing_run, tmp_path):
    """The real card in headless Chromium: every place it shows the peak memory, the
    duration, the peak and mean CPU reads one value, the formatter's text of the artifact's
    figures; the visible text keeps the number style (tests/report/report_numbers.py)."""
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "report"))
    from report_browser import Browser
    from report_numbers import PROBE_JS, figures, text_problems

    task = task_of(failing_run, "boom")
    stats = task["artifacts"]["resource_tracker_data"]["detailed_stats"]
    (card,) = _cards(task, "tracked_resources")
    path = tmp_path / "card.html"
    path.write_text(card["html"], encoding="utf-8")
    with Browser() as b:
        b.load(path.as_uri(), "document.documentElement.getAttribute('data-rt-rendered-ms')")
        shown = figures(b.eval(PROBE_JS))
        b.eval("document.querySelectorAll('details').forEach(function (d) { d.open = true; })")
        text = b.eval("document.body.innerText")
        assert b.console_errors() == []
    expected = {
        "peak_memory": fmt.quantity(stats["process_memory"]["max"], "KiB"),
        "duration": fmt.duration(stats["timestamp"]["duration"]),
        "mean_cpu": fmt.quantity(stats["process_cpu_usage"]["mean"], "cores"),
    }
    assert {k: set(shown[k].values()) for k in expected} == {k: {v} for k, v in expected.items()}
    assert len(shown["duration"]) >= 4  # tile, tables, the failure note
    assert text_problems(text) == []


def test_metaflow_artifact_names_the_code_of_a_failed_step(failing_run):
    """The artifact's code_profile (docs/code_profile.md): the step's own function is among
    the top functions, and the raw record is in the tracker snapshot for report reloads."""
    data = task_of(failing_run, "boom")["artifacts"]["resource_tracker_data"]
    entry = data["code_profile"]
    assert entry["status"] == "recorded", entry
    names = {row["function"] for row in entry["functions"]}
    assert "FailingFlow.boom" in names, names
    assert all(
        row["origin"] == "user" or row["function"] != "FailingFlow.boom"
        for row in entry["functions"]
    )
    assert data["tracker"]["code_profile"]["status"] == "recorded"


def test_metaflow_card_shows_where_the_time_and_memory_went(failing_run):
    """The card's section "Where the time and memory went" (report/_code.py) names the step's
    own function, with its file relative to the flow's directory."""
    import re

    (card,) = _cards(task_of(failing_run, "boom"), "tracked_resources")
    html = card["html"]
    assert "Where the time and memory went" in html
    # the step's function and a line of its body (15-18), the path relative to the flow's dir
    found = r"<code>FailingFlow\.boom\(\)</code><br><code>mf_failing_flow\.py:1[5-8]</code>"
    assert re.search(found, html), html[html.find('id="rt-codeview"') :][:3000]
