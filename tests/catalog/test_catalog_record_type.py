"""The server records of every catalog source are ``results_types.ServerRecord``s: the
test-time catalog (a downloaded dump's full schema), the snapshot embedded in the package
(fewer columns) and the Keeper (its loopback stand-in); CPU-only and GPU servers, one record
and a list. Each record has the required keys, no key the type does not declare, and the
declared value types (tests/typed_dict_check.py)."""

from __future__ import annotations

import pytest
from catalog_http import KeeperStandIn
from catalog_reference import Reference
from typed_dict_check import assert_typed

from resource_tracker import catalog
from resource_tracker.results_types import ServerRecord

CPU_ONLY = {"cpu": 2, "memory": 4096, "gpu": 0, "vram": 0}
WITH_GPUS = {"cpu": 4, "memory": 16384, "gpu": 1, "vram": 16384}


def assert_records(found, n):
    records = found if n is not None else [found]
    assert isinstance(records, list) and len(records) == (n or 1)
    for i, record in enumerate(records):
        assert_typed(ServerRecord, record, f"record {i}")


@pytest.mark.parametrize("resources", [CPU_ONLY, WITH_GPUS], ids=["cpu", "gpu"])
@pytest.mark.parametrize("n", [None, 3], ids=["one", "list"])
def test_local_catalog_records_are_server_records(catalog_db, resources, n):
    found = catalog.recommend_server(resources, n=n, catalog=catalog_db)
    assert_records(found, n)
    first = found[0] if n else found
    assert "cpu_flags" in first and "price_region_id" in first  # the full schema's record


@pytest.mark.parametrize("n", [None, 3], ids=["one", "list"])
def test_embedded_catalog_records_are_server_records(monkeypatch, n):
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "on")
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "off")
    found = catalog.recommend_server(CPU_ONLY, n=n)
    assert_records(found, n)
    assert (found[0] if n else found)["catalog_source"] == "embedded"


def test_keeper_records_are_server_records(catalog_db, monkeypatch, own_cache):
    server = KeeperStandIn(Reference(catalog_db))
    try:
        monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", server.url)
        found = [catalog.recommend_server(r, n=3, catalog="keeper") for r in (CPU_ONLY, WITH_GPUS)]
    finally:
        server.close()
    for records in found:
        assert_records(records, 3)
        assert records[0]["catalog_source"] == "keeper"


def test_the_keeper_and_the_local_catalog_write_a_server_alike(catalog_db, monkeypatch, own_cache):
    """The same servers from the Keeper (its stand-in answers the dump's rows, enum names such
    as 'BURSTABLE' included) and from the local catalog: the same words for the same facts
    (cpu_allocation 'Burstable', storage_type 'ssd', status, architecture)."""
    server = KeeperStandIn(Reference(catalog_db))
    try:
        monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", server.url)
        online = catalog.recommend_server(CPU_ONLY, n=3, catalog="keeper")
    finally:
        server.close()
    local = catalog.recommend_server(CPU_ONLY, n=3, catalog=catalog_db)
    assert [r["server_id"] for r in online] == [r["server_id"] for r in local]
    keys = ("cpu_allocation", "storage_type", "status", "cpu_architecture", "gpu_count")
    for on, lo in zip(online, local):
        assert {k: on.get(k) for k in keys} == {k: lo.get(k) for k in keys}, on["server_id"]
    assert {r["cpu_allocation"] for r in local} <= {"Shared", "Burstable", "Dedicated"}
