"""Real workloads for the tests: child Python processes that wait for a "go" line on stdin,
do their work, and report ground truth about themselves (their own CPU time from os.times(),
their RSS/PSS from /proc) as JSON lines on stdout. Shared by every test directory (tests/
is on sys.path through tests/conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

# an unrelated neighbour creating ~100 short-lived processes a second (python -c FORKER)
FORKER = """
import os, time
while True:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    time.sleep(0.01)
"""

PRELUDE = """
import json, os, sys, time
def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
def pss_kib(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0
def report(**kw):
    sys.stdout.write(json.dumps(kw) + "\\n"); sys.stdout.flush()
def touched(mib):  # a buffer of mib MiB with every page written: resident, not only reserved
    buf = bytearray(mib * 1024 * 1024)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    return buf
def wait_for(folder, name):  # until the test makes the file folder/name
    while not os.path.exists(os.path.join(folder, name)):
        time.sleep(0.02)
def spin(seconds):  # this thread's CPU time, not wall time: longer on a busy machine
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        x += 1
sys.stdin.readline()  # wait for "go"
"""


def highest_priority():
    """For preexec_fn: the child at nice -20 where allowed (root), else as it is. A workload
    whose figures need CPU to measure (a share of a core, not a CPU-time amount) gets it so,
    whatever else the machine runs; tests still compare with what it really got."""
    import os

    try:
        os.setpriority(os.PRIO_PROCESS, 0, -20)
    except OSError:
        pass


class Workload:
    """A child process running `body` after the prelude; `go()` starts it."""

    def __init__(self, body, **popen):
        code = PRELUDE + textwrap.dedent(body)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            **popen,
        )
        self.pid = self.proc.pid

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def read_report(self):
        """The next JSON line the workload reports."""
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the workload exited without a report")
        return json.loads(line)

    def send(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def finish(self, timeout=60):
        """Waits for the workload to exit WITHOUT reaping it (it stays a zombie, whose stat
        still holds its final CPU totals), so the tracker can take its last reading; the
        caller then stops the tracker and calls reap()."""
        import os

        self.proc.stdin.close()
        os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)

    def reap(self):
        """Collects the exit status of a finished workload."""
        return self.proc.wait(60)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


def wait_for_baseline(tracker, timeout=30.0):
    """Returns once the tracker's sampler took its baseline reading (the one that stores no
    row: the first row's interval starts there), however slowly a busy machine runs it."""
    deadline = time.monotonic() + timeout
    while tracker._sampler.samples_taken < 1:
        assert time.monotonic() < deadline, "the sampler took no baseline reading"
        time.sleep(0.005)


def total_cpu(df):
    """Seconds of CPU over all rows of a process_metrics table."""
    return sum(df["utime"]) + sum(df["stime"])


def run_to_report(workload, tracker):
    """Runs a workload that reports once and exits while the tracker watches it: starts it,
    reads its report, waits for its exit (unreaped, so the tracker takes its last reading),
    then stops the tracker; the workload is killed whatever happens. Returns the report."""
    try:
        workload.go()
        report = workload.read_report()
        workload.finish()
    finally:
        tracker.stop()
        workload.kill()
    return report


def wait_reading_stdin(pid, seconds=60.0):
    """Until the workload's process blocks reading its stdin: started, waiting for "go"
    (its start, slow on a busy machine, is over; a tracker started then sees its work)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/syscall") as f:
            if f.read().split()[:2] == ["0", "0x0"]:  # read(0, ...)
                return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never waited for its stdin")
