"""AMD GPU columns through amdsmi (and ROCm SMI), with a stand-in library.

There is no GPU on the development machines, so these tests compile ``amdsmi_stub.c`` (next
to this file) into a shared library speaking the amdsmi C interface (the functions, structs
and status codes of ``libamd_smi.so``), and with ``-DSTUB_ROCM_SMI`` into one speaking ROCm
SMI's (``librocm_smi64.so``). The tracker loads them through its real dlopen path
(``amd_library`` / ``RESOURCE_TRACKER_AMD_SMI_LIBRARY``) from its real sampler thread while
tracking a real subprocess. The NVML library is pointed at a missing file unless a test
reads both vendors.

Scripted machine: GPU 0 (MI210, 64 GiB, 4096 MiB used, 30 % busy, an energy counter at
300 W) runs a process outside the tracked tree; GPU 1 (MI300X, 192 GiB, 8192 MiB used, 60 %
busy, no energy counter, 500 W) runs the tracked process with 6 GiB, on the graphics engine
60 % of the time.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time

import pytest
from test_gpu_nvml import Control, _compile, _gpu_rows, _table
from test_gpu_nvml import _run as _run_nvml

from resource_tracker import ResourceTracker, _core
from resource_tracker.tracker import data_quality_notes

HERE = os.path.dirname(os.path.abspath(__file__))
INTERVAL = 0.05
MACHINE = (0.90, 4096.0 + 8192.0, 2.0)  # 0.30 + 0.60 GPUs busy, MiB used, GPUs busy
NAMES = ["AMD Instinct MI210", "AMD Instinct MI300X"]

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc for the stub")


@pytest.fixture(scope="session")
def amd_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("amdsmi")


@pytest.fixture(scope="session")
def amdsmi_stub(amd_dir):
    """The stand-in libamd_smi.so."""
    return _compile(amd_dir, "libamd_smi-stub.so", stub="amdsmi_stub.c")


@pytest.fixture(scope="session")
def rocm_smi_stub(amd_dir):
    """The stand-in librocm_smi64.so (ROCm SMI: no process list per GPU)."""
    return _compile(amd_dir, "librocm_smi64-stub.so", "-DSTUB_ROCM_SMI", stub="amdsmi_stub.c")


@pytest.fixture
def no_nvml(tmp_path):
    return str(tmp_path / "libnvidia-ml.so.1")


@pytest.fixture
def control(tmp_path, monkeypatch, workload):
    ctl = Control(str(tmp_path / "amdsmi-control"))
    monkeypatch.setenv("AMDSMI_STUB_CONTROL", ctl.path)
    ctl.set(tree_pid=workload.pid)
    return ctl


def _run(amd, pid, n, nvml):
    """A stopped sampler of pid with at least n rows, reading amd (nvml: a missing file)."""
    return _run_nvml(nvml, pid, n, amd_library=amd)


def _tracked(monkeypatch, pid, n, nvml, amd):
    """A stopped ResourceTracker of pid with n rows, the libraries from the settings."""
    monkeypatch.setenv("RESOURCE_TRACKER_NVML_LIBRARY", nvml)
    monkeypatch.setenv("RESOURCE_TRACKER_AMD_SMI_LIBRARY", amd)
    tracker = ResourceTracker(pid=pid, interval=INTERVAL, discover_cloud=False)
    try:
        assert tracker.wait_for_samples(n, 30.0)
    finally:
        tracker.stop()
    return tracker


def _all(rows, expected):
    return all(r == pytest.approx(expected) for r in rows)


def _tree_usage(rows):
    """The process's GPU usage: the median row (a row whose reading came late under load reads
    its engine time over the sampler's interval: a little more or less)."""
    return statistics.median(r[0] for r in rows)


def test_gpu_amd_columns_at_system_and_process_level(amdsmi_stub, control, workload, no_nvml):
    """Every GPU column: both GPUs at system level; at process level the tree's process on GPU
    1 (its VRAM; its graphics-engine time over the interval: 60 %), not GPU 0's process."""
    sampler = _run(amdsmi_stub, workload.pid, 12, no_nvml)
    system, process = _gpu_rows(sampler, "system"), _gpu_rows(sampler, "process")
    assert len(system) >= 12 and _all(system, MACHINE), system
    assert all(r[1:] == (6144.0, 1.0) for r in process), process
    assert _tree_usage(process) == pytest.approx(0.60, rel=0.05), process
    assert sampler.gpu_machine_wide == 0
    assert sampler.gpu_sources() == {"tried": True, "nvidia": 0, "amd": 2, "amd_library": "amdsmi"}


def test_gpu_amd_other_process_not_attributed(amdsmi_stub, control, workload, no_nvml):
    """The GPUs busy with processes outside the tree: the system's figures, none of the
    process's."""
    control.set(tree_pid=1, other_pid=1)
    sampler = _run(amdsmi_stub, workload.pid, 4, no_nvml)
    assert _all(_gpu_rows(sampler, "system"), MACHINE)
    assert _all(_gpu_rows(sampler, "process"), (0.0, 0.0, 0.0))


def test_gpu_amd_per_gpu_series_names_and_memory(amdsmi_stub, control, workload, no_nvml):
    """The per-GPU series: each GPU's name (the asic's market name), total memory, and its
    utilisation and used memory at every row; gpu_inventory (server_info) lists the same."""
    sampler = _run(amdsmi_stub, workload.pid, 3, no_nvml)
    devices = sampler.gpu_devices()
    assert [(d["name"], d["memory_total_mib"]) for d in devices] == [
        (NAMES[0], 65536.0),
        (NAMES[1], 196608.0),
    ]
    assert set(devices[0]["utilization"]) == {30.0} and set(devices[1]["utilization"]) == {60.0}
    assert set(devices[0]["memory_used_mib"]) == {4096.0}
    assert set(devices[1]["memory_used_mib"]) == {8192.0}
    assert _core.gpu_inventory(no_nvml, amdsmi_stub) == [
        {"name": NAMES[0], "memory_mb": 65536.0},
        {"name": NAMES[1], "memory_mb": 196608.0},
    ]


def _machine_wide_note(tracker):
    quality = tracker.data_quality()
    gpu_lines = [n for n in data_quality_notes({"data_quality": quality}) if n.startswith("GPU:")]
    assert len(gpu_lines) == 1, gpu_lines
    return quality["gpu"]


def test_gpu_amd_without_process_list_is_machine_wide(
    amdsmi_stub, control, workload, no_nvml, monkeypatch
):
    """amdsmi refusing its process list (AMDSMI_STATUS_NOT_SUPPORTED, as in some containers):
    the process's figures are the GPUs', counted, and data_quality says so in one line."""
    control.set(mode="no_process_list")
    tracker = _tracked(monkeypatch, workload.pid, 4, no_nvml, amdsmi_stub)
    sampler = tracker._sampler
    rows = _gpu_rows(sampler, "process")
    assert _all(rows, MACHINE) and _all(_gpu_rows(sampler, "system"), MACHINE)
    assert sampler.gpu_machine_wide >= 2 * len(rows)  # both GPUs, every row
    note = _machine_wide_note(tracker)
    assert "machine-wide" in note and "amdsmi" in note and "process list was refused" in note


def test_gpu_amd_rocm_smi_only(rocm_smi_stub, control, workload, no_nvml, monkeypatch):
    """Only ROCm SMI installed: the same system columns, names and memory; the process's VRAM
    from the machine's process list, and the utilisation of the GPU it has to itself (ROCm SMI
    lists each process's GPUs, not its time): GPU 1's 60 %, nothing of GPU 0's."""
    tracker = _tracked(monkeypatch, workload.pid, 4, no_nvml, rocm_smi_stub)
    sampler = tracker._sampler
    assert _all(_gpu_rows(sampler, "system"), MACHINE)
    assert _all(_gpu_rows(sampler, "process"), (0.60, 6144.0, 1.0))
    assert sampler.gpu_sources()["amd_library"] == "rocm_smi"
    assert sampler.gpu_machine_wide == 0 and "gpu" not in tracker.data_quality()
    assert [d["name"] for d in sampler.gpu_devices()] == NAMES
    assert tracker.server_info["gpu_names"] == NAMES


@pytest.mark.parametrize("mode", ["shared", "no_process_list"])
def test_gpu_amd_rocm_smi_machine_wide(
    rocm_smi_stub, control, workload, no_nvml, monkeypatch, mode
):
    """ROCm SMI with another process on the tree's GPU (its time cannot be split), or its
    process list refused: the GPU's own figures, counted, and one data-quality line."""
    control.set(mode=mode)
    tracker = _tracked(monkeypatch, workload.pid, 4, no_nvml, rocm_smi_stub)
    rows = _gpu_rows(tracker._sampler, "process")
    # shared: GPU 1 (the tree's VRAM); refused: both GPUs, with all their memory
    expected = (0.60, 6144.0, 1.0) if mode == "shared" else MACHINE
    assert _all(rows, expected), rows
    assert tracker._sampler.gpu_machine_wide >= len(rows) * (1 if mode == "shared" else 2)
    note = _machine_wide_note(tracker)
    assert "ROCm SMI" in note and "machine-wide" in note


@pytest.mark.parametrize("mode", ["init_fails", "no_gpu", "missing"])
def test_gpu_amd_no_usable_library(amdsmi_stub, control, workload, no_nvml, monkeypatch, mode):
    """amdsmi_init failing (no driver), no GPU, or no library at all: GPU columns 0, one
    data-quality line naming the settings, no error, sampling goes on."""
    library = no_nvml + ".amd" if mode == "missing" else amdsmi_stub
    control.set(mode=mode)
    tracker = _tracked(monkeypatch, workload.pid, 3, no_nvml, library)
    assert _all(_gpu_rows(tracker._sampler, "system"), (0.0, 0.0, 0.0))
    assert _all(_gpu_rows(tracker._sampler, "process"), (0.0, 0.0, 0.0))
    assert _core.gpu_inventory(no_nvml, library) == []
    note = _machine_wide_note(tracker)
    assert note.startswith("no GPU read") and "RESOURCE_TRACKER_AMD_SMI_LIBRARY" in note


def _pci_device(root, name, vendor, kind):
    """A PCI device's folder under a fake sysfs root: its vendor and class files."""
    device = root / "bus" / "pci" / "devices" / name
    device.mkdir(parents=True)
    (device / "vendor").write_text(vendor + "\n")
    (device / "class").write_text(kind + "\n")


@pytest.mark.parametrize("gpu_on_the_bus", [False, True])
def test_gpu_no_library_note_only_where_a_gpu_is(workload, monkeypatch, tmp_path, gpu_on_the_bus):
    """No GPU library found and none named: a machine whose PCI bus shows no NVIDIA or AMD
    display controller (most machines) gets no GPU line; one showing an AMD Instinct (a "3D
    controller", class 0x0380) gets the "no GPU read" line naming the settings."""
    if _core.gpu_inventory() != []:
        pytest.skip("this machine has a GPU library that finds a GPU")
    _pci_device(tmp_path, "0000:00:03.0", "0x1af4", "0x020000")  # a virtio network card
    _pci_device(tmp_path, "0000:00:00.0", "0x8086", "0x060000")  # a host bridge (Intel)
    if gpu_on_the_bus:
        _pci_device(tmp_path, "0000:c1:00.0", "0x1002", "0x038000")
    monkeypatch.setenv("RESOURCE_TRACKER_SYSFS_ROOT", str(tmp_path))
    for name in ("RESOURCE_TRACKER_NVML_LIBRARY", "RESOURCE_TRACKER_AMD_SMI_LIBRARY"):
        monkeypatch.delenv(name, raising=False)
    tracker = ResourceTracker(pid=workload.pid, interval=INTERVAL, discover_cloud=False)
    try:
        assert tracker.wait_for_samples(2, 30.0)
    finally:
        tracker.stop()
    quality = tracker.data_quality()
    if gpu_on_the_bus:
        assert quality["gpu"].startswith("no GPU read")
        assert "RESOURCE_TRACKER_AMD_SMI_LIBRARY" in quality["gpu"]
    else:
        assert "gpu" not in quality, quality["gpu"]


@pytest.mark.parametrize("library", ["amdsmi", "rocm_smi"])
def test_gpu_amd_absurd_values_are_not_counted(
    amdsmi_stub, rocm_smi_stub, control, workload, no_nvml, library
):
    """A library reporting the impossible (250 % busy, more memory used than the GPU has,
    2^63 bytes for a process, 10^18 ns of engine time in an interval, 65535 W, an energy
    counter running backwards): those figures are left out, the others kept, all finite."""
    control.set(mode="absurd")
    stub = amdsmi_stub if library == "amdsmi" else rocm_smi_stub
    sampler = _run(stub, workload.pid, 4, no_nvml)
    # GPU 0: its memory (not its 250 %); GPU 1: its 60 % (not its memory)
    assert _all(_gpu_rows(sampler, "system"), (0.60, 4096.0, 1.0))
    # the tree's process is on GPU 1 (utilized) without its VRAM; amdsmi: without its engine
    # time either; ROCm SMI: GPU 1's own utilisation (the tree has it to itself)
    expected = (0.0, 0.0, 1.0) if library == "amdsmi" else (0.60, 0.0, 1.0)
    assert _all(_gpu_rows(sampler, "process"), expected)
    assert set(_table(sampler, "system")["gpu_energy_j"]) == {0.0}


def _energy_span(system):
    return system["timestamp"][-1] - system["timestamp"][0]


@pytest.mark.parametrize("library", ["amdsmi", "rocm_smi"])
def test_gpu_amd_power_and_energy(amdsmi_stub, rocm_smi_stub, control, workload, no_nvml, library):
    """GPU 0's energy counter (300 W, in counts of 15.259 uJ) and GPU 1's power (500 W, no
    counter: integrated): the energy of the rows after the first is 800 W times the time from
    the first row's reading to the last's; every row integrates GPU 1."""
    stub = amdsmi_stub if library == "amdsmi" else rocm_smi_stub
    sampler = _run(stub, workload.pid, 20, no_nvml)
    system = _table(sampler, "system")
    assert _energy_span(system) > 0.5
    assert sum(system["gpu_energy_j"][1:]) == pytest.approx(800.0 * _energy_span(system), rel=0.05)
    assert sampler.gpu_energy_integrated >= len(system["timestamp"])


def test_gpu_amd_and_nvidia_on_one_machine(amdsmi_stub, control, workload, tmp_path, monkeypatch):
    """NVML and amdsmi both present: both read, NVIDIA's GPUs first in the per-GPU series and
    server_info; the process's figures add the tree's share on each vendor's GPU."""
    nvml = _compile(tmp_path, "libnvidia-ml-stub.so.1")
    nvml_control = Control(str(tmp_path / "nvml-control"))
    monkeypatch.setenv("NVML_STUB_CONTROL", nvml_control.path)
    nvml_control.set(tree_pid=workload.pid)
    tracker = _tracked(monkeypatch, workload.pid, 10, nvml, amdsmi_stub)
    sampler = tracker._sampler
    # NVML's stand-in: 0.25 + 0.40 busy, 1024 + 2048 MiB; the tree 0.40 and 1536 MiB on GPU 1
    assert _all(_gpu_rows(sampler, "system"), (0.65 + 0.90, 3072.0 + 12288.0, 4.0))
    process = _gpu_rows(sampler, "process")
    assert all(r[1:] == (1536.0 + 6144.0, 2.0) for r in process), process
    assert _tree_usage(process) == pytest.approx(0.40 + 0.60, rel=0.05)
    names = ["Stub NVML GPU 0", "Stub NVML GPU 1", *NAMES]
    assert [d["name"] for d in sampler.gpu_devices()] == names
    assert tracker.server_info["gpu_names"] == names
    assert tracker.server_info["gpu_count"] == 4
    assert "gpu" not in tracker.data_quality()
    rec = tracker.recommend_resources()
    assert rec["gpu"] == 2 and rec["vram"] >= (1536 + 6144) * 1.2


def test_gpu_amd_call_that_hangs_does_not_hold_stop(amdsmi_stub, control, workload, no_nvml):
    """A utilisation query that hangs 6 s (each GPU: a reading takes 12 s): stop() returns
    within STOP_TIMEOUT, readers are not blocked meanwhile, the rows stored stay, and the
    thread ends on its own (the same bound as NVML's calls)."""
    sampler = _core.Sampler(workload.pid, INTERVAL, nvml_library=no_nvml, amd_library=amdsmi_stub)
    sampler.start()
    assert sampler.wait(3, 10.0)
    control.set(hang_ms=6000)
    time.sleep(0.3)  # the thread is now inside the sleeping call
    t0 = time.monotonic()
    sampler.columns("system")
    read_s = time.monotonic() - t0
    t0 = time.monotonic()
    sampler.stop()
    took = time.monotonic() - t0
    control.set(hang_ms=0)
    rows = sampler.n_samples
    assert sampler.state == "stopped" and rows >= 3
    assert read_s < 1.0
    assert took < _core.STOP_TIMEOUT + 1.5
    time.sleep(0.2)
    assert sampler.n_samples == rows  # nothing stored after stop() returned


def test_gpu_amd_one_session_for_every_user(amdsmi_stub, control, workload, no_nvml):
    """amdsmi's init and shut_down are not counted: gpu_inventory (server_info) opening and
    closing the library while a sampler reads it must not end the sampler's session (the
    stand-in, like amdsmi, answers AMDSMI_STATUS_NOT_INIT after the first shut_down)."""
    sampler = _core.Sampler(workload.pid, INTERVAL, nvml_library=no_nvml, amd_library=amdsmi_stub)
    sampler.start()
    try:
        assert sampler.wait(2, 10.0)
        for _ in range(5):
            assert len(_core.gpu_inventory(no_nvml, amdsmi_stub)) == 2
        n = sampler.n_samples
        assert sampler.wait(n + 4, 10.0)
    finally:
        sampler.stop()
    assert _all(_gpu_rows(sampler, "system")[n:], MACHINE)
