"""The session's fed Pushgateway + Prometheus (prom_stack.py: what it holds)."""

from __future__ import annotations

import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from prom_stack import RULE_FILES, Stack, _feed  # noqa: E402
from servers import prom_wait, start_prometheus, start_pushgateway  # noqa: E402


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    """The fed stack (:class:`Stack`); the servers stop at the end of the session."""
    pytest.importorskip("prometheus_client")
    folder = str(tmp_path_factory.mktemp("prometheus-stack"))
    started = time.time()
    pushgateway = start_pushgateway(folder)
    try:
        prometheus = start_prometheus(folder, pushgateway.url, RULE_FILES)
    except BaseException:
        pushgateway.stop()
        raise
    try:
        runs = _feed(pushgateway.url)
        prom_wait(prometheus, "resource_tracker_run_end_timestamp_seconds", len(runs))
        yield Stack(pushgateway, prometheus, runs, started)
    finally:
        prometheus.stop()
        pushgateway.stop()
