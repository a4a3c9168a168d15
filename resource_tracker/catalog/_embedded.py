"""The server catalog embedded in the package: the last source, for fresh and offline machines.

``data/embedded-catalog.db.gz`` is a current-schema Spare Cores SQLite file (servers, vendors,
regions, zones and countries of the 2026-01-31 dump; real AWS on-demand Linux prices of
2024-02; the query index tables), built from the repository's test data by
``tests/data/make_data.py embedded``. It is decompressed once into the cache directory (a
file named by the content's hash, written atomically), or into the temporary directory when
the cache cannot be written. Data: (c) Spare Cores, CC BY-SA 4.0.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple

from .. import settings

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_FILE = os.path.join(HERE, "data", "embedded-catalog.db.gz")
ENV_EMBEDDED = "RESOURCE_TRACKER_EMBEDDED_CATALOG"
SOURCE = "embedded"

_path_cache: Dict[Tuple[str, float, str], str] = {}  # (data file, mtime, cache dir) -> path


def enabled() -> bool:
    """False when RESOURCE_TRACKER_EMBEDDED_CATALOG switches the embedded catalog off."""
    on: bool = settings.get(ENV_EMBEDDED)  # a flag
    return on


def path() -> Optional[str]:
    """Path of the decompressed embedded catalog, or None when it is switched off or missing."""
    if not enabled() or not os.path.isfile(DATA_FILE):
        return None
    from ._base import cache_dir

    key = (DATA_FILE, os.path.getmtime(DATA_FILE), cache_dir())
    found = _path_cache.get(key)
    if found and os.path.isfile(found):
        return found
    found = _unpack(cache_dir())
    if found is None:
        import tempfile

        user = getattr(os, "getuid", lambda: "user")()
        found = _unpack(os.path.join(tempfile.gettempdir(), f"resource-tracker-{user}"))
    if found is not None:
        _path_cache[key] = found
    return found


def _unpack(folder: str) -> Optional[str]:
    """Decompresses the data file into folder/embedded/ (once per content); None on OSError."""
    import gzip
    import hashlib
    import tempfile

    try:
        with open(DATA_FILE, "rb") as f:
            packed = f.read()
        digest = hashlib.sha256(packed).hexdigest()[:16]
        target_dir = os.path.join(folder, "embedded")
        target = os.path.join(target_dir, f"catalog-{digest}.db")
        if os.path.isfile(target):
            return target
        os.makedirs(target_dir, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target_dir, suffix=".db.tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(gzip.decompress(packed))
            os.chmod(tmp, 0o444)
            os.replace(tmp, target)
        except BaseException:
            _unlink(tmp)
            raise
        for old in os.listdir(target_dir):  # the catalog of an earlier package version
            if old.startswith("catalog-") and old != os.path.basename(target):
                _unlink(os.path.join(target_dir, old))
        return target
    except (OSError, EOFError):
        return None


def _unlink(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def describe() -> Dict[str, Any]:
    """What the embedded catalog says about itself (its rt_meta table), {} when unreadable."""
    import sqlite3

    where = path()
    if where is None:
        return {}
    try:
        conn = sqlite3.connect(f"file:{where}?mode=ro", uri=True)
        try:
            return dict(conn.execute("SELECT key, value FROM rt_meta").fetchall())
        finally:
            conn.close()
    except sqlite3.Error:
        return {}
