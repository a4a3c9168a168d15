"""The Metaflow card of a tuned step answers first (issue 37): its tuning banner is one
sentence (what changed and the one reason), the details folded under it with each note
once, and on a phone (390 px wide, in a real headless Chromium, network off) the first
screen shows the banner and the recommendation below it.

The tuning is the real rule's (``tune_resources``) on seven earlier runs that a saturated
machine starved, the artifact the decorator's ``build_artifact`` of a real snapshot."""

from __future__ import annotations

import pytest
from report_browser import Browser, chromium_path
from report_data import long_run_snapshot

from resource_tracker import ResourceTracker
from resource_tracker.tuning import tune_resources

pytestmark = pytest.mark.skipif(
    chromium_path() is None, reason="chromium is not installed (make test installs it)"
)
READY = "document.documentElement.getAttribute('data-rt-rendered-ms')"
PHONE = (390, 844)

_SEEN = """(function () {
  var banner = document.querySelector('[role=status]');
  var details = banner.querySelector('details');
  var sentence = banner.querySelector('.rt-banner-text') || banner;
  var rec = document.getElementById('rt-recommended').getBoundingClientRect();
  return {sentence: sentence.textContent,
          shown: banner.innerText, open: details ? details.open : null,
          folded: details ? Array.from(details.querySelectorAll('li')).map(
            function (li) { return li.textContent; }) : [],
          bannerBottom: banner.getBoundingClientRect().bottom,
          recTop: rec.top, recBottom: rec.bottom, height: window.innerHeight,
          text: document.body.textContent};
})()"""


def _starved_runs(n=7):
    """Records of n runs of a 1-core step on a 2-core machine kept busy by others: the step
    got 0.45 core and its tasks waited 0.6 core for a CPU; the machine's CPU was at its 2
    cores."""
    return [
        {"version": 1, "status": "ok", "run": str(100 + i), "memory_peak_mib": 300.0,
         "cpu_p90": 0.45, "cpu_mean": 0.4, "cpu_wait_mean": 0.6, "gpu_peak": 0.0,
         "system_cpu_p90": 2.0, "machine_cores": 2,
         "asked": {"cpu": 1, "memory": 4096, "gpu": None}, "measured": True}
        for i in range(n)
    ]  # fmt: skip


def _tuned_card(tmp_path, failed=False):
    pytest.importorskip("metaflow")
    from metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card import (
        tracked_resources_card as card,
    )
    from metaflow_extensions.resource_tracker.plugins.track_resources_decorator import (
        build_artifact,
    )

    tuning = tune_resources(_starved_runs(), {"cpu": 1, "memory": 4096})
    assert tuning.changes and tuning.note.count("starved by a saturated machine") == 7
    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=600))
    data = build_artifact(tracker, None, failed=failed, label="Flow/1/train/2")
    data["tuning"] = {**tuning.to_dict(), "next": {"cpu": 1, "memory": 512},
                      "next_note": tuning.note}  # fmt: skip
    path = tmp_path / "card.html"
    path.write_text(card.render_artifact(data, label="Flow/1/train/2"), encoding="utf-8")
    return str(path), tuning


@pytest.mark.parametrize("failed", [False, True], ids=["finished", "failed"])
def test_a_tuned_cards_banner_is_one_sentence_and_the_phone_sees_the_answer(tmp_path, failed):
    """Also for a step that failed (its report says so once, the tuning banner stays)."""
    path, tuning = _tuned_card(tmp_path, failed)
    with Browser(*PHONE) as b:
        b.viewport(*PHONE)
        b.load("file://" + path, READY)
        seen = b.eval(_SEEN)
        errors = b.console_errors()
    sentence = seen["sentence"]
    # one sentence: what changed and the one reason
    assert sentence.endswith(".") and ". " not in sentence and "; " not in sentence, sentence
    assert all(change in sentence for change in tuning.changes), sentence
    assert "runs 100 to 106 were starved by a saturated machine" in sentence
    assert len(sentence) <= 200, sentence  # was 900 characters, the note seven times
    # the details are folded, each note once (the seven runs' note is one line)
    assert seen["open"] is False and "Details" in seen["shown"]
    assert "Why it may differ" not in seen["shown"]
    assert seen["text"].count("starved by a saturated machine") == 1, seen["folded"]
    (upcoming,) = [item for item in seen["folded"] if item.startswith("Next run: ")]
    assert ("cut short by its failure" in upcoming) == failed
    assert seen["text"].count("The step failed") == (1 if failed else 0)
    assert len(seen["folded"]) == len(set(seen["folded"]))
    # the first screen: the banner, then the recommendation, whole
    assert seen["bannerBottom"] < seen["height"] / 4, seen
    assert seen["recBottom"] <= seen["height"], seen
    assert errors == []


def test_each_tuning_note_once_its_runs_named_in_a_few_words():
    """The same note on several runs is one line naming the runs briefly (Metaflow's run ids
    are timestamps: never twelve of them in a line); other notes stay, each once, in order."""
    pytest.importorskip("metaflow")
    from metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card import (
        tracked_resources_card as card,
    )

    starved = "starved by a saturated machine: its CPU does not lower the ask"
    runs = ["1733571234", "1733574321", "1733579999", "1733580000", "1733590001"]
    note = "; ".join(f"run {r} was {starved}" for r in runs) + "; memory held at max_memory=4096"
    assert card.distinct_notes(note, f"run 7 was {starved}; memory held at max_memory=4096") == [
        f"runs 1733571234, 1733574321, 1733579999 and 3 more were {starved}",
        "memory held at max_memory=4096",
    ]
    assert card.distinct_notes("run 7 had x; run 8 had x") == ["runs 7 and 8 had x"]
