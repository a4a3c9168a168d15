"""The fuzz targets in the test suite: every input that once crashed a target (kept in
fuzz/regressions/<target>/) is replayed, each C target is built and run over its regression
inputs and this machine's seed files, and the Python targets (cgroup files, snapshot loading,
the catalog loader) get a short bounded random run (mutated seeds, fixed random seed) even
where atheris is not installed. Long coverage-guided runs: `make fuzz` (fuzz/run.py)."""

from __future__ import annotations

import glob
import importlib.util
import os
import random
import shutil
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUZZ = os.path.join(ROOT, "fuzz")


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(FUZZ, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _runner():
    return _load("run")


def _regressions(target):
    return sorted(glob.glob(os.path.join(FUZZ, "regressions", target, "*")))


def _mutate(data, rng):
    data = bytearray(data)
    for _ in range(rng.randrange(1, 8)):
        op = rng.randrange(4)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:
            del data[pos : pos + rng.randrange(1, 64)]
        elif op == 1:
            data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        elif op == 2 and data:
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        else:
            data[pos:pos] = rng.choice([b"\n@@\n", b" - ", b"0::/", b"max", b'"', b"{", b"null"])
    return bytes(data)


@pytest.mark.parametrize("target", ["cgroup", "snapshot", "catalog"])
def test_reliability_fuzz_python_targets(target):
    """Regression inputs replay cleanly; then 3 s of random mutations of the seeds."""
    module = _load(f"fuzz_{target}")
    for path in _regressions(target):
        with open(path, "rb") as f:
            module.test_one_input(f.read())
    seeds = _runner().seeds(target)
    rng = random.Random(1234)
    end = time.monotonic() + 3.0
    n = 0
    while time.monotonic() < end:
        module.test_one_input(_mutate(rng.choice(seeds), rng))
        n += 1
    print(f"fuzz {target}: {len(_regressions(target))} regression inputs, {n} random inputs")


@pytest.mark.skipif(shutil.which("clang") is None, reason="libFuzzer needs clang")
def test_reliability_fuzz_c_targets(tmp_path):
    """Each C target (ASan + UBSan) runs over its seeds and regression inputs, then 1 s of
    coverage-guided fuzzing: no crash."""
    run = _runner()
    names = run.available_c_targets()
    assert {"pid_stat", "pid_io", "meminfo", "net_dev", "diskstats", "mountinfo", "cloud"} <= set(
        names
    )
    for name in names:
        binary = run.build(name)
        corpus = str(tmp_path / name)
        nseeds = run.write_corpus(name, corpus)
        proc = subprocess.run(
            [binary, "-max_total_time=1", "-print_final_stats=1", corpus],
            capture_output=True,
            text=True,
            timeout=120,
            env=run.clean_env(),
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        execs = [ln for ln in proc.stderr.splitlines() if "number_of_executed_units" in ln]
        print(f"fuzz {name}: {nseeds} seeds, {execs[-1].split()[-1] if execs else '?'} executions")
