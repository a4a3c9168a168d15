"""The application's descriptors are its own: the tracker never reads, writes or closes one.

A program that closes every descriptor it did not open itself (daemon code, careful child
set-ups: ``os.closerange(3, 4096)``) closes the ones the tracker keeps open between readings
too, and its next ``open()`` calls get those numbers back. Each test runs a real program in a
process of its own that does exactly that while a tracker samples it, writes known content
to the files it opened, and checks after ``stop()`` that every write and close succeeded;
the test then reads every byte back and compares the memory column with the program's own
resident set. The old code's ``stop()`` closed the program's files (11 of 12 writes failed
with EBADF), its memory column read 0.0 from the closerange on with no data-quality note,
``resource-tracker run --code`` lost the end of the program's output (99,969 of 100,000
lines, exit status 0), and the cgroup readers (run beside the program at ``start()`` and
``stop()``) closed one of its files in about 1 reading of 100.

Under ``make sanitize`` (tests/reliability/run_sanitize.sh) the in-process program loads the
ASan+UBSan build of the core too (``sanitized_env``): an ASan report aborts it and the test
fails. The ``run --code`` program runs natively there, as every command the CLI starts does
(sanitize_hook/sitecustomize.py); it runs the same C code as the in-process one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from resource_tracker import _core

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = 12
ROUNDS = 5  # of writes, each waiting for a new reading of the tracker
BUFFER_MIB = 100

#: the in-process program: a tracker of itself, closerange, 12 files, memory, readings, stop()
TRACKED_APP = r"""
import json, os, sys, time
from resource_tracker import ResourceTracker, _core
from resource_tracker.tracker import data_quality_notes

out, files_n, rounds, buffer_mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
interval = float(sys.argv[5])

def links():  # this process's descriptors and what they are
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass  # the listing's own descriptor, closed already
    return found

def wait_readings(tracker, n):  # until the sampler took n more readings (no fixed sleep)
    target = tracker._sampler.samples_taken + n
    deadline = time.monotonic() + 120
    while tracker._sampler.samples_taken < target:
        assert time.monotonic() < deadline, "the tracker took no reading"
        time.sleep(0.005)

def line(i, k):
    return f"file {i} round {k} " + "x" * 64 + "\n"

tracker = ResourceTracker(interval=interval, discover_cloud=False, discover_server=False)
wait_readings(tracker, 2)  # the closerange comes right after a reading (see INTERVAL)
kept = sorted(n for n, link in links().items() if n > 2 and link.startswith(("/proc", "/sys")))
os.closerange(3, 4096)
files = [open(os.path.join(out, f"app{i}.txt"), "w") for i in range(files_n)]
numbers = [f.fileno() for f in files]
buf = bytearray(buffer_mib << 20)
buf[::4096] = b"x" * len(buf[::4096])  # every page resident
touched = time.time()
failures = []
for k in range(rounds):
    for i, f in enumerate(files):
        f.write(line(i, k) * 200)
        f.flush()
    wait_readings(tracker, 1)
with open("/proc/self/status") as status:
    rss = next(int(l.split()[1]) for l in status if l.startswith("VmRSS:"))
tracker.stop()
for i, f in enumerate(files):
    try:
        f.write(f"file {i} end\n")
        f.close()
    except OSError as exc:
        failures.append(f"file {i} (fd {numbers[i]}): {exc}")
df = tracker.process_metrics
memory = [m for t, m in zip(df["timestamp"], df["memory"]) if t >= touched]
sf = tracker.system_metrics  # the machine's readings, through its own procfs root
used = [m for t, m in zip(sf["timestamp"], sf["memory_used"]) if t >= touched]
stats = tracker.stats()
print(json.dumps(dict(
    kept=kept, numbers=numbers, failures=failures, memory=memory, used=used, rss_kib=rss,
    quality=stats["data_quality"], notes=data_quality_notes(stats), core=_core.__file__,
    stored=ResourceTracker.loads(tracker.dumps()).stats()["data_quality"],
)))
"""

#: the program of `run --code`: closerange at once, one output file left for the
#: interpreter's exit to flush. The agent is found where either layout keeps it: loaded by
#: its path (_resource_tracker_agent, a C sampler) or the package's code_agent (a tracker).
CODE_APP = r"""
import os, sys, time

def agent_sampler():  # the sampler of the run --code agent in this process, or None
    loaded = sys.modules.get("_resource_tracker_agent")
    if loaded is not None:
        return loaded._agent.get("sampler")
    try:
        import resource_tracker.code_agent as code_agent
    except ImportError:
        return None
    tracker = getattr(code_agent, "_agent", {}).get("tracker")
    return None if tracker is None else tracker._sampler

sampler = agent_sampler()
def wait_readings(n):  # until the agent took n more readings (no fixed sleep)
    if sampler is None:
        return
    target = sampler.samples_taken + n
    deadline = time.monotonic() + 120
    while sampler.samples_taken < target and time.monotonic() < deadline:
        time.sleep(0.005)
os.closerange(3, 1 << 16)
out = open(sys.argv[1], "w")  # never closed: the interpreter's exit flushes and closes it
lines, rounds = int(sys.argv[2]), 5
for k in range(rounds):
    for i in range(k * lines // rounds, (k + 1) * lines // rounds):
        out.write(f"line {i}\n")
    wait_readings(2)  # the agent reads while the program works
print("agent", type(sampler).__name__ if sampler is not None else None, flush=True)
"""


#: the program beside the readers the tracker runs in a thread beside it: a thread reads as
#: the tracker's worker does at start() and stop() (the cgroup: located, then read) or as
#: start() does (the command line and the start time), over and over, while the program
#: closes every descriptor, opens its output file again and appends one line, until that
#: thread has read `want` times; no fixed duration: the two meet at their own pace
READERS_APP = r"""
import json, os, sys, threading
from resource_tracker import _identity, cgroup_usage

out, want, readers = sys.argv[1], int(sys.argv[2]), sys.argv[3]
pid = os.getpid()

def read():
    if readers == "cgroup":
        return cgroup_usage.read_cgroup_at(cgroup_usage.locate_cgroup(pid))
    return _identity._command_line(pid), _identity._process_start(pid)

if readers == "cgroup" and read() is None:
    print(json.dumps(dict(readable=False)))
    sys.exit(0)
done, reads, errors = threading.Event(), [0], []

def worker():  # as the tracker's worker: an exception loses that reading, nothing else
    while not done.is_set():
        try:
            read()
        except Exception as exc:
            errors.append(repr(exc))
        reads[0] += 1

thread = threading.Thread(target=worker)
thread.start()
failures, written = [], 0
while reads[0] < want:
    os.closerange(3, 1 << 16)
    try:
        fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC)
        os.write(fd, f"line {written}\n".encode())
        os.close(fd)
    except OSError as exc:
        failures.append(f"line {written}: {exc}")
    written += 1
done.set()
thread.join()
print(json.dumps(dict(
    readable=True, reads=reads[0], written=written, failures=failures, errors=errors[:5]
)))
"""


#: the sampling interval per backend. The C sampler keeps descriptors open between readings
#: (the case under test) and opens others only for microseconds within a reading: its
#: programs close every descriptor whenever they like (run --code: at once, as the issue's
#: did). psutil keeps none between readings, but a psutil reading in progress holds files
#: open for milliseconds, handing the interpreter lock to other threads in between: a program
#: that closes and reopens descriptors in another thread at that moment can still have one of
#: its new files read and closed by psutil (not fixed: psutil's own file handling). Its
#: programs close every descriptor right after a reading, with a long interval ahead.
INTERVAL = {"c": 0.05, "psutil": 0.5}


def sanitized_env():
    """This environment; under make sanitize (the ASan runtime loaded here), one in which a
    Python program loads the ASan+UBSan build of the core as this process does (the runtime
    preloaded, CPython's allocations through it, tests/reliability/sanitize_hook on the path)."""
    env = dict(os.environ)
    libs = []
    with open("/proc/self/maps") as maps:
        for row in maps:
            path = row.split()[-1]
            if ("/libasan.so" in path or "/libubsan.so" in path) and path not in libs:
                libs.append(path)
    if env.get("RESOURCE_TRACKER_CORE_SO") and libs:
        env["LD_PRELOAD"] = " ".join(sorted(libs))  # libasan first
        env["PYTHONMALLOC"] = "malloc"
    return env


def _expected(i):
    text = "".join((f"file {i} round {k} " + "x" * 64 + "\n") * 200 for k in range(ROUNDS))
    return text + f"file {i} end\n"


@pytest.mark.skipif(not hasattr(os, "closerange"), reason="os.closerange")
def test_closerange_and_reopen_in_the_application_loses_nothing(backend, tmp_path):
    """A tracker in the program: after closerange(3, 4096) and 12 files opened on the freed
    numbers (the procfs roots' among them), every write and close of the program succeeds
    (also after stop()), every byte arrives, and the memory columns keep measuring the
    program and the machine (never a silent 0.0)."""
    app = tmp_path / "app.py"
    app.write_text(TRACKED_APP)
    argv = [sys.executable, str(app), str(tmp_path), str(FILES), str(ROUNDS), str(BUFFER_MIB)]
    argv.append(str(INTERVAL[backend.name]))
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=300, env=sanitized_env(), cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if os.environ.get("RESOURCE_TRACKER_CORE_SO") and "LD_PRELOAD" in sanitized_env():
        assert got["core"] == os.environ["RESOURCE_TRACKER_CORE_SO"]  # the ASan build ran
    if backend.name == "c":
        # the program got numbers the tracker had kept open: the case under test happened
        assert set(got["numbers"]) & set(got["kept"]), got
    assert got["failures"] == [], got
    for i in range(FILES):
        assert (tmp_path / f"app{i}.txt").read_text() == _expected(i), f"file {i}"
    # the readings after the buffer was touched measure the program (its own VmRSS), every one
    assert len(got["memory"]) >= ROUNDS - 1, got
    low = min(got["memory"])
    assert low >= BUFFER_MIB * 1024 and low >= 0.7 * got["rss_kib"], got
    assert max(got["memory"]) <= 1.1 * got["rss_kib"], got
    # the machine's readings go on too (its procfs root checked and opened again): the
    # memory in use on the machine holds the program's resident buffer, every reading
    assert len(got["used"]) >= ROUNDS - 1 and min(got["used"]) >= BUFFER_MIB * 1024, got
    assert not got["quality"].get("read_errors"), got["quality"]
    if backend.name == "c":  # the replaced descriptors were noticed and said (also stored)
        replaced = got["quality"].get("descriptors_replaced", 0)
        assert replaced >= 1, got["quality"]
        assert got["stored"]["descriptors_replaced"] == replaced, got["stored"]
        assert any(n.startswith("descriptors replaced by the application") for n in got["notes"])


@pytest.mark.skipif(not _core.HAVE_PROCFS, reason="run --code: the stack sampler (C core)")
def test_run_code_program_after_closerange_keeps_all_its_output(tmp_path):
    """`resource-tracker run --code -- python app.py`: the program closes every descriptor
    (os.closerange(3, 1 << 16)), writes 100,000 lines to a file it leaves open for its exit
    to flush while the agent's C sampler reads; the agent's exit-time stop must not close
    that file first: all 100,000 lines arrive, status 0."""
    app, out = tmp_path / "app.py", tmp_path / "out.txt"
    app.write_text(CODE_APP)
    lines = 100_000
    env = {k: v for k, v in os.environ.items() if k != "RESOURCE_TRACKER_METHOD"}
    done = subprocess.run(
        [sys.executable, "-I", "-m", "resource_tracker", "run", "--code", "-q", "--format"]
        + ["none", "--interval", str(INTERVAL["c"]), "--", sys.executable, str(app), str(out)]
        + [str(lines)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(tmp_path),
        env=env,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "agent Sampler" in done.stdout, done.stdout  # the agent's sampler read the program
    got = out.read_text().splitlines()
    assert len(got) == lines, f"{len(got)} of {lines} lines arrived"
    assert got == [f"line {i}" for i in range(lines)]


@pytest.mark.skipif(not hasattr(os, "closerange"), reason="os.closerange")
@pytest.mark.parametrize("readers, reads", [("cgroup", 1000), ("identity", 5000)])
def test_readers_beside_a_program_closing_every_descriptor(readers, reads, tmp_path):
    """The files the tracker reads in a thread beside the program (the cgroup's at start()
    and stop(), the command line and start time at start()) are never the program's: 1,000
    (cgroup) or 5,000 (the faster identity readers) readings while the program closes every
    descriptor and appends a line to a file it opens again each time; every open, write and
    close succeeds and every line arrives (the old readers, Python's os.open/os.read/os.close,
    closed the program's file: cgroup 7 to 14 writes EBADF, identity 9 to 15)."""
    app, out = tmp_path / "app.py", tmp_path / "out.txt"
    app.write_text(READERS_APP)
    done = subprocess.run(
        [sys.executable, str(app), str(out), str(reads), readers],
        capture_output=True,
        text=True,
        timeout=300,
        env=sanitized_env(),
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if not got["readable"]:
        pytest.skip("no cgroup readable here")
    assert got["reads"] >= reads and got["failures"] == [], got["failures"][:5]
    lines = out.read_text().splitlines()
    assert lines == [f"line {i}" for i in range(got["written"])]
