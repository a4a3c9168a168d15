"""Fixtures of the export tests: a real Pushgateway and a Prometheus scraping it (loopback,
temporary folders, stopped at the end of the module)."""

from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "metaflow"))  # mf_harness

from servers import start_prometheus, start_pushgateway  # noqa: E402


@pytest.fixture(scope="module")
def prom_stack(tmp_path_factory):
    """(pushgateway, prometheus) servers; both stop when the module's tests are done."""
    pytest.importorskip("prometheus_client")
    folder = str(tmp_path_factory.mktemp("prometheus"))
    pushgateway = start_pushgateway(folder)
    try:
        prometheus = start_prometheus(folder, pushgateway.url)
    except Exception:
        pushgateway.stop()
        raise
    yield pushgateway, prometheus
    prometheus.stop()
    pushgateway.stop()
    for server in (prometheus, pushgateway):
        assert server.proc.poll() is not None
