"""The column registry: every metric column of the two tables, declared once (in C).

Each :class:`Column` says what a column is (name, label, unit), how the sampler merges two
rows (``fold``), what ``stats()`` reports for it (``aggregate``), which resource it sizes in
the recommendation (``resource``) and how many decimals the rounded views keep
(``digits``). The entries live in ``csrc/columns.c``; this module only reads them from
``_core.COLUMN_REGISTRY``. Adding a metric means one entry there, its reader and its test.
"""

from __future__ import annotations

from ._core import COLUMN_REGISTRY

TYPE_CHECKING = False  # no typing import at run time (~2 MiB, milliseconds)
if TYPE_CHECKING:
    from typing import Dict, Iterator, NamedTuple, Optional, Tuple

    class _Fields(NamedTuple):
        table: str
        name: str
        label: str
        unit: str
        fold: str
        aggregate: str
        resource: Optional[str]
        digits: Optional[int]

else:
    from collections import namedtuple

    _Fields = namedtuple(
        "_Fields", ["table", "name", "label", "unit", "fold", "aggregate", "resource", "digits"]
    )


__all__ = [
    "Column",
    "COLUMNS",
    "PROCESS",
    "SYSTEM",
    "column",
    "columns",
    "stat_columns",
]


class Column(_Fields):
    """One metric column.

    ``fold``: ``latest`` (a gauge or key), ``sum`` (an amount during the interval),
    ``peak`` (the higher reading) or ``rate`` (CPU usage, from the summed CPU time).
    ``aggregate``: ``none`` (not in ``stats()``), ``dist`` (mean, max, p50, p90, p99),
    ``sum`` or ``max``. ``resource``: ``cpu``, ``memory``, ``gpu``, ``vram`` or ``None``.
    ``digits``: decimals in the rounded views, ``None`` to keep the value as it is.
    """

    __slots__ = ()

    @property
    def key(self) -> str:
        """The column's key in ``stats()``: ``<table>_<name>``."""
        return f"{self.table}_{self.name}"

    @property
    def fields(self) -> Tuple[str, ...]:
        """The fields ``stats()[key]`` holds for this column (empty when not in stats)."""
        return _AGGREGATE_FIELDS[self.aggregate]


_AGGREGATE_FIELDS: Dict[str, Tuple[str, ...]] = {
    "none": (),
    "dist": ("mean", "max", "p50", "p90", "p99"),
    "sum": ("sum",),
    "max": ("max",),
}


def _load() -> Tuple[Column, ...]:
    loaded = []
    for table, name, label, unit, fold, aggregate, resource, digits in COLUMN_REGISTRY:
        loaded.append(
            Column(
                table=table,
                name=name,
                label=label,
                unit=unit,
                fold=fold,
                aggregate=aggregate,
                resource=resource or None,
                digits=None if digits < 0 else digits,
            )
        )
    return tuple(loaded)


#: Every column, the process table's first, each table in its column order.
COLUMNS: Tuple[Column, ...] = _load()
#: The process table's columns, in order.
PROCESS: Tuple[Column, ...] = tuple(c for c in COLUMNS if c.table == "process")
#: The system table's columns, in order.
SYSTEM: Tuple[Column, ...] = tuple(c for c in COLUMNS if c.table == "system")

_BY_KEY: Dict[Tuple[str, str], Column] = {(c.table, c.name): c for c in COLUMNS}


def columns(table: str) -> Tuple[Column, ...]:
    """The columns of ``table`` ("process" or "system"), in order."""
    if table == "process":
        return PROCESS
    if table == "system":
        return SYSTEM
    raise ValueError(f"no table {table!r}: the tables are 'process' and 'system'")


def column(table: str, name: str) -> Column:
    """The registry entry of ``table``'s column ``name`` (KeyError naming it when absent)."""
    try:
        return _BY_KEY[(table, name)]
    except KeyError:
        raise KeyError(f"no column {name!r} in the {table} table") from None


def stat_columns(table: Optional[str] = None) -> Iterator[Column]:
    """The columns ``stats()`` reports (of one table, or of both)."""
    for c in COLUMNS if table is None else columns(table):
        if c.aggregate != "none":
            yield c
