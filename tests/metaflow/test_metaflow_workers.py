"""@track_resources on a step whose work is done by its workers (docs/code_profile.md,
"Workers of a tracker"): a multiprocessing Pool (fork) and Metaflow's own ``parallel_map``
(a bare fork ending with ``os._exit``). One real run; each worker function measures its own
``thread_time`` and the step keeps that truth as an artifact."""

from __future__ import annotations

import os
import re

import pytest
from mf_harness import FLOWS, query, run_flow, task_of


@pytest.fixture(scope="module")
def crunch(tmp_path_factory):
    root = tmp_path_factory.mktemp("mf-workers")
    done = run_flow(root, os.path.join(FLOWS, "mf_workers_flow.py"))
    assert done.returncode == 0, done.stdout[-4000:]
    (run,) = query(root, "WorkersFlow")
    return task_of(run, "crunch")


def test_the_artifact_names_each_worker_function_with_its_cpu(crunch):
    truth = crunch["artifacts"]["worker_truth"]
    entry = crunch["artifacts"]["resource_tracker_data"]["code_profile"]
    rows = {row["function"]: row for row in entry["functions"]}
    for function, spent in truth.items():
        assert function in rows, sorted(rows)
        row = rows[function]
        assert abs(row["cpu_seconds"] - spent) <= 0.15 + 0.2 * spent, (row, spent)
        assert row["processes"] in (1, 2), row


def test_the_live_card_renders_are_not_the_steps_work(crunch):
    """The live card's renders (``card create`` subprocesses of the step) run without the
    workers' agent: the card's code is not in the step's profile."""
    entry = crunch["artifacts"]["resource_tracker_data"]["code_profile"]
    files = {row["file"] for row in entry["functions"]}
    assert not [f for f in files if f.endswith("tracked_resources_card.py")], files
    # the step's process and its 4 workers, no render
    assert not [row for row in entry["functions"] if row["processes"] > 5], entry["functions"]


def test_the_card_names_the_workers_code_and_its_processes(crunch):
    (card,) = [c for c in crunch["cards"] if c["type"] == "tracked_resources"]
    facts = card["html"].split('class="rt-codeview-facts"')[1].split("</ul>")[0]
    most = re.sub(r"<[^>]+>", "", facts.split("Most CPU in")[1].split("</li>")[0])
    assert re.match(
        r" _burn\(\) at mf_workers_flow\.py:\d+ \(\d+% of the run's CPU, in 4 processes\)", most
    ), most
