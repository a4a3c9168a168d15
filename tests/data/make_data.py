"""Builds the repository's catalog data from the public Spare Cores data (CC BY-SA 4.0).

Two steps, each deterministic:

``fixtures DUMP_DIR AWS_PRICES_DB``
    From a Spare Cores JSONL dump folder (one ``<table>.jsonl`` per table, here the dump of
    2026-01-31) and a Spare Cores SQLite release with AWS prices (here 2024-02, older schema:
    ``datacenter_id`` for the region), writes the compact test fixtures of this folder:
    ``spare-cores-dump-2026-01.json.xz`` (every table of the dump, every column) and
    ``aws-prices-2024-02.csv.xz`` (every AWS price row of the release, as published).

``embedded``
    From those two fixtures, writes the catalog that ships inside the package
    (``resource_tracker/catalog/data/embedded-catalog.db.gz``): a current-schema SQLite file
    with the servers, vendors, regions, zones and countries of the dump and the real AWS
    on-demand USD prices of the release (for regions and servers the dump knows), plus the
    query index tables, so that a fresh, offline machine can name the cheapest fitting server.
    No made-up value goes into it. tests/catalog/test_catalog_embedded.py rebuilds it and
    checks that the shipped file holds exactly this.

Usage: python tests/data/make_data.py fixtures DUMP_DIR AWS_PRICES_DB
       python tests/data/make_data.py embedded
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import lzma
import os
import sqlite3
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DUMP_FIXTURE = os.path.join(HERE, "spare-cores-dump-2026-01.json.xz")
PRICES_FIXTURE = os.path.join(HERE, "aws-prices-2024-02.csv.xz")
EMBEDDED = os.path.join(ROOT, "resource_tracker", "catalog", "data", "embedded-catalog.db.gz")
DUMP_TABLES = (
    "server",
    "vendor",
    "region",
    "zone",
    "country",
    "compliance_framework",
    "benchmark",
    "storage",
)
PRICE_COLUMNS = (
    "region_id",
    "zone_id",
    "server_id",
    "operating_system",
    "allocation",
    "price",
    "currency",
)
# What the embedded catalog says about itself (rt_meta); shown wherever its prices are shown.
EMBEDDED_META = {
    "source": "embedded",
    "servers_as_of": "2026-01-31",
    "prices_as_of": "2024-02",
    "description": (
        "snapshot embedded in resource-tracker: servers of 2026-01-31, AWS on-demand Linux "
        "prices of 2024-02 (Spare Cores, CC BY-SA 4.0)"
    ),
    "license": "Spare Cores data, CC BY-SA 4.0",
}
# Columns of each embedded table (the rest of the dump stays in the test fixture only).
EMBEDDED_TABLES = {
    "vendor": ("vendor_id", "name", "logo", "homepage", "country_id", "status"),
    "region": (
        "vendor_id",
        "region_id",
        "name",
        "api_reference",
        "display_name",
        "aliases",
        "country_id",
        "city",
        "green_energy",
        "status",
    ),
    "zone": ("vendor_id", "region_id", "zone_id", "name", "api_reference", "status"),
    "country": ("country_id", "continent"),
    "server": (
        "vendor_id",
        "server_id",
        "name",
        "api_reference",
        "display_name",
        "family",
        "vcpus",
        "cpu_cores",
        "cpu_allocation",
        "cpu_architecture",
        "cpu_manufacturer",
        "cpu_family",
        "cpu_model",
        "memory_amount",
        "gpu_count",
        "gpu_memory_min",
        "gpu_memory_total",
        "gpu_manufacturer",
        "gpu_family",
        "gpu_model",
        "storage_size",
        "storage_type",
        "network_speed",
        "status",
    ),
}
EMBEDDED_KEYS = {
    "vendor": ("vendor_id",),
    "region": ("vendor_id", "region_id"),
    "zone": ("vendor_id", "region_id", "zone_id"),
    "country": ("country_id",),
    "server": ("vendor_id", "server_id"),
}


# -- reading the fixtures ---------------------------------------------------------------------


def load_dump(path=DUMP_FIXTURE):
    """{table: [row dict, ...]} of the dump fixture."""
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def load_aws_prices(path=PRICES_FIXTURE):
    """The AWS price rows of the 2024-02 release as dicts (price as float)."""
    with lzma.open(path, "rt", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row["price"] = float(row["price"])
    return rows


def embedded_price_rows(dump, prices):
    """The real AWS on-demand USD price rows (current schema) for servers and regions the dump
    knows: (vendor_id, region_id, zone_id, server_id, operating_system, allocation, unit,
    price, currency, status, observed_at)."""
    servers = {s["server_id"] for s in dump["server"] if s["vendor_id"] == "aws"}
    regions = {r["region_id"] for r in dump["region"] if r["vendor_id"] == "aws"}
    out = []
    for p in prices:
        if p["server_id"] not in servers or p["region_id"] not in regions:
            continue
        if p["currency"] != "USD" or p["allocation"] != "ONDEMAND":
            continue
        out.append(
            (
                "aws",
                p["region_id"],
                p["zone_id"],
                p["server_id"],
                p["operating_system"],
                p["allocation"],
                "HOUR",
                p["price"],
                "USD",
                "ACTIVE",
                "2024-02",
            )
        )
    return sorted(out)


# -- fixtures from a full dump ----------------------------------------------------------------


def make_fixtures(dump_dir, aws_db):
    """Writes the two fixtures of this folder from a JSONL dump folder and an AWS price db."""
    dump = {}
    for table in DUMP_TABLES:
        with open(os.path.join(dump_dir, f"{table}.jsonl"), encoding="utf-8") as f:
            dump[table] = [json.loads(line) for line in f if line.strip()]
    text = json.dumps(dump, sort_keys=True, separators=(",", ":"))
    _write_atomic(DUMP_FIXTURE, lzma.compress(text.encode(), preset=9 | lzma.PRESET_EXTREME))
    conn = sqlite3.connect(f"file:{aws_db}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT datacenter_id, zone_id, server_id, operating_system, allocation, price, "
        "currency FROM server_price WHERE vendor_id = 'aws' "
        "ORDER BY datacenter_id, zone_id, server_id, allocation"
    ).fetchall()
    conn.close()
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(PRICE_COLUMNS)
    writer.writerows(rows)
    _write_atomic(PRICES_FIXTURE, lzma.compress(buf.getvalue().encode(), preset=9))
    return {"tables": {t: len(r) for t, r in dump.items()}, "aws_prices": len(rows)}


# -- the embedded catalog ---------------------------------------------------------------------


def build_embedded_db(out_path, dump=None, prices=None):
    """Writes the embedded catalog (uncompressed SQLite) to out_path; returns row counts."""
    sys.path.insert(0, ROOT)
    try:
        from resource_tracker.catalog import _query
    finally:
        sys.path.pop(0)
    dump = load_dump() if dump is None else dump
    prices = load_aws_prices() if prices is None else prices
    conn = sqlite3.connect(out_path)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA page_size=4096")
    counts = {}
    for table, cols in EMBEDDED_TABLES.items():
        keys = ", ".join(EMBEDDED_KEYS[table])
        conn.execute(f"CREATE TABLE {table} ({', '.join(cols)}, PRIMARY KEY ({keys}))")
        rows = sorted(
            (tuple(_sql_value(r.get(c)) for c in cols) for r in dump[table]),
            key=lambda row: tuple(str(v) for v in row),
        )
        conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})", rows)
        counts[table] = len(rows)
    conn.execute(
        "CREATE TABLE server_price (vendor_id, region_id, zone_id, server_id, "
        "operating_system, allocation, unit, price, currency, status, observed_at, "
        "PRIMARY KEY (vendor_id, region_id, zone_id, server_id, allocation))"
    )
    price_rows = embedded_price_rows(dump, prices)
    conn.executemany(f"INSERT INTO server_price VALUES ({', '.join('?' * 11)})", price_rows)
    counts["server_price"] = len(price_rows)
    conn.execute("CREATE TABLE rt_meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.executemany("INSERT INTO rt_meta VALUES (?, ?)", sorted(EMBEDDED_META.items()))
    conn.commit()
    _query.add_own_indexes(conn)
    conn.commit()
    conn.execute("VACUUM")
    conn.close()
    return counts


def make_embedded():
    """Writes the gzip-compressed embedded catalog into the package."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "embedded.db")
        counts = build_embedded_db(db)
        with open(db, "rb") as f:
            raw = f.read()
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9, mtime=0) as gz:
        gz.write(raw)
    os.makedirs(os.path.dirname(EMBEDDED), exist_ok=True)
    _write_atomic(EMBEDDED, buf.getvalue())
    counts["bytes_db"] = len(raw)
    counts["bytes_gz"] = len(buf.getvalue())
    return counts


def _sql_value(value):
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def _write_atomic(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def main(argv):
    if len(argv) == 3 and argv[0] == "fixtures":
        print(make_fixtures(argv[1], argv[2]))
    elif argv == ["embedded"]:
        print(make_embedded())
    else:
        print(__doc__.split("Usage:")[1].strip(), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
