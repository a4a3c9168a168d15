"""`resource-tracker run`: real commands tracked through the real entry point (subprocesses).

Each promise of the README/issue is one test: the figures match the workload, the exit
status is the command's own, signals reach the command and the data is still written,
children are counted, stdin/stdout/stderr are the command's, every format reads back.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import sysconfig
import time

import pytest
from cli_helpers import (
    BURN,
    CLI,
    TRAP,
    pty_run,
    read_pty,
    report_available,
    run_cli,
    script,
    summary_figures,
    wait_for_child,
    wait_for_file,
    wait_pid,
)

from resource_tracker import ResourceTracker
from resource_tracker import formatting as fmt
from resource_tracker._version import __version__
from resource_tracker.names import PROCESS_COLUMNS, SYSTEM_COLUMNS


def test_run_burning_one_core_with_200_mib_reports_the_workload(tmp_path):
    """~1 core busy for 2 s of CPU with 200 MiB touched: the summary and the JSON say so. The
    command's own CPU and wall time are the truth, so a busy machine (which gives it less than
    a core) is no error; on a quiet one it reads one core."""
    out = tmp_path / "out"
    truth_file = tmp_path / "truth.json"
    result = run_cli(
        "run", "--interval", "0.2", "--output", str(out), "--format", "json,csv,html",
        "--", *script(BURN), "200", "2", str(truth_file),
        timeout=600,  # 2 s of CPU: a minute of wall time beside 8 busy loops and more
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""  # the summary goes to stderr only
    fig = summary_figures(result.stderr)
    truth = json.loads(truth_file.read_text())
    assert fig["status"] == "exited with status 0"
    assert 2.0 <= fig["duration"] <= truth["wall"] + 3.0
    assert fig["samples"] >= 8
    # allocation + 2 s spinning: the share of a core it got on average, never above one core
    share = truth["cpu"] / fig["duration"]
    assert abs(fig["cpu_mean"] - share) <= 0.1, (fig, truth)
    if truth["cpu"] / truth["wall"] > 0.95:  # a quiet machine gave it a whole core
        assert 0.85 <= fig["cpu_mean"] <= 1.08, fig
        assert 0.95 <= fig["cpu_peak"], fig
    assert fig["cpu_peak"] <= 1.2, fig
    # 200 MiB touched plus the interpreter (~10-15 MiB)
    assert 200 <= fig["memory_mib"] <= 240, fig
    assert fig["rec_cpu"] == 1
    assert fig["rec_memory"] >= fig["memory_mib"] * 1.2 - 0.1
    assert fig["rec_memory"] in (256, 512)

    # the JSON snapshot reads back and holds the same figures
    with open(out / "resource-tracker.json") as f:
        tracker = ResourceTracker.loads(f.read())
    stats = tracker.stats()
    # shown with three significant digits (resource_tracker.formatting)
    assert (
        float(fmt.quantity(stats["process_cpu_usage"]["mean"], "cores").split()[0])
        == fig["cpu_mean"]
    )
    assert float(fmt.number(round(stats["process_cpu_usage"]["max"], 2))) == fig["cpu_peak"]
    peak_mib = stats["process_memory"]["max"] / 1024
    assert abs(peak_mib - fig["memory_mib"]) <= 0.005 * peak_mib
    assert tracker.recommend_resources() == {
        "cpu": fig["rec_cpu"], "memory": fig["rec_memory"], "gpu": 0, "vram": 0,
    }  # fmt: skip
    assert tracker.extra["exit_status"] == 0
    assert tracker.extra["argv"][0] == sys.executable
    assert "bytearray" in tracker.command
    # the tracked pid is the command, not resource-tracker (our own CPU is not counted)
    assert set(tracker.process_metrics["pid"]) == {float(tracker.pid)}
    assert tracker.n_samples == fig["samples"]

    # the CSV files hold exactly the snapshot's tables
    for table, names in (("process", PROCESS_COLUMNS), ("system", SYSTEM_COLUMNS)):
        with open(out / f"resource-tracker-{table}.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        df = getattr(tracker, f"{table}_metrics")
        assert list(rows[0]) == list(names)
        assert len(rows) == len(df) >= 8
        for name in names:
            assert [float(r[name]) for r in rows] == df[name]

    html = out / "resource-tracker.html"
    if report_available():
        assert html.exists() and html.stat().st_size > 1000
        assert "<html" in html.read_text(encoding="utf-8").lower()
    else:
        assert not html.exists()
        assert "html skipped: the HTML report is not available" in result.stderr


@pytest.mark.parametrize(
    "shell, status, words",
    [
        ("exit 0", 0, "exited with status 0"),
        ("exit 3", 3, "exited with status 3"),
        ("kill -9 $$", 128 + 9, "was killed by SIGKILL (exit status 137)"),
        ("kill -15 $$", 128 + 15, "was killed by SIGTERM (exit status 143)"),
    ],
)
def test_run_exit_status_is_the_commands_own(tmp_path, shell, status, words):
    result = run_cli("run", "--interval", "0.2", "-o", str(tmp_path), "-f", "json",
                     "--", "sh", "-c", shell)  # fmt: skip
    assert result.returncode == status, result.stderr
    assert words in result.stderr.splitlines()[0]
    with open(tmp_path / "resource-tracker.json") as f:
        assert ResourceTracker.loads(f.read()).extra["exit_status"] == status


# The same entry point on a Python without signal.sigtimedwait (macOS): handlers forward.
NO_SIGTIMEDWAIT = [
    sys.executable, "-c",
    "import signal, sys; del signal.sigtimedwait\n"
    "from resource_tracker.cli import main; sys.exit(main(sys.argv[1:]))",
]  # fmt: skip


@pytest.mark.parametrize("entry", ["linux", "fallback"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGUSR1])
def test_run_forwards_signals_and_still_writes_the_data(tmp_path, sig, entry):
    """A signal sent to resource-tracker (kill) reaches the command; the JSON is written."""
    marker = tmp_path / "marker"
    cli = CLI if entry == "linux" else NO_SIGTIMEDWAIT
    proc = subprocess.Popen(
        [*cli, "run", "--interval", "0.2", "-o", str(tmp_path), "-f", "json,csv",
         "--", *script(TRAP), str(marker)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for_file(marker, "ready")
        time.sleep(0.5)  # a few samples
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 40 + sig, err  # the command's own exit status
    assert marker.read_text() == f"{sig.name} 1"  # it got the signal, exactly once
    with open(tmp_path / "resource-tracker.json") as f:
        tracker = ResourceTracker.loads(f.read())
    assert tracker.extra["signals_forwarded"] == [sig.name]
    assert tracker.extra["exit_status"] == 40 + sig
    assert tracker.n_samples >= 3
    assert (tmp_path / "resource-tracker-system.csv").exists()
    assert f"exited with status {40 + sig}" in err
    assert "Traceback" not in err


def test_run_sigterm_kills_a_command_without_handler(tmp_path):
    """`sleep` has no handler: SIGTERM to resource-tracker ends it, status 128+15."""
    proc = subprocess.Popen(
        [*CLI, "run", "--interval", "0.2", "-o", str(tmp_path), "-f", "json", "--",
         "sleep", "30"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert wait_for_child(proc.pid, "sleep"), "the command never started"
        start = time.monotonic()
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert time.monotonic() - start < 5
    assert "was killed by SIGTERM" in err
    assert (tmp_path / "resource-tracker.json").exists()


def test_run_ctrl_c_at_a_terminal_reaches_the_command_once(tmp_path):
    """Ctrl-C typed at a (pseudo-)terminal signals the whole foreground group: the command
    gets it from the terminal, and resource-tracker must not deliver it a second time."""
    marker = tmp_path / "marker"
    argv = [*CLI, "run", "--interval", "0.2", "-o", str(tmp_path), "-f", "json",
            "--", *script(TRAP), str(marker)]  # fmt: skip
    pid, fd = pty_run(argv)
    output = b""
    try:
        wait_for_file(marker, "ready")
        time.sleep(0.3)
        os.write(fd, b"\x03")
        output = read_pty(fd, 30)
        wstatus = wait_pid(pid)
    finally:
        os.close(fd)
    assert os.waitstatus_to_exitcode(wstatus) == 40 + signal.SIGINT, output
    assert marker.read_text() == "SIGINT 1"
    with open(tmp_path / "resource-tracker.json") as f:
        assert "signals_forwarded" not in ResourceTracker.loads(f.read()).extra


def test_run_counts_children_and_their_cpu(tmp_path):
    """The command sleeps while two child processes each burn 1.5 s of CPU (CPU time, not wall
    time). The truth is the command's own: its children's CPU from wait4 (os.times) and the
    wall time from their start to their end; a busy machine stretches the time, not the CPU."""
    parent = """
        import json, os, subprocess, sys, time
        burn = "import time\\nwhile time.process_time() < 1.5: pass"
        start = time.monotonic()
        kids = [subprocess.Popen([sys.executable, "-c", burn]) for _ in range(2)]
        for k in kids:
            k.wait()
        span = time.monotonic() - start
        t = os.times()
        with open(sys.argv[1], "w") as f:
            json.dump({"kids": t.children_user + t.children_system, "span": span,
                       "all": t.user + t.system + t.children_user + t.children_system}, f)
    """
    truth_file = tmp_path / "truth.json"
    result = run_cli("run", "--interval", "0.2", "-o", str(tmp_path), "-f", "json",
                     "--", *script(parent), str(truth_file))  # fmt: skip
    assert result.returncode == 0, result.stderr
    truth = json.loads(truth_file.read_text())
    fig = summary_figures(result.stderr)
    assert fig["children"] == 2
    with open(tmp_path / "resource-tracker.json") as f:
        tracker = ResourceTracker.loads(f.read())
    assert max(tracker.process_metrics["children"]) == 2
    assert fig["cpu_peak"] == round(max(tracker.process_metrics["cpu_usage"]), 2)
    # both children at once: the peak is at least the pair's mean rate over their lifetime
    # (the samples inside it average that rate; the margin is the partial samples at its ends)
    assert fig["cpu_peak"] >= 0.75 * truth["kids"] / truth["span"], (fig, truth)
    # all of the command's and its children's CPU counted (utime+stime are per interval)
    cpu_seconds = sum(tracker.process_metrics["utime"]) + sum(tracker.process_metrics["stime"])
    assert 0.9 * truth["all"] <= cpu_seconds <= 1.1 * truth["all"] + 0.05, (cpu_seconds, truth)


def test_run_leaves_stdin_stdout_stderr_to_the_command(tmp_path):
    code = """
        import sys
        data = sys.stdin.read()
        sys.stdout.write(data.upper())
        sys.stderr.write("note from the command\\n")
    """
    text = "hello from the pipe\nsecond line\n"
    result = run_cli("run", "--interval", "0.2", "-o", str(tmp_path), "-f", "json",
                     "--", *script(code), input=text)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == text.upper()  # nothing of ours on stdout
    lines = result.stderr.splitlines()
    assert lines[0] == "note from the command"
    assert lines[1].startswith("resource-tracker: `")


def test_run_quiet_prints_nothing_and_format_none_writes_nothing(tmp_path):
    result = run_cli("run", "-q", "-f", "none", "-o", str(tmp_path / "x"), "--", "true")
    assert result.returncode == 0
    assert result.stderr == "" and result.stdout == ""
    assert not (tmp_path / "x").exists()


def test_run_command_without_double_dash_keeps_its_options(tmp_path):
    """Everything after the command's name is the command's (its own --interval too)."""
    code = "import sys; print(sys.argv[1:])"
    result = run_cli("run", "-q", "-o", str(tmp_path), "-f", "json",
                     sys.executable, "-c", code, "--interval", "x")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['--interval', 'x']"


def test_console_script_is_installed():
    """`pip install -e .` installs the `resource-tracker` command (pyproject [project.scripts])
    into the scripts folder of the environment that runs the tests (the project venv)."""
    exe = os.path.join(sysconfig.get_path("scripts"), "resource-tracker")
    assert os.access(exe, os.X_OK), f"{exe} is missing: run `pip install -e .`"
    result = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert result.stdout.strip() == f"resource-tracker {__version__}"
