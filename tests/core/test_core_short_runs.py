"""Short runs: a task of a few milliseconds never reads more cores than it may use.

CPU time comes from the kernel in clock ticks (10 ms): over a few milliseconds one tick is
already "2.7 cores". The rules tested here, with real workloads (threads of this process,
a child process, the command-line tool on /bin/true):
- a final partial interval too short to measure (< 0.1 s, or < a quarter of the interval)
  is merged into the previous row;
- CPU usage is measured over at least one tick and never exceeds the cores the process may
  use (its affinity mask) or, for the machine, the machine's CPUs;
- a run shorter than 0.1 s gives no CPU figure to the recommendation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from workloads import Workload, highest_priority

from resource_tracker import ResourceTracker, registry
from resource_tracker.tracker import SHORT_RUN_S

CORES = len(os.sched_getaffinity(0))


def _quiet(**kwargs):
    return ResourceTracker(discover_cloud=False, discover_server=False, **kwargs)


def _burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _burst(threads, seconds):
    """threads busy threads of this process for seconds each."""
    workers = [threading.Thread(target=_burn, args=(seconds,)) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def test_a_task_of_a_few_ms_reads_no_more_cores_than_there_are(backend):
    """Trackers around a burst of 3 threads x 4 ms (the trivial Metaflow step): twenty, and
    more until ten were short runs (a loaded machine may stall a run past SHORT_RUN_S; the
    bound of 200 only stops a tracker that never makes one)."""
    seen, short, runs = [], 0, 0
    while runs < 20 or (short < 10 and runs < 200):
        runs += 1
        tracker = _quiet()  # interval 1 s: the run is one short final interval
        _burst(3, 0.004)
        tracker.stop()
        process, system = tracker.process_metrics, tracker.system_metrics
        seen += process["cpu_usage"]
        assert all(0 <= v <= CORES for v in process["cpu_usage"]), process["cpu_usage"]
        assert all(0 <= v <= os.cpu_count() for v in system["cpu_usage"])
        if tracker.stats()["timestamp"]["duration"] < SHORT_RUN_S:  # a loaded machine may
            short += 1  # stall a run past it: then it is not a short run
            assert tracker.recommend_resources()["cpu"] == 1
    assert len(seen) == runs  # one row each: the run is measured, not dropped
    assert short >= 10, f"only {short} of {runs} runs were shorter than {SHORT_RUN_S} s"


def test_the_cap_is_the_cpus_the_process_may_run_on(backend):
    """A process pinned to one CPU, bursting with 3 threads: never more than 1 core (both
    backends: the psutil one reads the affinity through psutil)."""
    code = textwrap.dedent(
        """
        import json, os, threading, time
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        from resource_tracker import ResourceTracker

        def burn(s):
            end = time.perf_counter() + s
            while time.perf_counter() < end:
                pass

        values = []
        for _ in range(10):
            t = ResourceTracker(discover_cloud=False, discover_server=False)
            ws = [threading.Thread(target=burn, args=(0.004,)) for _ in range(3)]
            [w.start() for w in ws]
            [w.join() for w in ws]
            t.stop()
            values += t.process_metrics["cpu_usage"]
        print(json.dumps(values))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    values = json.loads(done.stdout)
    assert len(values) == 10 and max(values) <= 1.0


def test_a_short_child_process_through_the_command_line_tool(tmp_path):
    """`resource-tracker run -- python -c pass`: a real command of a few tens of ms (an
    interpreter starting and exiting, all CPU)."""
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-m", "resource_tracker", "run", "--format", "json",
             "--output", str(tmp_path), "--", sys.executable, "-c", "pass"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        saved = ResourceTracker.loads((tmp_path / "resource-tracker.json").read_text())
        assert all(v <= os.cpu_count() for v in saved.process_metrics["cpu_usage"])
        assert saved.recommend_resources()["cpu"] == 1
        assert "recommended 1 CPU" in done.stderr


def test_a_final_partial_interval_is_merged_into_the_previous_row():
    """Runs ending at various points between two samples: no row (but the first) covers
    less than 0.1 s, and no CPU time is lost in the merge.

    Not run per backend: the workload spins in this process holding the GIL, which delays a
    Python sampler thread's ticks (the psutil backend's known limit with in-process work);
    test_a_short_last_interval_is_folded_by_the_registry_rules covers both backends with a
    workload in a child process."""
    for length in (0.43, 0.47, 0.52, 0.58):
        for _ in range(5):  # a loaded machine may hold the sampler thread past its ticks
            before = time.process_time()
            tracker = _quiet(interval=0.2)
            _burn(length)
            tracker.stop()
            used = time.process_time() - before
            times = [tracker.start_time] + tracker.process_metrics["timestamp"]
            spans = [b - a for a, b in zip(times, times[1:])]
            if len(spans) >= 2:
                break
        assert len(spans) >= 2, spans
        assert min(spans[1:]) >= 0.1 - 1e-6, (length, spans)
        rows = tracker.process_metrics
        counted = sum(rows["utime"]) + sum(rows["stime"])
        assert abs(counted - used) < 0.05 + 0.02 * len(spans), (counted, used)
        assert all(v <= CORES for v in rows["cpu_usage"])


def test_a_short_run_takes_its_cpu_figure_from_the_history():
    """The recommendation's CPU comes from the runs long enough to measure."""
    long_run = _quiet(interval=0.1)
    workers = [threading.Thread(target=_burn, args=(1.2,)) for _ in range(min(2, CORES))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    long_run.stop()
    history = [long_run.stats()]
    expected = long_run.recommend_resources()["cpu"]
    short_run = _quiet()
    _burst(3, 0.004)
    short_run.stop()
    assert short_run.recommend_resources(historical_stats=history)["cpu"] == expected
    assert short_run.recommend_resources()["cpu"] == 1


def test_a_run_stopped_at_once_still_has_its_row(backend):
    """A tracker stopped right after it started (a step that does almost nothing) has one
    row, a bounded CPU usage and a recommendation: not 'not enough data'."""
    for _ in range(20):
        tracker = _quiet(interval=0.2)
        tracker.stop()
        assert tracker.n_samples == 1
        assert all(0 <= v <= os.cpu_count() for v in tracker.process_metrics["cpu_usage"])
        assert tracker.recommend_resources()["cpu"] == 1


def _stopped_soon_after_a_tick(interval):
    """(tracker, first rows) of a spinning workload tracked for one tick, then stopped 0.1 s
    later. A busy machine can delay the stop past a quarter interval (then the last reading is
    its own row, as the rule says: checked), or hold the sampling thread past stop()'s bound
    (then there is no final reading): tried again, up to ten times."""
    for _ in range(10):
        w = Workload("spin(10)", preexec_fn=highest_priority)  # CPU to measure under any load
        try:
            w.go()
            tracker = _quiet(pid=w.pid, interval=interval)
            assert tracker.wait_for_samples(1, 5)
            before = {"process": tracker.process_metrics[0], "system": tracker.system_metrics[0]}
            time.sleep(0.1)
            tracker.stop()
        finally:
            w.kill()
        stamps = tracker.system_metrics["timestamp"]
        last = {"process": tracker.process_metrics, "system": tracker.system_metrics}
        if any(last[t]["timestamp"][-1] == before[t]["timestamp"] for t in last):
            continue  # no final reading: stop() gave up on a thread the machine held up
        if len(stamps) == 1:
            return tracker, before
        assert stamps[1] - stamps[0] > interval * 0.25, stamps  # a late stop: its own row
    raise AssertionError("ten stops in a row came late or found the sampling thread held up")


def test_a_short_last_interval_is_folded_by_the_registry_rules(backend):
    """A stop 0.1 s after a tick (< a quarter interval) folds the last reading into the row
    before, column by column as the registry's fold rule says: amounts add up, peaks keep
    the higher, gauges take the later reading, CPU usage is recomputed over the whole span."""
    interval = 2.0  # a quarter of it (0.5 s) is room for a stop 0.1 s late on a busy machine
    tracker, before = _stopped_soon_after_a_tick(interval)
    after = {"process": tracker.process_metrics, "system": tracker.system_metrics}
    assert len(after["process"]) == len(after["system"]) == 1
    for table, rows in after.items():
        row, old = rows[0], before[table]
        for c in registry.columns(table):
            if c.fold in ("sum", "peak"):
                assert row[c.name] >= old[c.name], (table, c.name)
        assert row["timestamp"] > old["timestamp"]
    row = after["process"][0]
    assert row["utime"] + row["stime"] > before["process"]["utime"] + before["process"]["stime"]
    # the folded row ends at the final reading, less than a quarter interval after the tick
    # it was folded into (the tracker's own clock, however late the machine ran the tick)
    assert 0 < row["timestamp"] - before["process"]["timestamp"] < 0.25 * interval
    # the span from the baseline reading (the first row's rate says where it was: a slowed
    # sampler thread takes it after start_time) to the final one
    first = before["process"]
    assert first["cpu_usage"] > 0, first
    baseline = first["timestamp"] - (first["utime"] + first["stime"]) / first["cpu_usage"]
    span = row["timestamp"] - baseline
    assert row["cpu_usage"] == pytest.approx((row["utime"] + row["stime"]) / span, rel=0.05)
    assert row["cpu_usage"] > 0.1  # the workload spins (its share of a busy machine)


def test_a_long_last_interval_is_its_own_row(backend):
    """A stop well over a quarter interval after the only tick (0.25 s of 0.4): the final
    reading is a row of its own, taken during stop(). A loaded machine may oversleep into a
    further tick (two rows before stop() was called): that attempt does not count, another
    is made."""
    for _ in range(10):
        tracker = _quiet(interval=0.4)
        assert tracker.wait_for_samples(1, 30)
        time.sleep(0.25)
        asked = time.time()
        tracker.stop()
        done = time.time()
        ts = list(tracker.process_metrics["timestamp"])
        ticks = [t for t in ts if t < asked]
        if len(ticks) != 1:
            continue  # the machine held this thread past the next tick
        assert asked - ticks[0] >= 0.25 * 0.4  # a long last interval (the sleep makes it so)
        assert len(ts) == 2 and asked <= ts[1] <= done, (ts, asked, done)
        return
    pytest.fail("every attempt overslept into a further tick")
