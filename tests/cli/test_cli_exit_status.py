"""`resource-tracker run` fails to start a command the way shells and GNU `time` do.

Real subprocesses: the tool, and /bin/sh beside it for the reference statuses.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from cli_helpers import assert_one_line_error, run_cli


def _sh_status(command):
    """What /bin/sh answers for the same command (the reference: 127 or 126)."""
    return subprocess.run(["/bin/sh", "-c", f"'{command}'"], capture_output=True).returncode


def test_command_not_found_exits_127_as_the_shell_does():
    result = run_cli("run", "--", "/nonexistent")
    assert_one_line_error(result, "command not found: /nonexistent", status=127)
    assert result.returncode == _sh_status("/nonexistent") == 127
    result = run_cli("run", "--format", "none", "--", "no-such-command-xyz", "--flag")
    assert_one_line_error(result, "command not found: no-such-command-xyz", status=127)


def test_command_that_cannot_be_executed_exits_126(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\necho hi\n")  # no x bit
    result = run_cli("run", "--", str(script))
    assert_one_line_error(result, "cannot execute", "permission denied", status=126)
    assert _sh_status(str(script)) == 126
    assert_one_line_error(run_cli("run", "--", str(tmp_path)), "cannot execute", status=126)
    assert not (tmp_path / "resource-tracker.json").exists()  # nothing ran: nothing written


@pytest.mark.skipif(not shutil.which("time") and not shutil.which("/usr/bin/time"),
                    reason="GNU time is not installed")  # fmt: skip
def test_same_statuses_as_gnu_time():
    gnu_time = shutil.which("/usr/bin/time") or shutil.which("time")
    theirs = subprocess.run([gnu_time, "/nonexistent"], capture_output=True).returncode
    assert run_cli("run", "--", "/nonexistent").returncode == theirs


def test_a_command_that_runs_keeps_its_own_status(tmp_path):
    result = run_cli("run", "--format", "none", "--", "/bin/sh", "-c", "exit 127")
    assert result.returncode == 127  # its own 127 is passed through, with a summary
    assert "exited with status 127" in result.stderr


def test_bad_recommend_option_value_is_an_error(tmp_path):
    """`recommend x.json --vendor awz` says what is wrong and exits 2 (it used to print the
    ValueError and exit 0)."""
    run = run_cli("run", "--interval", "0.05", "--format", "json", "--output", str(tmp_path),
                  "--", "/bin/sh", "-c", "sleep 0.2")  # fmt: skip
    assert run.returncode == 0, run.stderr
    snapshot = str(tmp_path / "resource-tracker.json")
    result = run_cli("recommend", snapshot, "--vendor", "awz")
    assert_one_line_error(result, "recommend: unknown vendor 'awz'", "valid: ", status=2)
    assert result.stdout == ""
