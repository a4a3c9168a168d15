"""Fixtures of the catalog tests: the test-time SQLite catalog and an isolated cache dir."""

from __future__ import annotations

import os
import shutil

import pytest
from catalog_fixture import build


@pytest.fixture(scope="session")
def catalog_db(tmp_path_factory):
    """Path of the catalog built from tests/data at test time (see catalog_fixture)."""
    path = tmp_path_factory.mktemp("catalog") / "sc-data-test.db"
    build(str(path))
    os.chmod(path, 0o444)  # the code under test must never write to a user's catalog
    return str(path)


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("rt-cache"))


@pytest.fixture(autouse=True)
def _catalog_env(monkeypatch, _session_cache):
    """No catalog from the developer's machine leaks in: cache dir in tmp (shared by the
    session so the side index is built once), no RESOURCE_TRACKER_CATALOG, no sparecores-data
    cache, default EUR rate, and no embedded catalog (these tests look at the other sources;
    test_catalog_embedded.py switches it on)."""
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "off")
    monkeypatch.setenv("RESOURCE_TRACKER_CACHE_DIR", _session_cache)
    monkeypatch.setenv("XDG_CACHE_HOME", os.path.join(_session_cache, "xdg"))
    for name in ("RESOURCE_TRACKER_CATALOG", "RESOURCE_TRACKER_EUR_USD", "SC_DATA_DB_PATH"):
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A fresh, empty cache dir for this test only."""
    path = tmp_path / "cache"
    monkeypatch.setenv("RESOURCE_TRACKER_CACHE_DIR", str(path))
    yield str(path)
    shutil.rmtree(path, ignore_errors=True)
