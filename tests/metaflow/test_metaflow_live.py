"""The card of a running step is re-rendered live, and the final card replaces it.

LiveFlow's step runs ~9 s, growing its memory, with live_interval=1. The test reads the card
file in the local datastore while the flow runs (as `card server` does) and sees several
different live versions with growing sample counts; after the run the card is the final
render. The live renders run outside the task's process tree: the artifact shows no child
processes and next to no CPU for a step that only sleeps.
"""

from __future__ import annotations

import json
import os
import re
import time

from mf_harness import FLOWS, card_files, chromium_check, query, start_flow, task_of


def _data_updates(root, step):
    """The card data updates (JSON) of step in the local datastore."""
    base = os.path.join(str(root), ".metaflow", "mf.cards", "LiveFlow")
    updates = []
    for dirpath, _, files in os.walk(base):
        if f"/steps/{step}/" in dirpath + "/":
            for name in files:
                if name.endswith(".json"):
                    with open(os.path.join(dirpath, name)) as f:
                        updates.append(json.load(f))
    return updates


def test_metaflow_live_card_changes_while_the_step_runs(tmp_path):
    done = tmp_path / "seen-enough"  # the step ends once three live versions were seen
    proc = start_flow(
        tmp_path, os.path.join(FLOWS, "mf_live_flow.py"), env={"MF_LIVE_DONE": str(done)}
    )
    seen = {}  # sample count -> html
    tokens = set()
    deadline = time.time() + 120
    try:
        while proc.poll() is None and time.time() < deadline:
            for path in card_files(tmp_path, "LiveFlow", "long_step"):
                try:
                    with open(path, encoding="utf-8") as f:
                        html = f.read()
                except OSError:
                    continue
                match = re.search(r"Live view: the step is running \((\d+) samples", html)
                if match:
                    seen[int(match.group(1))] = html
            if len(seen) >= 3:
                done.touch()
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.wait(timeout=60) == 0, open(tmp_path / "run.log").read()[-4000:]
    counts = sorted(seen)
    assert len(counts) >= 3, f"live versions seen: {counts}"
    assert counts[-1] > counts[0]
    for html in seen.values():
        assert "window.metaflow_card_update" in html  # lets `card server` follow updates
        token = re.search(r'METAFLOW_RELOAD_TOKEN = "([^"]+)"', html).group(1)
        tokens.add(token)
        assert token.startswith("render-seq-")
    assert len(tokens) >= 3
    dom, errors, _ = chromium_check(seen[counts[-1]], tmp_path)
    assert errors == [] and "Live view" in dom

    (run,) = query(tmp_path, "LiveFlow")
    task = task_of(run, "long_step")
    (card,) = [c for c in task["cards"] if c["type"] == "tracked_resources"]
    assert "Live view" not in card["html"]  # the final render replaced the live ones
    data = task["artifacts"]["resource_tracker_data"]
    # the renders run detached: only their launcher (`sh -c 'cmd &'`, which exits at once)
    # can be caught as a child, by a sample taken in its first milliseconds
    children = data["process_metrics"]["children"]
    assert max(children) <= 2 and sum(1 for c in children if c) <= 0.25 * len(children)
    assert data["detailed_stats"]["process_cpu_usage"]["mean"] < 0.2
    # the last data update tells `card server` that this is the final card
    updates = _data_updates(tmp_path, "long_step")
    assert updates and all(u["reload_token"] == "final" for u in updates)
    assert updates[0]["data"]["status"] == "finished"
    memory = data["process_metrics"]["memory"]
    assert max(memory) - memory[0] >= 50 * 1024  # KiB: the step grew by ~90 MB
