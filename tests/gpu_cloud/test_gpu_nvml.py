"""GPU columns through NVML, with a stand-in NVML library.

There is no GPU on the development machines, so these tests compile
``nvml_stub.c`` (next to this file) into a shared library: a stand-in speaking
the NVML C interface (the same functions, structs and return codes as
``libnvidia-ml.so.1``) with scripted values. The tracker loads it through its
real dlopen path (``nvml_library`` / ``RESOURCE_TRACKER_NVML_LIBRARY``) and
calls it from its real sampler thread, while tracking a real subprocess.

Scripted machine: GPU 0 (16 GiB, 1024 MiB used, 25 % busy) runs a process
outside the tracked tree; GPU 1 (24 GiB, 2048 MiB used, 40 % busy) runs the
tracked process with 1.5 GiB at 40 %.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from array import array

import pytest

from resource_tracker import ResourceTracker, _core
from resource_tracker import formatting as fmt
from resource_tracker.cli.summary import summary_lines

HERE = os.path.dirname(os.path.abspath(__file__))
INTERVAL = 0.05

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc for the stub")


def _compile(out_dir, name, *defines, stub="nvml_stub.c"):
    """Builds a stand-in library of this folder (stub: its C file) into out_dir; its path."""
    path = os.path.join(str(out_dir), name)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O1", "-fvisibility=hidden", *defines, "-o", path]
        + [os.path.join(HERE, stub)],
        check=True,
    )
    return path


@pytest.fixture(scope="session")
def stub_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("nvml")


@pytest.fixture(scope="session")
def nvml_stub(stub_dir):
    """Path of the stand-in NVML library (current API: nvmlInit_v2, *_v3 process lists)."""
    return _compile(stub_dir, "libnvidia-ml-stub.so.1")


@pytest.fixture(scope="session")
def nvml_stub_old(stub_dir):
    """The stand-in built with only the old unversioned entry points (v1 process structs)."""
    return _compile(stub_dir, "libnvidia-ml-stub-old.so.1", "-DSTUB_OLD_API")


@pytest.fixture
def workload():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


class Control:
    """The stub's control file: which pids it reports and which failures it plays."""

    def __init__(self, path):
        self.path = path
        self.values = {"tree_pid": 0, "other_pid": 1, "mode": ""}
        self.write()

    def set(self, **values):
        self.values.update(values)
        self.write()

    def write(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            for key, value in self.values.items():
                f.write(f"{key}={value}\n")
        os.replace(tmp, self.path)


@pytest.fixture
def control(tmp_path, monkeypatch):
    ctl = Control(str(tmp_path / "nvml-control"))
    monkeypatch.setenv("NVML_STUB_CONTROL", ctl.path)
    return ctl


def _table(sampler, which):
    names = _core.PROCESS_COLUMNS if which == "process" else _core.SYSTEM_COLUMNS
    out = {}
    for name, raw in zip(names, sampler.columns(which)):
        col = array("d")
        col.frombytes(raw)
        out[name] = list(col)
    return out


def _gpu_rows(sampler, which):
    t = _table(sampler, which)
    return list(zip(t["gpu_usage"], t["gpu_vram"], t["gpu_utilized"]))


def _tracked(library, control, workload, monkeypatch, n):
    """A stopped ResourceTracker of the workload with n rows, the library from the environment."""
    control.set(tree_pid=workload.pid)
    monkeypatch.setenv("RESOURCE_TRACKER_NVML_LIBRARY", library)
    tracker = ResourceTracker(pid=workload.pid, interval=INTERVAL, discover_cloud=False)
    try:
        assert tracker.wait_for_samples(n, 30.0)
    finally:
        tracker.stop()
    return tracker


def _run(library, pid, n, **kwargs):
    """A stopped sampler of pid with at least n rows (kwargs: the Sampler's)."""
    sampler = _core.Sampler(pid, INTERVAL, nvml_library=library, **kwargs)
    sampler.start()
    try:
        assert sampler.wait(n, 30.0), "the sampler did not store samples"
    finally:
        sampler.stop()
    return sampler


def _sample(library, pid, n=3):
    sampler = _run(library, pid, n)
    return _gpu_rows(sampler, "system"), _gpu_rows(sampler, "process")


def _approx_rows(rows, expected):
    return all(r == pytest.approx(expected) for r in rows)


def test_gpu_nvml_columns_at_system_and_process_level(nvml_stub, control, workload):
    """Every GPU column: all GPUs at system level, the tracked tree only at process level."""
    control.set(tree_pid=workload.pid)
    system, process = _sample(nvml_stub, workload.pid)
    assert len(system) >= 3
    # system: 0.25 + 0.40 GPUs busy, 1024 + 2048 MiB used, both GPUs busy
    assert _approx_rows(system, (0.65, 3072.0, 2.0)), system
    # process: the tree's process on GPU 1 only (its compute and graphics entries count once)
    assert _approx_rows(process, (0.40, 1536.0, 1.0)), process


def test_gpu_nvml_other_process_not_attributed(nvml_stub, control, workload):
    """A GPU process that is not in the tracked tree counts for the system, not the process."""
    control.set(tree_pid=1, other_pid=1)  # both GPUs busy with pid 1, which is not in the tree
    system, process = _sample(nvml_stub, workload.pid)
    assert _approx_rows(system, (0.65, 3072.0, 2.0)), system
    assert _approx_rows(process, (0.0, 0.0, 0.0)), process


def test_gpu_nvml_old_unversioned_api(nvml_stub_old, control, workload):
    """A driver with only the old entry points (nvmlInit, v1 process structs) reads the same."""
    control.set(tree_pid=workload.pid)
    system, process = _sample(nvml_stub_old, workload.pid)
    assert _approx_rows(system, (0.65, 3072.0, 2.0)), system
    assert _approx_rows(process, (0.40, 1536.0, 1.0)), process


def test_gpu_nvml_process_utilization_not_supported(nvml_stub, control, workload):
    """Without per-process samples, a GPU the tree has to itself gives its utilisation."""
    control.set(tree_pid=workload.pid, mode="no_process_utilization")
    system, process = _sample(nvml_stub, workload.pid)
    assert _approx_rows(system, (0.65, 3072.0, 2.0)), system
    # GPU 1 holds only the tree's process: its 40 %; GPU 0 holds only another process: 0
    assert _approx_rows(process, (0.40, 1536.0, 1.0)), process


def test_gpu_nvml_everything_not_supported(nvml_stub, control, workload):
    """Every query answering NOT_SUPPORTED: zeros, and sampling goes on."""
    control.set(tree_pid=workload.pid, mode="not_supported")
    system, process = _sample(nvml_stub, workload.pid, n=4)
    assert len(system) >= 4
    assert _approx_rows(system, (0.0, 0.0, 0.0)), system
    assert _approx_rows(process, (0.0, 0.0, 0.0)), process


def _wait_row(sampler, which, expected, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = _gpu_rows(sampler, which)
        if rows and rows[-1] == pytest.approx(expected):
            return len(rows)
        time.sleep(INTERVAL / 2)
    raise AssertionError(f"{which} never read {expected}: last {rows[-3:]}")


def test_gpu_nvml_gpu_disappears_and_returns(nvml_stub, control, workload):
    """A GPU lost mid-run reads 0 while it is gone; the other GPU and sampling carry on."""
    control.set(tree_pid=workload.pid)
    sampler = _core.Sampler(workload.pid, INTERVAL, nvml_library=nvml_stub)
    sampler.start()
    try:
        _wait_row(sampler, "process", (0.40, 1536.0, 1.0))
        control.set(mode="gpu1_lost")
        n_lost = _wait_row(sampler, "system", (0.25, 1024.0, 1.0))
        assert _gpu_rows(sampler, "process")[n_lost - 1] == pytest.approx((0.0, 0.0, 0.0))
        control.set(mode="")
        _wait_row(sampler, "system", (0.65, 3072.0, 2.0))
        _wait_row(sampler, "process", (0.40, 1536.0, 1.0))
        assert sampler.state == "running"
    finally:
        sampler.stop()


@pytest.mark.parametrize("mode", ["init_fails", "no_gpu"])
def test_gpu_nvml_no_usable_driver(nvml_stub, control, workload, mode):
    """nvmlInit failing (driver not loaded) or no device: GPU columns 0, no error."""
    control.set(tree_pid=workload.pid, mode=mode)
    system, process = _sample(nvml_stub, workload.pid)
    assert len(system) >= 3
    assert _approx_rows(system, (0.0, 0.0, 0.0))
    assert _approx_rows(process, (0.0, 0.0, 0.0))
    assert _core.gpu_inventory(nvml_stub) == []


def test_gpu_nvml_missing_library(tmp_path, workload):
    """No NVML library at all (the normal case without a GPU): zeros, silently."""
    missing = str(tmp_path / "libnvidia-ml.so.1")
    system, process = _sample(missing, workload.pid)
    assert _approx_rows(system, (0.0, 0.0, 0.0))
    assert _approx_rows(process, (0.0, 0.0, 0.0))
    assert _core.gpu_inventory(missing) == []


def test_gpu_nvml_inventory(nvml_stub, control):
    """gpu_inventory lists each GPU's name and total memory (for server_info)."""
    assert _core.gpu_inventory(nvml_stub) == [
        {"name": "Stub NVML GPU 0", "memory_mb": 16384.0},
        {"name": "Stub NVML GPU 1", "memory_mb": 24576.0},
    ]


def test_gpu_nvml_tracker_recommendation(nvml_stub, control, workload, monkeypatch):
    """ResourceTracker with the library from the environment: stats and recommend_resources.

    1.5 GiB of VRAM + 20 % = 1843.2 MiB, rounded up to 2048 MiB; one GPU in use.
    """
    tracker = _tracked(nvml_stub, control, workload, monkeypatch, 4)
    stats = tracker.stats()
    assert stats["process_gpu_vram"]["max"] == pytest.approx(1536.0)
    assert stats["process_gpu_utilized"]["max"] == pytest.approx(1.0)
    assert stats["process_gpu_usage"]["mean"] == pytest.approx(0.40)
    assert stats["system_gpu_vram"]["max"] == pytest.approx(3072.0)
    assert stats["system_gpu_utilized"]["max"] == pytest.approx(2.0)
    assert stats["system_gpu_usage"]["max"] == pytest.approx(0.65)
    rec = tracker.recommend_resources()
    assert rec["gpu"] == 1
    assert rec["vram"] == 2048
    info = tracker.server_info
    assert info["gpu_count"] == 2
    assert info["gpu_names"] == ["Stub NVML GPU 0", "Stub NVML GPU 1"]
    assert info["gpu_memory_mb"] == 16384 + 24576


CRASHING_PROCESS = """
import faulthandler, os, resource, sys, threading
from resource_tracker import _core
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file from this deliberate crash
faulthandler.enable()
sampler = _core.Sampler(os.getpid(), 0.05, nvml_library=sys.argv[1])
sampler.start()
assert sampler.wait(2, 30.0)
with open(sys.argv[2], "w") as f:
    f.write("mode=" + sys.argv[3] + "\\n")
threading.Event().wait(120)  # the sampler thread's next query of the GPU faults
"""


@pytest.mark.parametrize("fault", ["segfault", "stack_overflow"])
def test_a_crash_in_the_sampler_thread_reaches_the_applications_fault_handler(
    nvml_stub, control, fault
):
    """A GPU library that faults inside the sampler's own C thread (a null write, or its stack
    run out): the process dies of SIGSEGV, and Python's faulthandler, enabled by the
    application, writes its report first: the thread leaves the fault signals unblocked (a
    blocked one makes the kernel kill the process past every handler) and has an alternate
    signal stack (the handler's room once the thread's own stack is spent). The main thread's
    stack is in the report, and no Python thread is named current: the fault was in ours."""
    proc = subprocess.run(
        [sys.executable, "-c", CRASHING_PROCESS, nvml_stub, control.path, fault],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGSEGV, proc.stderr
    assert "Fatal Python error: Segmentation fault" in proc.stderr
    assert "Current thread" not in proc.stderr
    assert 'File "<string>", line 11 in <module>' in proc.stderr


def _energy_run(library, pid, n=20):
    sampler = _run(library, pid, n)
    return sampler, _table(sampler, "system")


def test_gpu_nvml_power_and_energy(nvml_stub, control, workload):
    """GPU 0 (100 W, an energy counter in mJ) and GPU 1 (250 W in mW, no counter: integrated
    from the power): the energy of the rows after the first is 350 W times
    the time from the first row's reading to the last's (the counters' own clock and the
    sampler's, telescoped; the first row's interval begins at the baseline, not at start)."""
    control.set(tree_pid=workload.pid)
    sampler, system = _energy_run(nvml_stub, workload.pid)
    span = system["timestamp"][-1] - system["timestamp"][0]
    assert span > 0.5
    assert sum(system["gpu_energy_j"][1:]) == pytest.approx(350.0 * span, rel=0.05)
    assert sampler.gpu_energy_integrated >= len(system["timestamp"])  # GPU 1, every row


def test_gpu_nvml_power_not_supported(nvml_stub, control, workload):
    """No power or energy from the GPUs (NVML_ERROR_NOT_SUPPORTED): zeros, sampling goes on."""
    control.set(tree_pid=workload.pid, mode="not_supported")
    sampler, system = _energy_run(nvml_stub, workload.pid, n=3)
    assert set(system["gpu_energy_j"]) == {0.0}
    assert sampler.gpu_energy_integrated == 0


def test_gpu_nvml_energy_in_stats(nvml_stub, control, workload, monkeypatch):
    """stats()["energy"]: the GPUs' joules and kWh; the note says GPU 1's are integrated."""
    tracker = _tracked(nvml_stub, control, workload, monkeypatch, 10)
    stats = tracker.stats()
    gpu = stats["system_gpu_energy_j"]["sum"]
    times, joules = tracker.system_metrics["timestamp"], tracker.system_metrics["gpu_energy_j"]
    assert sum(joules[1:]) == pytest.approx(350.0 * (times[-1] - times[0]), rel=0.05)
    assert gpu == pytest.approx(sum(joules))
    assert stats["energy"]["gpu_joules"] == pytest.approx(gpu)
    # the process's share: its usage (0.40 of GPU 1) over the GPUs' (0.25 + 0.40), its CPU
    # share of no CPU energy (no powercap here) adding nothing
    assert stats["process_gpu_usage"]["mean"] == pytest.approx(0.40)
    assert stats["system_gpu_usage"]["mean"] == pytest.approx(0.65)
    assert stats["energy"]["process_joules"] == pytest.approx(gpu * 0.40 / 0.65)
    assert stats["energy"]["kwh"] == pytest.approx(stats["energy"]["joules"] / 3.6e6)
    assert "power times the interval" in stats["data_quality"]["energy"]


def _energy_tile(page):
    tile = page[page.index('id="rt-energy"') :]
    return tile[: tile.index("</div></div>")]


def test_gpu_nvml_energy_beside_the_cost_in_report_and_card(
    nvml_stub, control, workload, monkeypatch
):
    """The report's answers, the CLI summary and the Metaflow card (the same report, from the
    step's artifact) show the run's energy beside its cost, the process's share said to be an
    estimate."""
    tracker = _tracked(nvml_stub, control, workload, monkeypatch, 6)
    shown = fmt.energy(tracker.stats()["energy"]["joules"])
    tile = _energy_tile(str(tracker.report()))
    assert "Energy of this run" in tile and f"<b>{shown}</b>" in tile
    assert "GPU " in tile and "estimate" in tile
    energy = [line for line in summary_lines(tracker, server=False) if line.split()[0] == "energy"]
    assert len(energy) == 1 and shown in energy[0] and "estimate" in energy[0]
    card = pytest.importorskip(
        "metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card"
        ".tracked_resources_card"
    )
    decorator = pytest.importorskip(
        "metaflow_extensions.resource_tracker.plugins.track_resources_decorator"
    )
    data = decorator.build_artifact(tracker, None, failed=False, label="Flow/1/step/2")
    assert f"<b>{shown}</b>" in _energy_tile(card.render_artifact(data, label="Flow/1/step/2"))
