"""The card of a running step is re-rendered live, and the final card replaces it.

LiveFlow's step runs ~9 s, growing its memory, with live_interval=1. The test reads the card
file in the local datastore while the flow runs (as `card server` does) and sees several
different live versions with growing sample counts; after the run the card is the final
render. A refresh starts no process: the artifact shows no child process and next to no CPU
for a step that only sleeps.

LiveCpuFlow's step runs in a real cgroup v1 with a 1-core CPU limit (tests/metaflow/
mf_cgroup.py plays the kubelet): the kernel throttles it no more with the live card than
without it.
"""

from __future__ import annotations

import json
import os
import re
import time

import pytest
from mf_cgroup import cpu_stat, started_kubelet, v1_cpu_root
from mf_harness import FLOWS, card_files, chromium_check, query, run_flow, start_flow, task_of

from resource_tracker.insights import was_throttled

#: Throttled periods a loaded machine adds to a run by chance (seen: 1, of 81, with
#: live=False); a `card create` process per refresh added 33 of 81.
NOISE = 2


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
        # rendered in the task process: no catalog asked, no server tile, no warning of it
        assert 'id="rt-best-server"' not in html and "Server prices" not in html
        assert "The final report, with server prices, replaces this page" in html
        assert 'class="rt-status rt-status-running"' in html  # never 'Finished' while it runs
    assert len(tokens) >= 3
    dom, errors, _ = chromium_check(seen[counts[-1]], tmp_path)
    assert errors == [] and "Live view" in dom

    (run,) = query(tmp_path, "LiveFlow")
    task = task_of(run, "long_step")
    (card,) = [c for c in task["cards"] if c["type"] == "tracked_resources"]
    assert "Live view" not in card["html"]  # the final render replaced the live ones
    assert 'class="rt-status rt-status-finished"' in card["html"]
    data = task["artifacts"]["resource_tracker_data"]
    assert data["live_card"]["renders"] >= 3 and data["live_card"]["errors"] == []
    assert max(data["process_metrics"]["children"]) == 0  # a refresh starts no process
    assert data["detailed_stats"]["process_cpu_usage"]["mean"] < 0.2
    # the last data update tells `card server` that this is the final card
    updates = _data_updates(tmp_path, "long_step")
    assert updates and all(u["reload_token"] == "final" for u in updates)
    assert updates[0]["data"]["status"] == "finished"
    memory = data["process_metrics"]["memory"]
    assert max(memory) - memory[0] >= 50 * 1024  # KiB: the step grew by ~90 MB


@pytest.fixture
def cpu_kubelet():
    k = started_kubelet(v1_cpu_root(), "work", "cpu")
    k.set_cpu_limit(1)
    yield k
    k.remove()


def test_the_live_card_costs_a_1_core_step_no_throttled_period(tmp_path, cpu_kubelet):
    """The same step (a worker at ~0.4 core) in the same 1-core cgroup, live card on
    (refreshed every second) and off: the kernel's throttled periods during the step are
    the same, and so are the tracker's, up to the noise of a loaded machine (a period or
    two throttled for a few ms either way, in the live=False run as well: NOISE), far from
    the third of the periods a `card create` process per refresh got throttled. Neither run
    counts as throttled (insights.was_throttled: the share and the time floor)."""
    seen = {}
    for live in ("1", "0"):
        root = tmp_path / f"live{live}"
        env = {"RT_TEST_LIVE": live, "RT_TEST_CPU_STAT": os.path.join(cpu_kubelet.child,
               "cpu.stat")}  # fmt: skip
        done = run_flow(root, os.path.join(FLOWS, "mf_live_cpu_flow.py"), env=env,
                        timeout=300, preexec_fn=cpu_kubelet.enter_parent)  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:]
        (run,) = query(root, "LiveCpuFlow")
        artifacts = task_of(run, "work")["artifacts"]
        seen[live] = (artifacts["cpu_stat"], artifacts["resource_tracker_data"])
    assert len(cpu_kubelet.moved) == 2  # both task processes ran in the 1-core cgroup
    assert cpu_stat(cpu_kubelet.child)["nr_periods"] > 0
    (kernel_on, data_on), (kernel_off, data_off) = seen["1"], seen["0"]
    assert min(kernel_on["nr_periods"], kernel_off["nr_periods"]) >= 40  # a busy 4 s at least
    assert kernel_on["nr_throttled"] <= kernel_off["nr_throttled"] + NOISE, (kernel_on, kernel_off)
    assert data_on["live_card"]["renders"] >= 3 and data_on["live_card"]["errors"] == []
    assert "live_card" not in data_off
    tracked = [d["detailed_stats"]["cgroup"] for d in (data_on, data_off)]
    assert all(cg["cpu_limit_cores"] == 1 for cg in tracked)
    assert tracked[0]["cpu_throttled_periods"] <= tracked[1]["cpu_throttled_periods"] + NOISE, (
        tracked
    )
    for cg in tracked:  # the tracker's verdict: not throttled, with the live card or without
        share = cg["cpu_throttled_periods"] / cg["cpu_periods"]
        assert not was_throttled(share, cg.get("cpu_throttled_seconds")), cg
