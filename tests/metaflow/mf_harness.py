"""Running real Metaflow flows hermetically for the @track_resources tests.

Each flow runs as ``python flow.py --no-pylint run`` in a subprocess with a temporary
directory as cwd, datastore root, METAFLOW_HOME and client cache, local metadata and
datastore, USERNAME=tester and no METAFLOW_PROFILE. Every product endpoint points at a dead
loopback port (as tests/conftest.py does for in-process tests). Results are read back with the
Metaflow client in another subprocess (mf_query.py) under the same environment, because the
client fixes its configuration when it is first imported.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FLOWS = os.path.join(HERE, "flows")
REPO = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(REPO, "examples", "metaflow")
LOOPBACK_DEAD_END = "http://127.0.0.1:9"

# the keys of historical_stats, in the order of the seeds' docs page ("Artifacts")
DOCUMENTED_HISTORY = (
    "available",
    "runs_analyzed",
    "avg_cpu_mean",
    "max_memory_max",
    "avg_gpu_mean",
    "max_vram_max",
    "max_gpu_count",
    "avg_duration",
)


def hermetic_env(root, **extra):
    """The environment of a flow run rooted at root."""
    env = dict(os.environ)
    for name in list(env):
        if name.startswith("METAFLOW_") or name.lower().endswith("_proxy"):
            del env[name]
    for name in ("RESOURCE_TRACKER_EXPORT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"):
        env.pop(name, None)
    env.update(
        METAFLOW_HOME=str(root),
        METAFLOW_DEFAULT_DATASTORE="local",
        METAFLOW_DEFAULT_METADATA="local",
        METAFLOW_DATASTORE_SYSROOT_LOCAL=str(root),
        METAFLOW_CLIENT_CACHE_PATH=os.path.join(str(root), "cache"),
        USERNAME="tester",
        RESOURCE_TRACKER_METADATA_URL=LOOPBACK_DEAD_END,
        RESOURCE_TRACKER_KEEPER_URL=LOOPBACK_DEAD_END,
        RESOURCE_TRACKER_CATALOG_URL=LOOPBACK_DEAD_END + "/catalog.db.bz2",
        RESOURCE_TRACKER_PUSHGATEWAY_URL=LOOPBACK_DEAD_END,
        OTEL_EXPORTER_OTLP_ENDPOINT=LOOPBACK_DEAD_END,
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


def flow_command(flow_file, *args):
    return [sys.executable, flow_file, "--no-pylint", "run", *args]


def run_flow(root, flow_file, *args, env=None, timeout=900, preexec_fn=None):
    """Run a flow to completion; the CompletedProcess (stdout+stderr in .stdout). The timeout
    is a guard against a hang only: a busy machine (a shared CI runner, load 10 and more on
    2 cores) takes minutes to run a flow's steps.
    ``preexec_fn``: run in the flow's process before it starts (e.g. to enter a cgroup)."""
    os.makedirs(str(root), exist_ok=True)
    return subprocess.run(
        flow_command(flow_file, *args),
        cwd=str(root),
        env=hermetic_env(root, **(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        preexec_fn=preexec_fn,
    )


def start_flow(root, flow_file, *args, env=None):
    """Start a flow run in the background (a Popen; output in root/run.log)."""
    os.makedirs(str(root), exist_ok=True)
    log = open(os.path.join(str(root), "run.log"), "w")
    return subprocess.Popen(
        flow_command(flow_file, *args),
        cwd=str(root),
        env=hermetic_env(root, **(env or {})),
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def query(root, flow_name, all_runs=False):
    """Runs of flow_name (newest first) as read by the Metaflow client (see mf_query.py)."""
    out = os.path.join(str(root), f"query-{flow_name}.pickle")
    cmd = [sys.executable, os.path.join(HERE, "mf_query.py"), flow_name, out]
    if all_runs:
        cmd.append("--all")
    done = subprocess.run(
        cmd,
        cwd=str(root),
        env=hermetic_env(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout
    with open(out, "rb") as f:
        return pickle.load(f)


def task_of(run, step, index=0):
    """The index-th task (by task id) of step in a queried run."""
    tasks = sorted((t for t in run["tasks"] if t["step"] == step), key=lambda t: int(t["id"]))
    return tasks[index]


def card_files(root, flow_name, step):
    """Paths of the card HTML files of step in the local datastore."""
    base = os.path.join(str(root), ".metaflow", "mf.cards", flow_name)
    found = []
    for dirpath, _, files in os.walk(base):
        if f"/steps/{step}/" in dirpath + "/":
            found += [os.path.join(dirpath, f) for f in files if f.endswith(".html")]
    return found


def blank_card_texts(html):
    """The markdown sources shown by a Metaflow blank/default card (its embedded data)."""
    import base64
    import json
    import re

    texts = []
    for blob in re.findall(r'window\.__MF_DATA__\[[^\]]*\]\s*=\s*"([^"]*)"', html):
        data = json.loads(base64.b64decode(blob))

        def walk(node):
            if isinstance(node, dict):
                if node.get("type") == "markdown":
                    texts.append(node.get("source", ""))
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(data)
    return texts


def chromium_check(html, tmp_dir):
    """Load html in headless Chromium: (rendered DOM text, console lines with errors).

    Also takes a screenshot (returned path) to show the page renders to pixels.
    """
    import shutil

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser, "headless Chromium is needed for the card checks"
    page = os.path.join(str(tmp_dir), "card.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write(html)
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr"]
    dom = subprocess.run(
        base + ["--v=0", "--dump-dom", "file://" + page],
        capture_output=True,
        text=True,
        timeout=60,
    )
    shot = os.path.join(str(tmp_dir), "card.png")
    subprocess.run(
        base + ["--window-size=1200,900", f"--screenshot={shot}", "file://" + page],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=60,
    )
    errors = [
        line
        for line in dom.stderr.splitlines()
        if ":CONSOLE" in line and ("Uncaught" in line or "Error" in line)
    ]
    return dom.stdout, errors, shot
