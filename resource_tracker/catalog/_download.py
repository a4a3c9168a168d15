"""``update_catalog()``: download the Spare Cores dump into the cache, check it, swap it in.

Formats (found by their first bytes, not the URL): a SQLite file, or one compressed with
bzip2 (``.db.bz2``), xz (``.db.xz``) or gzip, or a SQL text dump compressed the same way
(``.sql.xz``). Steps: download to a temporary file beside the target, decompress it, load it
as data into a new database of our own declared schema (``_load``, ``_schema``: the dump's
own SQL -- its defaults, checks, generated columns, views, triggers -- is never run), check
that (the tables, at least one server), add the price index tables,
then ``os.replace`` it over the old copy. Any failure removes the temporary files and leaves
the old copy as it was.

Bounds (the download is foreign data): only http and https, redirects only to the same host;
the whole transfer within max_seconds (not only each read); at most max_bytes downloaded; at
most max_unpacked_bytes decompressed, counted while streaming (by default 4 GiB and at most
100 times the download, so a small gzip bomb is refused after a few MiB); the new database
capped likewise. Temporary files carry the pid of the process that made them: one left by a
killed run is removed by the next update.
"""

from __future__ import annotations

import io
import os
import time
from typing import (
    IO,
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    NamedTuple,
    Optional,
    Tuple,
    Union,
)

from .._version import __version__
from ._base import CatalogUnavailableError
from ._load import from_sql, from_sqlite, too_big

if TYPE_CHECKING:
    import urllib.request
    from http.client import HTTPMessage

    from _typeshed import WriteableBuffer

CHUNK = 1 << 20
SQLITE_MAGIC = b"SQLite format 3\x00"
# Limits (a setting lives here); a catalog dump is far below them, and bzip2/xz compress
# SQLite pages and SQL text some 5-20 times, where a gzip bomb reaches about 1000.
DEFAULT_MAX_BYTES = 512 << 20  # downloaded
DEFAULT_MAX_UNPACKED = 4 << 30  # unpacked, at most
DEFAULT_MAX_RATIO = 100  # unpacked per downloaded byte, by default (a gzip bomb is ~1000)
MIN_UNPACKED = 64 << 20  # the ratio never caps a small download below this
DEFAULT_MAX_SECONDS = 600.0


def _positive(name: str, value: Optional[float]) -> float:
    """value when it is a number > 0, else ValueError naming it."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))  # callers' values are unchecked at run time
        or not 0 < value < float("inf")
    ):
        raise ValueError(f"{name} must be a positive number, got {value!r:.40}")
    return value


class Limits(NamedTuple):
    """Size limits of one update: download (bytes downloaded), unpacked (bytes of the
    decompressed file, counted while streaming), ratio (unpacked per downloaded byte, or None
    when the caller set the unpacked limit)."""

    download: int
    unpacked: int
    ratio: Optional[int]

    @classmethod
    def build(
        cls, max_bytes: Optional[int] = None, max_unpacked_bytes: Optional[int] = None
    ) -> Limits:
        """The limits of update(): defaults for those left None (ValueError for bad ones)."""
        download = DEFAULT_MAX_BYTES if max_bytes is None else _positive("max_bytes", max_bytes)
        if max_unpacked_bytes is None:
            return cls(int(download), DEFAULT_MAX_UNPACKED, DEFAULT_MAX_RATIO)
        return cls(int(download), int(_positive("max_unpacked_bytes", max_unpacked_bytes)), None)

    def for_download(self, size: int) -> Limits:
        """The limits once size bytes were downloaded (the default ratio applied)."""
        if self.ratio is None:
            return self
        unpacked = min(self.unpacked, max(MIN_UNPACKED, size * self.ratio))
        return self._replace(unpacked=unpacked)


RAW_PREFIX, DB_PREFIX = ".download-", ".catalog-"
RAW_SUFFIX, DB_SUFFIX = ".part", ".db.tmp"


def _fail(url: str, why: str) -> CatalogUnavailableError:
    return CatalogUnavailableError(
        f"catalog download from {url} failed: {why}; the previous copy (if any) is unchanged "
        "(run `resource-tracker catalog update` again, or check the URL)"
    )


def _check_scheme(url: str) -> None:
    """ValueError unless url is http or https (urllib would also read file:// and ftp://)."""
    from urllib.parse import urlsplit

    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"only http and https URLs are downloaded, not {scheme or 'no'!r} ones")


def _opener_same_host(host: Optional[str]) -> urllib.request.OpenerDirector:
    """A urllib opener whose redirects must stay on host (and on http/https)."""
    import urllib.request
    from urllib.parse import urlsplit

    class SameHost(urllib.request.HTTPRedirectHandler):
        def redirect_request(
            self,
            req: urllib.request.Request,
            fp: IO[bytes],
            code: int,
            msg: str,
            headers: HTTPMessage,
            newurl: str,
        ) -> Optional[urllib.request.Request]:
            target = urlsplit(newurl)
            if target.scheme.lower() not in ("http", "https") or target.hostname != host:
                raise OSError(f"refused a redirect to another host ({target.hostname!r:.80})")
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    return urllib.request.build_opener(SameHost)


def _fetch(url: str, raw_path: str, timeout: float, max_bytes: int, deadline: float) -> int:
    """Bytes written to raw_path from url; raises on a short, failed, too large or too slow
    transfer (deadline: monotonic time by which the whole transfer must be done)."""
    import urllib.request
    from urllib.parse import urlsplit

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
                    raise too_big("the download", max_bytes, "--max-download-mib")
            if length is not None and length.isdigit() and total != int(length):
                raise OSError(f"transfer interrupted after {total} of {length} bytes")
    return total


def _left(deadline: float) -> float:
    """Seconds left before deadline; TimeoutError once it has passed."""
    import time as _time

    left = deadline - _time.monotonic()
    if left <= 0:
        raise TimeoutError("the download took longer than its time limit (max_seconds)")
    return left


def _opener(path: str) -> Callable[[str], io.BufferedIOBase]:
    """A function opening path decompressed (binary, for reading), by its magic bytes."""
    import bz2
    import gzip
    import lzma

    with open(path, "rb") as f:
        head = f.read(16)
    if head.startswith(b"BZh"):
        return bz2.BZ2File
    if head.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile
    return _open_plain


def _open_plain(path: str) -> io.BufferedIOBase:
    return open(path, "rb")


class _Counted(io.RawIOBase):
    """A decompressing stream that raises TooBig once more than limit bytes came out of it:
    the unpacked size is checked while streaming, before anything larger is written."""

    def __init__(self, raw: io.BufferedIOBase, limit: int) -> None:
        super().__init__()
        self.raw, self.limit, self.count = raw, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: WriteableBuffer) -> int:
        view = memoryview(buf)
        data = self.raw.read(len(view))
        self.count += len(data)
        if self.count > self.limit:
            raise too_big("the catalog unpacked", self.limit)
        view[: len(data)] = data
        return len(data)


def _stream(packed: io.BufferedIOBase, limit: int) -> io.BufferedReader:
    return io.BufferedReader(_Counted(packed, limit), CHUNK)


def _unpack(raw_path: str, src_path: str, db_path: str, limits: Limits) -> str:
    """Loads the catalog held (maybe compressed) in raw_path into a new database of our own
    schema at db_path ("sqlite" or "sql"); a compressed SQLite file is unpacked into src_path
    first (at most limits.unpacked bytes, counted while streaming)."""
    opener = _opener(raw_path)
    with opener(raw_path) as packed:
        src = _stream(packed, limits.unpacked)
        head = src.read(len(SQLITE_MAGIC))
        if head == SQLITE_MAGIC:
            if opener is _open_plain:
                src_path = raw_path
            else:
                with open(src_path, "wb") as out:
                    out.write(head)
                    while chunk := src.read(CHUNK):
                        out.write(chunk)
            from_sqlite(src_path, db_path, limits.unpacked)
            return "sqlite"
    with opener(raw_path) as packed:
        text = io.TextIOWrapper(_stream(packed, limits.unpacked), encoding="utf-8")
        first = text.read(4096)
        if not any(k in first.upper() for k in ("CREATE TABLE", "PRAGMA", "BEGIN", "INSERT")):
            raise ValueError("neither a SQLite database nor a SQL dump")
        from_sql(_chain(first, text), db_path, limits.unpacked)
    return "sql"


def _chain(first: str, text: IO[str]) -> Iterator[str]:
    """Lines of first + the rest of text."""
    rest = text.readline()
    yield from (first + rest).splitlines(keepends=True)
    yield from text


def _check(db_path: str) -> Tuple[int, int]:
    """(servers, prices) of the database at db_path; ValueError when it is not usable."""
    import sqlite3

    from ._query import add_own_indexes

    conn = sqlite3.connect(db_path)
    try:
        # our own file, written by SQLite in our schema (the tables checked in _load): no
        # quick_check or trigger check needed; a damaged download fails while it is read
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


def _remove_stale(folder: str) -> None:
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _temp_paths(folder: str) -> List[str]:
    """(raw, unpacked source, new database) temporary paths in folder, tagged with our pid."""
    import tempfile

    tag = f"{os.getpid()}-"
    paths = []
    for prefix, suffix in (
        (RAW_PREFIX, RAW_SUFFIX),
        (DB_PREFIX, DB_SUFFIX),
        (DB_PREFIX, DB_SUFFIX),
    ):
        fd, path = tempfile.mkstemp(dir=folder, prefix=prefix + tag, suffix=suffix)
        os.close(fd)
        paths.append(path)
    return paths


def _install(
    url: str, dest: str, timeout: float, limits: Limits, deadline: float
) -> Tuple[int, str, int, int]:
    """Fetches url into a temp file beside dest, loads it into our own schema and checks it,
    then moves it onto dest: (bytes downloaded, format, servers, prices).
    CatalogUnavailableError on any failure, with the temp files removed."""
    import sqlite3

    raw_path, src_path, db_path = _temp_paths(os.path.dirname(dest))
    try:
        try:
            size = _fetch(url, raw_path, timeout, limits.download, deadline)
        except Exception as exc:  # urllib/http.client/socket errors of every kind
            raise _fail(url, f"{type(exc).__name__}: {exc}") from None
        try:
            os.unlink(db_path)
            kind = _unpack(raw_path, src_path, db_path, limits.for_download(size))
            servers, prices = _check(db_path)
        except (OSError, EOFError, ValueError, UnicodeDecodeError, sqlite3.Error) as exc:
            raise _fail(
                url, f"the file is not a usable catalog ({type(exc).__name__}: {exc})"
            ) from None
        os.replace(db_path, dest)
    finally:
        for path in (raw_path, src_path, db_path):
            try:
                os.unlink(path)
            except OSError:
                pass
    return size, kind, servers, prices


def _write_meta(dest: str, meta: Dict[str, Union[str, int]]) -> None:
    """dest.json: where and when the catalog came from (best effort)."""
    import json

    try:
        with open(dest + ".json.tmp", "w") as f:
            json.dump(meta, f)
        os.replace(dest + ".json.tmp", dest + ".json")
    except OSError:
        pass


def update(
    url: str,
    dest: str,
    timeout: float,
    max_bytes: Optional[int] = None,
    max_seconds: Optional[float] = None,
    max_unpacked_bytes: Optional[int] = None,
) -> Dict[str, Any]:
    """Downloads url into dest atomically; the summary dict."""
    started = time.monotonic()
    limits = Limits.build(max_bytes, max_unpacked_bytes)
    max_seconds = (
        DEFAULT_MAX_SECONDS if max_seconds is None else _positive("max_seconds", max_seconds)
    )
    folder = os.path.dirname(dest)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise _fail(url, f"cannot create {folder} ({exc})") from None
    _remove_stale(folder)
    size, kind, servers, prices = _install(url, dest, timeout, limits, started + max_seconds)
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
