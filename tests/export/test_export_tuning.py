"""One answer everywhere (issue 24, point 4): a tuned Metaflow step pushes to a real
Pushgateway (loopback) the same recommended request as its artifact, its card's summary and
`resource-tracker recommend --metaflow` give; the push is computed after the ask and the
history are attached (the tuning's min_memory guardrail, 2048 MiB, is above what the
step's peak alone would give)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request

import pytest
from mf_harness import FLOWS, hermetic_env, query, run_flow, task_of
from servers import start_pushgateway

pytest.importorskip("metaflow")
MIB = 1024 * 1024


def _pushed(url, name, step):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    pattern = rf'^{name}\{{[^}}]*step="{step}"[^}}]*\}} (\S+)$'
    return [float(v) for v in re.findall(pattern, text, re.M)]


def test_tuned_step_pushes_the_artifacts_recommendation(tmp_path):
    pushgateway = start_pushgateway(str(tmp_path))
    try:
        env = {"RESOURCE_TRACKER_EXPORT": "pushgateway", "RT_TEST_ALLOC_MIB": "50",
               "RESOURCE_TRACKER_PUSHGATEWAY_URL": pushgateway.url,
               "RT_TEST_MIN_MEMORY": "2048"}  # fmt: skip
        done = run_flow(tmp_path, os.path.join(FLOWS, "mf_oom_tune_flow.py"), env=env)
        assert done.returncode == 0, done.stdout[-3000:]
        pushed = _pushed(pushgateway.url, "resource_tracker_recommended_memory_bytes", "work")
    finally:
        pushgateway.stop()
    (run,) = query(tmp_path, "OomTuneFlow")
    data = task_of(run, "work")["artifacts"]["resource_tracker_data"]
    assert data["detailed_stats"]["process_memory"]["max"] < 1024 * 1024  # < 1 GiB peak
    recommended = data["recommendations"]["resources"]
    assert recommended["memory"] == data["tuning"]["next"]["memory"] == 2048
    assert pushed == [2048 * MIB]
    cli = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "recommend", "--metaflow", "OomTuneFlow",
         "--json", "--catalog", os.path.join(str(tmp_path), "no-catalog.db")],
        cwd=str(tmp_path), env=hermetic_env(tmp_path), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert json.loads(cli.stdout)["steps"]["work"]["recommended"]["memory"] == 2048
