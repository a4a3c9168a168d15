"""Workloads and procfs readings shared by both sides of the benchmark.

Standard library only: this module is imported by bench/measure_ours.py (the project's
Python) and by bench/measure_baseline.py (the bench venv, where `resource_tracker` is the
original package), so it must not import either tool.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024
TICKS = os.sysconf("SC_CLK_TCK")


def emit(result):
    """Print one result as the last line of stdout (run.py reads it as JSON)."""
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


def cpu_now():
    """CPU seconds of this process (all threads, precise) plus its reaped children."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def proc_cpu_seconds(pid):
    """CPU seconds of pid from /proc/<pid>/stat: own plus reaped children (0.0 if gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return 0.0
    fields = raw[raw.rindex(b")") + 2 :].split()
    return sum(int(x) for x in fields[11:15]) / TICKS


def rollup(pid="self"):
    """{'rss_kib', 'pss_kib'} of a process from /proc/<pid>/smaps_rollup (zeros if gone)."""
    out = {"rss_kib": 0, "pss_kib": 0}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    out["rss_kib"] = int(line.split()[1])
                elif line.startswith("Pss:"):
                    out["pss_kib"] = int(line.split()[1])
    except OSError:
        pass
    return out


def child_pids(pid):
    """Pids whose parent is pid (a /proc scan)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        if int(raw[raw.rindex(b")") + 2 :].split()[1]) == pid:
            found.append(int(name))
    return found


def spawn_sleepers(n=10, seconds=600):
    """Starts n `sleep` processes as children of this process; returns their Popen objects."""
    return [subprocess.Popen(["sleep", str(seconds)]) for _ in range(n)]


def stop_all(procs):
    """Kills and reaps the given Popen objects."""
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()


def spawn_tree(n_children=10, seconds=600, cgroups=()):
    """An 11-process tree: a shell with n_children sleeping children. Returns its Popen.
    cgroups: cgroup directories the shell enters first (its children are born in them)."""
    enter = "".join(f"echo $$ > {os.path.join(c, 'cgroup.procs')}; " for c in cgroups)
    script = f"{enter}for i in $(seq {n_children}); do sleep {seconds} & done; wait"
    proc = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    deadline = time.monotonic() + 10
    while len(child_pids(proc.pid)) < n_children:
        if time.monotonic() > deadline:
            stop_group(proc)
            raise RuntimeError("the sleeping children did not start")
        time.sleep(0.02)
    return proc


def spawn_big(gib=4):
    """A process holding gib GiB of touched memory. Returns its Popen once it is ready."""
    code = (
        "import sys\n"
        f"buf = b'\\x01' * ({gib} << 30)\n"  # bytes repetition writes every page
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
    )
    return _start_ready(code, f"the {gib} GiB process did not start")


def spawn_cow_tree(mib=400, workers=4):
    """A parent holding mib MiB of touched memory and `workers` forked copies of it (which
    read it: 5 x 400 MiB of RSS, 400 MiB of memory). Returns its Popen once all are up."""
    code = (
        "import os, sys\n"
        f"buf = bytearray({mib} << 20)\n"
        "for i in range(0, len(buf), 4096): buf[i] = 1\n"
        f"for _ in range({workers}):\n"
        "    if os.fork() == 0:\n"
        "        s = sum(buf[i] for i in range(0, len(buf), 4096))\n"
        "        sys.stdin.read(); os._exit(0)\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = _start_ready(code, "the copy-on-write tree did not start")
    deadline = time.monotonic() + 20
    while len(child_pids(proc.pid)) < workers and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


def stop_group(proc):
    """Kills the process group that proc leads (started with start_new_session) and reaps it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def hold_touched(mib):
    """A bytes object of mib MiB with every page written."""
    return b"\x01" * (mib << 20)


def timed_loop(call, min_cpu=1.0, max_n=5000, min_n=20):
    """Calls call() until min_cpu CPU seconds or max_n calls: (n, cpu s/call, wall s/call)."""
    n = 0
    c0, w0 = cpu_now(), time.perf_counter()
    while n < max_n and (n < min_n or cpu_now() - c0 < min_cpu):
        for _ in range(10):  # check the clock every 10 calls, not every call
            call()
        n += 10
    return n, (cpu_now() - c0) / n, (time.perf_counter() - w0) / n


def timed_calls_apart(call, n=40, gap=0.05):
    """CPU seconds per call() when the calls are gap seconds apart (caches gone cold, as
    when a tracker samples once a second): (n, cpu s/call, wall s/call)."""
    cpu = wall = 0.0
    for _ in range(n):
        time.sleep(gap)
        c0, w0 = cpu_now(), time.perf_counter()
        call()
        cpu += cpu_now() - c0
        wall += time.perf_counter() - w0
    return n, cpu / n, wall / n


def _start_ready(code, failure):
    """Starts python -c code in a session of its own; returns its Popen once it printed
    'ready' (RuntimeError(failure) otherwise)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    if proc.stdout.readline().strip() != b"ready":
        stop_group(proc)
        raise RuntimeError(failure)
    return proc
