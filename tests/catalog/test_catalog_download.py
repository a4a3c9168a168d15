"""update_catalog() over real HTTP on loopback (catalog_http.FileServer): the test catalog
compressed at test time as .db.bz2 and as a .sql.xz text dump; a corrupt file; a transfer
cut halfway (full Content-Length, half the body, connection dropped). Failures must leave the
previous copy byte-for-byte intact and no temporary files behind. Also the CLI commands."""

from __future__ import annotations

import bz2
import hashlib
import json
import lzma
import os
import sqlite3
import subprocess
import sys

import pytest
from catalog_http import FileServer

from resource_tracker import catalog
from resource_tracker.catalog import CatalogUnavailableError


@pytest.fixture(scope="module")
def dumps(catalog_db, tmp_path_factory):
    """{'/sc-data-all.db.bz2': bytes, '/small.sql.xz': bytes, ...} made from the test catalog."""
    with open(catalog_db, "rb") as f:
        raw = f.read()
    small = str(tmp_path_factory.mktemp("small") / "small.db")
    conn = sqlite3.connect(small)
    conn.execute("ATTACH DATABASE ? AS src", (f"file:{catalog_db}?mode=ro",))
    for table in ("vendor", "region", "server", "server_price", "benchmark_score"):
        sql = conn.execute("SELECT sql FROM src.sqlite_master WHERE name = ?", (table,)).fetchone()[
            0
        ]
        conn.execute(sql)
        where = " WHERE vendor_id IN ('aws', 'hcloud')" if table != "vendor" else ""
        conn.execute(f"INSERT INTO main.{table} SELECT * FROM src.{table}{where}")
    conn.commit()
    conn.execute("DETACH DATABASE src")
    text = "\n".join(conn.iterdump()) + "\n"
    conn.close()
    good = bz2.compress(raw, 1)
    return {
        "/sc-data-all.db.bz2": good,
        "/small.sql.xz": lzma.compress(text.encode(), preset=1),
        "/plain.db": raw,
        "/corrupt.db.bz2": good[: len(good) // 2] + bytes(range(256)) * 8,
        "/notsqlite.db.bz2": bz2.compress(b"hello, this is not a database\n" * 1000),
        "/cut.db.bz2": good,
    }


@pytest.fixture
def files(dumps):
    server = FileServer(dumps, cut={"/cut.db.bz2"})
    yield server
    server.close()


def _sha1(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def test_download_bz2_then_failures_keep_the_old_copy(files, own_cache, monkeypatch, catalog_db):
    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG_URL", files.url + "/sc-data-all.db.bz2")
    info = catalog.update_catalog()
    path = os.path.join(own_cache, "sc-data-all.db")
    assert info["path"] == path and info["format"] == "sqlite"
    assert info["servers"] == 5176 and info["prices"] > 20000
    assert info["bytes_downloaded"] == len(files.files["/sc-data-all.db.bz2"])
    # our own copy carries the price index table; the result equals the user's file's
    got = catalog.recommend_server({"cpu": 2, "memory": 4096}, vendor="aws", region="us-east-1")
    assert not os.path.isdir(os.path.join(own_cache, "index"))  # no side index was needed
    same = catalog.recommend_server(
        {"cpu": 2, "memory": 4096}, vendor="aws", region="us-east-1", catalog=catalog_db
    )
    assert (got.pop("catalog_source"), same.pop("catalog_source")) == ("cache", "argument")
    assert "(catalog update)" in got.pop("price_source") and "(catalog=)" in same.pop(
        "price_source"
    )
    assert got == same
    assert catalog.catalog_info()["source"] == "cache"
    before = _sha1(path)
    for bad, needle in (
        ("/cut.db.bz2", "interrupted"),
        ("/corrupt.db.bz2", "not a usable catalog"),
        ("/notsqlite.db.bz2", "not a usable catalog"),
        ("/missing.db.bz2", "HTTP Error 404"),
    ):
        with pytest.raises(CatalogUnavailableError) as err:
            catalog.update_catalog(url=files.url + bad)
        assert needle in str(err.value) and "previous copy" in str(err.value), str(err.value)
        assert _sha1(path) == before
        assert sorted(os.listdir(own_cache)) == ["index", "sc-data-all.db", "sc-data-all.db.json"]
    meta = json.load(open(path + ".json"))
    assert meta["url"].endswith("/sc-data-all.db.bz2")


def test_download_sql_xz_and_plain_db(files, own_cache):
    info = catalog.update_catalog(url=files.url + "/small.sql.xz")
    assert info["format"] == "sql"
    conn = sqlite3.connect(info["path"])
    vendors = {r[0] for r in conn.execute("SELECT DISTINCT vendor_id FROM server")}
    conn.close()
    assert vendors == {"aws", "hcloud"} and info["servers"] > 1000
    got = catalog.recommend_server({"cpu": 2, "memory": 4096}, vendor="aws", region="us-east-1")
    assert got["server_id"] == "t4g.medium"
    info = catalog.update_catalog(url=files.url + "/plain.db")
    assert info["servers"] == 5176


def test_cli_catalog_update_and_info(files, own_cache, monkeypatch):
    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG_URL", files.url + "/sc-data-all.db.bz2")
    cli = [sys.executable, "-m", "resource_tracker", "catalog"]
    up = subprocess.run([*cli, "update"], capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, up.stderr
    assert "servers" in up.stdout and "5176" in up.stdout
    info = subprocess.run([*cli, "info", "--json"], capture_output=True, text=True, timeout=60)
    assert info.returncode == 0, info.stderr
    data = json.loads(info.stdout)
    assert data["source"] == "cache" and data["servers"] == 5176
    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG_URL", files.url + "/cut.db.bz2")
    bad = subprocess.run([*cli, "update"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "interrupted" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
