"""atheris target: the catalog loader (resource_tracker/catalog/_load.py, _sqldump.py), which
reads a downloaded Spare Cores dump, foreign data, into resource-tracker's own schema.

Promise, for any bytes: bytes starting with the SQLite header are copied as a SQLite file
(from_sqlite), anything else is read as a SQL text dump (from_sql); either loads or raises
ValueError (a clear error: DumpError, DumpRefused, TooBig, UnicodeDecodeError) or, for a
damaged SQLite file, sqlite3.DatabaseError -- what update_catalog() turns into
CatalogUnavailableError. Never another exception, and a loaded database holds only the
declared tables and their indexes (no view, trigger or expression of the input). The SQL
reader's regular-expression path for plain INSERTs gives what its token path gives.

    python3 fuzz/fuzz_catalog.py [libFuzzer flags] CORPUS_DIR
"""

from __future__ import annotations

import os
import sqlite3
import tempfile

from resource_tracker.catalog import _load, _schema, _sqldump

SQLITE_MAGIC = b"SQLite format 3\x00"
CAP = 8 << 20  # the size cap of the loaded database (bytes)
FOLDER = tempfile.mkdtemp(prefix="fuzz-catalog-")
OWN = set(_schema.TABLES) | {name for name, _, _ in _schema.INDEXES}


def _load_one(data: bytes, out: str) -> None:
    if data.startswith(SQLITE_MAGIC):
        src = os.path.join(FOLDER, "src.db")
        with open(src, "wb") as f:
            f.write(data)
        _load.from_sqlite(src, out, CAP)
    else:
        text = data.decode("utf-8")
        _load.from_sql(text.splitlines(keepends=True), out, CAP)


def _read(text: str, plain: bool):
    """What _sqldump reads from text (a list of INSERTs, or the name of the error)."""
    reader = _sqldump.Reader(plain=plain)
    try:
        return list(_sqldump.read(text.splitlines(keepends=True), reader))
    except ValueError as exc:
        return type(exc).__name__


def test_one_input(data: bytes) -> None:
    """Raises (what the loader raised, or AssertionError) when the promise is broken."""
    if not data.startswith(SQLITE_MAGIC):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            assert repr(_read(text, True)) == repr(_read(text, False)), "the two paths differ"
    out = os.path.join(FOLDER, "out.db")
    if os.path.exists(out):
        os.unlink(out)
    try:
        _load_one(data, out)
    except (ValueError, sqlite3.DatabaseError):
        return
    conn = sqlite3.connect(out)
    try:
        found = conn.execute("SELECT type, name FROM sqlite_master").fetchall()
    finally:
        conn.close()
    assert all(kind in ("table", "index") and name in OWN for kind, name in found), found


if __name__ == "__main__":
    from atheris_main import fuzz  # fuzz/, this script's folder, is on sys.path

    fuzz(test_one_input)
