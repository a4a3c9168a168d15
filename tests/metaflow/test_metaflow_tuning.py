"""The right-sizing loop on real Metaflow runs with a real memory limit (issue 24).

The task process of the step runs in a real cgroup v1 memory cgroup whose limit is the
step's ask (tests/metaflow/mf_cgroup.py plays the kubelet); the kernel kills it when it
needs more. The loop must end in one run, keep a steady ask, and say the same number in the
artifact, the card and `resource-tracker recommend --metaflow`.
"""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys

import pytest
from mf_cgroup import started_kubelet, v1_memory_root
from mf_harness import FLOWS, hermetic_env, query, run_flow, task_of
from typed_dict_check import assert_typed

from resource_tracker._artifact_types import TrackResourcesArtifact
from resource_tracker.tuning import resources_line

FLOW = os.path.join(FLOWS, "mf_oom_tune_flow.py")


def _run(root, kubelet, **env):
    return run_flow(root, FLOW, env=env, timeout=300, preexec_fn=kubelet.enter_parent)


def _cli(root):
    done = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "recommend", "--metaflow", "OomTuneFlow",
         "--json", "--catalog", os.path.join(str(root), "no-catalog.db")],
        cwd=str(root), env=hermetic_env(root), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)["steps"]["work"]


def _dashboard(root, flow="OomTuneFlow"):
    """What `dashboard --metaflow` says the step `work` needs."""
    done = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "dashboard", "--metaflow", flow, "--json",
         "--catalog", os.path.join(str(root), "no-catalog.db")],
        cwd=str(root), env=hermetic_env(root), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    (step,) = [s for s in json.loads(done.stdout)["steps"] if s["step"] == f"{flow}/work"]
    return step["need"]


@pytest.fixture
def kubelet():
    k = started_kubelet(v1_memory_root(), "work", "memory")
    yield k
    k.remove()


def test_oom_kill_loop_ends_in_one_run_and_the_ask_stays(tmp_path, kubelet):
    # run 1: the step asks 256 MiB, the container gets 256 MiB, the kernel kills the task
    kubelet.set_limit(256)
    first = _run(tmp_path, kubelet)
    assert first.returncode != 0, first.stdout[-3000:]
    assert kubelet.moved, "the task process never reached the limited cgroup"
    with open(os.path.join(kubelet.child, "memory.oom_control")) as f:
        assert "oom_kill 1" in f.read()  # the kernel's OOM killer ended run 1
    # what the next run will ask, by the CLI from the killed run's record
    view = _cli(tmp_path)
    asked_next = view["recommended"]["memory"]
    assert asked_next > 256  # raised above the ask that failed (1.5 x 256, rounded up)
    assert _dashboard(tmp_path) == view["recommended"]  # the 360° view: the same answer
    asks = []
    for _ in range(3):  # run 2 succeeds in one go; runs 3-4: the same ask (no compounding)
        limit = _cli(tmp_path)["recommended"]["memory"]
        kubelet.set_limit(limit)
        done = _run(tmp_path, kubelet)
        assert done.returncode == 0, done.stdout[-3000:]
        (run,) = query(tmp_path, "OomTuneFlow")
        data = task_of(run, "work")["artifacts"]["resource_tracker_data"]
        tuning = data["tuning"]
        # the artifact: what tuning computed, what the pod got (its cgroup limit)
        assert tuning["resources"]["memory"] == limit
        assert tuning["got"]["memory"] == limit
        # the next run's ask: the artifact, the card's summary and the CLI say the same
        assert data["recommendations"]["resources"]["memory"] == tuning["next"]["memory"]
        cli = _cli(tmp_path)["recommended"]
        assert cli["memory"] == tuning["next"]["memory"]
        assert _dashboard(tmp_path) == cli
        # the card: the next run's @resources line, as the CLI prints it
        (card,) = [c for c in task_of(run, "work")["cards"] if c["type"] == "tracked_resources"]
        assert f"Next run: {resources_line(cli)}" in html.unescape(card["html"])
        asks.append(limit)
    assert asks[0] == asked_next
    assert asks[1] == asks[2]  # steady
    assert max(asks) <= 2 * asks[0]


def test_a_retry_attempt_after_an_oom_kill_asks_more(tmp_path, kubelet):
    """@retry: attempt 0 (256 MiB limit) is killed by the kernel; attempt 1 reads attempt
    0's record, asks more (1.5 x 256, rounded up) and succeeds in a container of that size;
    the next run's ask (the CLI) still counts the killed attempt."""
    kubelet.set_attempt_limits([256, 512])
    done = _run(tmp_path, kubelet, RT_TEST_RETRIES=1)
    assert done.returncode == 0, done.stdout[-3000:]
    assert len(kubelet.moved) == 2  # two attempts, each in its own container
    with open(os.path.join(kubelet.per_attempt[0], "memory.oom_control")) as f:
        assert "oom_kill 1" in f.read()
    (run,) = query(tmp_path, "OomTuneFlow")
    data = task_of(run, "work")["artifacts"]["resource_tracker_data"]
    assert_typed(TrackResourcesArtifact, data, "tuned artifact")  # `tuning` as declared
    tuning = data["tuning"]
    assert tuning["resources"]["memory"] == 512 and tuning["got"]["memory"] == 512
    assert "was killed (taken as an OOM kill) at 256 MiB" in tuning["note"]
    # the next run's ask counts the killed attempt on every surface
    cli = _cli(tmp_path)["recommended"]
    assert cli["memory"] == tuning["next"]["memory"] and _dashboard(tmp_path) == cli


REFACTORED = """
from metaflow import FlowSpec, resources, step, track_resources


class RefactorFlow(FlowSpec):
    @step
    def start(self):
        self.next(self.work)

    @track_resources(tune=True, interval=0.2, live=False, create_card=False,
                     history_timeout=60)
    @resources(memory=4096)
    @step
    def work(self):
        block = bytearray(MIB * 2**20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        self.next(self.end)

    @step
    def end(self):
        pass


if __name__ == "__main__":
    RefactorFlow()
"""


def test_a_refactored_step_is_sized_on_its_new_code(tmp_path):
    """Issue 37: two runs of a step holding 600 MiB, then its code changes to hold 40 MiB:
    the new code's run says what the next run needs (the records carry a fingerprint of
    the step function), not the old code's 600 MiB; the CLI says the same."""
    flow = os.path.join(str(tmp_path), "refactor_flow.py")
    for mib, runs in ((600, 2), (40, 1)):
        with open(flow, "w") as f:
            f.write(REFACTORED.replace("MIB", str(mib)))
        for _ in range(runs):
            done = run_flow(tmp_path, flow, timeout=300)
            assert done.returncode == 0, done.stdout[-3000:]
    newest = query(tmp_path, "RefactorFlow")[0]
    tuning = task_of(newest, "work")["artifacts"]["resource_tracker_data"]["tuning"]
    assert tuning["resources"]["memory"] > 600  # asked from the old code's runs
    assert tuning["next"]["memory"] < 600 <= tuning["resources"]["memory"]
    assert "older code left out" in tuning["next_note"]
    done = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "recommend", "--metaflow", "RefactorFlow",
         "--json", "--catalog", os.path.join(str(tmp_path), "no-catalog.db")],
        cwd=str(tmp_path), env=hermetic_env(tmp_path), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    cli = json.loads(done.stdout)["steps"]["work"]["recommended"]
    assert {k: cli[k] for k in ("cpu", "memory")} == {
        k: tuning["next"][k] for k in ("cpu", "memory")
    }
    assert _dashboard(tmp_path, "RefactorFlow") == cli  # the 360° view weighs the new code too


def test_forged_records_are_skipped_and_tuning_stays_on(tmp_path):
    """Issue 41: the stored records of two earlier runs forged (a 400-digit peak, limits as
    text): the next run is still tuned (a line for each skipped record, no "not tuned"),
    and `dashboard --metaflow` and `recommend --metaflow` answer without a traceback."""
    flow = os.path.join(str(tmp_path), "refactor_flow.py")
    with open(flow, "w") as f:
        f.write(REFACTORED.replace("MIB", "40"))
    for _ in range(3):
        done = run_flow(tmp_path, flow, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:]
    stored = sorted(  # in the local datastore, .metaflow/<flow>/<run>/work/<task>/
        os.path.join(folder, name)
        for folder, _, names in os.walk(str(tmp_path))
        for name in names
        if name.endswith(".resource_tracker_record") and os.sep + "work" + os.sep in folder
    )
    assert len(stored) == 3, stored
    for path, forged in zip(stored[:2], ({"memory_peak_mib": 10**400}, {"limits": "16Gi"})):
        with open(path) as f:
            record = json.load(f)
        with open(path, "w") as f:
            json.dump(dict(record, **forged), f)
    done = run_flow(tmp_path, flow, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    tuning = task_of(query(tmp_path, "RefactorFlow")[0], "work")["artifacts"][
        "resource_tracker_data"]["tuning"]  # fmt: skip
    assert tuning["resources"].get("memory"), tuning
    assert tuning["note"].count("skipped") == 2 and "not tuned" not in tuning["note"], tuning
    for command in (["dashboard", "--metaflow", "RefactorFlow", "--json"],
                    ["recommend", "--metaflow", "RefactorFlow", "--json"]):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "resource_tracker", *command, "--catalog",
             os.path.join(str(tmp_path), "no-catalog.db")],
            cwd=str(tmp_path), env=hermetic_env(tmp_path), capture_output=True, text=True,
            timeout=180,
        )  # fmt: skip
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
        json.loads(done.stdout)
