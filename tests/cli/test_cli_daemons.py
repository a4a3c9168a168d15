"""`resource-tracker run` with a command that leaves a daemon behind: its child double-forks
(the grandchild is orphaned) and the command exits. The CLI is the subreaper of the command,
so the orphan becomes the CLI's child, stays in the tracked workload, is waited for and is
reaped. Real processes; the grandchild reports its own CPU time and parent."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from cli_helpers import CLI, script

from resource_tracker import ResourceTracker

DAEMON = """
import json, os, sys, time
out = sys.argv[1]
child = os.fork()
if child == 0:
    if os.fork() == 0:  # the grandchild: orphaned once its parent exits
        time.sleep(0.5)
        adopter = os.getppid()
        buf = bytearray(150 * 2**20)
        for i in range(0, len(buf), 4096):
            buf[i] = 1
        while time.process_time() < 1.0:
            pass
        time.sleep(1.0)
        t = os.times()
        with open(out, "w") as f:
            json.dump({"adopter": adopter, "cpu": t.user + t.system, "pid": os.getpid()}, f)
        os._exit(0)
    os._exit(0)
os.waitpid(child, 0)
"""


@pytest.mark.parametrize("interval", ["1.0", "0.1"])
def test_run_tracks_a_double_forked_grandchild_to_its_end(tmp_path, interval):
    out = tmp_path / "grandchild.json"
    cli = subprocess.Popen(
        [*CLI, "run", "--interval", interval, "-o", str(tmp_path), "-f", "json", "--",
         *script(DAEMON), str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, stderr = cli.communicate(timeout=60)
    assert cli.returncode == 0, stderr
    # the CLI waited for the grandchild: it had written its figures before the CLI exited
    truth = json.loads(out.read_text())
    assert truth["adopter"] == cli.pid  # the CLI inherited it (subreaper), not init
    with open(tmp_path / "resource-tracker.json") as f:
        tracker = ResourceTracker.loads(f.read())
    df = tracker.process_metrics
    cpu = sum(df["utime"]) + sum(df["stime"])
    assert cpu >= truth["cpu"] * 0.95  # the grandchild's CPU is in the workload's
    assert max(df["memory"]) >= 150 * 1024 * 0.95  # and so is its memory
    assert not os.path.exists(f"/proc/{truth['pid']}")  # reaped, not left a zombie


SHORT_DAEMONS = """
import json, os, sys, time
out = sys.argv[1]
pids = []
for i in range(3):
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        grandchild = os.fork()
        if grandchild == 0:  # orphaned at once; burns 0.3 s of CPU, says how much, exits
            time.sleep(0.3)
            while time.process_time() < 0.3:
                pass
            t = os.times()
            with open(f"{out}.{i}", "w") as f:
                f.write(str(t.user + t.system))
            os._exit(0)
        os.write(w, str(grandchild).encode())
        os._exit(0)
    os.close(w)
    pids.append(int(os.read(r, 32)))
    os.waitpid(child, 0)
# the command runs on until the CLI has reaped every grandchild (gone from /proc), however
# long a busy machine makes that take; the bound only keeps a broken CLI from hanging the test
deadline = time.monotonic() + 45
while any(os.path.exists(f"/proc/{p}") for p in pids) and time.monotonic() < deadline:
    time.sleep(0.05)
with open(out, "w") as f:
    json.dump({"left": [p for p in pids if os.path.exists(f"/proc/{p}")]}, f)
"""


def test_run_reaps_orphans_that_exit_while_the_command_runs(tmp_path):
    """Orphans that exit during the run are reaped then (no pile of zombies in a long run),
    after the sampler read their final CPU: what the three said they used is counted."""
    out = tmp_path / "left.json"
    cli = subprocess.run(
        [*CLI, "run", "--interval", "0.5", "-o", str(tmp_path), "-f", "json", "--",
         *script(SHORT_DAEMONS), str(out)],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert json.loads(out.read_text())["left"] == []
    used = sum(float((tmp_path / f"left.json.{i}").read_text()) for i in range(3))
    with open(tmp_path / "resource-tracker.json") as f:
        df = ResourceTracker.loads(f.read()).process_metrics
    assert sum(df["utime"]) + sum(df["stime"]) >= used * 0.9, used
