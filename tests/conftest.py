"""Test-wide set-up: the network safety rule and common helpers.

Every test runs with every outbound endpoint of the product pointed at loopback
(an autouse fixture), so that nothing a test does can reach a cloud metadata
service or any other non-loopback address. Port 9 (discard) on 127.0.0.1 has no
listener here: a request that slips through fails at once with "connection refused".
"""

from __future__ import annotations

import os
import sys

import pytest

LOOPBACK_DEAD_END = "http://127.0.0.1:9"

NETWORK_OVERRIDES = {
    "RESOURCE_TRACKER_METADATA_URL": LOOPBACK_DEAD_END,
    "RESOURCE_TRACKER_KEEPER_URL": LOOPBACK_DEAD_END,
    "RESOURCE_TRACKER_CATALOG_URL": LOOPBACK_DEAD_END + "/catalog.db.bz2",
}

SHARED = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "shared"))


@pytest.fixture(autouse=True)
def _network_to_loopback(monkeypatch):
    """Point every endpoint of the product at loopback (tests may re-point at their mocks)."""
    for name, value in NETWORK_OVERRIDES.items():
        monkeypatch.setenv(name, value)
    for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    yield


@pytest.fixture
def python():
    """The interpreter running the tests, for subprocess workloads."""
    return sys.executable


@pytest.fixture
def shared_dir():
    """../shared beside the repository (catalog data, seeds)."""
    if not os.path.isdir(SHARED):
        pytest.fail(f"{SHARED} is missing: the tests read shared data from ../shared")
    return SHARED
