"""atheris target: the cgroup file parsers of resource_tracker.server_info.cgroup_limits()
and the bounded readers of resource_tracker._cgroup_read (the "key value" files such as
cpu.stat are parsed in C: their one target is fuzz/fuzz_cgroup_files.c).

Input: parts separated by "\\n@@\\n": /proc/<pid>/cgroup, /proc/<pid>/mountinfo, then the
contents of cpu.max, memory.max, cpu.cfs_quota_us, cpu.cfs_period_us, memory.limit_in_bytes,
memory.stat and cgroup.procs, written into a fake procfs and into every cgroup directory the
mount table and membership name (under a temporary fs_root). Promise: a dict with the three
keys, never an exception; the readers give numbers in range (0 to 2**63 - 1, pids 1 to 2**22).

    python3 fuzz/fuzz_cgroup.py [libFuzzer flags] CORPUS_DIR
"""

from __future__ import annotations

import os
import shutil
import tempfile

from resource_tracker._cgroup_read import MAX_PID, MAX_VALUE, read_pids, read_value
from resource_tracker.server_info import cgroup_limits

SEP = b"\n@@\n"
LIMIT_FILES = (
    "cpu.max",
    "memory.max",
    "cpu.cfs_quota_us",
    "cpu.cfs_period_us",
    "memory.limit_in_bytes",
    "memory.stat",
    "cgroup.procs",
)
_ROOT = tempfile.mkdtemp(prefix="rt-fuzz-cgroup-")


def _write(path, data):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    except (OSError, ValueError):  # a name the file system refuses: the parser never sees it
        pass


def test_one_input(data: bytes) -> None:
    """Raises AssertionError (or what cgroup_limits raised) when the promise is broken."""
    parts = data.split(SEP)
    parts += [b""] * (2 + len(LIMIT_FILES) - len(parts))
    shutil.rmtree(_ROOT, ignore_errors=True)
    proc, fs = os.path.join(_ROOT, "proc"), os.path.join(_ROOT, "fs")
    _write(os.path.join(proc, "1", "cgroup"), parts[0])
    _write(os.path.join(proc, "1", "mountinfo"), parts[1])
    # limit files at the fs root and at the first few cgroup paths the membership names
    dirs = {fs}
    for line in parts[0].decode("utf-8", "replace").splitlines()[:4]:
        rel = line.split(":", 2)[-1].strip("/")
        if rel and "\x00" not in rel and ".." not in rel and len(rel) < 200:
            dirs.add(os.path.join(fs, rel))
    for directory in dirs:
        for name, content in zip(LIMIT_FILES, parts[2:]):
            _write(os.path.join(directory, name), content)
    result = cgroup_limits(1, proc_root=proc, fs_root=fs)
    assert isinstance(result, dict), result
    assert set(result) == {"version", "cpu_limit_cores", "memory_limit_mb"}, result
    assert result["version"] in (None, 1, 2), result
    for key in ("cpu_limit_cores", "memory_limit_mb"):
        assert result[key] is None or result[key] > 0, result
    _check_readers(fs)


def _check_readers(directory: str) -> None:
    """The Python readers on the files written at the fs root: values in range."""
    value = read_value(os.path.join(directory, "memory.limit_in_bytes"))
    assert value is None or 0 <= value <= MAX_VALUE, value
    pids = read_pids(os.path.join(directory, "cgroup.procs"))
    assert pids is None or all(0 < p <= MAX_PID for p in pids), pids


if __name__ == "__main__":
    from atheris_main import fuzz  # fuzz/, this script's folder, is on sys.path

    fuzz(test_one_input)
