"""Shared by the reliability tests: process resource probes, the leak check, table decoding and
access to the GPU/cloud stand-ins of tests/gpu_cloud (imported, not copied)."""

from __future__ import annotations

import ctypes
import gc
import os
import sys
from array import array

from resource_tracker import _core

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_CLOUD = os.path.join(os.path.dirname(HERE), "gpu_cloud")
if GPU_CLOUD not in sys.path:
    sys.path.insert(0, GPU_CLOUD)

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def rss_kib():
    """Resident set of this process, KiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE_KIB


def open_fds():
    """Number of open file descriptors of this process."""
    return len(os.listdir("/proc/self/fd"))


def threads():
    """Number of threads of this process."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mallinfo2():
    try:
        fn = ctypes.CDLL(None).mallinfo2
    except (AttributeError, OSError):
        return None
    fn.restype = _MallInfo2
    return fn


_MALLINFO2 = _mallinfo2()


def _asan_allocated():
    try:
        fn = ctypes.CDLL(None).__sanitizer_get_current_allocated_bytes
    except (AttributeError, OSError):
        return None
    fn.restype = ctypes.c_size_t
    return fn


_ASAN_ALLOCATED = _asan_allocated()


def heap_bytes():
    """Bytes of C heap in use (glibc mallinfo2: small blocks + mmapped blocks; under ASan its
    own count of live allocations), or -1."""
    if _ASAN_ALLOCATED is not None:
        return int(_ASAN_ALLOCATED())
    if _MALLINFO2 is None:
        return -1
    info = _MALLINFO2()
    return int(info.uordblks + info.hblkhd)


# False under PYTHONMALLOC=malloc (make sanitize, make valgrind): no pymalloc blocks to count
PYMALLOC = sys.getallocatedblocks() > 0


def probe():
    gc.collect()
    return {
        "heap": heap_bytes(),
        "blocks": sys.getallocatedblocks(),
        "rss": rss_kib(),
        "fds": open_fds(),
        "threads": threads(),
    }


# growth allowed per round of calls: C heap bytes, Python memory blocks, RSS KiB, descriptors,
# threads
TOLERANCE = {"heap": 64 * 1024, "blocks": 64, "rss": 512, "fds": 0, "threads": 0}


def assert_no_leak(name, call, n, attempts=5, tolerance=None):
    """Calls call() n times to warm up, then rounds of n calls until one round's growth of heap,
    RSS, descriptors and threads is within tolerance; AssertionError when none of `attempts`
    rounds is. Prints the figures. Returns the growth of the clean round."""
    limits = dict(TOLERANCE, **(tolerance or {}))
    if os.environ.get("RESOURCE_TRACKER_VALGRIND"):  # valgrind's leak check judges instead
        n = max(5, n // 50)
        attempts = 1
        limits = {k: float("inf") for k in limits}
    if not PYMALLOC:
        limits["blocks"] = float("inf")  # no pymalloc: Python objects are in the C heap figure
    if _ASAN_ALLOCATED is not None:  # ASan keeps freed blocks in quarantine: RSS only rises
        limits["rss"] = float("inf")
    for _ in range(n):
        call()
    rounds = []
    for _ in range(attempts):
        before = probe()
        for _ in range(n):
            call()
        after = probe()
        growth = {k: after[k] - before[k] for k in before}
        rounds.append(growth)
        if all(growth[k] <= limits[k] for k in growth):
            print(
                f"leak {name:34s} {n:5d} calls/round, round {len(rounds)}: heap "
                f"{growth['heap']:+8d} B (max {limits['heap']}), py blocks "
                f"{growth['blocks']:+4d}, rss {growth['rss']:+6d} KiB, "
                f"fds {growth['fds']:+d}, threads {growth['threads']:+d}"
            )
            return growth
    raise AssertionError(f"{name}: grew in each of {attempts} rounds of {n} calls: {rounds}")


def table(sampler, which):
    """{column: list of floats} of a sampler's table."""
    names = _core.PROCESS_COLUMNS if which == "process" else _core.SYSTEM_COLUMNS
    out = {}
    for name, raw in zip(names, sampler.columns(which)):
        col = array("d")
        col.frombytes(raw)
        out[name] = col
    return out


def nvml_stub(directory, name="libnvidia-ml-stub.so.1", *defines, stub="nvml_stub.c"):
    """Builds a stand-in GPU library of tests/gpu_cloud (stub: its C file; the NVML one by
    default) with that folder's own builder."""
    import test_gpu_nvml

    return test_gpu_nvml._compile(directory, name, *defines, stub=stub)


def nvml_hang_stub(directory):
    """Builds the NVML stand-in whose calls sleep NVML_STUB_HANG_MS (tests/reliability/nvml_hang.c,
    on top of tests/gpu_cloud's stub) into directory; its path."""
    import subprocess

    out = os.path.join(str(directory), "libnvidia-ml-hang.so.1")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O1", "-fvisibility=hidden", "-I", GPU_CLOUD]
        + ["-o", out, os.path.join(HERE, "nvml_hang.c")],
        check=True,
    )
    return out
