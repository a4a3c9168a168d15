"""The helper modules code written for the original package imports: their documented
signatures (written here, from the original's documentation) and their results, compared
with the ground truth of the same process (os.times, /proc/meminfo, a touched buffer)."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import time

import pytest

from resource_tracker import ResourceTracker

#: module -> function -> the documented parameters (name=default) and return annotation text
DOCUMENTED = {
    "resource_tracker.tracker_procfs": {
        "get_process_stats": (
            ["pid", "children=True"],
            "Dict[str, Union[int, float, None, Set[int]]]",
        ),
        "get_system_stats": ([], "Dict[str, Union[int, float, Dict]]"),
    },
    "resource_tracker.tracker_psutil": {
        "get_process_stats": (
            ["pid", "children=True"],
            "Dict[str, Union[int, float, None, Set[int]]]",
        ),
        "get_system_stats": ([], "Dict[str, Union[int, float, Dict]]"),
    },
    "resource_tracker.helpers": {
        "aggregate_stats": (["stats"], "Dict[str, Dict[str, Any]]"),
    },
    "resource_tracker.server_info": {
        "get_total_memory_mib": ([], None),
        "get_total_memory_mb": ([], None),  # 0.4
    },
    "resource_tracker.report": {"round_memory": (["mib"], "int")},
    "resource_tracker.keeper": {
        "keeper_request": (["path", "timeout=2", "endpoint=None"], "Any"),
        "get_instance_price": (["vendor_id", "region_id", "instance_type"], "Optional[float]"),
        "get_recommended_cloud_servers": (
            ["cpu", "memory", "gpu=None", "vram=None", "n=10"],
            "List[Dict[str, Any]]",
        ),
    },
    "resource_tracker.tiny_bars": {"render_template": (["template", "context"], "str")},
    "resource_tracker.dummy_workloads": {
        "cpu_single": (["duration=1"], "None"),
        "cpu_multi": (["duration=1", "ncores=None"], "None"),  # the original: os.cpu_count()
    },
}


def _params(func):
    return [
        p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}"
        for p in inspect.signature(func).parameters.values()
    ]


@pytest.mark.parametrize("module, name", [(m, f) for m, funcs in DOCUMENTED.items() for f in funcs])
def test_helpers_have_the_documented_signatures(module, name):
    if module.endswith("psutil"):
        pytest.importorskip("psutil")
    func = getattr(importlib.import_module(module), name)
    params, returns = DOCUMENTED[module][name]
    assert _params(func) == params
    if returns is not None:
        assert inspect.signature(func).return_annotation == returns


def test_stat_spec_is_importable_where_it_was():
    from resource_tracker.tiny_data_frame import StatSpec

    assert StatSpec("process_cpu_usage", max).agg_name is None


def _cpu_seconds():
    t = os.times()
    return t.user + t.system


def _descendants(pid):
    """How many processes descend from pid now, read from /proc (the ground truth)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, todo = 0, [pid]
    while todo:
        of = todo.pop()
        kids = [child for child, parent in parents.items() if parent == of]
        found += len(kids)
        todo.extend(kids)
    return found


@pytest.mark.parametrize("module", ["tracker_procfs", "tracker_psutil"])
def test_get_process_stats_counts_cpu_and_memory_as_this_process_does(module):
    """Between two calls: the CPU seconds this process burnt (os.times) and the memory it
    touched; one reading's memory in both series' units."""
    if module == "tracker_psutil":
        pytest.importorskip("psutil")
    get = importlib.import_module(f"resource_tracker.{module}").get_process_stats
    first = get(os.getpid())
    began = _cpu_seconds()
    buffer = bytearray(48 * 1024 * 1024)
    buffer[::4096] = b"x" * len(buffer[::4096])
    total = 0
    while _cpu_seconds() - began < 0.3:
        total += sum(range(10000))
    before = _descendants(os.getpid())  # a test worker may hold servers of other tests
    second = get(os.getpid())
    after = _descendants(os.getpid())
    burnt = _cpu_seconds() - began
    counted = (second["utime"] + second["stime"]) - (first["utime"] + first["stime"])
    assert abs(counted - burnt) <= 0.05 + 0.1 * burnt, (counted, burnt)
    grown_mib = second["memory_mib"] - first["memory_mib"]
    assert 48 * 0.9 <= grown_mib <= 48 * 1.1 + 8, grown_mib
    assert second["memory"] == second["memory_mib"] * 1024
    assert second["pid"] == os.getpid()
    assert min(before, after) <= second["children"] <= max(before, after), (before, after)
    assert second["disk_read_bytes"] == second["read_bytes"] >= first["read_bytes"]
    assert second["gpu_vram"] == second["gpu_vram_mib"] == 0 and second["gpu_utilized"] == 0
    del buffer


def test_get_system_stats_memory_and_disk_space():
    from resource_tracker.tracker_procfs import get_system_stats

    stats = get_system_stats()
    meminfo = dict(line.split(":", 1) for line in open("/proc/meminfo"))
    total_kib = int(meminfo["MemTotal"].split()[0])
    assert stats["memory_free"] == stats["memory_free_mib"] * 1024
    assert 0 < stats["memory_used"] + stats["memory_free"] <= total_kib
    space = stats["disk_spaces"]["all"]
    assert space["total"] >= space["used"] > 0
    root = os.statvfs("/")
    assert space["total"] >= root.f_blocks * root.f_frsize * 0.99  # "/" is among them
    assert set(stats["disk_stats"]["all"]) == {"read_bytes", "write_bytes"}
    assert stats["processes"] >= 1


def test_aggregate_stats_of_real_runs():
    """Means and durations averaged, the rest the highest (the original's documented rule),
    on the stats() of two real runs; what is not a number is left out."""
    from resource_tracker.helpers import aggregate_stats

    runs = []
    for size in (8, 24):
        tracker = ResourceTracker(interval=0.05, discover_cloud=False)
        buffer = bytearray(size * 1024 * 1024)
        buffer[::4096] = b"x" * len(buffer[::4096])
        tracker.wait_for_samples(2, timeout=30)
        tracker.stop()
        runs.append(tracker.stats())
        del buffer
    out = aggregate_stats(runs)
    cpu = [r["process_cpu_usage"]["mean"] for r in runs]
    assert out["process_cpu_usage"]["mean"] == pytest.approx(sum(cpu) / 2)
    assert out["process_memory"]["max"] == max(r["process_memory"]["max"] for r in runs)
    durations = [r["timestamp"]["duration"] for r in runs]
    assert out["timestamp"]["duration"] == pytest.approx(sum(durations) / 2)
    assert "data_quality" not in out or all(
        isinstance(v, float) for v in out["data_quality"].values()
    )
    assert aggregate_stats(
        [{"cpu_usage": {"mean": 1.5, "max": 2.0}}, {"cpu_usage": {"mean": 2.5, "max": 3.0}}]
    ) == {"cpu_usage": {"mean": 2.0, "max": 3.0}}


def test_total_memory_in_mib_from_meminfo():
    from resource_tracker.server_info import get_total_memory_mb, get_total_memory_mib

    meminfo = dict(line.split(":", 1) for line in open("/proc/meminfo"))
    kib = int(meminfo["MemTotal"].split()[0])
    assert get_total_memory_mib() == get_total_memory_mb() == round(kib / 1024, 2)


def test_round_memory_rounds_as_the_recommendation_does():
    """The original's documented examples, and this run's recommendation: its memory is the
    peak + 20% rounded by the same rule."""
    from resource_tracker.report import round_memory

    assert [round_memory(v) for v in (68, 896, 3863)] == [128, 1024, 4096]
    assert [round_memory(v) for v in (129, 300, 1025, 5000)] == [256, 512, 2048, 5120]
    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    tracker.wait_for_samples(2, timeout=30)
    tracker.stop()
    peak_kib = max(tracker.stats()["process_memory"]["max"], tracker.memory_hwm or 0)
    assert tracker.recommend_resources()["memory"] == round_memory(peak_kib / 1024 * 1.2)


def test_tracker_psutil_without_psutil_names_what_to_use(tmp_path):
    """Importing it where psutil is missing: an ImportError that says what to do (a child
    interpreter where `import psutil` fails)."""
    import subprocess

    (tmp_path / "psutil.py").write_text("raise ImportError('no psutil here')\n")
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "try:\n    import resource_tracker.tracker_psutil\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install psutil" in out.stdout and "tracker_procfs" in out.stdout


def test_aggregate_stats_rejects_a_figure_stats_never_gives():
    """The original raised ValueError for an aggregation it did not know; here the known ones
    are every figure stats() gives, and the sections describing a run are left out."""
    from resource_tracker.helpers import aggregate_stats

    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    tracker.wait_for_samples(2, timeout=30)
    tracker.stop()
    run = tracker.stats()
    out = aggregate_stats([run, run])
    assert "data_quality" in run and not {"data_quality", "cgroup", "tree_source"} & set(out)
    assert set(out["process_memory"]) == {"mean", "max", "p50", "p90", "p99"}
    assert out["timestamp"]["samples"] == run["timestamp"]["samples"]
    odd = {**run, "process_memory": {**run["process_memory"], "median": 1.0}}
    with pytest.raises(ValueError) as info:
        aggregate_stats([run, odd])
    text = str(info.value)
    assert "Unsupported aggregation type: 'median'" in text and "'process_memory'" in text
    assert "supported: mean, max, p50, p90, p99, sum, duration, samples" in text
    with pytest.raises(ValueError, match="'avg' in column 'cpu_usage'"):
        aggregate_stats([{"cpu_usage": {"avg": 1.0}}])


def _schedstat(path):
    """(seconds on a CPU, seconds waiting for one) of a task, from its schedstat."""
    with open(path) as f:
        on_cpu, waiting = f.read().split()[:2]
    return int(on_cpu) / 1e9, int(waiting) / 1e9


def test_cpu_single_never_sleeps_for_its_duration():
    """One busy thread: the whole wall time it ran, it was on a CPU or waiting for one
    (the kernel's schedstat of this thread), however loaded the machine."""
    from resource_tracker.dummy_workloads import cpu_single

    on0, wait0 = _schedstat("/proc/thread-self/schedstat")
    t0 = os.times()
    began = time.monotonic()
    cpu_single(0.4)
    elapsed = time.monotonic() - began
    on1, wait1 = _schedstat("/proc/thread-self/schedstat")
    t1 = os.times()
    assert elapsed >= 0.4
    assert (on1 - on0) + (wait1 - wait0) >= 0.9 * elapsed, (on1 - on0, wait1 - wait0, elapsed)
    burnt = (t1.user + t1.system) - (t0.user + t0.system)
    assert abs(burnt - (on1 - on0)) <= 0.05 + 0.1 * burnt  # the CPU it got is this thread's


def _busy_children():
    """{pid: /proc/pid} of this process's children running a `python -c` busy loop."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and argv[1:2] == [b"-c"] and b"monotonic" in argv[2]:
            found[int(entry)] = f"/proc/{entry}"
    return found


def test_cpu_multi_runs_ncores_busy_processes():
    """ncores child processes, each on a CPU or waiting for one all the time it lived (their
    schedstat against their age), and their CPU seconds are what this process's children's
    rusage counts."""
    import threading

    from resource_tracker.dummy_workloads import cpu_multi

    t0 = os.times()
    worker = threading.Thread(target=cpu_multi, args=(1.0, 3))
    worker.start()
    seen = {}
    while worker.is_alive():
        for pid, path in _busy_children().items():
            try:
                on_cpu, waiting = _schedstat(f"{path}/schedstat")
                with open(f"{path}/stat") as f:
                    started = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
                with open("/proc/uptime") as f:
                    age = float(f.read().split()[0]) - started
            except (OSError, IndexError, ValueError):
                continue
            if age >= 0.3:
                seen[pid] = (on_cpu + waiting, age)
        time.sleep(0.02)
    worker.join()
    t1 = os.times()
    assert len(seen) == 3, seen
    for pid, (busy, age) in seen.items():
        assert busy >= 0.85 * age - 0.02, (pid, busy, age)  # age: clock ticks (10 ms)
    children_cpu = (t1.children_user + t1.children_system) - (t0.children_user + t0.children_system)
    assert children_cpu > 0
    with pytest.raises(ValueError, match="ncores"):
        cpu_multi(0.1, 0)
