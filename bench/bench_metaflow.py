"""What @track_resources adds to a Metaflow step's wall time.

A 5-step flow (each step sleeps 0.3 s and touches a little memory) runs in three variants,
alternating, ``--runs`` times each, with local metadata and datastore in a temporary
directory (loopback-only endpoints, cloud discovery on):

- ``plain``: no decorator;
- ``tracked``: ``@track_resources(create_card=False)`` on every step (tracking, history
  lookup of earlier runs, artifact; no card);
- ``carded``: ``@track_resources`` on every step (as above plus the card, rendered by Metaflow
  in a subprocess at the end of each task; live renders are detached).

A step's wall time is Metaflow's own record of the task: ``finished_at - created_at`` from the
client. The report gives per step the median over the runs and the difference to ``plain``;
the goal is <= 50 ms for ``tracked`` (the card rendering of ``carded`` is shown separately).

Usage: python3 bench/bench_metaflow.py [--runs 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

STEPS = ["start", "prepare", "compute", "collect", "end"]

FLOW = """
import time

from metaflow import FlowSpec, step{import_extra}


def work():
    block = bytearray(20 * 1024 * 1024)
    time.sleep(0.3)
    return len(block)


class {name}(FlowSpec):
{steps}

if __name__ == "__main__":
    {name}()
"""

STEP = """
    {decorator}@step
    def {step}(self):
        self.size_{step} = work()
        {next}
"""

QUERY = """
import gzip, json, pickle, sys, time
from metaflow import Flow
out = []
for run in Flow(sys.argv[1]).runs():
    row = {}
    for step in run:
        task = step.task
        hooks = persist = 0.0
        if "resource_tracker_data" in task:
            data = task["resource_tracker_data"].data
            hooks = sum((data.get("overhead_s") or {}).values())
            began = time.perf_counter()
            gzip.compress(pickle.dumps(data, protocol=4), 3)  # what persisting it costs
            persist = time.perf_counter() - began
        row[step.id] = {
            "wall": (task.finished_at - task.created_at).total_seconds(),
            "hooks": hooks,
            "persist": persist,
        }
    out.append(row)
print(json.dumps(out))
"""


def flow_source(name, decorator):
    steps = []
    for i, step in enumerate(STEPS):
        nxt = "" if step == "end" else f"self.next(self.{STEPS[i + 1]})"
        steps.append(STEP.format(decorator=decorator, step=step, next=nxt))
    extra = ", track_resources" if decorator else ""
    return FLOW.format(name=name, steps="".join(steps), import_extra=extra)


VARIANTS = {
    "plain": ("BenchPlainFlow", ""),
    "tracked": ("BenchTrackedFlow", "@track_resources(create_card=False)\n    "),
    "carded": ("BenchCardedFlow", "@track_resources\n    "),
}


def environment(root):
    env = {k: v for k, v in os.environ.items() if not k.startswith("METAFLOW_")}
    env.update(
        METAFLOW_HOME=root,
        METAFLOW_DEFAULT_DATASTORE="local",
        METAFLOW_DEFAULT_METADATA="local",
        METAFLOW_DATASTORE_SYSROOT_LOCAL=root,
        METAFLOW_CLIENT_CACHE_PATH=os.path.join(root, "cache"),
        USERNAME="bench",
        RESOURCE_TRACKER_METADATA_URL="http://127.0.0.1:9",
        RESOURCE_TRACKER_KEEPER_URL="http://127.0.0.1:9",
        RESOURCE_TRACKER_CATALOG_URL="http://127.0.0.1:9/catalog.db.bz2",
    )
    for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy"):
        env.pop(proxy, None)
    return env


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-metaflow-") as root:
        env = environment(root)
        files = {}
        for variant, (name, decorator) in VARIANTS.items():
            path = os.path.join(root, f"{variant}_flow.py")
            with open(path, "w") as f:
                f.write(textwrap.dedent(flow_source(name, decorator)))
            files[variant] = path
        for i in range(args.runs):
            for variant, path in files.items():
                done = subprocess.run(
                    [sys.executable, path, "--no-pylint", "run", "--max-workers", "1"],
                    cwd=root,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                if done.returncode != 0:
                    sys.exit(f"{variant} run failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
            print(f"run {i + 1}/{args.runs} done", file=sys.stderr)
        times = {}
        for variant, (name, _) in VARIANTS.items():
            out = subprocess.run(
                [sys.executable, "-c", QUERY, name],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            rows = json.loads(out.stdout)
            times[variant] = {s: statistics.median(r[s]["wall"] for r in rows) for s in STEPS}
            if variant == "tracked":
                hooks = {s: statistics.median(r[s]["hooks"] for r in rows) for s in STEPS}
                persist = {s: statistics.median(r[s]["persist"] for r in rows) for s in STEPS}

    print(f"Median task wall time per step over {args.runs} runs (ms); diff vs plain;")
    print("hooks: time in our hooks (measured in the task), persist: pickling the artifact")
    print(
        f"{'step':10} {'plain':>8} {'tracked':>8} {'diff':>7} {'carded':>8} {'diff':>7}"
        f" {'hooks':>7} {'persist':>8}"
    )
    figures = []
    for step in STEPS:
        plain, tracked, carded = (times[v][step] * 1000 for v in ("plain", "tracked", "carded"))
        figures.append(
            {
                "step": step,
                "plain_ms": plain,
                "tracked_ms": tracked,
                "tracked_diff_ms": tracked - plain,
                "carded_ms": carded,
                "carded_diff_ms": carded - plain,
                "hooks_ms": hooks[step] * 1000,
                "persist_ms": persist[step] * 1000,
            }
        )
        print(
            f"{step:10} {plain:8.0f} {tracked:8.0f} {tracked - plain:+7.0f} "
            f"{carded:8.0f} {carded - plain:+7.0f} {hooks[step] * 1000:7.1f}"
            f" {persist[step] * 1000:8.1f}"
        )
    mean_diff = statistics.mean(f["tracked_diff_ms"] for f in figures)
    mean_hooks = statistics.mean(f["hooks_ms"] + f["persist_ms"] for f in figures)
    print(f"mean wall-time difference per step without card: {mean_diff:+.0f} ms (goal <= 50 ms)")
    print(f"mean time in our hooks + persisting the artifact: {mean_hooks:.1f} ms per step")
    print("(Metaflow's finished_at is taken before the card render, so 'carded' excludes it)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "runs": args.runs,
                    "steps": figures,
                    "mean_tracked_diff_ms": mean_diff,
                    "mean_hooks_and_persist_ms": mean_hooks,
                },
                f,
            )


if __name__ == "__main__":
    main()
