"""The catalog download and the Keeper client treat what comes from the network as foreign
(issue 15). Real HTTP on 127.0.0.1 (loopback servers of this file and catalog_http), real
SQLite files, a real killed process:

- a SQL dump that ATTACHes another database file, drops a table there and creates one: refused
  (it was replayed with executescript and the update reported success); other statements a
  catalog dump never holds (DROP, PRAGMA, triggers, views, DELETE) likewise;
- size caps: a gzip bomb of a SQLite file, and a small xz SQL dump that builds a large database;
- a slow-drip server (one byte every 50 ms): the whole transfer is bounded by max_seconds (the
  read timeout alone let it run on);
- redirects to another host are refused (127.0.0.1 -> localhost), to the same host followed;
  file:// and other schemes are refused (Python and libcurl);
- temporary files of a killed update are removed by the next one;
- a Keeper error body with ANSI escapes reaches the user without control characters.
"""

from __future__ import annotations

import gzip
import lzma
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from catalog_http import FileServer
from test_catalog_download import dumps  # noqa: F401  (the fixture)

from resource_tracker import _core, catalog
from resource_tracker._text import printable
from resource_tracker.catalog import CatalogUnavailableError


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        action = self.server.routes.get(self.path.split("?")[0])
        if action is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        action(self)


class Loopback:
    """A loopback HTTP server whose paths run the given functions of the request handler."""

    def __init__(self, routes):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.routes = routes
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self):
        return self.httpd.server_address[1]

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _send(handler, status, body, headers=()):
    handler.send_response(status)
    for name, value in headers:
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _drip(handler):
    """Promises a megabyte, sends one byte every 50 ms."""
    handler.send_response(200)
    handler.send_header("Content-Length", str(1 << 20))
    handler.end_headers()
    try:
        for _ in range(2000):
            handler.wfile.write(b"\x00")
            handler.wfile.flush()
            time.sleep(0.05)
    except OSError:
        pass


@pytest.fixture
def sql_text(dumps):  # noqa: F811
    return lzma.decompress(dumps["/small.sql.xz"]).decode()


def _inject(sql_text, statements):
    """The dump with statements put in before its COMMIT (every table exists then)."""
    at = sql_text.rindex("COMMIT;")
    return sql_text[:at] + statements + "\n" + sql_text[at:]


def _update(files_map, path, **kwargs):
    server = FileServer(files_map)
    try:
        return catalog.update_catalog(url=server.url + path, **kwargs)
    finally:
        server.close()


def _leftovers(folder):
    return sorted(n for n in os.listdir(folder) if n.endswith((".part", ".tmp")))


def test_catalog_sql_dump_with_attach_is_refused(sql_text, own_cache, tmp_path):
    victim = tmp_path / "victim.db"
    conn = sqlite3.connect(victim)
    conn.execute("CREATE TABLE precious(x)")
    conn.execute("INSERT INTO precious VALUES (42)")
    conn.commit()
    conn.close()
    created = tmp_path / "created.db"
    evil = _inject(
        sql_text,
        f"ATTACH DATABASE '{victim}' AS v;\nDROP TABLE v.precious;\n"
        f"CREATE TABLE v.planted(x);\nATTACH DATABASE '{created}' AS w;\n"
        "CREATE TABLE w.t(x);",
    )
    with pytest.raises(CatalogUnavailableError, match="does more than create and fill tables"):
        _update({"/evil.sql.xz": lzma.compress(evil.encode(), preset=1)}, "/evil.sql.xz")
    conn = sqlite3.connect(victim)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert tables == {"precious"}
    assert conn.execute("SELECT x FROM precious").fetchall() == [(42,)]
    conn.close()
    assert not created.exists()
    assert not os.path.exists(os.path.join(own_cache, "sc-data-all.db"))
    assert _leftovers(own_cache) == []


@pytest.mark.parametrize(
    "statement",
    [
        "DROP TABLE vendor;",
        "PRAGMA writable_schema=ON;",
        "CREATE TRIGGER tr AFTER INSERT ON vendor BEGIN SELECT 1; END;",
        "CREATE VIEW v AS SELECT 1;",
        "DELETE FROM vendor;",
        "CREATE TEMP TABLE t(x);",
        "INSERT INTO vendor SELECT * FROM vendor;",
        "SELECT load_extension('x');",
    ],
)
def test_catalog_sql_dump_other_statements_refused(sql_text, own_cache, statement):
    evil = _inject(sql_text, statement)
    with pytest.raises(CatalogUnavailableError, match="does more than create and fill tables"):
        _update({"/evil.sql.xz": lzma.compress(evil.encode(), preset=1)}, "/evil.sql.xz")
    assert _leftovers(own_cache) == []


def test_catalog_sql_dump_of_the_shell_still_replays(sql_text, own_cache):
    """A dump as the sqlite3 shell writes it (replace(..., char(10)) for newlines, unistr())
    loads: those spellings of text are decoded by the loader, never run."""
    extra = (
        "INSERT INTO vendor(vendor_id, name, homepage) VALUES('shellv', "
        "replace(replace('a\\nb\\rc','\\n',char(10)),'\\r',char(13)), unistr('x\\u00e9y'));"
    )
    good = _inject(sql_text, extra)
    info = _update({"/ok.sql.xz": lzma.compress(good.encode(), preset=1)}, "/ok.sql.xz")
    assert info["format"] == "sql" and info["servers"] > 1000
    conn = sqlite3.connect(info["path"])
    got = conn.execute("SELECT name, homepage FROM vendor WHERE vendor_id = 'shellv'").fetchall()
    conn.close()
    assert got == [("a\nb\rc", "x\u00e9y")]


def test_catalog_gzip_bomb_is_capped(own_cache):
    bomb = gzip.compress(b"SQLite format 3\x00" + bytes(64 << 20), 9)
    assert len(bomb) < 1 << 20
    with pytest.raises(CatalogUnavailableError, match="unpacked is larger than 8388608 bytes"):
        _update({"/bomb.db.gz": bomb}, "/bomb.db.gz", max_unpacked_bytes=8 << 20)
    assert _leftovers(own_cache) == []


def test_catalog_sql_dump_building_a_huge_database_is_capped(own_cache):
    row = "INSERT INTO server_price(vendor_id, note) VALUES('x', '" + "x" * 1000 + "');\n"
    text = "CREATE TABLE server_price(vendor_id, note);\n" + row * 20000
    packed = lzma.compress(text.encode(), preset=1)
    with pytest.raises(CatalogUnavailableError, match="larger than 2097152 bytes"):
        _update({"/big.sql.xz": packed}, "/big.sql.xz", max_unpacked_bytes=2 << 20)
    assert _leftovers(own_cache) == []


def test_catalog_slow_drip_is_bounded(own_cache):
    server = Loopback({"/drip.db": _drip})
    try:
        t0 = time.monotonic()
        with pytest.raises(CatalogUnavailableError, match="time limit"):
            catalog.update_catalog(url=server.url + "/drip.db", timeout=2.0, max_seconds=1.5)
        took = time.monotonic() - t0
    finally:
        server.close()
    print(f"catalog slow drip: gave up after {took:.2f} s (max_seconds 1.5, timeout 2)")
    assert took < 1.5 + 2.0 + 2.0
    assert _leftovers(own_cache) == []


def test_catalog_redirects_stay_on_the_host(dumps, own_cache):  # noqa: F811
    files = {}
    server = Loopback(
        {
            "/same": lambda h: _send(h, 302, b"", [("Location", "/plain.db")]),
            "/other": lambda h: _send(
                h, 302, b"", [("Location", f"http://localhost:{server.port}/plain.db")]
            ),
            "/plain.db": lambda h: _send(h, 200, files["plain"]),
        }
    )
    files["plain"] = dumps["/plain.db"]
    try:
        with pytest.raises(CatalogUnavailableError, match="redirect to another host"):
            catalog.update_catalog(url=server.url + "/other")
        assert catalog.update_catalog(url=server.url + "/same")["servers"] > 1000
    finally:
        server.close()


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/x.db", "/etc/passwd"])
def test_catalog_download_only_http(url, own_cache):
    with pytest.raises(CatalogUnavailableError, match="only http and https") as info:
        catalog.update_catalog(url=url)
    assert "root:" not in str(info.value)


def test_catalog_killed_update_leaves_nothing_behind(own_cache):
    """An update killed (SIGKILL) mid-transfer leaves .part/.tmp files; the next update
    removes them (they carry the dead process's pid). A live process's files stay."""
    server = Loopback({"/drip.db": _drip})
    code = (
        "from resource_tracker import catalog\n"
        f"catalog.update_catalog(url={server.url + '/drip.db'!r}, timeout=30, max_seconds=60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 30
        while not (os.path.isdir(own_cache) and _leftovers(own_cache)):
            assert time.monotonic() < deadline, "the update never started"
            time.sleep(0.05)
        time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        left = _leftovers(own_cache)
        assert left and all(f"-{proc.pid}-" in n for n in left)
        live = os.path.join(own_cache, f".download-{os.getpid()}-keep.part")
        open(live, "w").close()
        with pytest.raises(CatalogUnavailableError):
            catalog.update_catalog(url=server.url + "/missing.db")
    finally:
        server.close()
        if proc.poll() is None:
            proc.kill()
    assert _leftovers(own_cache) == [os.path.basename(live)]


def test_keeper_file_url_is_refused_by_libcurl(monkeypatch, own_cache):
    """RESOURCE_TRACKER_KEEPER_URL=file:///etc/passwd# put the file into an error message."""
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "file:///etc/passwd#")
    with pytest.raises(CatalogUnavailableError) as info:
        catalog.recommend_server({"cpu": 1, "memory": 512}, catalog="keeper")
    assert "root:" not in str(info.value) and "only http" in str(info.value)
    with pytest.raises(RuntimeError) as raw:
        _core.keeper_servers("file:///etc/passwd#", limit=1)
    assert "root:" not in str(raw.value)


def test_keeper_error_body_has_no_control_characters(monkeypatch, own_cache):
    body = b"\x1b[31mboom\x1b[0m \x07\x1b]0;title\x07 done\x9b2J"
    server = Loopback({"/servers": lambda h: _send(h, 500, body)})
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", server.url)
    try:
        with pytest.raises(CatalogUnavailableError) as info:
            catalog.recommend_server({"cpu": 1, "memory": 512}, catalog="keeper")
    finally:
        server.close()
    text = str(info.value)
    assert "HTTP 500" in text and "boom" in text
    assert not any(ord(c) < 32 and c not in "\t\n" or 0x7F <= ord(c) <= 0x9F for c in text), text


def test_printable_strips_escapes():
    assert printable("\x1b[1;31mred\x1b[0m\x07\x00ok\tend\n") == "redok\tend\n"
    assert printable("\x1b]0;title\x07x") == "x"
    assert printable("a" * 50, limit=10) == "a" * 10 + "..."


def test_printable_takes_out_every_format_character_and_lone_surrogate():
    """Every character this Python's Unicode database calls a format character (Cf: the
    bidi overrides U+202E, U+2066-U+2069, zero-width ones, BOM, tags...) or a line or paragraph
    separator is taken out, every lone surrogate becomes U+FFFD (the old rule kept them: a
    name could be shown in another order than it is); other text, emoji included, stays."""
    import unicodedata

    odd = [chr(c) for c in range(0x110000)
           if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp")]  # fmt: skip
    assert "\u202e" in odd and len(odd) > 150
    assert printable("a" + "".join(odd) + "b", None) == "ab"
    assert printable("file\udcff\ud800.json") == "file\ufffd\ufffd.json"
    kept = "héllo 世界 🙂 ½ ×\t\n"
    assert printable(kept) == kept
