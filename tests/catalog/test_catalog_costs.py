"""run_costs() by hand against the test catalog, the catalog resolution order, catalog_info(),
and ResourceTracker.recommend_server() end to end (a real tracker of this process)."""

from __future__ import annotations

import os
import shutil
import sqlite3

import pytest

from resource_tracker import catalog
from resource_tracker.catalog import CatalogUnavailableError


def _aws_2024(server, region):
    """The real 2024-02 on-demand price, read from the published rows (tests/data)."""
    import make_data

    return min(
        p["price"]
        for p in make_data.load_aws_prices()
        if p["server_id"] == server
        and p["region_id"] == region
        and p["allocation"] == "ONDEMAND"
        and p["currency"] == "USD"
    )


def test_costs_by_hand_on_aws(catalog_db):
    m5 = _aws_2024("m5.large", "us-east-1")
    assert m5 == pytest.approx(0.096)  # the real 2024-02 list price
    server = catalog.recommend_server(
        {"cpu": 2, "memory": 4096}, vendor="aws", region="us-east-1", allocation="ondemand",
        catalog=catalog_db,
    )  # fmt: skip
    cloud = {"vendor": "aws", "instance_type": "m5.large", "region": "us-east-1"}
    costs = catalog.run_costs(5400, cloud, server, catalog=catalog_db)
    assert costs["current_hourly_usd"] == pytest.approx(m5)
    assert costs["run_cost_usd"] == pytest.approx(m5 * 1.5)
    assert costs["recommended_hourly_usd"] == pytest.approx(server["price"]) == 0.0336
    assert costs["recommended_run_cost_usd"] == pytest.approx(0.0336 * 1.5)
    assert costs["saving_usd"] == pytest.approx((m5 - 0.0336) * 1.5)
    assert costs["eur_usd_rate"] == catalog.DEFAULT_EUR_USD_RATE
    assert costs["current_price_note"] == "on-demand price of aws m5.large in us-east-1"
    assert costs["current_price_source"] == f"Spare Cores catalog {catalog_db} (catalog=)"
    assert set(costs) == {
        "current_hourly_usd", "current_price_note", "current_price_source", "run_cost_usd",
        "recommended_hourly_usd", "recommended_run_cost_usd", "saving_usd", "eur_usd_rate",
    }  # fmt: skip


def test_region_fallback_unknown_server_and_no_cloud(catalog_db):
    conn = sqlite3.connect(f"file:{catalog_db}?mode=ro", uri=True)
    cheapest = conn.execute(
        "SELECT MIN(price) FROM server_price WHERE vendor_id = 'aws' AND server_id = 'm5.large' "
        "AND allocation = 'ONDEMAND'"
    ).fetchone()[0]
    conn.close()
    cloud = {"vendor": "aws", "instance_type": "m5.large", "region": "atlantis-1"}
    costs = catalog.run_costs(3600, cloud, None, catalog=catalog_db)
    assert costs["current_hourly_usd"] == pytest.approx(cheapest)
    assert "cheapest on-demand price" in costs["current_price_note"]
    assert "no price in atlantis-1" in costs["current_price_note"]
    assert costs["recommended_hourly_usd"] is None and costs["saving_usd"] is None
    unknown = {"vendor": "aws", "instance_type": "z99.huge", "region": "us-east-1"}
    costs = catalog.run_costs(3600, unknown, {"price": 0.1}, catalog=catalog_db)
    assert (
        costs["current_hourly_usd"] is None and "not in the catalog" in costs["current_price_note"]
    )
    assert costs["recommended_run_cost_usd"] == pytest.approx(0.1)
    costs = catalog.run_costs(7200, None, {"price": 0.1}, catalog=catalog_db)
    assert costs["run_cost_usd"] is None
    assert "not on a known cloud server" in costs["current_price_note"]
    assert costs["recommended_run_cost_usd"] == pytest.approx(0.2)


def test_eur_vendor_and_api_reference_matching(catalog_db):
    """hcloud server types and gcp machine types match api_reference; hcloud regions match
    aliases (nbg1), gcp regions api_reference (us-central1). hcloud prices are EUR test values."""
    conn = sqlite3.connect(f"file:{catalog_db}?mode=ro", uri=True)
    eur = conn.execute(
        "SELECT p.price FROM server_price p JOIN server s USING (vendor_id, server_id) "
        "WHERE s.vendor_id = 'hcloud' AND s.api_reference = 'cx23' AND p.region_id = '2'"
    ).fetchone()[0]
    usd = conn.execute(
        "SELECT p.price FROM server_price p JOIN server s USING (vendor_id, server_id) "
        "WHERE s.vendor_id = 'gcp' AND s.api_reference = 'e2-standard-2' AND p.region_id = '1000'"
    ).fetchone()[0]
    conn.close()
    hc = {"vendor": "hcloud", "instance_type": "cx23", "region": "nbg1"}
    costs = catalog.run_costs(3600, hc, None, catalog=catalog_db, eur_usd_rate=1.25)
    assert costs["current_hourly_usd"] == pytest.approx(eur * 1.25)
    assert costs["eur_usd_rate"] == 1.25 and "in nbg1" in costs["current_price_note"]
    gcp = {"vendor": "gcp", "instance_type": "e2-standard-2", "region": "us-central1"}
    costs = catalog.run_costs(3600, gcp, None, catalog=catalog_db)
    assert costs["current_hourly_usd"] == pytest.approx(usd)


def test_resolution_order(catalog_db, tmp_path, monkeypatch, own_cache):
    """argument > RESOURCE_TRACKER_CATALOG > sparecores-data's cache > our cache. The
    sparecores-data package is a stand-in here: an importable `sc_data` package directory
    (never imported by the code under test) and its cache file under XDG_CACHE_HOME."""
    res = {"cpu": 1, "memory": 512}
    assert catalog.find_catalog() == (None, None)
    ours = os.path.join(own_cache, "sc-data-all.db")
    os.makedirs(own_cache)
    shutil.copy(catalog_db, ours)
    assert catalog.find_catalog() == (ours, "cache")
    pkg = tmp_path / "site" / "sc_data"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    xdg = tmp_path / "xdg"
    (xdg / "sparecores-data").mkdir(parents=True)
    scd = str(xdg / "sparecores-data" / "sc-data-all.db")
    shutil.copy(catalog_db, scd)
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    assert catalog.find_catalog() == (scd, "sparecores-data")
    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG", catalog_db)
    assert catalog.find_catalog() == (catalog_db, "RESOURCE_TRACKER_CATALOG")
    assert catalog.find_catalog(ours) == (ours, "argument")
    assert catalog.find_catalog("keeper") == ("keeper", "argument")
    assert catalog.recommend_server(res)["server_id"]
    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG", str(tmp_path / "nope.db"))
    with pytest.raises(CatalogUnavailableError, match="nope.db.*catalog update"):
        catalog.recommend_server(res)
    with pytest.raises(CatalogUnavailableError, match="missing.db"):
        catalog.recommend_server(res, catalog=str(tmp_path / "missing.db"))


def test_bad_and_priceless_catalogs(catalog_db, tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(CatalogUnavailableError, match="not a readable SQLite database"):
        catalog.recommend_server({"cpu": 1}, catalog=str(junk))
    priceless = str(tmp_path / "priceless.db")
    shutil.copy(catalog_db, priceless)
    os.chmod(priceless, 0o644)
    conn = sqlite3.connect(priceless)
    conn.execute("DELETE FROM server_price")
    conn.commit()
    conn.close()
    with pytest.raises(CatalogUnavailableError, match="no prices"):
        catalog.recommend_server({"cpu": 1}, catalog=priceless)
    info = catalog.catalog_info(priceless)
    assert info["servers"] == 5176 and info["prices"] == 0


def test_catalog_info_never_raises(tmp_path, own_cache):
    info = catalog.catalog_info()
    assert info["path"] is None and "catalog update" in info["error"]
    info = catalog.catalog_info(str(tmp_path / "missing.db"))
    assert info["path"] is None and "missing.db" in info["error"]
    assert info["license"].startswith("Spare Cores") and info["eur_usd_rate"] > 0


def test_tracker_recommend_server_end_to_end(catalog_db, monkeypatch):
    from resource_tracker import ResourceTracker

    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG", catalog_db)
    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    try:
        assert tracker.wait_for_samples(3, timeout=10)
    finally:
        tracker.stop()
    need = tracker.recommend_resources()
    got = tracker.recommend_server(vendor="aws", region="us-east-1")
    assert got["vcpus"] >= need["cpu"] and got["memory_amount"] >= need["memory"]
    top = tracker.recommend_server(n=3, architecture="x86_64")
    assert len(top) == 3 and all(s["cpu_architecture"] == "x86_64" for s in top)
