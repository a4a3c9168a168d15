"""The fuzz targets in the test suite: a replay, no random input (random and coverage-guided
fuzzing is `make fuzz`, fuzz/run.py). Every input that once crashed a target (kept in
fuzz/regressions/<target>/) and this machine's seed files run once through each target: the
C targets (ASan + UBSan, libFuzzer with -runs=0) and the Python targets (cgroup files,
snapshot loading, the catalog loader, the `run --code` agents' folder, Prometheus answers).
Nothing is written into the working tree: the fuzzer
binaries are built in a cache outside it, a crash input lands in the test's temporary
directory."""

from __future__ import annotations

import glob
import hashlib
import importlib.util
import os
import shutil
import subprocess
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUZZ = os.path.join(ROOT, "fuzz")
#: the fuzzer binaries of this checkout, outside the working tree (rebuilt when a source is newer)
BUILD = os.path.join(
    tempfile.gettempdir(), "rt-fuzz-build-" + hashlib.sha1(ROOT.encode()).hexdigest()[:12]
)


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(FUZZ, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _runner():
    return _load("run")


def _regressions(target):
    return sorted(glob.glob(os.path.join(FUZZ, "regressions", target, "*")))


@pytest.mark.parametrize(
    "target", ["cgroup", "snapshot", "catalog", "agent_records", "prometheus_answer", "tuning"]
)
def test_reliability_fuzz_python_targets(target):
    """Regression inputs and the seeds of this machine replay cleanly."""
    module = _load(f"fuzz_{target}")
    regressions = _regressions(target)
    assert regressions, f"fuzz/regressions/{target}/ is empty"
    for path in regressions:
        with open(path, "rb") as f:
            module.test_one_input(f.read())
    seeds = _runner().seeds(target)
    for data in seeds:
        module.test_one_input(data)
    print(f"fuzz {target}: {len(regressions)} regression inputs, {len(seeds)} seeds")


@pytest.mark.skipif(shutil.which("clang") is None, reason="libFuzzer needs clang")
def test_reliability_fuzz_c_targets(tmp_path):
    """Each C target (ASan + UBSan) runs once over its seeds and regression inputs: no crash,
    every input executed."""
    run = _runner()
    names = run.available_c_targets()
    assert {"pid_stat", "pid_io", "meminfo", "net_dev", "diskstats", "mountinfo", "cloud"} <= set(
        names
    )
    for name in names:
        binary = run.build(name, BUILD)
        corpus = str(tmp_path / name)
        nseeds = run.write_corpus(name, corpus)
        proc = subprocess.run(
            [binary, "-runs=0", f"-artifact_prefix={tmp_path}/", corpus],
            capture_output=True,
            text=True,
            timeout=120,
            env=run.clean_env(),
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        assert "INITED" in proc.stderr, proc.stderr[-4000:]
        print(f"fuzz {name}: {nseeds} inputs replayed")
