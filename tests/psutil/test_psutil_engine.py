"""The psutil backend is a reader on the C sampling engine (``_core.ReaderSampler``,
csrc/engine.c): the engine's thread calls it at each tick and owns the rows, the final
reading, stop(), fork and interpreter exit; a reader that raises or returns a bad row is
counted in read_errors and the thread goes on (issue 26, point 2)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from resource_tracker import _core
from resource_tracker.names import PROCESS_COLUMNS, SYSTEM_COLUMNS

PID = PROCESS_COLUMNS.index("pid")


class _Reader:
    """A reader whose calls are numbered: call k returns a process row whose pid column is k;
    every third call raises and every fifth returns a row one value short."""

    def __init__(self) -> None:
        self.calls = 0
        self.failed = 0
        self.threads: set = set()
        self.stored: list = []  # the numbers of the calls that gave a row

    def __call__(self, mono, wall, own_cpu, own_memory_kib):
        self.calls += 1
        k = self.calls
        self.threads.add(threading.get_native_id())
        if k == 1:
            return None  # the baseline
        if k % 3 == 0:
            self.failed += 1
            raise OSError("a reading that fails")
        prow = [0.0] * len(PROCESS_COLUMNS)
        prow[PID] = float(k)
        srow = [0.0] * len(SYSTEM_COLUMNS)
        if k % 5 == 0:
            self.failed += 1
            return prow[:-1], srow
        self.stored.append(k)
        return prow, srow


def _threads():
    return set(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None


@pytest.fixture(scope="module")
def run():
    """One engine run over a numbered reader, stopped after 12 rows."""
    reader = _Reader()
    before = _threads()
    engine = _core.ReaderSampler(reader, 0.005, True, True, 1.0, 1.0)
    engine.start()
    assert engine.wait(12, 30.0)
    during = _threads()
    engine.stop()
    views = engine.column_views("process")
    yield reader, engine, views, before, during


def test_a_reader_that_raises_or_returns_a_bad_row_is_counted_and_sampling_goes_on(run):
    reader, engine, views, _, _ = run
    assert engine.state == "stopped"
    assert engine.read_errors == reader.failed >= 4
    assert engine.samples_taken == reader.calls
    # the stored rows are the good calls' rows, in order; a short final reading is folded into
    # the last row, whose pid (a "latest" column) is then the final call's number
    pids = [int(v) for v in views[PID]]
    assert len(pids) >= 12 and len(reader.stored) - len(pids) in (0, 1)
    assert pids[:-1] == reader.stored[: len(pids) - 1]
    assert pids[-1] == reader.stored[-1]


def test_the_engine_thread_calls_the_reader_and_ends_with_stop(run):
    reader, engine, views, before, during = run
    assert len(reader.threads) == 1 and threading.get_native_id() not in reader.threads
    if before is not None:
        assert len(during - before) == 1 and str(next(iter(reader.threads))) in during
        assert _threads() == before  # joined by stop()
    assert type(views[0].obj).__name__ == "ColumnView"  # the engine's rows, no copy
    assert engine.column_views("system") is not None


def test_dropping_a_running_engine_stops_and_joins_its_thread():
    reader = _Reader()
    before = _threads()
    engine = _core.ReaderSampler(reader, 0.005)
    engine.start()
    assert engine.wait(2, 30.0)
    del engine
    gc.collect()
    calls = reader.calls
    if before is not None:
        assert _threads() == before
    assert reader.calls == calls


def test_sample_now_calls_the_reader_in_the_caller():
    seen = []

    def read(mono, wall, own_cpu, own_memory_kib):
        seen.append((threading.get_native_id(), own_cpu))
        return [1.0] * len(PROCESS_COLUMNS), [2.0] * len(SYSTEM_COLUMNS)

    engine = _core.ReaderSampler(read, 1.0)
    assert engine.sample_now() == ([1.0] * len(PROCESS_COLUMNS), [2.0] * len(SYSTEM_COLUMNS))
    assert seen == [(threading.get_native_id(), None)]
    with pytest.raises(TypeError, match="callable"):
        _core.ReaderSampler(42, 1.0)
    with pytest.raises(ValueError, match="interval"):
        _core.ReaderSampler(read, 0.0)
    with pytest.raises(ValueError, match=r"got 1e\+300"):
        _core.ReaderSampler(read=read, interval=1e300)


_CHILD = textwrap.dedent(
    """
    import os, sys, time
    from resource_tracker.psutil_sampler import PsutilSampler
    sampler = PsutilSampler(os.getpid(), 0.0001)
    sampler.start()
    assert sampler.wait(3, 30.0)
    if sys.argv[1] == "fork":
        pid = os.fork()
        if pid == 0:
            ok = sampler.state == "stopped" and sampler.n_samples >= 3
            sampler.stop()  # no thread here: returns at once
            os._exit(0 if ok and sampler.column_views("process") is not None else 3)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, status
        assert sampler.state == "running"
        sampler.stop()
        assert sampler.state == "stopped"
    print("exiting", flush=True)
    # the interpreter exits while the engine thread keeps calling the reader (no stop())
    """
)


@pytest.mark.parametrize("case", ["exit", "fork"])
def test_interpreter_exit_and_fork_while_the_engine_reads(case):
    pytest.importorskip("psutil")
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, case], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout == "exiting\n" and "Fatal" not in out.stderr, out.stderr
