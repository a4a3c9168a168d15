"""The online path: the C Keeper client (csrc/keeper.c over libcurl + cJSON) against a loopback
stand-in of the Spare Cores Keeper (catalog_http.KeeperStandIn, answering the documented
/servers and /server/{vendor}/{server}/prices API from the test catalog). The stand-in
records each request so the tests check what the client sent: units (GiB), parameters and
the X-Application-ID header."""

from __future__ import annotations

import socket

import pytest
from catalog_http import KeeperStandIn
from catalog_reference import Reference

from resource_tracker import _core, catalog
from resource_tracker.catalog import CatalogUnavailableError, NoMatchingServerError, _keeper
from resource_tracker.keeper import (
    get_instance_price,
    get_recommended_cloud_servers,
    keeper_request,
)


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


# -- resource_tracker.keeper: the original package's helpers over this client ----------------


def _dead_url():
    """A loopback URL where connections are refused (a free port, nothing listening)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def _ondemand(ref, server_id, region=None):
    return [
        p["price"]
        for p in ref.prices
        if p["server_id"] == server_id
        and p["allocation"] == "ONDEMAND"
        and (region is None or p["region_id"] == region)
    ]


def test_keeper_request_asks_the_configured_keeper_with_the_header(keeper, ref):
    got = keeper_request("/server/aws/m5.large/prices")
    assert got == keeper.prices("aws", "m5.large") and got
    assert [r["path"] for r in keeper.requests] == ["/server/aws/m5.large/prices"]
    assert keeper.requests[0]["headers"].get("X-Application-ID") == "resource-tracker"
    # no leading slash; the stand-in ranks its whole catalog for this answer, which took over
    # 5 s under ASan beside eight busy loops: the bound is for a hung Keeper, not a slow one
    servers = keeper_request("servers?vcpus_min=4&limit=3", timeout=120)
    assert keeper.requests[-1]["query"] == {"vcpus_min": ["4"], "limit": ["3"]}
    assert [s["server_id"] for s in servers] == [t[2] for t in ref.rank(cpu=4)[:3]]


def test_keeper_request_endpoint_argument_and_failures_give_none(keeper, ref, monkeypatch):
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", _dead_url())
    assert keeper_request("/server/aws/m5.large/prices", endpoint=keeper.url)
    assert len(keeper.requests) == 1
    assert keeper_request("/no/such/path", endpoint=keeper.url) is None  # HTTP 404
    assert keeper_request("/servers?a b", endpoint=keeper.url) is None  # not a URL path
    assert keeper_request("/servers", timeout=0, endpoint=keeper.url) is None
    assert keeper_request("/servers") is None  # the configured Keeper refuses
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "off")
    before = len(keeper.requests)
    assert keeper_request("/servers") is None
    assert get_instance_price("aws", "us-east-1", "m5.large") is None
    assert get_recommended_cloud_servers(2, 4096) == []
    assert len(keeper.requests) == before


@pytest.mark.parametrize("fail", ["500", "garbage"])
def test_keeper_request_of_a_bad_answer_is_none(ref, fail):
    server = KeeperStandIn(ref, fail=fail)
    try:
        assert keeper_request("/servers", endpoint=server.url) is None
        assert len(server.requests) == 1
    finally:
        server.close()


def test_instance_price_in_the_region_else_the_cheapest_elsewhere(keeper, ref):
    here = _ondemand(ref, "m5.large", "us-east-1")
    assert here and get_instance_price("aws", "us-east-1", "m5.large") == pytest.approx(min(here))
    assert keeper.requests[-1]["path"] == "/server/aws/m5.large/prices"
    anywhere = _ondemand(ref, "m5.large")
    assert get_instance_price("aws", "no-such-region", "m5.large") == pytest.approx(min(anywhere))
    assert get_instance_price("aws", "us-east-1", "no.such-type") is None


def test_instance_price_without_an_answer_is_none(monkeypatch):
    dead = _dead_url()
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", dead)
    try:
        assert get_instance_price("aws", "us-east-1", "m5.large") is None
    finally:
        _keeper._failure.pop(dead, None)


def test_recommended_servers_cheapest_on_demand_first(keeper, ref):
    got = get_recommended_cloud_servers(2, 6000, n=4)
    query = keeper.requests[-1]["query"]
    assert query["vcpus_min"] == ["2"] and float(query["memory_min"][0]) == pytest.approx(
        6000 / 1024
    )
    assert query["allocation"] == ["ondemand"] and query["limit"] == ["4"]
    want = ref.rank(cpu=2, memory=6000, allocation="ondemand")[:4]
    assert len(want) == 4
    assert [(s["vendor_id"], s["server_id"]) for s in got] == [(t[1], t[2]) for t in want]
    assert [s["price"] for s in got] == pytest.approx([t[0] for t in want])
    assert all(s["vcpus"] >= 2 and s["memory_amount"] >= 6000 for s in got)


def test_recommended_servers_send_gpus_and_vram_in_gib(keeper, ref):
    got = get_recommended_cloud_servers(1, 1024, gpu=1, vram=16, n=2)
    query = keeper.requests[-1]["query"]
    assert query["gpu_min"] == ["1"] and query["gpu_memory_total"] == ["16"]  # GiB, as given
    want = ref.rank(cpu=1, memory=1024, gpu=1, vram=16 * 1024, allocation="ondemand")[:2]
    assert len(want) == 2
    assert [(s["vendor_id"], s["server_id"]) for s in got] == [(t[1], t[2]) for t in want]
    assert get_recommended_cloud_servers(100000, 1024) == []  # nothing that large
    with pytest.raises(ValueError):
        get_recommended_cloud_servers("many", 1024)
