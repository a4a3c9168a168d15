"""The column registry: every metric column of the two tables, declared once (in C).

Each :class:`Column` says what a column is (name, label, unit), how the sampler merges two
rows (``fold``), what ``stats()`` reports for it (``aggregate``), which resource it sizes in
the recommendation (``resource``), how many decimals the rounded views keep (``digits``),
what it means to the views (``role``: one column per role and table) and which report chart
draws it (``chart``). The entries live in ``csrc/columns.c``; this module only reads them
from ``_core.COLUMN_REGISTRY``. Views find a column by :func:`by_role` / :func:`by_chart`,
never by its unit or label. Adding a metric means one entry there, its reader and its test
(docs/architecture.md, "Adding a metric").
"""

from __future__ import annotations

from typing import Dict, Iterator, NamedTuple, Optional, Tuple

from ._core import COLUMN_REGISTRY


class _Fields(NamedTuple):
    table: str
    name: str
    label: str
    unit: str
    fold: str
    aggregate: str
    resource: Optional[str]
    digits: Optional[int]
    role: str
    chart: Optional[str]


__all__ = [
    "Column",
    "COLUMNS",
    "TRAFFIC_ROLES",
    "by_chart",
    "by_key",
    "by_role",
    "PROCESS",
    "SYSTEM",
    "column",
    "columns",
    "stat_columns",
    "traffic_columns",
]


class Column(_Fields):
    """One metric column.

    ``fold``: ``latest`` (a gauge or key), ``sum`` (an amount during the interval),
    ``peak`` (the higher reading) or ``rate`` (CPU usage, from the summed CPU time).
    ``aggregate``: ``none`` (not in ``stats()``), ``dist`` (mean, max, p50, p90, p99),
    ``sum`` or ``max``. ``resource``: ``cpu``, ``memory``, ``gpu``, ``vram`` or ``None``.
    ``digits``: decimals in the rounded views, ``None`` to keep the value as it is.
    ``role``: what the column is to the views (``cpu``, ``memory``, ``disk_read``,
    ``disk_write``, ``net_recv``, ``net_sent``, ``gpu``, ``vram``, ...), unique per table.
    ``chart``: the report chart drawing it (``cpu``, ``memory``, ``gpu``, ``vram``, ``diskio``,
    ``diskspace``, ``network``) or ``None``.
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
    for table, name, label, unit, fold, aggregate, resource, digits, role, chart in COLUMN_REGISTRY:
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
                role=role,
                chart=chart or None,
            )
        )
    return tuple(loaded)


#: Every column, the process table's first, each table in its column order.
COLUMNS: Tuple[Column, ...] = _load()
#: The process table's columns, in order.
PROCESS: Tuple[Column, ...] = ()
#: The system table's columns, in order.
SYSTEM: Tuple[Column, ...] = ()
_BY_KEY: Dict[Tuple[str, str], Column] = {}
_BY_ROLE: Dict[Tuple[str, str], Column] = {}

#: The seeds' ``traffic`` directions and the roles of the machine's columns that give them.
TRAFFIC_ROLES: Dict[str, str] = {"inbound": "net_recv", "outbound": "net_sent"}


def _install(entries: Tuple[Column, ...]) -> None:
    """Make ``entries`` the registry (at import; a test adds a test-only entry this way)."""
    global COLUMNS, PROCESS, SYSTEM, _BY_KEY, _BY_ROLE
    by_role = {(c.table, c.role): c for c in entries}
    if len(by_role) != len(entries):
        raise ValueError("two columns of one table share a role: a role names one column")
    COLUMNS, _BY_ROLE = entries, by_role
    PROCESS = tuple(c for c in entries if c.table == "process")
    SYSTEM = tuple(c for c in entries if c.table == "system")
    _BY_KEY = {(c.table, c.name): c for c in entries}


_install(COLUMNS)


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


def by_role(table: str, role: str) -> Column:
    """The column of ``table`` with the role ``role`` (``disk_read``, ``net_recv``,
    ``memory``, ``cpu``, ...; KeyError naming it when absent)."""
    try:
        return _BY_ROLE[(table, role)]
    except KeyError:
        raise KeyError(f"no column with the role {role!r} in the {table} table") from None


def by_chart(chart: str) -> Tuple[Column, ...]:
    """The columns the report chart ``chart`` draws, the process table's first, in order."""
    return tuple(c for c in COLUMNS if c.chart == chart)


def by_key(key: str) -> Optional[Column]:
    """The column whose ``stats()`` key is ``key`` (``system_net_recv_bytes``), or None."""
    table, _, name = key.partition("_")
    return _BY_KEY.get((table, name))


def stat_columns(table: Optional[str] = None) -> Iterator[Column]:
    """The columns ``stats()`` reports (of one table, or of both)."""
    for c in COLUMNS if table is None else columns(table):
        if c.aggregate != "none":
            yield c


def traffic_columns() -> Dict[str, Column]:
    """The machine's network columns by the seeds' ``traffic`` direction:
    ``{'inbound': <net_recv column>, 'outbound': <net_sent column>}``."""
    return {direction: by_role("system", role) for direction, role in TRAFFIC_ROLES.items()}
