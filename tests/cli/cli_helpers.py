"""Helpers for the command-line tests: run the real entry point (`python -m resource_tracker`)
in a subprocess, read its summary, and small workload scripts (real processes)."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import textwrap
import time

CLI = [sys.executable, "-m", "resource_tracker"]

# Busy one core for SECONDS after touching MIB mebibytes (every page written).
# Touches argv[1] MiB, then burns argv[2] seconds of CPU time (not wall time: on a busy machine
# it runs longer); with argv[3], writes its own CPU time (os.times) and wall time there as JSON.
BURN = """
import json, os, sys, time
wall0 = time.monotonic()
mib, seconds = int(sys.argv[1]), float(sys.argv[2])
buf = bytearray(mib * 2**20)
for i in range(0, len(buf), 4096):
    buf[i] = 1
end = time.process_time() + seconds
x = 0
while time.process_time() < end:
    x += 1
if len(sys.argv) > 3:
    t = os.times()
    with open(sys.argv[3], "w") as f:
        json.dump({"cpu": t.user + t.system, "wall": time.monotonic() - wall0}, f)
"""

# Waits for signals after writing 'ready' to argv[1]; on the first one records its name (and
# how many arrive within 0.7 s) in argv[1] and exits with 40 + the signal number.
TRAP = """
import os, signal, sys, time
path = sys.argv[1]
got = []
def on_signal(signum, frame):
    got.append(signum)
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
    signal.signal(sig, on_signal)
with open(path + ".tmp", "w") as f:
    f.write("ready")
os.replace(path + ".tmp", path)
deadline = time.monotonic() + 30
while not got and time.monotonic() < deadline:
    time.sleep(0.02)
time.sleep(0.7)
with open(path + ".tmp", "w") as f:
    f.write(f"{signal.Signals(got[0]).name} {len(got)}" if got else "none")
os.replace(path + ".tmp", path)
sys.exit(40 + got[0] if got else 1)
"""


def script(code):
    """argv running `code` in a fresh Python."""
    return [sys.executable, "-c", textwrap.dedent(code)]


def run_cli(*args, timeout=60, **kwargs):
    """CompletedProcess of the CLI with args (text mode, output captured)."""
    kwargs.setdefault("capture_output", True)
    return subprocess.run([*CLI, *args], text=True, timeout=timeout, **kwargs)


def wait_for_file(path, content=None, timeout=20.0):
    """Waits until path exists (with exactly content, when given); its text."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(path) as f:
                text = f.read()
            if content is None or text == content:
                return text
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    raise AssertionError(f"{path} did not appear (with {content!r}) within {timeout} s")


def summary_figures(stderr):
    """The figures of a `run`/`stats` summary as a dict of floats (and strings)."""
    patterns = {
        "duration": r"duration\s+([\d.]+) s, ([\d,]+) samples?",
        "cpu": r"CPU\s+mean ([\d.]+) cores?, peak ([\d.]+) cores?",
        "memory": r"memory\s+peak ([\d.]+) (B|KiB|MiB|GiB)",
        "children": r"children\s+peak (\d+)",
        "recommended": r"recommended\s+(\d+) CPUs?, ([\d.]+) (MiB|GiB) memory",
        "status": r"(exited with status \d+|was killed by \w+ \(exit status \d+\))",
    }
    out = {}
    for key, pattern in patterns.items():
        m = re.search(pattern, stderr)
        assert m, f"no {key} in the summary:\n{stderr}"
        out[key] = m.groups()
    unit = {"B": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}[out["memory"][1]]
    return {
        "duration": float(out["duration"][0]),
        "samples": int(out["duration"][1].replace(",", "")),
        "cpu_mean": float(out["cpu"][0]),
        "cpu_peak": float(out["cpu"][1]),
        "memory_mib": float(out["memory"][0]) * unit,
        "children": int(out["children"][0]),
        "rec_cpu": int(out["recommended"][0]),
        "rec_memory": int(
            float(out["recommended"][1]) * (1024 if out["recommended"][2] == "GiB" else 1)
        ),
        "status": out["status"][0],
    }


def assert_one_line_error(result, *needles, status=2):
    """The result is a usage-style failure: exit `status`, one stderr line, no traceback."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == status, (result.returncode, result.stderr)
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("resource-tracker"), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def report_available():
    """True when resource_tracker.report can be imported (another issue writes it)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import resource_tracker.report"], capture_output=True
    )
    return probe.returncode == 0


def env_with(**extra):
    env = dict(os.environ)
    env.update({k: str(v) for k, v in extra.items()})
    return env


# -- commands under a pseudo-terminal (bounded: a test never hangs on them) ------------------


def read_pty(fd, timeout):
    """Everything the pty master gives until EOF or timeout."""
    out = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not select.select([fd], [], [], 0.1)[0]:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the child side is closed
            break
        if not chunk:
            break
        out += chunk
    return out


def read_pty_until(fd, text, timeout):
    """What the pty master gives until text shows (or EOF, or timeout)."""
    out = b""
    end = time.monotonic() + timeout
    while text.encode() not in out and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    return out


def wait_pid(pid, timeout=30):
    """The wait status of pid; kills it (and fails the test) if it does not end in time."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        done, wstatus = os.waitpid(pid, os.WNOHANG)
        if done:
            return wstatus
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError(f"process {pid} did not end within {timeout} s")


def pty_run(argv):
    """(pid, master fd) of argv started under a new pseudo-terminal."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        # as a shell at a terminal does: Ctrl-C interrupts (even if the test runner was started
        # in the background by a non-interactive shell, which ignores SIGINT)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.execv(argv[0], argv)
    return pid, fd


def wait_for_child(pid, name, timeout=120.0):
    """The pid of `pid`'s child running `name` (its comm), once it runs (the parent, a
    supervisor, is then past its set-up: a busy machine takes seconds to start Python),
    or None after timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    comm, rest = f.read().rsplit(")", 1)
            except OSError:
                continue
            if int(rest.split()[1]) == pid and comm.split("(", 1)[1] == name:
                return int(entry)
        time.sleep(0.02)
    return None
