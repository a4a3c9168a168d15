"""GPU use in the code profile (docs/code_profile.md, ``gpu_seconds``): the NVML stand-in of
tests/gpu_cloud (nvml_stub.c, the real dlopen path; there is no GPU here) shows this process
on GPU 1 only while ``on_the_gpu`` runs; its GPU-seconds must be the tracker's own
``gpu_usage`` x interval of the rows in which it ran, and the other code's none.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from resource_tracker import ResourceTracker, _core

pytestmark = pytest.mark.skipif(not _core.HAVE_PROCFS, reason="the C sampler (procfs) only")
HERE = os.path.dirname(os.path.abspath(__file__))
STUB_SOURCE = os.path.join(os.path.dirname(HERE), "gpu_cloud", "nvml_stub.c")
INTERVAL = 0.02


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def _control(path: str, tree_pid: int) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(f"tree_pid={tree_pid}\nother_pid=1\n")
    os.replace(path + ".tmp", path)


def on_the_gpu(control: str) -> None:
    _control(control, os.getpid())  # from now on NVML lists this process on GPU 1
    _burn(0.3)
    _control(control, 1)


def off_the_gpu() -> None:
    _burn(0.3)


def test_gpu_seconds_go_to_the_code_that_ran_on_the_gpu(tmp_path, monkeypatch):
    stub = str(tmp_path / "libnvidia-ml-stub.so.1")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-fvisibility=hidden", "-o", stub,
                    STUB_SOURCE], check=True)  # fmt: skip
    control = str(tmp_path / "nvml-control")
    _control(control, 1)
    monkeypatch.setenv("NVML_STUB_CONTROL", control)
    monkeypatch.setenv("RESOURCE_TRACKER_NVML_LIBRARY", stub)
    tracker = ResourceTracker(interval=INTERVAL, discover_server=False, discover_cloud=False)
    off_the_gpu()
    on_the_gpu(control)
    off_the_gpu()
    tracker.stop()
    rows = {r["function"]: r for r in tracker.code_profile().rows()}
    metrics = tracker.process_metrics
    times, usage = list(metrics["timestamp"]), list(metrics["gpu_usage"])
    gpu_total = sum(u * (t - p) for u, t, p in zip(usage[1:], times[1:], times[:-1]))
    assert gpu_total > 0.05  # the stand-in was seen: 35-40 % of a GPU for ~0.3 s
    on, off = rows["on_the_gpu"]["gpu_seconds"], rows["off_the_gpu"]["gpu_seconds"]
    # every GPU-second of the run went to on_the_gpu, but those of an interval it shared with
    # off_the_gpu at its start or end (at most two intervals of the largest GPU use)
    edge = 2 * INTERVAL * max(usage) * 2
    assert on >= gpu_total - edge - 1e-9, (on, off, gpu_total)
    assert off <= edge + 1e-9, (on, off, gpu_total)
