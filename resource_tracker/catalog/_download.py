"""``update_catalog()``: download the Spare Cores dump into the cache, check it, swap it in.

Formats (found by their first bytes, not the URL): a SQLite file, or one compressed with
bzip2 (``.db.bz2``), xz (``.db.xz``) or gzip, or a SQL text dump compressed the same way
(``.sql.xz``). Steps: download to a temporary file beside the target, decompress (or replay
the SQL) into a second temporary file, check it (``PRAGMA quick_check``, the tables, at least
one server), add the price index table, then ``os.replace`` it over the old copy. Any failure
removes the temporary files and leaves the old copy as it was.
"""

from __future__ import annotations

import os
import time

from . import CatalogUnavailableError

CHUNK = 1 << 20
SQLITE_MAGIC = b"SQLite format 3\x00"


def _fail(url, why):
    return CatalogUnavailableError(
        f"catalog download from {url} failed: {why}; the previous copy (if any) is unchanged"
    )


def _fetch(url, raw_path, timeout):
    """Bytes written to raw_path from url; raises on a short or failed transfer."""
    import urllib.request

    from .._version import __version__

    request = urllib.request.Request(url, headers={"User-Agent": f"resource-tracker/{__version__}"})
    total = 0
    with urllib.request.urlopen(request, timeout=timeout) as resp, open(raw_path, "wb") as out:
        status = getattr(resp, "status", 200)
        if status != 200:
            raise OSError(f"HTTP {status}")
        length = resp.headers.get("Content-Length")
        while True:
            chunk = resp.read(CHUNK)
            if not chunk:
                break
            out.write(chunk)
            total += len(chunk)
        if length is not None and length.isdigit() and total != int(length):
            raise OSError(f"transfer interrupted after {total} of {length} bytes")
    return total


def _opener(path):
    """A function opening path decompressed (binary), by its magic bytes."""
    import bz2
    import gzip
    import lzma

    with open(path, "rb") as f:
        head = f.read(16)
    if head.startswith(b"BZh"):
        return bz2.open
    if head.startswith(b"\xfd7zXZ\x00"):
        return lzma.open
    if head.startswith(b"\x1f\x8b"):
        return gzip.open
    return open


def _restore_sql(text, db_path):
    """Replays a SQL text dump (a file object of str lines) into a new database at db_path."""
    import sqlite3

    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        pending = []
        size = 0
        for line in text:
            stripped = line.strip().upper()
            if stripped in ("BEGIN TRANSACTION;", "BEGIN;", "COMMIT;", "END;", "END TRANSACTION;"):
                continue
            pending.append(line)
            size += len(line)
            if size >= 4 * CHUNK and line.rstrip().endswith(";"):
                script = "".join(pending)
                if sqlite3.complete_statement(script):
                    conn.executescript("BEGIN;\n" + script + "\nCOMMIT;")
                    pending, size = [], 0
        script = "".join(pending)
        if script.strip():
            if not sqlite3.complete_statement(script):
                raise ValueError("the SQL dump ends in the middle of a statement")
            conn.executescript("BEGIN;\n" + script + "\nCOMMIT;")
    finally:
        conn.close()


def _unpack(raw_path, db_path):
    """Writes the SQLite database held (maybe compressed) in raw_path to db_path."""
    import io

    opener = _opener(raw_path)
    with opener(raw_path, "rb") as src:
        head = src.read(len(SQLITE_MAGIC))
        if head == SQLITE_MAGIC:
            with open(db_path, "wb") as out:
                out.write(head)
                while True:
                    chunk = src.read(CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
            return "sqlite"
    with opener(raw_path, "rb") as src:
        text = io.TextIOWrapper(src, encoding="utf-8")
        first = text.read(4096)
        if not any(k in first.upper() for k in ("CREATE TABLE", "PRAGMA", "BEGIN", "INSERT")):
            raise ValueError("neither a SQLite database nor a SQL dump")
        _restore_sql(_chain(first, text), db_path)
    return "sql"


def _chain(first, text):
    """Lines of first + the rest of text."""
    rest = text.readline()
    yield from (first + rest).splitlines(keepends=True)
    yield from text


def _check(db_path):
    """(servers, prices) of the database at db_path; ValueError when it is not usable."""
    import sqlite3

    from ._query import add_own_indexes

    conn = sqlite3.connect(db_path)
    try:
        ok = conn.execute("PRAGMA quick_check").fetchone()[0]
        if ok != "ok":
            raise ValueError(f"the database is damaged ({ok})")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = {"server", "server_price", "vendor", "region"} - tables
        if missing:
            raise ValueError(f"not a Spare Cores catalog (no table {', '.join(sorted(missing))})")
        servers = conn.execute("SELECT COUNT(*) FROM server").fetchone()[0]
        prices = conn.execute("SELECT COUNT(*) FROM server_price").fetchone()[0]
        if servers == 0:
            raise ValueError("the catalog has no servers")
        add_own_indexes(conn)
        conn.execute("ANALYZE")
        conn.commit()
    finally:
        conn.close()
    return servers, prices


def update(url, dest, timeout):
    """Downloads url into dest atomically; the summary dict."""
    import sqlite3
    import tempfile

    started = time.monotonic()
    folder = os.path.dirname(dest)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise _fail(url, f"cannot create {folder} ({exc})") from None
    raw_fd, raw_path = tempfile.mkstemp(dir=folder, prefix=".download-", suffix=".part")
    db_fd, db_path = tempfile.mkstemp(dir=folder, prefix=".catalog-", suffix=".db.tmp")
    os.close(raw_fd)
    os.close(db_fd)
    try:
        try:
            size = _fetch(url, raw_path, timeout)
        except Exception as exc:  # urllib/http.client/socket errors of every kind
            raise _fail(url, f"{type(exc).__name__}: {exc}") from None
        try:
            os.unlink(db_path)
            kind = _unpack(raw_path, db_path)
            servers, prices = _check(db_path)
        except (OSError, EOFError, ValueError, UnicodeDecodeError, sqlite3.Error) as exc:
            raise _fail(
                url, f"the file is not a usable catalog ({type(exc).__name__}: {exc})"
            ) from None
        os.replace(db_path, dest)
    finally:
        for path in (raw_path, db_path):
            try:
                os.unlink(path)
            except OSError:
                pass
    import json

    meta = {
        "url": url,
        "downloaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "bytes": size,
        "format": kind,
    }
    try:
        with open(dest + ".json.tmp", "w") as f:
            json.dump(meta, f)
        os.replace(dest + ".json.tmp", dest + ".json")
    except OSError:
        pass
    return {
        "path": dest,
        "url": url,
        "bytes_downloaded": size,
        "format": kind,
        "servers": servers,
        "prices": prices,
        "seconds": round(time.monotonic() - started, 3),
    }
