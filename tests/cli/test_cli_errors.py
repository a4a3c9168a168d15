"""Every error path of the command-line tool: exit status 2, one line on stderr, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest
from cli_helpers import assert_one_line_error, env_with, run_cli


def _catalog_importable():
    probe = [sys.executable, "-c", "import resource_tracker.catalog"]
    return subprocess.run(probe, capture_output=True).returncode == 0


@pytest.mark.parametrize(
    "args, needles",
    [
        (["run"], ["no command given"]),
        (["run", "--"], ["no command given"]),
        (["run", "--interval", "0", "--", "true"], ["invalid interval '0'"]),
        (["run", "--interval", "-1", "--", "true"], ["invalid interval '-1'"]),
        (["run", "--interval", "abc", "--", "true"], ["invalid interval 'abc'"]),
        (["run", "--interval", "inf", "--", "true"], ["invalid interval 'inf'"]),
        (["run", "--format", "pdf", "--", "true"], ["invalid format 'pdf'"]),
        (["watch", "--interval", "nan"], ["invalid interval 'nan'"]),
        (["watch", "--pid", "abc"], ["invalid pid 'abc'"]),
        (["watch", "--pid", "4194304"], ["no process with pid 4194304"]),
        (["watch", "--pid", "1", "--system"], ["not allowed with argument"]),
        (["watch", "--count", "0"], ["invalid count '0'"]),
        (["stats"], ["required"]),
        (["stats", "/no/such/file.json"], ["cannot read /no/such/file.json", "No such file"]),
        (["report", "/no/such/file.json"], ["cannot read /no/such/file.json"]),
        (["recommend", "/no/such/file.json"], ["cannot read /no/such/file.json"]),
        (["recommend", "--allocation", "reserved", "x.json"], ["invalid choice: 'reserved'"]),
        (["catalog", "refresh"], ["invalid choice: 'refresh'"]),
        (["frobnicate"], ["invalid choice: 'frobnicate'"]),
        (["--no-such-option"], ["unrecognized arguments"]),
    ],
)
def test_usage_errors(args, needles):
    assert_one_line_error(run_cli(*args), *needles)


def test_command_that_is_not_executable(tmp_path):
    path = tmp_path / "job.sh"
    path.write_text("#!/bin/sh\necho hi\n")  # no x bit
    assert_one_line_error(
        run_cli("run", "--", str(path)), "cannot execute", "permission denied", status=126
    )


def test_output_directory_that_cannot_be_made(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run_cli("run", "-o", str(blocker / "sub"), "--", "true")
    assert_one_line_error(result, "cannot create the output directory")


@pytest.mark.parametrize(
    "content, needle",
    [
        ("{not json", "invalid JSON"),
        ('{"format": "something-else"}', "not a resource-tracker snapshot"),
        ("[1, 2, 3]", "not a resource-tracker snapshot"),
        ('{"format": "resource-tracker-snapshot", "format_version": 99}', "newer"),
    ],
)
@pytest.mark.parametrize("command", ["stats", "report", "recommend"])
def test_unreadable_snapshots(tmp_path, content, needle, command):
    path = tmp_path / "snap.json"
    path.write_text(content)
    assert_one_line_error(run_cli(command, str(path)), f"cannot read {path}", needle)


def test_binary_file_and_directory_as_snapshot(tmp_path):
    binary = tmp_path / "snap.bin"
    binary.write_bytes(b"\xff\xfe\x00\x81" * 10)
    assert_one_line_error(run_cli("stats", str(binary)), "not a resource-tracker snapshot")
    assert_one_line_error(run_cli("stats", str(tmp_path)), "not a regular file (a directory)")


def test_catalog_update_without_network_or_module_is_one_line():
    """The tests point the catalog URL at 127.0.0.1:9 (nothing listens): the download
    fails; without the catalog module the command says it is missing. Either way: 2."""
    result = run_cli("catalog", "update", timeout=120)
    if _catalog_importable():
        assert_one_line_error(result, "catalog update")
    else:
        assert_one_line_error(result, "server catalog is not part of this installation")


def test_catalog_info_without_the_module_is_one_line():
    result = run_cli("catalog", "info")
    if _catalog_importable():
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip()
    else:
        assert_one_line_error(result, "server catalog is not part of this installation")


def test_a_mistyped_on_off_variable_is_one_warning_line_and_the_run_is_tracked():
    result = run_cli(
        "run", "-f", "none", "--", sys.executable, "-c", "pass",
        env=env_with(RESOURCE_TRACKER_DISCOVER_CLOUD="maybe"),
    )  # fmt: skip
    lines = result.stderr.splitlines()
    assert result.returncode == 0, result.stderr
    assert lines[0].startswith("resource-tracker: warning: RESOURCE_TRACKER_DISCOVER_CLOUD=")
    assert "0/false/no/off" in lines[0] and "Traceback" not in result.stderr
    assert "exited with status 0" in lines[1] and "recommended" in result.stderr


def test_an_invalid_setting_leaves_the_command_running_untracked():
    result = run_cli(
        "run", "-f", "none", "--", sys.executable, "-c", "raise SystemExit(5)",
        env=env_with(RESOURCE_TRACKER_METHOD="bogus"),
    )  # fmt: skip
    assert result.returncode == 5
    assert "not tracked: SettingError: RESOURCE_TRACKER_METHOD='bogus'" in result.stderr
    assert "procfs, psutil" in result.stderr
