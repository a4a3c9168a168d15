"""The tracker's own Python threads (a Metaflow live card's renderer, its record writer, an
exporter's sender) are not the program's code: the code profile leaves them out
(``_core.skip_thread_stacks``, ``resource_tracker._background.tracker_thread``). Each run is
a fresh interpreter, so no other test's threads are in it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from resource_tracker import _core

pytestmark = pytest.mark.skipif(not _core.HAVE_PROCFS, reason="the C sampler (procfs) only")

_TRACKER_THREADS = """
import json, threading, time
from resource_tracker import ResourceTracker, _core
from resource_tracker._background import tracker_thread

def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        _core.skip_thread_stacks(threading.get_ident(), False)

def skipped_by_hand(stop):  # as a thread of the tracker's would register itself
    _core.skip_thread_stacks(threading.get_ident())
    try:
        while not stop.is_set():
            sum(range(2000))
    finally:
        _core.skip_thread_stacks(threading.get_ident(), False)

def skipped_by_wrapper(stop):
    while not stop.is_set():
        sum(range(2000))

def the_programs_thread():
    start = time.thread_time()
    burn(0.3)
    return time.thread_time() - start

def the_programs_work():
    start = time.thread_time()
    burn(0.6)
    return time.thread_time() - start

tracker = ResourceTracker(interval=0.02, discover_server=False, discover_cloud=False)
stop, truth = threading.Event(), {}
own = [threading.Thread(target=skipped_by_hand, args=(stop,)),
       threading.Thread(target=tracker_thread(lambda: skipped_by_wrapper(stop)))]
for thread in own:
    thread.start()
truth["the_programs_work"] = the_programs_work()
stop.set()
for thread in own:
    thread.join()
# a thread of the program started after the tracker's ended (its ident likely reused)
later = threading.Thread(target=lambda: truth.update(the_programs_thread=the_programs_thread()))
later.start()
later.join()
tracker.stop()
rows = list(tracker.code_profile("function").rows())
print(json.dumps({"truth": truth, "cpu": {r["function"]: r["cpu_seconds"] for r in rows},
    "files": sorted({r["file"] for r in rows})}))
"""


def test_the_trackers_own_threads_are_not_in_the_code_profile():
    """Two threads burn CPU beside the main thread's known work, one registering itself by
    hand, one through ``tracker_thread``: neither function is in the profile; the main
    thread's work is, and so is a thread of the program started once they ended (the
    registration ends with the thread: its ident goes to the next one)."""
    out = subprocess.run(
        [sys.executable, "-c", _TRACKER_THREADS], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    cpu = got["cpu"]
    assert "skipped_by_hand" not in cpu and "skipped_by_wrapper" not in cpu, got
    assert not [f for f in got["files"] if f.endswith("_background.py")], got
    assert "<string>" in got["files"], got  # the program's own code (this script's)
    assert cpu.get("the_programs_work", 0.0) > 0.0, got
    assert cpu.get("the_programs_thread", 0.0) > 0.0, got


_BOUNDED = """
from resource_tracker import _core
fake = list(range(1, 34))  # no thread's ident (those are addresses of thread structures)
print([_core.skip_thread_stacks(i) for i in fake[:32]] == [True] * 32,
      _core.skip_thread_stacks(fake[32]), _core.skip_thread_stacks(fake[0], False),
      _core.skip_thread_stacks(fake[32]))
"""


def test_the_registry_is_bounded_and_says_when_it_is_full():
    """At most SKIP_THREADS_MAX (32) threads at once (a fresh process: none of the tracker's
    is registered yet): past it the call says False (the thread is profiled as before) rather
    than growing; a removed one frees its place."""
    out = subprocess.run([sys.executable, "-c", _BOUNDED], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False", "True", "True"], out.stdout
