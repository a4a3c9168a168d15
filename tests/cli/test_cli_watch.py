"""`resource-tracker watch`: under a pseudo-terminal (Python pty) and with a pipe."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

from cli_helpers import CLI, pty_run, read_pty, read_pty_until, script, wait_pid

SPIN = "import time\nend = time.monotonic() + 20\nwhile time.monotonic() < end: pass"


def test_watch_on_a_terminal_refreshes_one_line_until_the_process_exits():
    victim = subprocess.Popen(["sleep", "30"])
    pid, fd = pty_run([*CLI, "watch", "--pid", str(victim.pid), "--interval", "0.2"])
    try:  # as a user does: the process killed once the line has been rewritten a few times
        seen = b""
        while seen.count(b"\r\x1b[K") < 4:
            more = read_pty_until(fd, "\r\x1b[K", 60)
            assert more, seen
            seen += more
        victim.kill()
        victim.wait()
        output = (seen + read_pty(fd, 20)).decode()
        wstatus = wait_pid(pid)
    finally:
        os.close(fd)
        victim.kill()
    assert os.waitstatus_to_exitcode(wstatus) == 0, output
    refreshes = output.count("\r\x1b[K")
    assert refreshes >= 4, output
    # one line rewritten in place: no newline between refreshes, one at the end
    body = output.split("resource-tracker:")[0]
    assert body.rstrip("\r\n").count("\n") == 0, repr(body)
    assert f"pid {victim.pid}: cpu" in output
    assert f"process {victim.pid} exited" in output
    assert "Traceback" not in output


def test_watch_on_a_terminal_stops_at_ctrl_c():
    pid, fd = pty_run([*CLI, "watch", "--system", "--interval", "0.2"])
    try:
        seen = read_pty_until(fd, "system: cpu", 60)  # as a user does: ^C once the view shows
        os.write(fd, b"\x03")
        output = (seen + read_pty(fd, 20)).decode()
        wstatus = wait_pid(pid)
    finally:
        os.close(fd)
    assert os.waitstatus_to_exitcode(wstatus) == 0, output
    assert "system: cpu" in output and "\r\x1b[K" in output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output


def test_watch_through_a_pipe_prints_plain_lines_with_real_figures():
    """A process spinning one core reads the share of a core it really gets, in plain lines.
    The truth is the spinner's own CPU time over the same window (from reading the first line
    to reading the last), so a busy machine, which gives it less, is no error. A line shows
    the latest sample: when a busy machine delays the view past a sample, it skips one (the
    samplers' own accuracy is tests/core/test_core_accuracy.py's)."""
    spinner = subprocess.Popen(script(SPIN))
    count = 9
    try:
        watch = subprocess.Popen(
            [*CLI, "watch", "--pid", str(spinner.pid), "--interval", "0.25", "--count", str(count)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        lines, marks = [], []
        for line in watch.stdout:  # the spinner's CPU time and the clock as each line arrives
            marks.append((_cpu_seconds(spinner.pid), time.monotonic()))
            lines.append(line.rstrip("\n"))
        _, stderr = watch.communicate(timeout=30)
    finally:
        spinner.kill()
        spinner.wait()
        watch.kill()
    assert watch.returncode == 0, stderr
    assert 3 <= len(lines) <= count, lines
    (cpu_first, t_first), (cpu_last, t_last) = marks[0], marks[-1]
    truth = (cpu_last - cpu_first) / (t_last - t_first)
    assert not any("\x1b" in line or "\r" in line for line in lines)
    cpus = []
    for line in lines:
        m = re.match(
            rf"\d\d:\d\d:\d\d \| pid {spinner.pid}: cpu +([\d.]+) mem +([\d.]+) MiB .*"
            r"\| system: cpu +([\d.]+)",
            line,
        )
        assert m, line
        cpus.append(float(m.group(1)))
        assert 5 <= float(m.group(2)) <= 40  # an interpreter's memory
    assert all(0 <= c <= 1.15 for c in cpus[1:]), cpus  # one thread: never over one core
    # the lines after the first cover the window; its ends are off by the pipe's delay
    assert abs(sum(cpus[1:]) / len(cpus[1:]) - truth) <= 0.1 + 0.1 * truth, (cpus, truth)


def _cpu_seconds(pid):
    """utime + stime of pid from /proc (the ground truth of its CPU use)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_watch_ends_at_sigterm_quietly():
    proc = subprocess.Popen(
        [*CLI, "watch", "--interval", "0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        first = proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert "system: cpu" in first
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_watch_into_a_closed_pipe_exits_quietly():
    """`watch | head -1`: the reader goes away; no BrokenPipeError traceback."""
    result = subprocess.run(
        f"{sys.executable} -m resource_tracker watch --interval 0.1 | head -n 1",
        shell=True, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.stdout.count("\n") == 1 and "system: cpu" in result.stdout
    assert "Traceback" not in result.stderr and "Error" not in result.stderr, result.stderr
