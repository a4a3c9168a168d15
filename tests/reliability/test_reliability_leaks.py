"""Every C entry point of resource_tracker._core is called many times after a warm-up, and the
C heap (glibc mallinfo2), the resident set, the open descriptors and the thread count may not
keep growing: a round of calls whose growth stays within the tolerance passes, and only when
every one of five rounds grows does the test fail (allocators and caches are noisy). The last
test checks that every public callable of _core, and every method and property of
_core.Sampler, has a leak test here.

GPU: the NVML stand-in of tests/gpu_cloud (nvml_stub.c, speaking the NVML C interface; there
is no GPU here). Cloud: the loopback metadata stand-in of tests/gpu_cloud/gpu_cloud_mock.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from array import array

import pytest
from reliability_helpers import PYMALLOC, assert_no_leak, nvml_stub, table

from resource_tracker import _core

COVERED = set()


def covers(*names):
    """Records that the decorated test leak-checks the named entry points."""

    def mark(fn):
        COVERED.update(names)
        return fn

    return mark


@pytest.fixture(scope="module")
def sampled():
    """A stopped sampler of this process with a few rows, and its tables."""
    s = _core.Sampler(os.getpid(), 0.02)
    s.start()
    assert s.wait(5, 10.0)
    s.stop()
    return s, table(s, "process"), table(s, "system")


@covers("Sampler")
def test_reliability_leak_sampler_create(tmp_path):
    assert_no_leak("Sampler() + free", lambda: _core.Sampler(os.getpid(), 1.0), 2000)
    assert_no_leak(
        "Sampler(discovery='listing') + free",
        lambda: _core.Sampler(os.getpid(), 1.0, discovery="listing"),
        2000,
    )
    assert_no_leak(
        "Sampler(no processes, no system)",
        lambda: _core.Sampler(os.getpid(), 1.0, track_processes=False, track_system=False),
        2000,
    )

    def refused():
        for kwargs in (
            {"proc_root": str(tmp_path / "missing")},
            {"interval": -1.0},
            {"discovery": "fast\x1b"},
        ):
            try:
                _core.Sampler(os.getpid(), **dict({"interval": 1.0}, **kwargs))
            except (OSError, ValueError):
                pass
            else:
                raise AssertionError(f"Sampler({kwargs}) was accepted")

    assert_no_leak("Sampler() refused", refused, 2000)


@pytest.mark.parametrize("discovery", ["auto", "listing"])
@pytest.mark.parametrize("forker", ["main thread", "a new thread each time"])
def test_reliability_leak_children_come_and_go(discovery, forker):
    """Readings of this process while its children come and go (one started, one reaped
    each reading), started by the main thread or by a thread that then ends: the children
    lists (one kept per thread), their descriptors and the entries are given back, on both
    discovery paths."""
    kids = []
    s = _core.Sampler(os.getpid(), 1.0, track_system=False, discovery=discovery)

    def start():
        kids.append(subprocess.Popen(["sleep", "30"]))

    def reading():
        if forker == "main thread":
            start()
        else:
            t = threading.Thread(target=start)
            t.start()
            s.sample_now()  # the thread's list is read (and kept) while it lives
            t.join()
        if len(kids) > 3:
            kid = kids.pop(0)
            kid.kill()
            kid.wait()
        s.sample_now()

    try:
        assert_no_leak(f"children come and go ({discovery})", reading, 100)
    finally:
        for kid in kids:
            kid.kill()
            kid.wait()
    s.stop()


@covers("Sampler.start", "Sampler.stop")
@pytest.mark.valgrind
def test_reliability_leak_sampler_start_stop():
    def cycle():
        s = _core.Sampler(os.getpid(), 0.005)
        s.start()
        s.stop()
        s.stop()  # idempotent

    assert_no_leak("Sampler.start/stop", cycle, 100)

    def start_twice():
        s = _core.Sampler(os.getpid(), 0.005)
        s.start()
        try:
            s.start()
        except RuntimeError:
            pass
        s.stop()

    assert_no_leak("Sampler.start twice", start_twice, 100)

    def never_stopped():  # freed while running: the destructor stops and joins
        _core.Sampler(os.getpid(), 0.005).start()

    assert_no_leak("Sampler freed while running", never_stopped, 100)


@covers("Sampler.record_stacks", "Sampler.stacks", "stacks_unsupported", "stop_stacks")
def test_reliability_leak_stack_captures():
    """Samplers recording stacks (the capture thread is joined at stop()), their records
    read; record_stacks() refused twice; stop_stacks() in a process of its own (it closes the
    captures for good, as at exit)."""
    import subprocess
    import sys
    import threading

    main = threading.main_thread().ident

    def cycle():
        s = _core.Sampler(os.getpid(), 0.002, track_system=False)
        s.record_stacks(main)
        s.start()
        s.wait(3, 5.0)
        s.stop()
        assert s.stacks()["stats"]["requests"] >= 1
        listed, compact = s.stacks()["samples"], s.stacks(True)["samples"]  # the same samples
        assert compact == array("I", [v for sample in listed for v in sample]).tobytes()
        try:
            s.record_stacks(main)
        except RuntimeError:
            pass

    assert_no_leak("Sampler.record_stacks + stacks", cycle, 40)
    assert_no_leak("stacks_unsupported", _core.stacks_unsupported, 2000)
    code = (
        "import os, threading; from resource_tracker import _core\n"
        "for _ in range(50):\n"
        "    s = _core.Sampler(os.getpid(), 0.002); s.record_stacks(threading.get_ident())\n"
        "    s.start(); s.wait(2, 5.0); s.stop(); s.stacks()\n"
        "_core.stop_stacks(); _core.stop_stacks()\n"
        "try:\n"
        "    _core.Sampler(os.getpid(), 1.0).record_stacks(1)\n"
        "except RuntimeError as e:\n"
        "    print('refused:', e)\n"
        "print(len(os.listdir('/proc/self/task')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.split("\n")
    assert lines[0] == "refused: the interpreter is exiting"
    assert int(lines[1]) == 1  # every capture thread joined


@covers("Sampler.run_after_baseline", "Sampler.take_after_baseline")
@pytest.mark.valgrind
def test_reliability_leak_after_baseline_jobs():
    """A job run by a thread the sampler thread starts (the thread ends, the job and its
    reference are freed), a job given back, and a job refused."""
    import threading

    def run_one():
        done = threading.Event()
        s = _core.Sampler(os.getpid(), 0.005, track_system=False)
        s.run_after_baseline(done.set)
        s.start()
        assert done.wait(10)
        s.stop()

    def given_back():
        s = _core.Sampler(os.getpid(), 1.0, track_system=False)
        s.run_after_baseline(lambda: None)
        s.run_after_baseline(lambda: None)  # replaces the first
        assert s.take_after_baseline() is not None

    def refused():
        s = _core.Sampler(os.getpid(), 1.0, track_system=False)
        try:
            s.run_after_baseline(None)
        except TypeError:
            pass
        else:
            raise AssertionError("run_after_baseline(None) was accepted")

    assert_no_leak("Sampler.run_after_baseline (run)", run_one, 100)
    assert_no_leak("Sampler.run_after_baseline (given back)", given_back, 2000)
    assert_no_leak("Sampler.run_after_baseline (refused)", refused, 2000)


_CLOSE_JOBS = r"""
import os, sys, threading
sys.path.insert(0, sys.argv[1])
from reliability_helpers import assert_no_leak
from resource_tracker import _core

assert_no_leak("close_jobs", _core.close_jobs, 2000)
ran = threading.Event()
s = _core.Sampler(os.getpid(), 0.01, track_system=False)
s.run_after_baseline(ran.set)
s.start()
assert s.wait(3, 10)  # sampling goes on
s.stop()
print("ran" if ran.wait(0.5) else "not run")
"""


@covers("close_jobs")
def test_reliability_leak_close_jobs():
    """close_jobs() closes the gate for good (in a process of its own): nothing leaks, and no
    job runs after it while sampling goes on."""
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run(
        [sys.executable, "-c", _CLOSE_JOBS, here], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "not run", proc.stdout


@covers("Sampler.sample_now")
@pytest.mark.valgrind
def test_reliability_leak_sample_now():
    s = _core.Sampler(os.getpid(), 1.0)
    assert_no_leak("Sampler.sample_now", s.sample_now, 300)
    running = _core.Sampler(os.getpid(), 0.05)
    running.start()

    def refused():
        try:
            running.sample_now()
        except RuntimeError:
            return
        raise AssertionError("sample_now() ran beside the thread")

    try:
        assert_no_leak("Sampler.sample_now refused", refused, 2000)
    finally:
        running.stop()


@covers("Sampler.use_cgroup", "Sampler.tree_source")
def test_reliability_leak_cgroup_tree_source(tmp_path):
    """Samplers reading a (fake) v2 cgroup holding this process: created, pointed at the
    cgroup, read twice (the files opened, the pid list kept), freed; bad arguments refused;
    tree_source() read many times."""
    d = tmp_path / "job"
    d.mkdir()
    (d / "cgroup.procs").write_text(f"{os.getpid()}\n")
    (d / "cpu.stat").write_text("usage_usec 10\nuser_usec 5\nsystem_usec 5\n")
    (d / "memory.stat").write_text("anon 4096\nfile_mapped 4096\n")
    (d / "io.stat").write_text("8:0 rbytes=1 wbytes=2\n")
    (d / "pids.current").write_text("1\n")

    def cycle():
        s = _core.Sampler(os.getpid(), 1.0, track_system=False)
        s.use_cgroup(2, str(d), str(d), str(d), str(d))
        s.sample_now()
        s.sample_now()
        assert s.tree_source()["source"] == "cgroup"

    def refused():
        try:
            _core.Sampler(os.getpid(), 1.0).use_cgroup(3, "", "", "")
        except ValueError:
            return
        raise AssertionError("cgroup version 3 accepted")

    assert_no_leak("Sampler.use_cgroup + two readings", cycle, 200)
    assert_no_leak("Sampler.use_cgroup refused", refused, 500)
    s = _core.Sampler(os.getpid(), 1.0)
    assert_no_leak("Sampler.tree_source", s.tree_source, 2000)


@covers("Sampler.columns", "Sampler.wait")
@pytest.mark.valgrind
def test_reliability_leak_columns_wait(sampled):
    s = sampled[0]
    assert_no_leak("Sampler.columns('process')", lambda: s.columns("process"), 2000)
    assert_no_leak("Sampler.columns('system')", lambda: s.columns("system"), 2000)

    def bad_table():
        with pytest.raises(ValueError):
            s.columns("nope")

    assert_no_leak("Sampler.columns(bad)", bad_table, 2000)
    assert_no_leak("Sampler.wait (has rows)", lambda: s.wait(1, 0.0), 2000)
    assert_no_leak("Sampler.wait (timeout 0)", lambda: s.wait(10**6, 0.0), 2000)


@covers("Sampler.column_views")
@pytest.mark.valgrind
def test_reliability_leak_column_views(sampled):
    s = sampled[0]

    def views():
        cols = s.column_views("process")
        assert len(cols[0]) == s.n_samples
        return _core.stats(dict(zip(("timestamp", "pid"), cols)), None)

    assert_no_leak("Sampler.column_views + stats on them", views, 2000)
    assert_no_leak("Sampler.column_views('system')", lambda: s.column_views("system"), 2000)

    def bad_table():
        with pytest.raises(ValueError):
            s.column_views("nope")

    assert_no_leak("Sampler.column_views(bad)", bad_table, 2000)
    fresh = _core.Sampler(os.getpid(), 1.0)
    assert_no_leak(
        "Sampler.column_views (not stopped)", lambda: fresh.column_views("process"), 2000
    )


@covers("float64_text")
def test_reliability_leak_float64_text(sampled):
    s = sampled[0]
    col = s.column_views("process")[0]
    assert_no_leak("float64_text", lambda: _core.float64_text(["{", col, "}"]), 2000)

    def bad():
        for arg in (["\u00e9"], [b"bytes"], [array("q", [1])], None, [1.5]):
            try:
                _core.float64_text(arg)
            except (TypeError, ValueError):
                pass
            else:
                raise AssertionError(f"float64_text({arg!r}) was accepted")

    assert_no_leak("float64_text(bad)", bad, 2000)


PROPERTIES = (
    "state",
    "n_samples",
    "start_time",
    "stop_time",
    "interval",
    "cpu_seconds",
    "pss_seconds",
    "pss_reads",
    "memory_hwm",
    "samples_taken",
    "read_errors",
    "rows_dropped",
    "io_denied",
    "pss_denied",
    "listings",
    "probes",
    "children_scans",
    "wait_reads",
    "wait_carried",
    "list_failures",
    "children_lists",
    "fd_sheds",
    "kept_open",
    "fds_replaced",
    "tree_seen",
    "tree_missed",
    "powercap_zones",
    "powercap_wraps",
    "powercap_unreadable",
    "gpu_energy_integrated",
    "gpu_machine_wide",
)


@covers(*(f"Sampler.{p}" for p in PROPERTIES))
def test_reliability_leak_sampler_properties(sampled):
    s = sampled[0]
    assert_no_leak("Sampler properties", lambda: [getattr(s, p) for p in PROPERTIES], 2000)


@covers("stats")
@pytest.mark.valgrind
def test_reliability_leak_stats(sampled):
    s, process, system = sampled
    assert_no_leak(
        "stats(process, system)",
        lambda: _core.stats(process, system, s.start_time, s.stop_time),
        1000,
    )
    assert_no_leak("stats(None, system)", lambda: _core.stats(None, system), 1000)

    def bad():
        try:
            _core.stats({"cpu_usage": "abc"}, None)
        except (TypeError, ValueError):
            pass

    assert_no_leak("stats(bad)", bad, 1000)


@covers("summarize", "round_memory_mib")
def test_reliability_leak_summarize():
    values = [float(i % 97) for i in range(1000)]
    weights = [1.0 + (i % 3) for i in range(1000)]
    assert_no_leak("summarize(values)", lambda: _core.summarize(values), 1000)
    assert_no_leak("summarize(values, weights)", lambda: _core.summarize(values, weights), 1000)

    def bad():
        for args in (("x",), ([1.0, 2.0], [1.0])):
            try:
                _core.summarize(*args)
            except (TypeError, ValueError):
                pass

    assert_no_leak("summarize(bad)", bad, 2000)
    assert_no_leak("round_memory_mib", lambda: _core.round_memory_mib(1234.5), 5000)


def _refused(call):
    """call() raises TypeError or ValueError (a bad call refused, nothing kept)."""
    try:
        call()
    except (TypeError, ValueError):
        return
    raise AssertionError("a bad call was accepted")


@covers("code_segments", "code_busiest", "code_totals", "code_groups")
def test_reliability_leak_attribution():
    rows = 50
    samples = [[r, r % 2, r % 3, 1000 + r] for r in range(rows)] + [["x"], [1, 0, 99, 5]]
    compact = array("I", [v for s in samples[:rows] for v in s]).tobytes()
    t = array("d", (float(r + 1) for r in range(rows)))
    ones, none, zero = [1.0] * rows, array("d"), array("d", [0.0])

    def segments(found):
        return _core.code_segments(found, [1.0, 0.0], 3, t, ones, t, ones, 0.0, False, none, zero)

    made = segments(samples)
    assert made == segments(compact)  # the skipped samples named no stack
    segs, ents = (memoryview(b).cast("d") for b in made)
    busiest = memoryview(_core.code_busiest(segs, ents, [1.0, 0.0, 1.0])).cast("d")
    keys = ([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0], 2)
    assert_no_leak("code_segments(list)", lambda: segments(samples), 1000)
    assert_no_leak("code_segments(bytes)", lambda: segments(compact), 1000)
    assert_no_leak("code_busiest", lambda: _core.code_busiest(segs, ents, [1.0, 0, 1]), 2000)
    assert_no_leak("code_totals", lambda: _core.code_totals(segs, ents, *keys, 0.0, 99.0), 2000)
    groups = (busiest, array("d", segs[1::6]), array("d", segs[4::6]), [0.0, -1.0, 0.0], 1)
    assert_no_leak("code_groups", lambda: _core.code_groups(*groups, 1.0, 0.0, 99.0), 2000)

    def bad():
        for call in (
            lambda: _core.code_segments(None, [1.0], 3, t, ones, t, ones, 0.0, False, none, zero),
            lambda: _core.code_segments([], [1.0], 3, t, [1.0], t, ones, 0.0, False, none, zero),
            lambda: _core.code_segments([], [1.0], 3, t, ones, t, ones, 0.0, False, none, none),
            lambda: _core.code_totals(segs, ents, [0.0, 5.0], [0.0], [0.0], 1, 0.0, 1.0),
            lambda: _core.code_totals(segs, ents, [0.0], [0.0], [0.0], 1, 0.0, 1.0),
            lambda: _core.code_busiest(segs, ents, ["x"]),
            lambda: _core.code_groups(busiest, [1.0], [1.0], [0.0], 1, 1.0, 0.0, 9.0),
        ):
            _refused(call)

    assert_no_leak("attribution(bad)", bad, 2000)


@covers("change_points", "chart_series", "chart_times")
def test_reliability_leak_series(sampled):
    s = sampled[0]
    views = s.column_views("process")  # the stored columns, read in place
    t, cpu = views[0], views[_core.PROCESS_COLUMNS.index("cpu_usage")]
    stepped = [1.0] * 500 + [4.0] * 500 + [float("nan")] * 3
    assert_no_leak("change_points(list)", lambda: _core.change_points(stepped, 0.3, 3, 3), 1000)
    assert_no_leak("change_points(view)", lambda: _core.change_points(cpu, 0.3, 3, 3), 2000)
    for drawing in ("as_is", "kib_as_mib", "per_second", "at_most"):
        assert_no_leak(
            f"chart_series({drawing})",
            lambda d=drawing: _core.chart_series(stepped, d, 100, stepped, 1.0, 2.0),
            1000,
        )
    assert_no_leak("chart_series(view)", lambda: _core.chart_series(cpu, "as_is", 2, t), 2000)
    assert_no_leak("chart_times", lambda: _core.chart_times(stepped, 0.0, 100), 1000)

    def bad():
        for call in (
            lambda: _core.change_points(["x"], 0.3, 3, 3),
            lambda: _core.change_points(array("q", [1]), 0.3, 3, 3),
            lambda: _core.change_points([1.0], 0.3, 3, 0),
            lambda: _core.chart_series([1.0], "log", 10),
            lambda: _core.chart_series([1.0], "per_second", 10),
            lambda: _core.chart_series([1.0, 2.0], "per_second", 10, [1.0]),
            lambda: _core.chart_series([1.0], "per_second", 10, ["x"]),
            lambda: _core.chart_times(None, 0.0, 10),
        ):
            _refused(call)

    assert_no_leak("series(bad)", bad, 2000)


@covers(
    "cpu_rate",
    "fold_rows",
    "next_tick",
    "folds_into_last",
    "takes_final",
    "capture_period",
    "capture_serves_tick",
    "cgroup_keyed",
)
def test_reliability_leak_row_rules():
    """The rules the psutil backend, the exporter and the cgroup readers share with the C
    sampler: good calls and refused ones leave nothing behind."""
    p = [float(i) for i in range(len(_core.PROCESS_COLUMNS))]
    q = [float(2 * i) for i in range(len(_core.PROCESS_COLUMNS))]
    assert_no_leak("cpu_rate", lambda: _core.cpu_rate(0.5, 1.0, 2.0), 3000)
    assert_no_leak("fold_rows", lambda: _core.fold_rows("process", (p, q), 1.5, 2.0), 3000)
    assert_no_leak("next_tick", lambda: _core.next_tick(0.0, 1.0, 1.2, 1.0), 3000)
    assert_no_leak("folds_into_last", lambda: _core.folds_into_last(0.1, 1.0, True, True), 3000)
    assert_no_leak("takes_final", lambda: _core.takes_final(0.5, True), 3000)
    assert_no_leak("capture_period", lambda: _core.capture_period(30.0, 1.0), 3000)
    assert_no_leak("capture_serves_tick", lambda: _core.capture_serves_tick(9e4, 1.0, 1.0), 3000)
    text = "usage_usec 123\nuser_usec 100\nsystem_usec 23\nnr_throttled 0\n"
    assert_no_leak("cgroup_keyed", lambda: _core.cgroup_keyed(text), 3000)

    def bad():
        for call in (
            lambda: _core.fold_rows("nope", (p, q), 1.0, 2.0),
            lambda: _core.fold_rows("process", (p[:3], q), 1.0, 2.0),
            lambda: _core.fold_rows("process", "ab", 1.0, 2.0),
            lambda: _core.cgroup_keyed(None),
        ):
            try:
                call()
            except (TypeError, ValueError):
                pass

    assert_no_leak("row rules (refused)", bad, 1000)


@covers("read_regular_file")
def test_reliability_leak_read_regular_file(tmp_path):
    """The cgroup readers' file reader: a file read, one too large, one missing, a FIFO, a
    path with a NUL leave no memory and no descriptor behind."""
    path = tmp_path / "memory.stat"
    path.write_text("anon 4096\nfile_mapped 0\n" * 40)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert _core.read_regular_file(str(path), 1 << 20) == path.read_bytes()
    assert _core.read_regular_file(str(path), 10) is None
    assert _core.read_regular_file(str(fifo), 100) is None
    assert_no_leak("read_regular_file", lambda: _core.read_regular_file(str(path), 1 << 20), 2000)

    def refused():
        _core.read_regular_file(str(path), 10)
        _core.read_regular_file(str(tmp_path / "missing"), 100)
        _core.read_regular_file(str(fifo), 100)
        try:
            _core.read_regular_file("a\0b", 100)
        except ValueError:
            pass

    assert_no_leak("read_regular_file (refused)", refused, 1000)


@covers("recommend")
def test_reliability_leak_recommend(sampled):
    s, process, system = sampled
    st = _core.stats(process, system, s.start_time, s.stop_time)
    assert_no_leak("recommend([stats])", lambda: _core.recommend([st, st]), 2000)

    def bad():
        for arg in ([], [{}], [1], None):
            try:
                _core.recommend(arg)
            except (TypeError, ValueError):
                pass

    assert_no_leak("recommend(bad)", bad, 2000)


@covers("combine_runs")
def test_reliability_leak_combine_runs():
    values = [1.5, None, 3.0, float("nan"), 2]
    assert_no_leak("combine_runs(means)", lambda: _core.combine_runs(values, False), 5000)
    assert_no_leak("combine_runs(peaks)", lambda: _core.combine_runs(values, True), 5000)

    def bad():
        for args in ((["x"], True), (None, False), (1.0, True)):
            try:
                _core.combine_runs(*args)
            except TypeError:
                pass

    assert_no_leak("combine_runs(bad)", bad, 2000)


@covers("gpu_inventory", "Sampler.gpu_devices")
def test_reliability_leak_gpu(tmp_path):
    stub = nvml_stub(tmp_path)
    assert_no_leak("gpu_inventory(stub)", lambda: _core.gpu_inventory(stub), 300)
    assert_no_leak(
        "gpu_inventory(missing)", lambda: _core.gpu_inventory(str(tmp_path / "no.so")), 1000
    )

    def sampler_with_gpu():
        s = _core.Sampler(os.getpid(), 0.005, nvml_library=stub)
        s.sample_now()
        s.sample_now()

    assert_no_leak("Sampler(nvml_library=stub)", sampler_with_gpu, 100)

    s = _core.Sampler(os.getpid(), 0.005, nvml_library=stub)
    for _ in range(3):
        s.sample_now()
    assert [len(d["utilization"]) for d in s.gpu_devices()] == [2, 2]  # the stub's two GPUs
    assert_no_leak("Sampler.gpu_devices", s.gpu_devices, 2000)
    no_gpu = _core.Sampler(os.getpid(), 0.005, nvml_library=str(tmp_path / "no.so"))
    no_gpu.sample_now()
    no_gpu.sample_now()
    assert no_gpu.gpu_devices() == []
    assert_no_leak("Sampler.gpu_devices (no GPU)", no_gpu.gpu_devices, 2000)


@covers("Sampler.gpu_sources")
def test_reliability_leak_amd_gpu(tmp_path):
    """AMD's library (the amdsmi and ROCm SMI stand-ins, tests/gpu_cloud/amdsmi_stub.c): a
    sampler opening, reading (the process lists, the engine times kept between readings) and
    closing it, gpu_inventory and gpu_sources leak nothing."""
    missing = str(tmp_path / "no.so")
    for defines in ((), ("-DSTUB_ROCM_SMI",)):
        stub = nvml_stub(tmp_path, f"libamd{len(defines)}.so", *defines, stub="amdsmi_stub.c")

        def sampler_with_amd(stub=stub):
            s = _core.Sampler(os.getpid(), 0.005, nvml_library=missing, amd_library=stub)
            for _ in range(3):
                s.sample_now()

        assert_no_leak(f"Sampler(amd_library={defines})", sampler_with_amd, 100)
        assert_no_leak(
            f"gpu_inventory(amd {defines})",
            lambda stub=stub: _core.gpu_inventory(missing, stub),
            300,
        )
        s = _core.Sampler(os.getpid(), 0.005, nvml_library=missing, amd_library=stub)
        s.sample_now()
        s.sample_now()
        assert s.gpu_sources()["amd"] == 2
        assert_no_leak("Sampler.gpu_sources", s.gpu_sources, 2000)


@covers("discover_cloud", "cloud_evidence")
def test_reliability_leak_cloud(tmp_path):
    from gpu_cloud_mock import MetadataServer, make_sysfs

    gcp = make_sysfs(str(tmp_path / "gcp"), "gcp")
    laptop = make_sysfs(str(tmp_path / "laptop"), "laptop")
    with MetadataServer("gcp") as server:

        def ok():
            # the deadline of the answers, not a figure under test (they come at once, but a
            # busy machine may not run this process's server thread for over a second)
            assert _core.discover_cloud(gcp, server.url, 30.0)["vendor"] == "gcp"
            server.settle()  # the handler threads' sockets and threads are the server's
            server.requests.clear()

        assert_no_leak("discover_cloud(gcp mock)", ok, 100)
    with MetadataServer("gcp", behaviour="garbage") as server:

        def garbage():
            _core.discover_cloud(gcp, server.url, 1.0)
            server.settle()
            server.requests.clear()

        assert_no_leak("discover_cloud(garbage)", garbage, 100)
    assert_no_leak(
        "discover_cloud(refused)",
        lambda: _core.discover_cloud(gcp, "http://127.0.0.1:9", 1.0),
        300,
    )
    assert_no_leak("cloud_evidence", lambda: _core.cloud_evidence(laptop), 3000)


def test_loopback_settle_waits_for_a_connection_left_in_the_queue():
    """The leak checks' server at rest: a connection a client made and left (as a probe in
    parallel does) waits in the listening queue; settle() returns once it was accepted and
    served, not before (it once raised "cannot join thread before it is started" when the
    accept came during it)."""
    import socket

    from gpu_cloud_mock import MetadataServer

    with MetadataServer("gcp") as server:
        for _ in range(5):
            before = server.connections
            socket.create_connection(server.server_address, timeout=5).close()
            server.settle()
            assert server.connections == before + 1


def test_reliability_leak_check_can_fail():
    """The check itself: a leak of C heap, of Python objects or of descriptors is caught."""
    import ctypes

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    kept = []
    leaks = {
        "heap": lambda: kept.append(libc.malloc(256)),
        "blocks": lambda: kept.append(object()),
        "fds": lambda: kept.append(os.open("/dev/null", os.O_RDONLY)),
    }
    if not PYMALLOC:
        del leaks["blocks"]  # no pymalloc blocks to count: the heap figure holds them
    for kind, call in leaks.items():
        with pytest.raises(AssertionError, match="grew in each"):
            assert_no_leak(f"deliberate {kind} leak", call, 500 if kind != "fds" else 20)
    for item in kept:
        if isinstance(item, int) and item < 1 << 20:
            os.close(item)


@covers("term_hook")
def test_reliability_leak_term_hook():
    """term_hook() in a process of its own (it answers SIGTERM there for good): once
    installed, further calls refuse (False) and a non-callable is a TypeError, leaking nothing;
    SIGTERM then runs the callable from the hook's thread and the process dies of the signal;
    a forked child has SIGTERM's default action back."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = (
        "import os, signal, sys, time; from resource_tracker import _core\n"
        f"sys.path.insert(0, {here!r}); from test_reliability_leaks import assert_no_leak\n"
        "print(_core.term_hook(lambda: print('answered', flush=True) or True), flush=True)\n"
        "assert_no_leak('term_hook', lambda: _core.term_hook(print), 2000)\n"
        "def refused():\n"
        "    try:\n"
        "        _core.term_hook(3)\n"
        "    except TypeError:\n"
        "        pass\n"
        "assert_no_leak('term_hook(bad)', refused, 2000)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.kill(os.getpid(), signal.SIGTERM); time.sleep(5); os._exit(0)\n"
        "print('child', os.waitpid(pid, 0)[1] & 0x7f, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "time.sleep(30)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGTERM, (done.returncode, done.stderr[-2000:])
    lines = [line for line in done.stdout.split("\n") if not line.startswith("leak ")]
    assert lines[:3] == ["True", f"child {int(signal.SIGTERM)}", "answered"], done.stdout


@covers("skip_thread_stacks")
def test_reliability_leak_skip_thread_stacks():
    """skip_thread_stacks(): adding and removing a thread, a full registry refusing (False),
    an ident that is no integer (TypeError) leak nothing; the registry ends as it began."""
    ident = threading.get_ident()

    def add_and_remove():
        assert _core.skip_thread_stacks(ident) and _core.skip_thread_stacks(ident, False)

    assert_no_leak("skip_thread_stacks", add_and_remove, 5000)
    filled = []
    while _core.skip_thread_stacks(10_000 + len(filled)):
        filled.append(10_000 + len(filled))
    try:
        assert filled and not _core.skip_thread_stacks(1)  # full: refused
        assert_no_leak("skip_thread_stacks(full)", lambda: _core.skip_thread_stacks(1), 5000)
    finally:
        for other in filled:
            _core.skip_thread_stacks(other, False)

    def refused():
        for bad in ("thread", None, 1.5):
            try:
                _core.skip_thread_stacks(bad)
            except TypeError:
                pass
            else:
                raise AssertionError(f"skip_thread_stacks({bad!r}) was taken")

    assert_no_leak("skip_thread_stacks(bad)", refused, 2000)
    assert _core.skip_thread_stacks(ident) and _core.skip_thread_stacks(ident, False)


def test_reliability_every_entry_point_has_a_leak_test():
    import test_reliability_keeper  # noqa: F401 - its leak test registers keeper_* here

    public = {
        n
        for n in dir(_core)
        if not n.startswith("_")
        and callable(getattr(_core, n))
        and not (isinstance(getattr(_core, n), type) and issubclass(getattr(_core, n), Exception))
    }  # exception classes are not entry points
    public |= {f"Sampler.{n}" for n in dir(_core.Sampler) if not n.startswith("_")}
    missing = sorted(public - COVERED)
    print(f"leak tests cover {len(public & COVERED)} of {len(public)} entry points of _core")
    assert not missing, f"entry points of _core without a leak test: {missing}"


def _row_reader(fail_every=0):
    """A reader for _core.ReaderSampler: rows of ones after a baseline; every fail_every-th
    reading raises."""
    calls = [0]

    def read(mono, wall, own_cpu, own_memory_kib):
        calls[0] += 1
        if calls[0] == 1:
            return None
        if fail_every and calls[0] % fail_every == 0:
            raise OSError("a failing reading")
        return [1.0] * len(_core.PROCESS_COLUMNS), [1.0] * len(_core.SYSTEM_COLUMNS)

    return read


@pytest.mark.valgrind
@covers("ReaderSampler")
def test_reliability_leak_reader_sampler():
    """The psutil backend's engine: created and freed, readings in the caller (failing ones
    too), its tables read, and started, stopped and freed (a thread each)."""
    assert_no_leak("ReaderSampler() + free", lambda: _core.ReaderSampler(_row_reader(), 1.0), 2000)
    failing = _core.ReaderSampler(_row_reader(fail_every=2), 1.0)
    assert_no_leak("ReaderSampler.sample_now", failing.sample_now, 2000)
    assert failing.read_errors > 0 and failing.n_samples > 0
    assert_no_leak("ReaderSampler.columns", lambda: failing.columns("process"), 2000)

    def run_once():
        s = _core.ReaderSampler(_row_reader(fail_every=3), 0.001)
        s.start()
        assert s.wait(2, 10.0)
        s.stop()
        assert s.state == "stopped" and s.column_views("system") is not None
        assert s.n_samples >= 2 and s.interval == 0.001 and s.cpu_seconds >= 0
        assert s.start_time <= s.stop_time and s.samples_taken >= 3 and s.rows_dropped == 0

    assert_no_leak("ReaderSampler start/stop + free", run_once, 50)


_CLOSE_READERS = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
from reliability_helpers import assert_no_leak
from resource_tracker import _core

assert_no_leak("close_readers", _core.close_readers, 2000)
calls = []
def read(mono, wall, own_cpu, own_memory_kib):
    calls.append(mono)
s = _core.ReaderSampler(read, 0.001)
s.start()
while s.samples_taken < 3:  # readings go on; each fails at the closed gate
    time.sleep(0.001)
s.stop()
print(len(calls), s.n_samples, s.read_errors > 0)
"""


@covers("close_readers")
def test_reliability_leak_close_readers():
    """close_readers() closes the gate for good (in a process of its own): nothing leaks, and
    no engine thread calls Python after it (its readings fail and are counted)."""
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run(
        [sys.executable, "-c", _CLOSE_READERS, here], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "0 0 True", proc.stdout
