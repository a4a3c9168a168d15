"""`ResourceTracker.run(command)`: the library runs a command under tracking with the same
supervision as `resource-tracker run` (resource_tracker.supervise). Real subprocess
workloads; each writes its own CPU time (os.times) so the tracker's figures are judged
against what the workload really used. Signal tests run the library in a fresh Python
process (signals are process-wide; pytest's own process is left alone)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from cli_helpers import BURN, TRAP, script, wait_for_file

from resource_tracker import ResourceTracker
from resource_tracker.supervise import CommandRun, CommandStartError

# The command forks a child that touches 80 MiB and burns 0.6 s of CPU; the command itself
# burns 0.4 s, waits for the child, writes both CPU times to argv[1] and exits with 3.
TREE = """
import json, os, sys, time
def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
child = os.fork()
if child == 0:
    buf = bytearray(80 * 2**20)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    burn(0.6)
    os._exit(0)
burn(0.4)
os.waitpid(child, 0)
t = os.times()
with open(sys.argv[1], "w") as f:
    json.dump({"cpu": t.user + t.system + t.children_user + t.children_system}, f)
sys.exit(3)
"""


def test_run_tracks_the_command_and_its_children(tmp_path):
    out = tmp_path / "truth.json"
    run = ResourceTracker.run([*script(TREE), str(out)], interval=0.1, discover_cloud=False)
    assert isinstance(run, CommandRun)
    assert run.status == 3
    assert run.not_tracked is None and run.signals_forwarded == []
    tracker = run.tracker
    assert not tracker.running and tracker.pid == run.pid
    truth = json.loads(out.read_text())
    df = tracker.process_metrics
    cpu = sum(df["utime"]) + sum(df["stime"])
    assert truth["cpu"] * 0.9 <= cpu <= truth["cpu"] * 1.1 + 0.05
    assert max(df["memory"]) >= 80 * 1024 * 0.9  # the child's pages, in KiB
    assert max(df["children"]) >= 1
    assert tracker.extra["exit_status"] == 3
    assert tracker.extra["argv"][-1] == str(out)
    # the stopped tracker is an ordinary one: statistics, recommendation, snapshot
    assert tracker.recommend_resources()["memory"] >= 80
    again = ResourceTracker.loads(tracker.dumps())
    assert again.extra["exit_status"] == 3


def test_run_gives_the_shell_status_of_a_killed_command():
    run = ResourceTracker.run(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"],
        interval=0.1,
        discover_cloud=False,
    )
    assert run.status == 128 + signal.SIGTERM


def test_run_of_a_missing_or_unexecutable_command(tmp_path):
    with pytest.raises(CommandStartError) as missing:
        ResourceTracker.run([str(tmp_path / "no-such-program")], discover_cloud=False)
    assert missing.value.status == 127
    assert "command not found" in str(missing.value)
    plain = tmp_path / "not-executable.sh"
    plain.write_text("#!/bin/sh\nexit 0\n")
    plain.chmod(0o644)
    with pytest.raises(CommandStartError) as denied:
        ResourceTracker.run([str(plain)], discover_cloud=False)
    assert denied.value.status == 126
    assert "permission denied" in str(denied.value)


@pytest.mark.parametrize(
    "command, options, error",
    [
        ("python job.py", {}, ValueError),  # a string, not a list
        ([], {}, ValueError),
        (None, {"interval": -1}, ValueError),
        (None, {"intervall": 1.0}, TypeError),
        (None, {"pid": 1}, TypeError),
    ],
)
def test_run_refuses_bad_arguments_before_starting_anything(tmp_path, command, options, error):
    marker = tmp_path / "started"
    if command is None:
        command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    with pytest.raises(error):
        ResourceTracker.run(command, discover_cloud=False, **options)
    assert not marker.exists()


def test_run_from_another_thread_waits_without_signal_handling(tmp_path):
    """Python handles signals in the main thread only: from another thread the command is
    run and tracked without passing signals on (and without touching the handlers)."""
    out = tmp_path / "burn.json"
    results = {}
    before = signal.getsignal(signal.SIGUSR1)

    def work():
        results["run"] = ResourceTracker.run(
            [*script(BURN), "10", "0.3", str(out)], interval=0.1, discover_cloud=False
        )

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    run = results["run"]
    assert run.status == 0 and run.tracker is not None
    df = run.tracker.process_metrics
    assert sum(df["utime"]) + sum(df["stime"]) >= json.loads(out.read_text())["cpu"] * 0.9
    assert signal.getsignal(signal.SIGUSR1) is before

    def forced():
        try:
            ResourceTracker.run([sys.executable, "-c", "pass"], forward_signals=True)
        except ValueError as exc:
            results["error"] = str(exc)

    thread = threading.Thread(target=forced)
    thread.start()
    thread.join(60)
    assert "needs the main thread" in results["error"]


LIBRARY_RUN = """
import json, sys
from resource_tracker import ResourceTracker
run = ResourceTracker.run(sys.argv[2:], interval=0.1, discover_cloud=False)
with open(sys.argv[1], "w") as f:
    json.dump({"status": run.status, "forwarded": run.signals_forwarded,
               "recorded": run.tracker.extra.get("signals_forwarded")}, f)
"""


def test_run_passes_signals_on_to_the_command(tmp_path):
    """A SIGUSR1 sent to the program that called ResourceTracker.run() reaches the command
    (which exits with 40 + the signal number); the program itself is not interrupted."""
    ready, result = tmp_path / "trap", tmp_path / "result.json"
    program = subprocess.Popen(
        [*script(LIBRARY_RUN), str(result), *script(TRAP), str(ready)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for_file(ready, "ready")
        os.kill(program.pid, signal.SIGUSR1)
        _, stderr = program.communicate(timeout=60)
    finally:
        program.kill()
    assert program.returncode == 0, stderr
    assert ready.read_text() == "SIGUSR1 1"  # delivered once
    got = json.loads(result.read_text())
    assert got == {"status": 40 + signal.SIGUSR1, "forwarded": ["SIGUSR1"], "recorded": ["SIGUSR1"]}


ADOPTING_RUN = """
import json, sys
from resource_tracker import ResourceTracker
run = ResourceTracker.run(sys.argv[2:], interval=0.2, discover_cloud=False, adopt_orphans=True)
df = run.tracker.process_metrics
with open(sys.argv[1], "w") as f:
    json.dump({"status": run.status, "cpu": sum(df["utime"]) + sum(df["stime"])}, f)
"""

DAEMON = """
import json, os, sys, time
out = sys.argv[1]
if os.fork() == 0:
    if os.fork() == 0:  # the grandchild: orphaned once its parent exits
        time.sleep(0.5)
        adopter = os.getppid()
        while time.process_time() < 0.8:
            pass
        t = os.times()
        with open(out, "w") as f:
            json.dump({"adopter": adopter, "cpu": t.user + t.system}, f)
        os._exit(0)
    os._exit(0)
os.wait()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="subreaper: Linux only")
def test_run_with_adopt_orphans_tracks_a_daemon_to_its_end(tmp_path):
    """adopt_orphans: the calling program becomes the command's subreaper, the double-forked
    grandchild becomes its child, is tracked and waited for before run() returns."""
    daemon, result = tmp_path / "daemon.json", tmp_path / "result.json"
    program = subprocess.Popen(
        [*script(ADOPTING_RUN), str(result), *script(DAEMON), str(daemon)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, stderr = program.communicate(timeout=60)
    assert program.returncode == 0, stderr
    truth = json.loads(daemon.read_text())  # written before run() returned
    got = json.loads(result.read_text())
    assert truth["adopter"] == program.pid  # the program inherited it, not init
    assert got["status"] == 0
    assert got["cpu"] >= truth["cpu"] * 0.9


def test_run_of_a_subclass_tracks_with_the_subclass_and_its_options():
    """``cls.run()`` makes its tracker with ``cls`` (supervise takes the class it is given;
    it imported ResourceTracker itself before, whatever class run() was called on): the
    subclass's own options are accepted and its methods serve the stopped run."""

    class LabelledTracker(ResourceTracker):
        def __init__(self, *args, team="none", **kwargs):
            super().__init__(*args, **kwargs)
            self.team = team

        def owner(self):
            return f"{self.team}: exit {self.extra['exit_status']}"

    run = LabelledTracker.run(
        [sys.executable, "-c", "raise SystemExit(5)"], interval=0.1, discover_cloud=False, team="ml"
    )
    assert run.status == 5
    assert type(run.tracker) is LabelledTracker and run.tracker.owner() == "ml: exit 5"
