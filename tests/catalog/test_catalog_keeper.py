"""The online path: the C Keeper client (csrc/keeper.c over libcurl + cJSON) against a loopback
stand-in of the Spare Cores Keeper (catalog_http.KeeperStandIn, answering the documented
/servers and /server/{vendor}/{server}/prices API from the test catalog). The stand-in
records each request so the tests check what the client sent: units (GiB), parameters and
the X-Application-ID header."""

from __future__ import annotations

import pytest
from catalog_http import KeeperStandIn
from catalog_reference import Reference

from resource_tracker import _core, catalog
from resource_tracker.catalog import CatalogUnavailableError, NoMatchingServerError


@pytest.fixture(scope="module")
def ref(catalog_db):
    return Reference(catalog_db)


@pytest.fixture
def keeper(ref, monkeypatch, own_cache):
    server = KeeperStandIn(ref)
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", server.url)
    yield server
    server.close()


def test_no_local_catalog_uses_the_keeper_with_gib_and_the_header(keeper, ref):
    got = catalog.recommend_server({"cpu": 2, "memory": 4096, "gpu": 0, "vram": 0}, vendor="aws")
    assert len(keeper.requests) == 1
    req = keeper.requests[0]
    assert req["path"] == "/servers"
    assert req["headers"].get("X-Application-ID") == "resource-tracker"
    q = req["query"]
    assert q["vcpus_min"] == ["2"] and q["memory_min"] == ["4"]  # 4096 MiB sent as 4 GiB
    assert q["vendor"] == ["aws"] and q["order_by"] == ["min_price"] and q["limit"] == ["1"]
    assert "gpu_min" not in q and "gpu_memory_min" not in q
    want = ref.rank(cpu=2, memory=4096, vendors={"aws"})[0]
    assert (got["vendor_id"], got["server_id"]) == (want[1], want[2])
    assert got["price"] == pytest.approx(want[0]) and got["catalog_source"] == "keeper"


def test_gpu_memory_and_lists_are_sent_in_gib_and_repeated(keeper):
    got = catalog.recommend_server(
        {"cpu": 4, "memory": 16384, "gpu": 2, "vram": 40960},
        n=3,
        vendor=["aws", "gcp"],
        regions=["us-east-1", "europe-west1"],
        country=["US", "BE"],
        architecture="x86_64",
        allocation="ondemand",
        compliance_framework="hipaa",
        green_energy=True,
        max_price=100,
        catalog="keeper",
    )
    q = keeper.requests[-1]["query"]
    assert q["memory_min"] == ["16"] and q["gpu_min"] == ["2"]
    assert q["gpu_memory_total"] == ["40"] and q["gpu_memory_min"] == ["20"]  # per GPU, GiB
    assert q["vendor"] == ["aws", "gcp"] and q["regions"] == ["us-east-1", "europe-west1"]
    assert q["countries"] == ["US", "BE"] and q["architecture"] == ["x86_64"]
    assert q["allocation"] == ["ondemand"] and q["compliance_framework"] == ["hipaa"]
    assert q["green_energy"] == ["true"] and q["price_max"] == ["100"]
    assert q["order_by"] == ["min_price_ondemand"] and q["limit"] == ["3"]
    assert isinstance(got, list) and len(got) <= 3
    for server in got:
        assert server["gpu_count"] >= 2 and server["gpu_memory_total"] >= 40960


def test_fractional_gib_and_score_per_price_order(keeper):
    catalog.recommend_server(
        {"cpu": 1, "memory": 1536}, order_by="score_per_price", n=2, catalog="keeper"
    )
    q = keeper.requests[-1]["query"]
    assert q["memory_min"] == ["1.5"]
    assert q["order_by"] == ["score_per_price"] and q["order_dir"] == ["desc"]


def test_url_escaping_in_c(keeper):
    url, answer = _core.keeper_servers(keeper.url + "/", regions=["a b&c=d/é"], limit=1)
    assert "regions=a%20b%26c%3Dd%2F%C3%A9" in url and url.startswith(keeper.url + "/servers?")
    assert keeper.requests[-1]["query"]["regions"] == ["a b&c=d/é"]
    assert isinstance(answer, list)


def test_keeper_failures_are_catalog_unavailable(ref, monkeypatch, own_cache):
    for fail, needle in (("500", "HTTP 500"), ("garbage", "not JSON"), ("bad-utf8", "utf-8")):
        server = KeeperStandIn(ref, fail=fail)
        monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", server.url)
        try:
            with pytest.raises(CatalogUnavailableError) as info:
                catalog.recommend_server({"cpu": 1, "memory": 512})
        finally:
            server.close()
        text = str(info.value)
        assert needle in text and "resource-tracker catalog update" in text


def test_nothing_reachable_says_how_to_get_a_catalog(monkeypatch, own_cache):
    """conftest points the Keeper at 127.0.0.1:9 (nothing listens)."""
    with pytest.raises(CatalogUnavailableError) as info:
        catalog.recommend_server({"cpu": 1, "memory": 512})
    text = str(info.value)
    assert "no local server catalog" in text and "RESOURCE_TRACKER_CATALOG" in text
    assert "sparecores-data" in text
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "off")
    with pytest.raises(CatalogUnavailableError) as info:
        catalog.recommend_server({"cpu": 1, "memory": 512})
    assert "no server catalog found" in str(info.value)


def test_keeper_no_match_and_bad_vendor(keeper):
    with pytest.raises(NoMatchingServerError):
        catalog.recommend_server({"cpu": 100000, "memory": 512}, catalog="keeper")
    with pytest.raises(ValueError, match="unknown vendor 'amazon'.*aws"):
        catalog.recommend_server({"cpu": 1, "memory": 512}, vendor="amazon", catalog="keeper")


def test_run_costs_through_the_keeper_prices_endpoint(keeper, ref):
    cloud = {"vendor": "aws", "instance_type": "m5.large", "region": "us-east-1"}
    costs = catalog.run_costs(1800, cloud, {"price": 0.05}, catalog="keeper")
    req = keeper.requests[-1]
    assert req["path"] == "/server/aws/m5.large/prices"
    assert req["headers"].get("X-Application-ID") == "resource-tracker"
    want = min(
        p["price"]
        for p in ref.prices
        if p["server_id"] == "m5.large"
        and p["region_id"] == "us-east-1"
        and p["allocation"] == "ONDEMAND"
    )
    assert costs["current_hourly_usd"] == pytest.approx(want)
    assert costs["run_cost_usd"] == pytest.approx(want / 2)
    assert "Keeper" in costs["current_price_note"]


def test_an_unreachable_keeper_is_asked_once_per_process(monkeypatch, own_cache):
    """An offline machine pays the connection failure once, not in every report and summary.

    A real loopback port with no listener stands in for an unreachable Keeper; a Keeper that
    answers HTTP 500 is asked again each time (the answer, not the network, was bad)."""
    import socket

    from resource_tracker.catalog import _keeper

    with socket.socket() as probe:  # a free loopback port: connections are refused
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", dead)
    calls = []
    real = _core.keeper_servers
    monkeypatch.setattr(_core, "keeper_servers", lambda *a, **k: calls.append(1) or real(*a, **k))
    with pytest.raises(CatalogUnavailableError) as first:
        catalog.recommend_server({"cpu": 1, "memory": 512})
    with pytest.raises(CatalogUnavailableError) as second:
        catalog.recommend_server({"cpu": 1, "memory": 512})
    assert len(calls) == 1 and "not asked again" in str(second.value)
    assert dead in str(first.value) and dead in str(second.value)
    _keeper._failure.pop(dead, None)


def test_a_keeper_answering_an_error_is_asked_again(ref, monkeypatch, own_cache):
    server = KeeperStandIn(ref, fail="500")
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", server.url)
    try:
        for _ in range(2):
            with pytest.raises(CatalogUnavailableError) as info:
                catalog.recommend_server({"cpu": 1, "memory": 512})
            assert "HTTP 500" in str(info.value) and "not asked again" not in str(info.value)
    finally:
        server.close()
