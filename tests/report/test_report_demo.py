"""examples/demo.py, the Python API's demo, run as a user runs it: what it prints agrees with
the report it writes (the one printer of the Metaflow decorator, tuning.resources_line)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_demo_prints_the_report_s_resources_line(tmp_path):
    env = dict(os.environ, RESOURCE_TRACKER_KEEPER_URL="off", RESOURCE_TRACKER_DISCOVER_CLOUD="0")
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "demo.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (printed,) = re.findall(r"^as Metaflow\s+(.*)$", done.stdout, re.M)
    page = (tmp_path / "report.html").read_text()
    in_report = set(re.findall(r"@resources\((?:cpu|memory|gpu)=[^)]*\)", page))
    assert in_report == {printed}, (printed, in_report)
    assert "gpu=0" not in printed  # no GPU: no gpu= argument, as Metaflow's default
