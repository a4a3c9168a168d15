"""Read a flow's runs with the Metaflow client and pickle them (used by mf_harness.query).

Usage: python mf_query.py FLOW_NAME OUT.pickle [--all]

For the latest run (or every run with --all): id, successful, finished, and for every task
its step, id, successful, the @track_resources artifacts found in it and its cards (type,
id, HTML).
"""

from __future__ import annotations

import pickle
import sys

ARTIFACTS = (
    "resource_tracker_data",
    "rt_end",
    "cpu_seconds",
    "asked_inside",
    "spin_share",
    "cpu_stat",
    "worker_truth",
)


def task_record(task):
    from metaflow.cards import get_cards

    record = {
        "pathspec": task.pathspec,
        "step": task.parent.id,
        "id": task.id,
        "successful": task.successful,
        "artifacts": {},
        "cards": [],
    }
    for name in ARTIFACTS:
        if name in task:
            record["artifacts"][name] = task[name].data
    try:
        cards = list(get_cards(task))
    except Exception:
        cards = []
    for card in cards:
        record["cards"].append({"type": card.type, "id": card.id, "html": card.get()})
    return record


def run_record(run):
    tasks = [task_record(task) for step in run for task in step]
    return {"id": run.id, "successful": run.successful, "finished": run.finished, "tasks": tasks}


def main(argv):
    from metaflow import Flow

    flow_name, out = argv[1], argv[2]
    flow = Flow(flow_name)
    runs = list(flow.runs()) if "--all" in argv else [flow.latest_run]
    with open(out, "wb") as f:
        pickle.dump([run_record(run) for run in runs], f)


if __name__ == "__main__":
    main(sys.argv)
