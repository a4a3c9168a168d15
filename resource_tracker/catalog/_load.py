"""Loads a downloaded catalog (a SQLite file or a SQL text dump) as data into a new database
of the schema resource-tracker declares (``_schema``): plain typed columns, no expression of
the dump ever evaluated (no default, check, generated column, view or trigger of it).

A SQLite file is read table by table: a declared table must be a plain table of the file (not
a view nor a virtual table) and only its stored columns are read (``PRAGMA table_xinfo``:
generated columns are left out), under ``trusted_schema=OFF``. A SQL dump is parsed by
``_sqldump`` into values and inserted with parameters. Unknown tables and columns are
skipped; the new database is capped at max_bytes.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from . import _schema, _sqldump


class TooBig(ValueError):
    """The catalog is larger than its cap (max_bytes)."""


def too_big(what: str, limit: int, option: str = "--max-unpacked-mib") -> TooBig:
    """TooBig naming what grew past limit, and the option of `catalog update` that sets it."""
    return TooBig(
        f"{what} is larger than {limit} bytes (a limit of the update: "
        f"`resource-tracker catalog update {option} N` changes it)"
    )


def _create(db_path: str, max_bytes: int) -> sqlite3.Connection:
    """A new database at db_path with the declared tables, capped at max_bytes."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={max(16, int(max_bytes // page))}")
    for statement in _schema.create_statements():
        conn.execute(statement)
    return conn


def _finish(conn: sqlite3.Connection) -> None:
    for statement in _schema.index_statements():
        conn.execute(statement)


def _full(exc: sqlite3.Error) -> bool:
    return "full" in str(exc)


@contextlib.contextmanager
def _new_database(db_path: str, max_bytes: int) -> Iterator[sqlite3.Connection]:
    """A connection to a new database of the declared schema at db_path, indexed and closed
    after the block; a full database (max_bytes) becomes TooBig."""
    conn = _create(db_path, max_bytes)
    try:
        yield conn
        _finish(conn)
    except sqlite3.Error as exc:
        if _full(exc):
            raise too_big("the database the catalog makes", max_bytes) from None
        raise
    finally:
        conn.close()


def _require(found: Iterable[str]) -> None:
    """ValueError unless the dump had every table a catalog needs (found: its table names)."""
    missing = set(_schema.REQUIRED) - {name.lower() for name in found}
    if missing:
        raise ValueError(f"not a Spare Cores catalog (no table {', '.join(sorted(missing))})")


def from_sql(lines: Iterable[str], db_path: str, max_bytes: int) -> None:
    """Loads the SQL text dump of lines into a new database at db_path."""
    reader = _sqldump.Reader()
    seen = set()
    with _new_database(db_path, max_bytes) as conn:
        conn.execute("BEGIN")
        for table, columns, rows in _sqldump.read(lines, reader):
            seen.add(table)
            _insert_rows(conn, table, columns, rows)
        conn.execute("COMMIT")
    _require(seen | set(reader.columns))


def _insert_rows(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], rows: List[_sqldump.Row]
) -> None:
    """Inserts the declared columns of rows (a dump's INSERT) into table, if declared."""
    sql, keep = _insert_plan(table, tuple(columns))
    if sql is None:
        return
    if keep is None:
        conn.executemany(sql, rows)
    else:
        conn.executemany(sql, [tuple(row[i] for i in keep) for row in rows])


@functools.lru_cache(maxsize=256)
def _insert_plan(
    table: str, columns: Tuple[str, ...]
) -> Tuple[Optional[str], Optional[Tuple[int, ...]]]:
    """(INSERT statement or None when nothing is kept, positions of the kept values or None
    for all of them) for rows of columns into table."""
    declared = set(_schema.columns(table))
    keep: Dict[str, int] = {}
    for i, name in enumerate(columns):
        if name.lower() in declared:
            keep.setdefault(name.lower(), i)
    if not keep:
        return None, None
    sql = f"INSERT INTO {table} ({', '.join(keep)}) VALUES ({', '.join('?' * len(keep))})"
    positions = tuple(keep.values())
    return sql, None if positions == tuple(range(len(columns))) else positions


def from_sqlite(src_path: str, db_path: str, max_bytes: int) -> None:
    """Copies the declared tables and columns of the SQLite file at src_path into a new
    database at db_path (stored columns of plain tables only)."""
    from urllib.parse import quote

    with _new_database(db_path, max_bytes) as conn:
        conn.execute("PRAGMA trusted_schema=OFF")
        conn.execute("ATTACH DATABASE ? AS src", (f"file:{quote(src_path)}?mode=ro",))
        conn.execute("BEGIN")
        found = [table for table in _schema.TABLES if _copy_table(conn, table)]
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE src")
    _require(found)


def _copy_table(conn: sqlite3.Connection, table: str) -> bool:
    """INSERT ... SELECT of table's stored, declared columns from src; False when src has no
    such table."""
    try:
        found = _schema.inspect_table(conn, "src", table)
    except ValueError as exc:
        raise ValueError(f"the catalog's {exc}") from None
    if found is None:
        return False
    name, stored, _computed = found
    declared = set(_schema.columns(table))
    keep: List[str] = []
    for column in stored:
        if column.lower() in declared and column.lower() not in keep:
            keep.append(column.lower())
    if keep:
        conn.execute(
            f"INSERT INTO main.{table} ({', '.join(keep)}) SELECT "
            f"{', '.join(_schema.quote_name(c) for c in keep)} FROM src.{_schema.quote_name(name)}"
        )
    return True
