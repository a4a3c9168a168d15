"""What a new user meets first (issue 28, "also"): the version under the original's name,
`resource-tracker run` and its output directory, the Makefile's apt step (tools/apt_ensure.sh)."""

from __future__ import annotations

import fcntl
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys

import pytest

from resource_tracker import __version__

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CLI = [sys.executable, "-m", "resource_tracker"]


def test_the_version_sorts_above_the_original_0_5():
    """Same distribution name as the original (0.5.0 on PyPI): pip must see this one as
    newer, and the installed metadata must say the same version."""
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    assert tuple(map(int, __version__.split("."))) > (0, 5, 99)
    assert importlib.metadata.version("resource-tracker") == __version__
    version = pytest.importorskip("packaging.version")
    assert version.Version(__version__) > version.Version("0.5.0")


def _run(*args, cwd):
    return subprocess.run(
        [*CLI, "run", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_a_command_that_cannot_start_leaves_no_output_directory(tmp_path):
    out = tmp_path / "runs" / "first"
    result = _run("--output", str(out), "--", "no-such-command-for-resource-tracker", cwd=tmp_path)
    assert result.returncode == 127 and "not found" in result.stderr
    assert not (tmp_path / "runs").exists()
    (tmp_path / "afile").write_text("")
    result = _run("--output", str(tmp_path / "afile" / "x"), "--", "true", cwd=tmp_path)
    assert result.returncode != 0 and "is a file" in result.stderr


def test_a_second_run_says_it_replaced_the_first_runs_files(tmp_path):
    args = ("--interval", "0.05", "--quiet", "--format", "json,csv", "--", "true")
    first = _run(*args, cwd=tmp_path)
    assert first.returncode == 0 and "replaced" not in first.stdout + first.stderr
    second = _run(*args, cwd=tmp_path)
    assert second.returncode == 0
    said = second.stdout + second.stderr
    assert "replaced an earlier run's" in said and "resource-tracker.json" in said
    assert "resource-tracker-process.csv" in said


def _not_installed(name):
    found = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True
    )
    return "ok installed" not in found.stdout


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a Debian system")
def test_apt_step_is_silent_when_everything_is_installed():
    done = subprocess.run(
        ["sh", os.path.join(REPO, "tools", "apt_ensure.sh"), "dpkg"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == done.stderr == ""


@pytest.mark.skipif(
    shutil.which("apt-get") is None or os.geteuid() != 0, reason="needs apt and root"
)
def test_apt_step_waits_for_a_held_lock_bounded_and_says_what_to_do():
    """Another apt holds the lock (this test, with the lock apt takes): the step says it
    waits, gives up after APT_LOCK_WAIT seconds (0 here: no sleeping) and says what to do;
    nothing is installed."""
    package = "sl"
    if not _not_installed(package):
        pytest.skip(f"{package} is installed here")
    fd = os.open("/var/lib/apt/lists/lock", os.O_RDWR | os.O_CREAT, 0o640)
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pytest.skip("apt is running on this machine right now")
        done = subprocess.run(
            ["sh", os.path.join(REPO, "tools", "apt_ensure.sh"), package],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "APT_LOCK_WAIT": "0"},
        )  # fmt: skip
    finally:
        os.close(fd)
    assert done.returncode == 1
    assert f"installing Debian packages: {package}" in done.stdout
    assert "still held after 0 s" in done.stderr and "APT_LOCK_WAIT" in done.stderr
    assert _not_installed(package)
