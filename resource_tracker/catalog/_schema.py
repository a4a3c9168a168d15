"""The catalog schema resource-tracker declares for itself: tables, columns and types.

A downloaded dump is loaded into these tables only (``_load``): the columns the queries and
the returned server records use, with the types of the Spare Cores schema. The dump's own
``CREATE TABLE`` statements (their defaults, checks and generated columns), its views,
triggers and indexes are never run; unknown tables and columns are skipped, and a declared
column the dump does not have stays NULL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    import sqlite3

T, N, R = "TEXT", "INTEGER", "REAL"  # text, integer number, real number

#: table -> ((column, SQLite type), ...), in the order of the Spare Cores schema
TABLES: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "vendor": (
        ("vendor_id", T), ("name", T), ("logo", T), ("homepage", T), ("country_id", T),
        ("state", T), ("city", T), ("address_line", T), ("zip_code", T),
        ("founding_year", N), ("status_page", T), ("status", T), ("observed_at", T),
    ),
    "region": (
        ("vendor_id", T), ("region_id", T), ("name", T), ("api_reference", T),
        ("display_name", T), ("aliases", T), ("country_id", T), ("state", T), ("city", T),
        ("address_line", T), ("zip_code", T), ("lat", R), ("lon", R), ("founding_year", N),
        ("green_energy", N), ("status", T), ("observed_at", T),
    ),
    "server": (
        ("vendor_id", T), ("server_id", T), ("name", T), ("api_reference", T),
        ("display_name", T), ("description", T), ("family", T), ("vcpus", N),
        ("hypervisor", T), ("cpu_allocation", T), ("cpu_cores", N), ("cpu_speed", R),
        ("cpu_architecture", T), ("cpu_manufacturer", T), ("cpu_family", T), ("cpu_model", T),
        ("cpu_l1_cache", N), ("cpu_l2_cache", N), ("cpu_l3_cache", N), ("cpu_flags", T),
        ("cpus", T), ("memory_amount", N), ("memory_generation", T), ("memory_speed", N),
        ("memory_ecc", N), ("gpu_count", N), ("gpu_memory_min", N), ("gpu_memory_total", N),
        ("gpu_manufacturer", T), ("gpu_family", T), ("gpu_model", T), ("gpus", T),
        ("storage_size", N), ("storage_type", T), ("storages", T), ("network_speed", R),
        ("inbound_traffic", R), ("outbound_traffic", R), ("ipv4", N), ("status", T),
        ("observed_at", T),
    ),
    "server_price": (
        ("vendor_id", T), ("region_id", T), ("zone_id", T), ("server_id", T),
        ("operating_system", T), ("allocation", T), ("unit", T), ("price", R),
        ("price_upfront", R), ("price_tiered", T), ("currency", T), ("status", T),
        ("observed_at", T),
    ),
    "benchmark_score": (
        ("vendor_id", T), ("server_id", T), ("benchmark_id", T), ("config", T), ("score", R),
        ("note", T), ("status", T), ("observed_at", T),
    ),
    "compliance_framework": (
        ("compliance_framework_id", T), ("name", T), ("abbreviation", T), ("description", T),
        ("logo", T), ("homepage", T), ("status", T), ("observed_at", T),
    ),
    "vendor_compliance_link": (
        ("vendor_id", T), ("compliance_framework_id", T), ("comment", T), ("status", T),
        ("observed_at", T),
    ),
}  # fmt: skip

#: the tables a usable catalog must hold
REQUIRED = ("server", "server_price", "vendor", "region")

#: lookup indexes of the queries (name, table, columns)
INDEXES = (
    ("rt_server_key", "server", ("vendor_id", "server_id")),
    ("rt_vendor_key", "vendor", ("vendor_id",)),
    ("rt_region_key", "region", ("vendor_id", "region_id")),
    ("rt_score_key", "benchmark_score", ("vendor_id", "server_id", "benchmark_id")),
)


def columns(table: str) -> List[str]:
    """The declared column names of table (empty for a table we do not load)."""
    return [name for name, _ in TABLES.get(table, ())]


def create_statements() -> List[str]:
    """The CREATE TABLE statements of the declared schema (plain typed columns only)."""
    return [
        f"CREATE TABLE {table} ({', '.join(f'{n} {t}' for n, t in cols)})"
        for table, cols in TABLES.items()
    ]


def index_statements() -> List[str]:
    """The CREATE INDEX statements of the lookups, run once the rows are in."""
    return [f"CREATE INDEX {name} ON {t} ({', '.join(cols)})" for name, t, cols in INDEXES]


def quote_name(name: str) -> str:
    """name as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def inspect_table(
    conn: sqlite3.Connection, schema: str, table: str
) -> Optional[Tuple[str, List[str], List[str]]]:
    """(name as spelled, stored columns, computed columns) of table in the attached schema
    of sqlite3 connection conn, None when absent; ValueError when it is a view or a virtual
    table (reading either runs the file's own code)."""
    found = conn.execute(
        f"SELECT type, name, sql FROM {schema}.sqlite_master WHERE type IN ('table', 'view') "
        "AND name = ? COLLATE NOCASE",
        (table,),
    ).fetchone()
    if found is None:
        return None
    kind, name, sql = found
    if kind != "table" or not (sql or "").upper().lstrip().startswith("CREATE TABLE"):
        what = "a view" if kind == "view" else "a virtual table"
        raise ValueError(f"{table!r} is {what}, not a table of data")
    stored: List[str] = []
    computed: List[str] = []
    for row in conn.execute(f"PRAGMA {schema}.table_xinfo({quote_name(name)})"):
        (stored if row[6] == 0 else computed).append(row[1])
    return name, stored, computed
