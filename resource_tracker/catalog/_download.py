"""``update_catalog()``: download the Spare Cores dump into the cache, check it, swap it in.

Formats (found by their first bytes, not the URL): a SQLite file, or one compressed with
bzip2 (``.db.bz2``), xz (``.db.xz``) or gzip, or a SQL text dump compressed the same way
(``.sql.xz``). Steps: download to a temporary file beside the target, decompress (or replay
the SQL) into a second temporary file, check it (``PRAGMA quick_check``, the tables, at least
one server), add the price index table, then ``os.replace`` it over the old copy. Any failure
removes the temporary files and leaves the old copy as it was.

Bounds (the download is foreign data): only http and https, redirects only to the same host;
the whole transfer within max_seconds (not only each read); at most max_bytes downloaded and
at most max_bytes written when decompressing; a SQL dump is replayed under an authorizer that
allows only creating tables and indexes and inserting rows into them (no ATTACH, PRAGMA,
DROP, triggers, views...), never with ``executescript`` on a connection that could do more.
Temporary files carry the pid of the process that made them: one left by a killed run is
removed by the next update.
"""

from __future__ import annotations

import os
import time

from . import CatalogUnavailableError

CHUNK = 1 << 20
SQLITE_MAGIC = b"SQLite format 3\x00"
DEFAULT_MAX_BYTES = 8 << 30  # the Spare Cores dump is well below this, decompressed
DEFAULT_MAX_SECONDS = 1800.0
RAW_PREFIX, DB_PREFIX = ".download-", ".catalog-"
RAW_SUFFIX, DB_SUFFIX = ".part", ".db.tmp"


def _fail(url, why):
    return CatalogUnavailableError(
        f"catalog download from {url} failed: {why}; the previous copy (if any) is unchanged"
    )


class _TooBig(ValueError):
    pass


def _check_scheme(url):
    """ValueError unless url is http or https (urllib would also read file:// and ftp://)."""
    from urllib.parse import urlsplit

    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"only http and https URLs are downloaded, not {scheme or 'no'!r} ones")


def _opener_same_host(host):
    """A urllib opener whose redirects must stay on host (and on http/https)."""
    import urllib.request
    from urllib.parse import urlsplit

    class SameHost(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req, fp, code, msg, headers, newurl):
            target = urlsplit(newurl)
            if target.scheme.lower() not in ("http", "https") or target.hostname != host:
                raise OSError(f"refused a redirect to another host ({target.hostname!r:.80})")
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    return urllib.request.build_opener(SameHost)


def _fetch(url, raw_path, timeout, max_bytes, deadline):
    """Bytes written to raw_path from url; raises on a short, failed, too large or too slow
    transfer (deadline: monotonic time by which the whole transfer must be done)."""
    import urllib.request
    from urllib.parse import urlsplit

    from .._version import __version__

    _check_scheme(url)
    request = urllib.request.Request(url, headers={"User-Agent": f"resource-tracker/{__version__}"})
    total = 0
    opener = _opener_same_host(urlsplit(url).hostname)
    with opener.open(request, timeout=min(timeout, _left(deadline))) as resp:
        with open(raw_path, "wb") as out:
            status = getattr(resp, "status", 200)
            if status != 200:
                raise OSError(f"HTTP {status}")
            length = resp.headers.get("Content-Length")
            while True:
                _left(deadline)
                chunk = resp.read1(CHUNK)  # what has arrived: a slow sender cannot hold it
                if not chunk:
                    break
                out.write(chunk)
                total += len(chunk)
                if total > max_bytes:
                    raise _TooBig(f"the download is larger than {max_bytes} bytes")
            if length is not None and length.isdigit() and total != int(length):
                raise OSError(f"transfer interrupted after {total} of {length} bytes")
    return total


def _left(deadline):
    """Seconds left before deadline; TimeoutError once it has passed."""
    import time as _time

    left = deadline - _time.monotonic()
    if left <= 0:
        raise TimeoutError("the download took longer than its time limit (max_seconds)")
    return left


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


# what a Spare Cores SQL dump needs (sqlite3 action codes); everything else is denied
_ALLOWED_ACTIONS = (
    "SQLITE_CREATE_TABLE",
    "SQLITE_CREATE_INDEX",
    "SQLITE_INSERT",
    "SQLITE_TRANSACTION",
    "SQLITE_READ",  # CREATE INDEX reads the table's columns
    "SQLITE_REINDEX",
    "SQLITE_UPDATE",  # SQLite's own update of sqlite_master for a CREATE
    "SQLITE_FUNCTION",  # only those the sqlite3 shell's .dump writes, see below
)
_DUMP_FUNCTIONS = ("replace", "char", "unistr")
_SCHEMA = ("sqlite_master", "sqlite_schema")


def _dump_authorizer():
    """An sqlite3 authorizer for replaying a dump: tables and indexes of the main database
    created and filled, nothing else (no ATTACH, PRAGMA, DROP, DELETE, triggers, views)."""
    import sqlite3

    allowed = {getattr(sqlite3, name) for name in _ALLOWED_ACTIONS if hasattr(sqlite3, name)}

    def authorize(action, arg1, arg2, db_name, trigger):
        if action not in allowed or trigger is not None:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            ok = (arg2 or "").lower() in _DUMP_FUNCTIONS
        elif action == sqlite3.SQLITE_UPDATE:
            ok = arg1 in _SCHEMA
        elif action == sqlite3.SQLITE_INSERT:
            ok = arg1 in _SCHEMA or not (arg1 or "").lower().startswith("sqlite_")
        else:
            ok = True
        return sqlite3.SQLITE_OK if ok and db_name in (None, "main") else sqlite3.SQLITE_DENY

    return authorize


def _restore_sql(text, db_path, max_bytes):
    """Replays a SQL text dump (a file object of str lines) into a new database at db_path,
    under _dump_authorizer(), the database file capped at max_bytes."""
    import sqlite3

    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count={max(1, int(max_bytes // page))}")
        conn.set_authorizer(_dump_authorizer())
        pending = []
        size = 0
        for line in text:
            stripped = line.strip().upper()
            if stripped in ("BEGIN TRANSACTION;", "BEGIN;", "COMMIT;", "END;", "END TRANSACTION;"):
                continue
            if stripped.startswith("PRAGMA FOREIGN_KEYS"):
                continue  # iterdump() writes it; the replay has no foreign key checks anyway
            pending.append(line)
            size += len(line)
            if size >= 4 * CHUNK and line.rstrip().endswith(";"):
                script = "".join(pending)
                if sqlite3.complete_statement(script):
                    _run_script(conn, script)
                    pending, size = [], 0
        script = "".join(pending)
        if script.strip():
            if not sqlite3.complete_statement(script):
                raise ValueError("the SQL dump ends in the middle of a statement")
            _run_script(conn, script)
    finally:
        conn.close()


def _run_script(conn, script):
    """Runs a dump's statements in one transaction; a denied one names itself."""
    import sqlite3

    try:
        conn.executescript("BEGIN;\n" + script + "\nCOMMIT;")
    except sqlite3.DatabaseError as exc:
        if "not authorized" in str(exc) or "prohibited" in str(exc):
            raise ValueError(
                "the SQL dump does more than create and fill tables (refused: "
                f"{exc}); only a catalog dump is replayed"
            ) from None
        if "full" in str(exc):
            raise _TooBig("the SQL dump makes a database larger than max_bytes") from None
        raise


def _unpack(raw_path, db_path, max_bytes):
    """Writes the SQLite database held (maybe compressed) in raw_path to db_path (at most
    max_bytes of it)."""
    import io

    opener = _opener(raw_path)
    with opener(raw_path, "rb") as src:
        head = src.read(len(SQLITE_MAGIC))
        if head == SQLITE_MAGIC:
            written = len(head)
            with open(db_path, "wb") as out:
                out.write(head)
                while True:
                    chunk = src.read(CHUNK)
                    if not chunk:
                        break
                    written += len(chunk)
                    if written > max_bytes:
                        raise _TooBig(f"the catalog is larger than {max_bytes} bytes unpacked")
                    out.write(chunk)
            return "sqlite"
    with opener(raw_path, "rb") as src:
        text = io.TextIOWrapper(src, encoding="utf-8")
        first = text.read(4096)
        if not any(k in first.upper() for k in ("CREATE TABLE", "PRAGMA", "BEGIN", "INSERT")):
            raise ValueError("neither a SQLite database nor a SQL dump")
        _restore_sql(_chain(first, text), db_path, max_bytes)
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
        kinds = conn.execute("SELECT type, name FROM sqlite_master").fetchall()
        if any(kind == "trigger" for kind, _ in kinds):
            raise ValueError("the database has triggers: not a Spare Cores catalog")
        tables = {name for kind, name in kinds if kind == "table"}
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


def _remove_stale(folder):
    """Removes the temporary files of updates whose process no longer runs (killed ones)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        for prefix, suffix in ((RAW_PREFIX, RAW_SUFFIX), (DB_PREFIX, DB_SUFFIX)):
            if not (name.startswith(prefix) and name.endswith(suffix)):
                continue
            pid = name[len(prefix) :].split("-", 1)[0]
            if pid.isdigit() and not _alive(int(pid)):
                try:
                    os.unlink(os.path.join(folder, name))
                except OSError:
                    pass


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _install(url, dest, timeout, max_bytes, deadline):
    """Fetches url into a temp file beside dest, unpacks and checks it, then moves it onto
    dest: (bytes downloaded, format, servers, prices). CatalogDownloadError on any failure,
    with the temp files removed."""
    import sqlite3
    import tempfile

    folder = os.path.dirname(dest)
    tag = f"{os.getpid()}-"
    raw_fd, raw_path = tempfile.mkstemp(dir=folder, prefix=RAW_PREFIX + tag, suffix=RAW_SUFFIX)
    db_fd, db_path = tempfile.mkstemp(dir=folder, prefix=DB_PREFIX + tag, suffix=DB_SUFFIX)
    os.close(raw_fd)
    os.close(db_fd)
    try:
        try:
            size = _fetch(url, raw_path, timeout, max_bytes, deadline)
        except Exception as exc:  # urllib/http.client/socket errors of every kind
            raise _fail(url, f"{type(exc).__name__}: {exc}") from None
        try:
            os.unlink(db_path)
            kind = _unpack(raw_path, db_path, max_bytes)
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
    return size, kind, servers, prices


def _write_meta(dest, meta):
    """dest.json: where and when the catalog came from (best effort)."""
    import json

    try:
        with open(dest + ".json.tmp", "w") as f:
            json.dump(meta, f)
        os.replace(dest + ".json.tmp", dest + ".json")
    except OSError:
        pass


def update(url, dest, timeout, max_bytes=None, max_seconds=None):
    """Downloads url into dest atomically; the summary dict."""
    started = time.monotonic()
    max_bytes = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    max_seconds = DEFAULT_MAX_SECONDS if max_seconds is None else max_seconds
    folder = os.path.dirname(dest)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise _fail(url, f"cannot create {folder} ({exc})") from None
    _remove_stale(folder)
    size, kind, servers, prices = _install(url, dest, timeout, max_bytes, started + max_seconds)
    _write_meta(
        dest,
        {
            "url": url,
            "downloaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "bytes": size,
            "format": kind,
        },
    )
    return {
        "path": dest,
        "url": url,
        "bytes_downloaded": size,
        "format": kind,
        "servers": servers,
        "prices": prices,
        "seconds": round(time.monotonic() - started, 3),
    }
