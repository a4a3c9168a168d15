"""``resource-tracker run --export pushgateway``: a real command tracked by the CLI, its
summary pushed to Debian's Pushgateway (loopback) and read back through Prometheus; a failing
command's final push says so; bad --export values are usage errors before anything runs."""

from __future__ import annotations

import subprocess
import sys

import pytest
from servers import prom_wait

pytest.importorskip("prometheus_client")


def _run(args, env, **kw):
    return subprocess.run(
        [sys.executable, "-m", "resource_tracker", "run", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )


@pytest.mark.parametrize("exit_code", [0, 3])
def test_cli_run_export_pushgateway(prom_stack, tmp_path, exit_code):
    import os

    pushgateway, prometheus = prom_stack
    env = dict(os.environ, RESOURCE_TRACKER_PUSHGATEWAY_URL=pushgateway.url)
    code = (
        "import sys, time; b = bytearray(80 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
        f"time.sleep(1.0); sys.exit({exit_code})"
    )
    done = _run(
        ["--interval", "0.2", "--format", "json", "--output", str(tmp_path), "--export",
         "pushgateway", "--", sys.executable, "-c", code],
        env,
    )  # fmt: skip
    assert done.returncode == exit_code, done.stderr
    from resource_tracker import ResourceTracker

    tracker = ResourceTracker.loads((tmp_path / "resource-tracker.json").read_text())
    pid = tracker.pid
    assert tracker.stats()["export"]["targets"]["pushgateway"]["final"] == "sent"
    peak = prom_wait(prometheus, f'resource_tracker_run_process_memory_peak_bytes{{pid="{pid}"}}')
    assert float(peak[0]["value"][1]) == pytest.approx(
        tracker.stats()["process_memory"]["max"] * 1024, rel=0.01
    )
    failed = prom_wait(prometheus, f'resource_tracker_run_failed{{pid="{pid}"}}')
    assert float(failed[0]["value"][1]) == (1.0 if exit_code else 0.0)


def test_cli_run_export_bad_values_are_usage_errors(tmp_path):
    import os

    env = dict(os.environ)
    done = _run(["--export", "kafka", "--", "true"], env, cwd=str(tmp_path))
    assert done.returncode == 2
    assert "unknown export target 'kafka'" in done.stderr
    env.pop("RESOURCE_TRACKER_PUSHGATEWAY_URL", None)
    done = _run(["--export", "pushgateway", "--", "true"], env, cwd=str(tmp_path))
    assert done.returncode == 2
    assert "RESOURCE_TRACKER_PUSHGATEWAY_URL" in done.stderr
    assert not (tmp_path / "resource-tracker.json").exists()  # nothing ran
