"""The catalog embedded in the package: real data only, the last source in the resolution
order, and every answer naming where it came from.

The Keeper stand-in (catalog_http.KeeperStandIn) is a real HTTP server on 127.0.0.1 that
speaks the Keeper's /servers protocol from the test catalog."""

from __future__ import annotations

import ast
import gzip
import os
import re
import sqlite3
import subprocess
import sys

import make_data
import pytest
from catalog_http import KeeperStandIn
from catalog_reference import Reference

from resource_tracker import catalog
from resource_tracker.catalog import _embedded

TWO_CPUS_4_GIB = {"cpu": 2, "memory": 4096, "gpu": 0, "vram": 0}


@pytest.fixture(scope="module")
def ref(catalog_db):
    return Reference(catalog_db)


@pytest.fixture
def embedded_on(monkeypatch, own_cache):
    """The embedded catalog switched on (conftest switches it off for the other tests)."""
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "on")
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "off")
    return own_cache


def _rows(path, sql):
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_the_shipped_catalog_is_what_make_data_builds_from_the_fixtures(tmp_path):
    """Every row of the shipped file equals the rebuild from tests/data (real data only: the
    dump's servers and regions, the published AWS on-demand USD prices, nothing made up)."""
    rebuilt = str(tmp_path / "rebuilt.db")
    counts = make_data.build_embedded_db(rebuilt)
    shipped = str(tmp_path / "shipped.db")
    with gzip.open(_embedded.DATA_FILE, "rb") as f, open(shipped, "wb") as out:
        out.write(f.read())
    for table in ("server", "vendor", "region", "zone", "country", "server_price", "rt_meta"):
        sql = f"SELECT * FROM {table}"
        assert sorted(_rows(shipped, sql), key=repr) == sorted(_rows(rebuilt, sql), key=repr)
    assert counts["server"] == 5176 and counts["vendor"] == 7
    published = {
        (p["region_id"], p["server_id"]): p["price"]
        for p in make_data.load_aws_prices()
        if p["allocation"] == "ONDEMAND" and p["currency"] == "USD"
    }
    prices = _rows(shipped, "SELECT region_id, server_id, price, allocation FROM server_price")
    assert len(prices) > 10000
    assert all(published[(r, s)] == price and a == "ONDEMAND" for r, s, price, a in prices)


def test_the_wheel_budget_for_the_embedded_catalog():
    """The embedded data adds at most 2 MiB to the package."""
    assert os.path.getsize(_embedded.DATA_FILE) <= 2 * 1024 * 1024


def test_offline_fresh_machine_names_the_cheapest_server(embedded_on):
    """No catalog anywhere and no network: the embedded snapshot answers with the real
    cheapest AWS on-demand server for 2 vCPUs / 4 GiB, its source and the date of its prices."""
    best = catalog.recommend_server(TWO_CPUS_4_GIB)
    cheapest = _rows(
        _embedded.path(),
        "SELECT p.price, p.server_id FROM server_price p JOIN server s USING (vendor_id, "
        "server_id) WHERE s.vcpus >= 2 AND s.memory_amount >= 4096 ORDER BY p.price LIMIT 1",
    )[0]
    assert (best["price"], best["server_id"]) == cheapest
    assert best["catalog_source"] == "embedded"
    assert "2024-02" in best["price_source"] and "CC BY-SA 4.0" in best["price_source"]
    info = catalog.catalog_info()
    assert info["source"] == "embedded" and info["servers"] == 5176 and "note" in info
    costs = catalog.run_costs(
        3600, {"vendor": "aws", "instance_type": "m5.large", "region": "us-east-1"}, best
    )
    assert costs["current_hourly_usd"] == pytest.approx(0.096)  # the real 2024-02 price
    assert "2024-02" in costs["current_price_source"]


def test_every_earlier_source_wins_over_the_embedded_one(embedded_on, catalog_db, monkeypatch):
    """The order: catalog=, RESOURCE_TRACKER_CATALOG, (sparecores-data, cache: see
    test_catalog_costs), the Keeper, then the embedded snapshot; each answer says its source."""
    assert catalog.recommend_server(TWO_CPUS_4_GIB, catalog=catalog_db)["catalog_source"] == (
        "argument"
    )
    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG", catalog_db)
    got = catalog.recommend_server(TWO_CPUS_4_GIB)
    assert got["catalog_source"] == "RESOURCE_TRACKER_CATALOG"
    assert got["price_source"] == f"Spare Cores catalog {catalog_db} (RESOURCE_TRACKER_CATALOG)"
    monkeypatch.delenv("RESOURCE_TRACKER_CATALOG")
    assert catalog.recommend_server(TWO_CPUS_4_GIB)["catalog_source"] == "embedded"


def test_the_keeper_comes_before_the_embedded_snapshot(embedded_on, ref, monkeypatch):
    """With no local catalog, a reachable Keeper answers; once it fails, the snapshot does."""
    server = KeeperStandIn(ref)
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", server.url)
    try:
        got = catalog.recommend_server(TWO_CPUS_4_GIB)
    finally:
        server.close()
    assert got["catalog_source"] == "keeper" and "Keeper API" in got["price_source"]
    assert server.requests, "the Keeper stand-in was asked"
    failing = KeeperStandIn(ref, fail="500")
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", failing.url)
    try:
        got = catalog.recommend_server(TWO_CPUS_4_GIB)
    finally:
        failing.close()
    assert got["catalog_source"] == "embedded"


def test_unwritable_cache_unpacks_into_the_temp_dir(embedded_on, tmp_path, monkeypatch):
    """A cache directory that cannot be written does not lose the embedded catalog."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("RESOURCE_TRACKER_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    where = _embedded.path()
    assert where is not None and where.startswith(str(tmp_path / "tmp"))
    assert catalog.recommend_server(TWO_CPUS_4_GIB)["catalog_source"] == "embedded"


def test_switched_off_the_embedded_catalog_gives_the_clear_error(monkeypatch, own_cache):
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "off")
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "off")
    with pytest.raises(catalog.CatalogUnavailableError, match="catalog update"):
        catalog.recommend_server(TWO_CPUS_4_GIB)


def test_seeds_quick_start_offline_recommends_a_server(tmp_path):
    """The seeds' quick start, run as a script with no network route to anything but
    loopback, no catalog and the Keeper switched off: recommend_server() names a server."""
    script = (
        "from resource_tracker import ResourceTracker\n"
        "tracker = ResourceTracker(interval=0.2)\n"
        "sum(i * i for i in range(2_000_000))\n"
        "tracker.stop()\n"
        "server = tracker.recommend_server()\n"
        "print(server['vendor_id'], server['server_id'], server['catalog_source'])\n"
    )
    env = dict(
        os.environ, RESOURCE_TRACKER_KEEPER_URL="off", RESOURCE_TRACKER_CACHE_DIR=str(tmp_path)
    )
    env.pop("RESOURCE_TRACKER_EMBEDDED_CATALOG", None)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr
    vendor, _server, source = out.stdout.split()
    assert (vendor, source) == ("aws", "embedded")


def test_offline_a_filter_the_snapshot_cannot_answer_says_which_prices_it_lacks(embedded_on):
    """The docs' offline example (vendor=["aws", "gcp"], allocation="spot") on the embedded
    snapshot: the error says it has AWS on-demand prices only and how to get the others;
    a filter it can answer gets the plain "no server" sentence."""
    with pytest.raises(catalog.NoMatchingServerError) as err:
        catalog.recommend_server(TWO_CPUS_4_GIB, vendor=["aws", "gcp"], allocation="spot")
    text = str(err.value)
    assert "lacks prices for: gcp, spot (it has aws on-demand prices only)" in text
    assert "`resource-tracker catalog update`" in text
    with pytest.raises(catalog.NoMatchingServerError) as err:
        catalog.recommend_server({"cpu": 100000, "memory": 1}, vendor="aws")
    assert "lacks" not in str(err.value)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCUMENTS = ("README.md", "docs/resource_tracker.md", "docs/catalog.md", "docs/cli.md")
NEEDS = "needs current prices: resource-tracker catalog update"


def _documented_lines():
    """(document, line) of every line of the documents."""
    for name in DOCUMENTS:
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            for line in f:
                yield name, line.rstrip("\n")


def _server_filters(line):
    """The literal keyword arguments of the recommend_server(...) call on a code line."""
    code = line.split("#")[0].strip()
    call = next(
        node
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "recommend_server"
    )
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def test_the_documents_server_examples_run_offline_or_say_what_they_need(embedded_on):
    """Every recommend_server() example of the README and the docs, run offline (the embedded
    snapshot, the Keeper off, no catalog): it names a server, or it is marked as needing
    current prices and its error says which prices the snapshot lacks. A command line
    asking for spot prices carries the mark too."""
    examples = [
        (name, line)
        for name, line in _documented_lines()
        if re.match(r"\s*(\w+ = )?tracker\.recommend_server\(", line)
    ]
    assert len(examples) >= 8, examples
    for name, line in examples:
        filters = _server_filters(line)
        if NEEDS in line:
            with pytest.raises(catalog.NoMatchingServerError, match="lacks prices for"):
                catalog.recommend_server({"cpu": 1, "memory": 512}, **filters)
        else:
            found = catalog.recommend_server({"cpu": 1, "memory": 512}, **filters)
            assert found, (name, line)
    spot = [
        (name, line)
        for name, line in _documented_lines()
        if re.search(r"--allocation spot|allocation=\"spot\"", line) and "`" not in line
    ]
    assert spot and all(NEEDS in line for _name, line in spot), spot
