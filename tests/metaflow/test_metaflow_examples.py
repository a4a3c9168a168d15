"""The example flows of examples/metaflow run as documented (real Metaflow runs).

The seeds' ResourceTrackingFlow holds a 500 MB bytearray for 3 s: the artifact's peak memory
shows it and the memory recommendation covers it. The cards are loaded in headless Chromium.
The GPU-shaped flow runs with the stand-in NVML library of tests/gpu_cloud (nvml_stub.c: the
NVML C interface with scripted values; there is no GPU here), which reports GPU 1 as used by
the step's process with 1536 MiB VRAM.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from mf_harness import EXAMPLES, REPO, chromium_check, query, run_flow, task_of


def _run_example(root, name, *args, env=None):
    done = run_flow(root, os.path.join(EXAMPLES, name), *args, env=env)
    assert done.returncode == 0, done.stdout[-4000:]


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("mf-seed")
    _run_example(root, "resource_tracking_flow.py")
    (run,) = query(root, "ResourceTrackingFlow")
    return run


def test_metaflow_seed_flow_sees_500_mb(seed_run):
    data = task_of(seed_run, "my_sleeping_data")["artifacts"]["resource_tracker_data"]
    peak_mib = data["detailed_stats"]["process_memory"]["max"] / 1024
    assert peak_mib >= 500
    assert peak_mib < 700  # the bytearray plus the interpreter, not double counted
    assert data["recommendations"]["resources"]["memory"] >= 512
    assert data["detailed_stats"]["timestamp"]["duration"] >= 3.0
    # the artifact reaches the end step, as the docs page reads it from latest_run.data
    end = task_of(seed_run, "end")["artifacts"]["resource_tracker_data"]
    assert end["stats"] == data["stats"]
    assert data["stats"]["memory_usage"]["max"] == round(peak_mib * 1024)


def test_metaflow_seed_card_in_headless_chromium(seed_run, tmp_path):
    cards = task_of(seed_run, "my_sleeping_data")["cards"]
    (card,) = [c for c in cards if c["type"] == "tracked_resources"]
    dom, errors, shot = chromium_check(card["html"], tmp_path)
    assert errors == []
    assert "<body" in dom and len(dom) > 500
    assert os.path.getsize(shot) > 1000


def test_metaflow_gpu_flow_with_stub_nvml(tmp_path):
    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed to build the stand-in NVML library")
    lib = str(tmp_path / "libnvidia-ml-stub.so.1")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O1", "-o", lib]
        + [os.path.join(REPO, "tests", "gpu_cloud", "nvml_stub.c")],
        check=True,
    )
    root = tmp_path / "run"
    env = {
        "RESOURCE_TRACKER_NVML_LIBRARY": lib,
        "NVML_STUB_CONTROL": str(tmp_path / "nvml-control"),
    }
    _run_example(root, "gpu_flow.py", env=env)
    (run,) = query(root, "GpuFlow")
    data = task_of(run, "train")["artifacts"]["resource_tracker_data"]
    assert data["server_info"]["gpu_count"] == 2
    assert data["detailed_stats"]["process_gpu_vram"]["max"] == 1536
    assert data["recommendations"]["resources"]["gpu"] == 1
    assert data["recommendations"]["resources"]["vram"] >= 1536


def test_metaflow_multi_step_flow(tmp_path):
    # one task at a time: on a 2-core machine parallel foreach tasks would share the cores
    _run_example(tmp_path, "multi_step_flow.py", "--max-workers", "1")
    (run,) = query(tmp_path, "MultiStepFlow")
    load = task_of(run, "load")["artifacts"]["resource_tracker_data"]
    assert load["detailed_stats"]["process_memory"]["max"] >= 300 * 1024
    trains = [t for t in run["tasks"] if t["step"] == "train"]
    assert len(trains) == 2
    for task in trains:
        data = task["artifacts"]["resource_tracker_data"]
        assert data["detailed_stats"]["process_children"]["max"] >= 2  # the Pool's workers
        # the CPU time of both workers is counted (what they burnt, whatever the machine's load)
        df = data["process_metrics"]
        cpu = sum(df["utime"]) + sum(df["stime"])
        assert cpu >= 0.95 * task["artifacts"]["cpu_seconds"], cpu
    io = task_of(run, "io")["artifacts"]["resource_tracker_data"]
    assert io["detailed_stats"]["process_write_bytes"]["sum"] >= 150 * 1024 * 1024


def test_metaflow_minimal_flow(tmp_path):
    _run_example(tmp_path, "minimal_flow.py")
    (run,) = query(tmp_path, "MinimalFlow")
    data = task_of(run, "do_heavy_computation")["artifacts"]["resource_tracker_data"]
    df = data["process_metrics"]  # 3 s of CPU time burnt, all counted (however busy the machine)
    assert sum(df["utime"]) + sum(df["stime"]) >= 2.9
    assert data["detailed_stats"]["process_cpu_usage"]["max"] <= 1.1  # one thread: at most one core
    assert data["detailed_stats"]["process_memory"]["max"] >= 100 * 1024
    assert data["recommendations"]["resources"]["cpu"] == 1
    assert "resource_tracker_data" not in task_of(run, "start")["artifacts"]
