"""Builds a current-schema Spare Cores SQLite catalog at test time (into a temp dir).

Sources (the compact fixtures of tests/data, see its README and make_data.py):
- spare-cores-dump-2026-01.json.xz: the real 2026-01 dump (servers of all 7 vendors,
  vendors, regions, zones, countries, compliance frameworks, benchmarks). No prices.
- aws-prices-2024-02.csv.xz: real AWS on-demand Linux hourly prices, a 2024-02 snapshot.
  Rows of regions the 2026 dump does not know and non-USD rows are skipped.

TEST VALUES (made up here, marked with observed_at = TEST_MARK): AWS spot prices
(0.3 x on-demand, us-east-1 and eu-west-1 only), prices of the other six vendors (a formula
on vCPUs, memory and GPUs, in EUR for hcloud/upcloud/ovh, USD otherwise, in two regions
each), benchmark scores ('stress_ng:bestn' = a formula on vCPUs and architecture) and the
vendor-compliance links. They exist only so that filters, currencies and score ordering
can be exercised; they are not real prices or scores.
"""

from __future__ import annotations

import json
import os
import sqlite3

import make_data

TEST_MARK = "TEST VALUE (made up by tests/catalog/catalog_fixture.py)"
AWS_MARK = "2024-02 snapshot (real AWS on-demand price)"
EUR_VENDORS = ("hcloud", "upcloud", "ovh")
FACTOR = {"gcp": 1.05, "azure": 1.1, "hcloud": 0.35, "upcloud": 0.6, "ovh": 0.5, "alicloud": 0.9}
COMPLIANCE = {  # test values
    "aws": ("hipaa", "iso27001", "soc2t2"),
    "azure": ("hipaa", "iso27001", "soc2t2"),
    "gcp": ("hipaa", "iso27001", "soc2t2"),
    "hcloud": ("iso27001",),
    "upcloud": ("iso27001",),
    "ovh": ("iso27001", "hipaa"),
    "alicloud": ("iso27001",),
}
SPOT_REGIONS = ("us-east-1", "eu-west-1")

TABLE_KEYS = {
    "vendor": ("vendor_id",),
    "region": ("vendor_id", "region_id"),
    "zone": ("vendor_id", "region_id", "zone_id"),
    "country": ("country_id",),
    "compliance_framework": ("compliance_framework_id",),
    "benchmark": ("benchmark_id",),
    "storage": ("vendor_id", "storage_id"),
    "server": ("vendor_id", "server_id"),
}


def _create(conn, table, rows, keys):
    cols = []
    for row in rows:
        for key in row:
            if key not in cols:
                cols.append(key)
    if "observed_at" not in cols:
        cols.append("observed_at")
    conn.execute(f"CREATE TABLE {table} ({', '.join(cols)}, PRIMARY KEY ({', '.join(keys)}))")
    values = []
    for row in rows:
        out = []
        for col in cols:
            value = row.get(col, "2026-01-31T00:00:00" if col == "observed_at" else None)
            if isinstance(value, (list, dict)):
                value = json.dumps(value)
            out.append(value)
        values.append(out)
    conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})", values)


def made_up_price(server):
    """The made-up hourly price of a non-AWS server (TEST VALUE), in its vendor's currency."""
    gib = (server["memory_amount"] or 0) / 1024
    gpus = server["gpu_count"] or 0
    base = 0.011 * server["vcpus"] + 0.0021 * gib + 0.45 * gpus
    return round(base * FACTOR[server["vendor_id"]], 6)


def made_up_score(server):
    """The made-up stress_ng:bestn score of a server (TEST VALUE)."""
    arch = 1.15 if server["cpu_architecture"] == "ARM64" else 1.0
    return round(
        1000.0 * server["vcpus"] * arch + 7.0 * ((server["memory_amount"] or 0) // 1024), 2
    )


def use_built(directory, monkeypatch):
    """Builds the catalog in directory and makes it the only source of servers and prices for
    the test (a local file: no Keeper, no embedded catalog, a cache of its own)."""
    db = os.path.join(str(directory), "catalog.db")
    build(db)
    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG", db)
    monkeypatch.setenv("RESOURCE_TRACKER_CACHE_DIR", os.path.join(str(directory), "cache"))
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "off")
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "off")
    return db


def build(out_path):
    """Writes the catalog to out_path; returns a summary dict."""
    conn = sqlite3.connect(out_path)
    conn.execute("PRAGMA journal_mode=OFF")
    data = make_data.load_dump()
    for table, keys in TABLE_KEYS.items():
        _create(conn, table, data[table], keys)
    conn.execute(
        "CREATE TABLE vendor_compliance_link (vendor_id, compliance_framework_id, comment, "
        "status, observed_at, PRIMARY KEY (vendor_id, compliance_framework_id))"
    )
    conn.executemany(
        "INSERT INTO vendor_compliance_link VALUES (?, ?, NULL, 'ACTIVE', ?)",
        [(v, fw, TEST_MARK) for v, fws in COMPLIANCE.items() for fw in fws],
    )
    conn.execute(
        "CREATE TABLE server_price (vendor_id, region_id, zone_id, server_id, operating_system, "
        "allocation, unit, price, price_upfront, price_tiered, currency, status, observed_at, "
        "PRIMARY KEY (vendor_id, region_id, zone_id, server_id, allocation))"
    )
    conn.execute(
        "CREATE TABLE benchmark_score (vendor_id, server_id, benchmark_id, config, score, note, "
        "status, observed_at, PRIMARY KEY (vendor_id, server_id, benchmark_id, config))"
    )
    servers = {(s["vendor_id"], s["server_id"]): s for s in data["server"]}
    regions = {}
    for r in data["region"]:
        regions.setdefault(r["vendor_id"], []).append(r["region_id"])
    aws_regions = set(regions["aws"])
    price_rows = []
    for p in make_data.load_aws_prices():
        dc, sid, price = p["region_id"], p["server_id"], p["price"]
        if dc not in aws_regions or ("aws", sid) not in servers or p["currency"] != "USD":
            continue
        row = ["aws", dc, p["zone_id"], sid, p["operating_system"], p["allocation"], "HOUR"]
        row += [price, 0.0, "[]", "USD", "ACTIVE"]
        price_rows.append((*row, AWS_MARK))
        if dc in SPOT_REGIONS:
            row[2], row[5], row[7] = dc + "a", "SPOT", round(price * 0.3, 6)
            price_rows.append((*row, TEST_MARK))
    aws_priced = {(r[0], r[3]) for r in price_rows}
    for (vendor, sid), server in sorted(servers.items()):
        if vendor == "aws" or server["status"] != "ACTIVE":
            continue
        for region in sorted(regions.get(vendor, []))[:2]:
            bump = 1.0 if region == sorted(regions[vendor])[0] else 1.08
            price = round(made_up_price(server) * bump, 6)
            currency = "EUR" if vendor in EUR_VENDORS else "USD"
            row = (vendor, region, region, sid, "Linux", "ONDEMAND", "HOUR", price, 0.0, "[]")
            price_rows.append((*row, currency, "ACTIVE", TEST_MARK))
    conn.executemany(f"INSERT INTO server_price VALUES ({', '.join('?' * 13)})", price_rows)
    scored = [
        (
            v,
            sid,
            "stress_ng:bestn",
            json.dumps({"cores": s["vcpus"]}),
            made_up_score(s),
            None,
            "ACTIVE",
            TEST_MARK,
        )
        for (v, sid), s in servers.items()
        if (v != "aws" or (v, sid) in aws_priced) and hash_keep(sid)
    ]
    conn.executemany("INSERT INTO benchmark_score VALUES (?, ?, ?, ?, ?, ?, ?, ?)", scored)
    conn.commit()
    conn.close()
    return {"servers": len(servers), "prices": len(price_rows), "scores": len(scored)}


def hash_keep(server_id):
    """Deterministically keeps ~5/6 of the servers' scores (some servers have no score)."""
    return sum(server_id.encode()) % 6 != 0
