"""Queries on a local Spare Cores SQLite catalog (current schema), run in SQLite with indexes.

A user's catalog is opened read-only and never changed. Its ``server_price`` table is keyed by
(vendor, region, zone, server, ...), so looking up the prices of one server would scan all the
prices of its vendor: the first query on a catalog builds side tables keyed by (vendor,
server) -- ``rt_price_min`` (cheapest hourly price per server, region, allocation, currency;
also indexed by vendor and region), ``rt_price_server`` (cheapest per server, allocation,
currency) and ``rt_server`` (the filtered columns and the benchmark score) -- in a separate
file in the cache directory (``index/<hash>.db``, rebuilt when the catalog file changes). A
catalog that ``update_catalog()`` wrote carries them itself. When the cache directory is not
writable they are built in the connection's temp schema.
"""

from __future__ import annotations

import json
import os
import sqlite3
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Set,
    Tuple,
    Union,
)

from .. import formatting as fmt
from ..formatting import ARCHITECTURE_ALIASES as ARCH_ALIASES
from ._base import CatalogUnavailableError, NoMatchingServerError, Server, cache_dir

SCORE_BENCHMARK = "stress_ng:bestn"
PRICE_TABLE = "rt_price_min"  # cheapest per server, region, allocation, currency
SERVER_PRICE_TABLE = "rt_price_server"  # cheapest per server, allocation, currency
SERVER_TABLE = "rt_server"  # the columns the filters need, and the score
REGION_INDEX = "rt_price_min_region"  # rt_price_min by (vendor_id, region_id), covering
ORDER_INDEX = "rt_price_min_order"  # rt_price_min by (currency, price): cheapest rows first
INDEX_TABLES = (PRICE_TABLE, SERVER_PRICE_TABLE, SERVER_TABLE, REGION_INDEX, ORDER_INDEX)
INDEX_VERSION = "4"
# The cheapest-first scan reads at most this many price rows before the full aggregate
# query takes over (requests that few cheap servers fit, e.g. many GPUs).
SCAN_ROWS_MAX = 20000
FILTERS = (
    "vendor",
    "region",
    "regions",
    "country",
    "architecture",
    "allocation",
    "compliance_framework",
    "green_energy",
    "min_score",
    "max_price",
)
ORDER_BY = ("price", "score_per_price")
ALLOCATIONS = ("ondemand", "spot", "any")
JSON_COLUMNS = ("cpu_flags", "cpus", "gpus", "storages", "aliases")
CPU_ALLOCATION = {"SHARED": "Shared", "BURSTABLE": "Burstable", "DEDICATED": "Dedicated"}
STORAGE_TYPE = {"HDD": "hdd", "SSD": "ssd", "NVME_SSD": "nvme ssd", "NETWORK": "network"}


def _as_list(name: str, value: object, lower: bool = False, upper: bool = False) -> List[str]:
    """A filter value (str or iterable of str) as a list of stripped strings."""
    if isinstance(value, str):
        items: List[object] = [value]
    else:
        try:
            if not isinstance(value, Iterable):
                raise TypeError(name)
            items = list(value)
        except TypeError:
            raise ValueError(
                f"{name} must be a string or a list of strings, got {value!r}"
            ) from None
    out = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"{name} must be a string or a list of strings, got {value!r}")
        item = item.strip()
        out.append(item.lower() if lower else item.upper() if upper else item)
    if not out:
        raise ValueError(f"{name} is an empty list")
    return out


def _number(name: str, value: object) -> float:
    """value as a finite float >= 0, or ValueError naming it (inf or 10**400 would reach SQL)."""
    number = float("nan")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:
            pass
    if not 0 <= number < float("inf"):
        raise ValueError(f"{name} must be a number >= 0 (and finite), got {value!r:.40}")
    return number


#: A (vendor_id, region_id) or (vendor_id, server_id) pair of catalog keys.
Pair = Tuple[str, str]
#: The parameters of a query (numbers of the request, catalog keys, currencies).
SqlParams = List[Union[str, float]]
#: One value SQLite returns for a column.
SqlValue = Union[None, int, float, str, bytes]


class PriceRow(NamedTuple):
    """One price row of the cheapest-first walk, in USD per hour."""

    usd_price: float
    vendor_id: str
    server_id: str


class Candidate(NamedTuple):
    """One ranked server of the candidate query (_candidates_sql's columns, in order; prices
    in USD per hour, as the index tables declare them)."""

    vendor_id: str
    server_id: str
    best_price: float  # the cheapest price of the allocation asked for
    min_price: Optional[float]
    min_price_spot: Optional[float]
    min_price_ondemand: Optional[float]
    score: Optional[float]  # stress_ng:bestn, None when not benchmarked


class QueryParts(NamedTuple):
    """The pieces of the candidate query (see _query_parts)."""

    source: str  # the FROM clause
    where: List[str]  # conditions, joined by AND
    params: SqlParams  # the parameters of where's placeholders
    alloc: str  # the SQL condition on p.allocation
    usd: str  # the SQL expression of p.price in USD


# the most servers one recommend_server(n=...) lists (a SQL LIMIT is a 64-bit integer)
MAX_RESULTS = 1_000_000


def _known_filters(filters: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The filters given (None values dropped); ValueError naming the valid ones."""
    filters = dict(filters or {})
    unknown = sorted(set(filters) - set(FILTERS))
    if unknown:
        raise ValueError(
            f"unknown filter(s) {', '.join(unknown)}; valid filters: {', '.join(FILTERS)}"
            ", plus n, order_by, catalog, eur_usd_rate"
        )
    return {k: v for k, v in filters.items() if v is not None}


def _regions(filters: Mapping[str, Any]) -> Optional[List[str]]:
    """The regions asked for by `region` and/or `regions`, or None for any region."""
    regions = None
    for key in ("region", "regions"):
        if key in filters:
            regions = (regions or []) + _as_list(key, filters[key])
    return regions


class Request:
    """A validated recommendation request (resources + filters), independent of the source."""

    __slots__ = (
        "cpu",
        "memory",
        "gpu",
        "vram",
        "n",
        "order_by",
        "vendors",
        "regions",
        "countries",
        "architectures",
        "allocation",
        "compliance",
        "green_energy",
        "min_score",
        "max_price",
    )
    cpu: float  # vCPUs
    memory: float  # MiB
    gpu: float  # GPUs
    vram: float  # MiB, all GPUs together
    n: Optional[int]  # how many servers to list; None: the best one, not in a list
    order_by: str  # one of ORDER_BY
    vendors: Optional[List[str]]  # None: any
    regions: Optional[List[str]]
    countries: Optional[List[str]]
    architectures: Optional[List[str]]
    allocation: str  # one of ALLOCATIONS
    compliance: Optional[List[str]]
    green_energy: Optional[bool]
    min_score: Optional[float]
    max_price: Optional[float]  # USD per hour

    @classmethod
    def build(
        cls,
        resources: Mapping[str, Any],
        n: Optional[int] = None,
        order_by: str = "price",
        filters: Optional[Mapping[str, Any]] = None,
    ) -> Request:
        """The request; ValueError naming the valid names or values for anything unknown."""
        self = cls()
        self._set_resources(resources)
        if n is not None and (
            isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_RESULTS
        ):
            raise ValueError(
                f"n must be a positive integer up to {MAX_RESULTS} or None, got {n!r:.40}"
            )
        self.n = n
        if order_by not in ORDER_BY:
            raise ValueError(f"unknown order_by {order_by!r}; valid: {', '.join(ORDER_BY)}")
        self.order_by = order_by
        self._set_filters(_known_filters(filters))
        return self

    def _set_resources(self, resources: Mapping[str, Any]) -> None:
        if not isinstance(resources, dict):
            raise ValueError(
                "resources must be a dict like {'cpu': 2, 'memory': 4096, 'gpu': 0, 'vram': 0}"
            )
        unknown = sorted(set(resources) - {"cpu", "memory", "gpu", "vram"})
        if unknown:
            raise ValueError(
                f"unknown resource(s) {', '.join(unknown)}; valid: cpu, memory (MiB), gpu, "
                "vram (MiB)"
            )
        for key in ("cpu", "memory", "gpu", "vram"):
            value = resources.get(key) or 0
            setattr(self, key, _number(f"resources[{key!r}]", value))

    def _set_filters(self, filters: Mapping[str, Any]) -> None:
        self.regions = _regions(filters)
        self.vendors = (
            _as_list("vendor", filters["vendor"], lower=True) if "vendor" in filters else None
        )
        self.countries = (
            _as_list("country", filters["country"], upper=True) if "country" in filters else None
        )
        self.architectures = None
        if "architecture" in filters:
            archs = _as_list("architecture", filters["architecture"], lower=True)
            self.architectures = [ARCH_ALIASES.get(a, a) for a in archs]
        allocation = filters.get("allocation", "any")
        if not isinstance(allocation, str) or allocation.lower() not in ALLOCATIONS:
            raise ValueError(f"unknown allocation {allocation!r}; valid: {', '.join(ALLOCATIONS)}")
        self.allocation = allocation.lower()
        self.compliance = (
            _as_list("compliance_framework", filters["compliance_framework"], lower=True)
            if "compliance_framework" in filters
            else None
        )
        green = filters.get("green_energy")
        if green is not None and not isinstance(green, bool):
            raise ValueError(f"green_energy must be True, False or None, got {green!r}")
        self.green_energy = green
        self.min_score = (
            _number("min_score", filters["min_score"]) if "min_score" in filters else None
        )
        self.max_price = (
            _number("max_price", filters["max_price"]) if "max_price" in filters else None
        )

    @property
    def vram_each_gpu(self) -> float:
        """MiB each of the `gpu` GPUs must hold (vram split evenly), 0 without GPUs."""
        if self.vram <= 0:
            return 0.0
        return self.vram / self.gpu if self.gpu >= 1 else self.vram


# -- connections and the side index -----------------------------------------------------------


def _uri(path: str, mode: str = "ro") -> str:
    from urllib.parse import quote

    return f"file:{quote(os.path.abspath(path))}?mode={mode}"


def _tables(conn: sqlite3.Connection, schema: str = "main") -> Set[str]:
    rows = conn.execute(
        f"SELECT name FROM {schema}.sqlite_master WHERE type IN ('table', 'view', 'index')"
    )
    return {r[0] for r in rows}


def _columns(conn: sqlite3.Connection, table: str, schema: str = "main") -> List[str]:
    return [r[1] for r in conn.execute(f"PRAGMA {schema}.table_info({table})")]


def open_catalog(path: str) -> Tuple[sqlite3.Connection, str]:
    """A read-only connection to the catalog with the price table reachable as px.rt_price_min
    (or main./temp. when the catalog or the connection carries it)."""
    try:
        conn = sqlite3.connect(_uri(path), uri=True)
        conn.row_factory = sqlite3.Row
        tables = _tables(conn)
    except sqlite3.DatabaseError as exc:
        raise CatalogUnavailableError(
            f"the catalog {path!r} is not a readable SQLite database ({exc})"
        ) from None
    missing = {"server", "server_price", "vendor", "region"} - tables
    if missing:
        conn.close()
        raise CatalogUnavailableError(
            f"the catalog {path!r} is not a Spare Cores catalog in the current schema "
            f"(missing table(s): {', '.join(sorted(missing))})"
        )
    computed = _computed(conn)
    if computed:
        conn.close()
        raise CatalogUnavailableError(
            f"the catalog {path!r} is not plain data: {computed}, run on every read. Use the "
            "copy `resource-tracker catalog update` loads, or a Spare Cores catalog file"
        )
    if set(INDEX_TABLES) <= tables:
        return conn, "main"
    side = _side_index(path)
    if side is not None:
        conn.execute("ATTACH DATABASE ? AS px", (_uri(side),))
        return conn, "px"
    _build_price_table(conn, "temp", "main")
    return conn, "temp"


def _computed(conn: sqlite3.Connection) -> Optional[str]:
    """What the catalog's tables that the queries read compute on reading (a view, a virtual
    table or a generated column, named), or None when they hold plain data only."""
    from . import _schema

    for table in _schema.TABLES:
        try:
            found = _schema.inspect_table(conn, "main", table)
        except ValueError as exc:
            return str(exc)
        if found is not None and found[2]:
            return f"{found[0]}.{found[2][0]} is a generated column"
    return None


def _build_price_table(conn: sqlite3.Connection, target: str, source: str) -> None:
    """Creates the index tables in target from source's server, server_price, benchmark_score:
    rt_price_min (cheapest per server/region/allocation/currency), rt_price_server (cheapest
    per server/allocation/currency) and rt_server (narrow copy of the filtered columns with the
    stress_ng:bestn score), each keyed by (vendor_id, server_id)."""
    cols = set(_columns(conn, "server_price", source))
    where = ["typeof(price) IN ('integer', 'real')"]  # not NULL, nor text kept in a REAL column
    if "status" in cols:
        where.append("(status IS NULL OR status = 'ACTIVE')")
    if "unit" in cols:
        where.append("(unit IS NULL OR unit = 'HOUR')")
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {target}.{PRICE_TABLE} (vendor_id TEXT NOT NULL, "
        "server_id TEXT NOT NULL, region_id TEXT NOT NULL, allocation TEXT NOT NULL, "
        "currency TEXT NOT NULL, price REAL NOT NULL, "
        "PRIMARY KEY (vendor_id, server_id, region_id, allocation, currency)) WITHOUT ROWID"
    )
    conn.execute(
        f"INSERT OR REPLACE INTO {target}.{PRICE_TABLE} SELECT vendor_id, server_id, region_id, "
        f"allocation, currency, MIN(price) FROM {source}.server_price WHERE {' AND '.join(where)} "
        "GROUP BY vendor_id, server_id, region_id, allocation, currency"
    )
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {target}.{REGION_INDEX} ON {PRICE_TABLE} "
        "(vendor_id, region_id, server_id, allocation, currency, price)"
    )
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {target}.{ORDER_INDEX} ON {PRICE_TABLE} (currency, price)"
    )
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {target}.{SERVER_PRICE_TABLE} (vendor_id TEXT NOT NULL, "
        "server_id TEXT NOT NULL, allocation TEXT NOT NULL, currency TEXT NOT NULL, "
        "price REAL NOT NULL, PRIMARY KEY (vendor_id, server_id, allocation, currency)) "
        "WITHOUT ROWID"
    )
    conn.execute(
        f"INSERT OR REPLACE INTO {target}.{SERVER_PRICE_TABLE} SELECT vendor_id, server_id, "
        f"allocation, currency, MIN(price) FROM {target}.{PRICE_TABLE} "
        "GROUP BY vendor_id, server_id, allocation, currency"
    )
    score = "NULL"
    if "benchmark_score" in _tables(conn, source):
        score = (
            f"(SELECT MAX(b.score) FROM {source}.benchmark_score b WHERE b.vendor_id = "
            f"s.vendor_id AND b.server_id = s.server_id AND b.benchmark_id = '{SCORE_BENCHMARK}')"
        )
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {target}.{SERVER_TABLE} (vendor_id TEXT NOT NULL, "
        "server_id TEXT NOT NULL, vcpus, memory_amount, gpu_count, gpu_memory_min, "
        "gpu_memory_total, cpu_architecture, status, score, "
        "PRIMARY KEY (vendor_id, server_id)) WITHOUT ROWID"
    )
    conn.execute(
        f"INSERT OR REPLACE INTO {target}.{SERVER_TABLE} SELECT s.vendor_id, s.server_id, "
        "s.vcpus, s.memory_amount, s.gpu_count, s.gpu_memory_min, s.gpu_memory_total, "
        f"s.cpu_architecture, s.status, {score} FROM {source}.server s"
    )
    conn.commit()


def _side_index(path: str) -> Optional[str]:
    """Path of the side index file of the catalog at path (built now if missing), or None."""
    import hashlib
    import tempfile

    try:
        st = os.stat(path)
        key = f"{os.path.realpath(path)}|{st.st_size}|{st.st_mtime_ns}|{INDEX_VERSION}"
        folder = os.path.join(cache_dir(), "index")
        prefix = hashlib.sha1(os.path.realpath(path).encode()).hexdigest()[:12]
        name = f"{prefix}-{hashlib.sha1(key.encode()).hexdigest()[:12]}.db"
        side = os.path.join(folder, name)
        if os.path.isfile(side):
            return side
        os.makedirs(folder, exist_ok=True)
        for old in os.listdir(folder):  # the index of an older version of the same file
            if old.startswith(prefix + "-") and old.endswith(".db"):
                try:
                    os.unlink(os.path.join(folder, old))
                except OSError:
                    pass
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".db.tmp")
        os.close(fd)
    except OSError:
        return None
    try:
        conn = sqlite3.connect(tmp)
        try:
            conn.execute("PRAGMA journal_mode=OFF")
            conn.execute("ATTACH DATABASE ? AS cat", (_uri(path),))
            _build_price_table(conn, "main", "cat")
            conn.execute("CREATE TABLE rt_meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute("INSERT INTO rt_meta VALUES ('source', ?)", (key,))
            conn.commit()
        finally:
            conn.close()
        os.replace(tmp, side)
        return side
    except (OSError, sqlite3.Error):
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return None


def add_own_indexes(conn: sqlite3.Connection) -> None:
    """Adds rt_price_min to a catalog file that resource-tracker owns (the downloaded one)."""
    _build_price_table(conn, "main", "main")


# -- filters that need the catalog ----------------------------------------------------------------


def _valid(name: str, given: Iterable[str], valid: Set[str], hint: str = "") -> None:
    bad = [g for g in given if g not in valid]
    if bad:
        raise ValueError(
            f"unknown {name} {', '.join(repr(b) for b in bad)}; valid: "
            f"{', '.join(sorted(valid))}{hint}"
        )


def _region_pairs(conn: sqlite3.Connection, req: Request) -> Optional[Set[Pair]]:
    """The allowed (vendor_id, region_id) pairs from regions/country/green_energy, or None."""
    if req.regions is None and req.countries is None and not req.green_energy:
        return None
    rows = conn.execute(
        "SELECT vendor_id, region_id, api_reference, aliases, country_id, green_energy FROM region"
    ).fetchall()
    names: Dict[str, Set[Pair]] = {}
    for r in rows:
        pair = (r["vendor_id"], r["region_id"])
        keys = {r["region_id"], r["api_reference"]}
        try:
            keys.update(json.loads(r["aliases"] or "[]"))
        except (TypeError, ValueError):
            pass
        for key in keys:
            if key:
                names.setdefault(key, set()).add(pair)
                names.setdefault(str(key).lower(), set()).add(pair)
    allowed = {(r["vendor_id"], r["region_id"]) for r in rows}
    if req.regions is not None:
        bad = [g for g in req.regions if g not in names and g.lower() not in names]
        if bad:
            valid = sorted({r["api_reference"] or r["region_id"] for r in rows})
            raise ValueError(
                f"unknown region {', '.join(repr(b) for b in bad)}; valid (region ids or API "
                f"names of the vendors): {', '.join(valid)}"
            )
        chosen = set()
        for g in req.regions:
            chosen |= names.get(g) or names[g.lower()]
        allowed &= chosen
    if req.countries is not None:
        countries = {r["country_id"] for r in rows if r["country_id"]}
        _valid("country", req.countries, countries, " (ISO 3166 codes of the regions)")
        allowed &= {
            (r["vendor_id"], r["region_id"]) for r in rows if r["country_id"] in req.countries
        }
    if req.green_energy:
        allowed &= {(r["vendor_id"], r["region_id"]) for r in rows if r["green_energy"]}
    return allowed


def _vendor_set(conn: sqlite3.Connection, req: Request) -> Optional[Set[str]]:
    """The allowed vendors from vendor/compliance_framework, or None for all."""
    if req.vendors is None and req.compliance is None:
        return None
    vendors = {r[0] for r in conn.execute("SELECT vendor_id FROM vendor")}
    allowed = set(vendors)
    if req.vendors is not None:
        _valid("vendor", req.vendors, vendors)
        allowed &= set(req.vendors)
    if req.compliance is not None:
        tables = _tables(conn)
        frameworks = set()
        if "compliance_framework" in tables:
            frameworks = {
                r[0]
                for r in conn.execute("SELECT compliance_framework_id FROM compliance_framework")
            }
        _valid("compliance_framework", req.compliance, frameworks)
        linked = None
        if "vendor_compliance_link" in tables:
            cols = _columns(conn, "vendor_compliance_link")
            status = " AND (status IS NULL OR status = 'ACTIVE')" if "status" in cols else ""
            for fw in req.compliance:
                have = {
                    r[0]
                    for r in conn.execute(
                        "SELECT vendor_id FROM vendor_compliance_link "
                        f"WHERE compliance_framework_id = ?{status}",
                        (fw,),
                    )
                }
                linked = have if linked is None else linked & have
        allowed &= linked or set()
    return allowed


def _architectures(conn: sqlite3.Connection, req: Request) -> Optional[List[str]]:
    if req.architectures is None:
        return None
    have = {
        (r[0] or "").lower(): r[0]
        for r in conn.execute("SELECT DISTINCT cpu_architecture FROM server")
        if r[0]
    }
    valid = set(have) | {"x86_64", "arm64"}
    _valid("architecture", req.architectures, valid, " (aliases: amd64, aarch64)")
    return [have.get(a, a.upper()) for a in req.architectures]


# -- the query ----------------------------------------------------------------------------------


def _candidates_sql(
    conn: sqlite3.Connection,
    px: str,
    req: Request,
    rate: float,
    only: Optional[List[Pair]] = None,
) -> Optional[Tuple[str, SqlParams]]:
    """(sql, params) of the ranked candidate servers (vendor_id, server_id, prices, score), or
    None when no server can pass the filters; only: a list of (vendor_id, server_id) to rank
    (the others are left out)."""
    parts = _query_parts(conn, px, req, rate, only=only)
    if parts is None:
        return None
    source, where, params, alloc, usd = parts
    having = ["best_price IS NOT NULL"]
    if req.max_price is not None:
        having.append("best_price <= ?")
        params = params + [req.max_price]
    if req.min_score is not None:
        having.append("score >= ?")
        params = params + [req.min_score]
    if req.order_by == "price":
        order = "best_price, s.vcpus, s.memory_amount, s.vendor_id, s.server_id"
    else:
        order = "score IS NULL, score / best_price DESC, best_price, s.vendor_id, s.server_id"
    sql = (
        "SELECT s.vendor_id AS vendor_id, s.server_id AS server_id, "
        f"MIN(CASE WHEN {alloc} THEN {usd} END) AS best_price, MIN({usd}) AS min_price, "
        f"MIN(CASE WHEN p.allocation = 'SPOT' THEN {usd} END) AS min_price_spot, "
        f"MIN(CASE WHEN p.allocation = 'ONDEMAND' THEN {usd} END) AS min_price_ondemand, "
        f"s.score AS score FROM {source} "
        f"WHERE {' AND '.join(where)} GROUP BY s.vendor_id, s.server_id "
        f"HAVING {' AND '.join(having)} ORDER BY {order} LIMIT {int(req.n or 1)}"
    )
    return sql, params


def _cheapest_servers(
    conn: sqlite3.Connection, px: str, req: Request, rate: float
) -> Optional[List[Pair]]:
    """The (vendor_id, server_id) pairs that can be the n cheapest fitting servers (the n
    first in the order of their cheapest qualifying price, and every server tied with the
    last), found by walking the price rows cheapest first, one stream per currency merged in
    USD; None when that walk would read more than SCAN_ROWS_MAX rows."""
    import heapq

    parts = _query_parts(conn, px, req, rate, per_row=True)
    if parts is None:
        return []
    source, where, params, alloc, _usd = parts
    where = where + [alloc, "p.currency = ?"]
    if req.min_score is not None:
        where.append("s.score >= ?")
    sql = (
        f"SELECT p.price, s.vendor_id, s.server_id FROM {source} WHERE {' AND '.join(where)} "
        "ORDER BY p.price"
    )

    def stream(currency: str, factor: float) -> Iterator[PriceRow]:
        extra: SqlParams = [currency] + ([req.min_score] if req.min_score is not None else [])
        for price, vendor_id, server_id in conn.execute(sql, params + extra):
            # the index tables' columns: price REAL NOT NULL, ids TEXT NOT NULL
            yield PriceRow(price * factor, vendor_id, server_id)

    found: Set[Pair] = set()
    order: List[Pair] = []
    last: Optional[float] = None
    read = 0
    for usd_price, vendor_id, server_id in heapq.merge(stream("USD", 1.0), stream("EUR", rate)):
        read += 1
        if read > SCAN_ROWS_MAX:
            return None
        if req.max_price is not None and usd_price > req.max_price:
            break
        if last is not None and len(order) >= (req.n or 1) and usd_price > last:
            break
        if (vendor_id, server_id) not in found:
            found.add((vendor_id, server_id))
            order.append((vendor_id, server_id))
            last = usd_price
    return order


def _query_parts(
    conn: sqlite3.Connection,
    px: str,
    req: Request,
    rate: float,
    per_row: bool = False,
    only: Optional[List[Pair]] = None,
) -> Optional[QueryParts]:
    """(source, where, params, alloc condition, USD price expression) of the candidate query,
    or None when no server can pass the filters. per_row: the price rows themselves, cheapest
    first through ORDER_INDEX (else the per-server summary where no region is asked for);
    only: the price rows of these (vendor_id, server_id) pairs alone."""
    alloc = {"any": "1", "spot": "p.allocation = 'SPOT'", "ondemand": "p.allocation = 'ONDEMAND'"}[
        req.allocation
    ]
    usd = f"(p.price * (CASE p.currency WHEN 'USD' THEN 1.0 ELSE {float(rate)!r} END))"
    server_filter = _server_conditions(conn, req)
    if server_filter is None:
        return None
    where, params = server_filter
    pairs = _region_pairs(conn, req)
    where.append("p.currency IN ('USD', 'EUR')")
    if per_row or only is not None:
        source = _price_row_source(conn, px, pairs, only, where)
    else:
        source = _server_source(conn, px, pairs, where, params)
    if source is None:
        return None
    return QueryParts(source, where, params, alloc, usd)


def _server_conditions(
    conn: sqlite3.Connection, req: Request
) -> Optional[Tuple[List[str], SqlParams]]:
    """(where, params) of the server filters, or None when no vendor passes them."""
    where = [
        "(s.status IS NULL OR s.status = 'ACTIVE')",
        "s.vcpus >= ?",
        "s.memory_amount >= ?",
    ]
    params: SqlParams = [req.cpu, req.memory]
    if req.gpu > 0:
        where.append("COALESCE(s.gpu_count, 0) >= ?")
        params.append(req.gpu)
    if req.vram > 0:
        where += ["COALESCE(s.gpu_memory_total, 0) >= ?", "COALESCE(s.gpu_memory_min, 0) >= ?"]
        params += [req.vram, req.vram_each_gpu]
    vendors = _vendor_set(conn, req)
    if vendors is not None:
        if not vendors:
            return None
        where.append(f"s.vendor_id IN ({','.join('?' * len(vendors))})")
        params += sorted(vendors)
    archs = _architectures(conn, req)
    if archs is not None:
        where.append(f"s.cpu_architecture IN ({','.join('?' * len(archs))})")
        params += archs
    return where, params


def _price_row_source(
    conn: sqlite3.Connection,
    px: str,
    pairs: Optional[Set[Pair]],
    only: Optional[List[Pair]],
    where: List[str],
) -> Optional[str]:
    """The FROM clause walking price rows (cheapest first, or only the given servers'); None
    when the region filters allow no region. Adds the region condition to where."""
    if pairs is not None and not pairs:
        return None
    if only is not None:
        _fill_pairs(conn, "rt_only", "server_id", only)
        source = (
            f"temp.rt_only o CROSS JOIN {px}.{SERVER_TABLE} s ON s.vendor_id = o.vendor_id "
            f"AND s.server_id = o.server_id CROSS JOIN {px}.{PRICE_TABLE} p "
            "ON p.vendor_id = s.vendor_id AND p.server_id = s.server_id"
        )
    else:
        source = (
            f"{px}.{PRICE_TABLE} AS p INDEXED BY {ORDER_INDEX} CROSS JOIN "
            f"{px}.{SERVER_TABLE} s ON s.vendor_id = p.vendor_id AND s.server_id = p.server_id"
        )
    if pairs:
        _fill_allowed(conn, pairs)
        where.append(
            "EXISTS (SELECT 1 FROM temp.rt_allowed a WHERE a.vendor_id = p.vendor_id "
            "AND a.region_id = p.region_id)"
        )
    return source


def _server_source(
    conn: sqlite3.Connection,
    px: str,
    pairs: Optional[Set[Pair]],
    where: List[str],
    params: SqlParams,
) -> Optional[str]:
    """The FROM clause walking servers then prices, chosen by how many regions are allowed;
    None when none is. Adds the region condition to where and params."""
    if pairs is None:
        # no region filter: the per-server summary is enough (far fewer rows to visit)
        return (
            f"{px}.{SERVER_TABLE} s JOIN {px}.{SERVER_PRICE_TABLE} p "
            "ON p.vendor_id = s.vendor_id AND p.server_id = s.server_id"
        )
    if not pairs:
        return None
    if len(pairs) <= max(8, _region_count(conn) // 4):
        # a few regions: walk their prices (region index), then look up each server
        _fill_allowed(conn, pairs)
        return (
            f"temp.rt_allowed a CROSS JOIN {px}.{PRICE_TABLE} AS p INDEXED BY {REGION_INDEX} "
            "ON p.vendor_id = a.vendor_id AND p.region_id = a.region_id "
            f"CROSS JOIN {px}.{SERVER_TABLE} s "
            "ON s.vendor_id = p.vendor_id AND s.server_id = p.server_id"
        )
    # many regions: walk the fitting servers, then their prices
    where.append(f"(p.vendor_id, p.region_id) IN (VALUES {','.join(['(?, ?)'] * len(pairs))})")
    for pair in sorted(pairs):
        params += list(pair)
    return (
        f"{px}.{SERVER_TABLE} s JOIN {px}.{PRICE_TABLE} p "
        "ON p.vendor_id = s.vendor_id AND p.server_id = s.server_id"
    )


def _fill_allowed(conn: sqlite3.Connection, pairs: Set[Pair]) -> None:
    """temp.rt_allowed: the (vendor_id, region_id) pairs the region filters allow."""
    _fill_pairs(conn, "rt_allowed", "region_id", pairs)


def _fill_pairs(conn: sqlite3.Connection, table: str, second: str, pairs: Iterable[Pair]) -> None:
    """temp.<table>(vendor_id, <second>) holding exactly pairs."""
    conn.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS {table} (vendor_id TEXT NOT NULL, "
        f"{second} TEXT NOT NULL, PRIMARY KEY (vendor_id, {second})) WITHOUT ROWID"
    )
    conn.execute(f"DELETE FROM temp.{table}")
    conn.executemany(f"INSERT INTO temp.{table} VALUES (?, ?)", sorted(pairs))


def _region_count(conn: sqlite3.Connection) -> int:
    count: int = conn.execute("SELECT COUNT(*) FROM region").fetchone()[0]
    return count


def column_value(column: str, value: object) -> object:
    """A catalog column's value as records give it, from whichever source (the dump's enum
    names and JSON text decoded): one rule for the local catalog and the Keeper's answers."""
    if value is None:
        return None
    if column in JSON_COLUMNS and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if column in ("status", "cpu_architecture") and isinstance(value, str):
        return value.lower()
    if column == "cpu_allocation" and isinstance(value, str):
        return CPU_ALLOCATION.get(value, value)
    if column == "storage_type" and isinstance(value, str):
        return STORAGE_TYPE.get(value, value.lower())
    if column == "gpu_count" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _record(conn: sqlite3.Connection, px: str, row: Candidate, req: Request, rate: float) -> Server:
    """The Spare Cores record of one candidate row: server columns, prices, vendor dict."""
    server = conn.execute(
        "SELECT * FROM server WHERE vendor_id = ? AND server_id = ?",
        (row.vendor_id, row.server_id),
    ).fetchone()
    rec = {k: column_value(k, server[k]) for k in server.keys()}
    price = row.best_price
    score = row.score
    rec.update(
        score=score,
        price=_round(price),
        min_price=_round(row.min_price),
        min_price_spot=_round(row.min_price_spot),
        min_price_ondemand=_round(row.min_price_ondemand),
        score_per_price=(score / price) if score is not None and price else None,
        selected_benchmark_score=None,
        selected_benchmark_score_per_price=None,
    )
    where = {
        "any": "",
        "spot": " AND allocation = 'SPOT'",
        "ondemand": " AND allocation = 'ONDEMAND'",
    }
    best = conn.execute(
        f"SELECT region_id, allocation, currency, price FROM {px}.{PRICE_TABLE} "
        f"WHERE vendor_id = ? AND server_id = ? AND currency IN ('USD', 'EUR')"
        f"{where[req.allocation]} ORDER BY price * (CASE currency WHEN 'USD' THEN 1.0 ELSE ? END)",
        (row.vendor_id, row.server_id, rate),
    ).fetchall()
    pairs = _region_pairs(conn, req)
    for b in best:
        if pairs is None or (row.vendor_id, b["region_id"]) in pairs:
            rec["price_region_id"] = b["region_id"]
            rec["price_allocation"] = b["allocation"].lower()
            rec["price_currency"] = b["currency"]
            break
    vendor = conn.execute("SELECT * FROM vendor WHERE vendor_id = ?", (row.vendor_id,)).fetchone()
    rec["vendor"] = {k: column_value(k, vendor[k]) for k in vendor.keys()} if vendor else None
    return rec


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else float(value)


def recommend_local(path: str, req: Request, rate: float) -> Union[Server, List[Server]]:
    """recommend_server() on the local catalog at path."""
    conn, px = open_catalog(path)
    try:
        only = _cheapest_servers(conn, px, req, rate) if req.order_by == "price" else None
        rows: List[sqlite3.Row]
        if only == []:
            rows = []
        else:
            query = _candidates_sql(conn, px, req, rate, only=only)
            rows = conn.execute(*query).fetchall() if query else []
        if not rows:
            if not conn.execute(f"SELECT 1 FROM {px}.{PRICE_TABLE} LIMIT 1").fetchone():
                raise CatalogUnavailableError(
                    f"the catalog {path!r} has no prices (a priceless dump?); use the full "
                    "sc-data-all dump: `resource-tracker catalog update`"
                )
            raise NoMatchingServerError(_no_match_text(req) + _missing_prices(conn, px, req))
        records = [_record(conn, px, Candidate(*row), req, rate) for row in rows]
    finally:
        conn.close()
    return records if req.n is not None else records[0]


def _missing_prices(conn: sqlite3.Connection, px: str, req: Request) -> str:
    """'' or a sentence on the prices the catalog lacks for the filters (vendors, regions,
    spot or on-demand) and how to get them: a small catalog (the embedded snapshot has AWS
    on-demand prices only) cannot answer every filter, and "no server fits" would mislead."""
    rows = conn.execute(
        f"SELECT DISTINCT vendor_id, region_id, allocation FROM {px}.{PRICE_TABLE}"
    ).fetchall()
    vendors = sorted({r[0] for r in rows})
    allocations = sorted({str(r[2]).lower() for r in rows})
    lacking = [v for v in req.vendors or [] if v not in vendors]
    if req.regions:
        regions = {r[1] for r in rows}
        lacking += [f"region {r}" for r in req.regions if r not in regions]
    if req.allocation != "any" and req.allocation not in allocations:
        lacking.append(req.allocation)
    if not lacking:
        return ""
    kinds = "/".join(a.replace("ondemand", "on-demand") for a in allocations)
    return (
        f". The catalog in use lacks prices for: {', '.join(lacking)} (it has {', '.join(vendors)} "
        f"{kinds} prices only); get the full Spare Cores catalog with "
        "`resource-tracker catalog update` (or RESOURCE_TRACKER_CATALOG, or the Keeper API)"
    )


def _no_match_text(req: Request) -> str:
    parts = [fmt.plural(req.cpu, "vCPU"), f"{req.memory:g} MiB memory"]
    if req.gpu:
        parts.append(fmt.plural(req.gpu, "GPU"))
    if req.vram:
        parts.append(f"{req.vram:g} MiB VRAM")
    filt = []
    for name in ("vendors", "regions", "countries", "architectures", "compliance"):
        value = getattr(req, name)
        if value is not None:
            filt.append(f"{name}={','.join(value)}")
    if req.allocation != "any":
        filt.append(f"allocation={req.allocation}")
    for name in ("green_energy", "min_score", "max_price"):
        value = getattr(req, name)
        if value is not None:
            filt.append(f"{name}={value}")
    text = "no server with a price in the catalog has " + ", ".join(parts)
    return text + (f" with {'; '.join(filt)}" if filt else "")


# -- the price of the server a run ran on ---------------------------------------------------------


def current_price(
    path: str, vendor: str, instance_type: str, region: Optional[str], rate: float
) -> Tuple[Optional[float], Optional[str]]:
    """(USD per hour or None, note) of the on-demand price of vendor/instance_type in region."""
    conn, px = open_catalog(path)
    try:
        server = conn.execute(
            "SELECT server_id FROM server WHERE vendor_id = ? AND (server_id = ? OR "
            "api_reference = ? OR name = ?) ORDER BY server_id = ? DESC LIMIT 1",
            (vendor, instance_type, instance_type, instance_type, instance_type),
        ).fetchone()
        if server is None:
            return None, f"{vendor} {instance_type} is not in the catalog"
        sid = server[0]
        region_id = None
        if region:
            for r in conn.execute(
                "SELECT region_id, api_reference, aliases FROM region WHERE vendor_id = ?",
                (vendor,),
            ):
                names = {r[0], r[1]}
                try:
                    names.update(json.loads(r[2] or "[]"))
                except (TypeError, ValueError):
                    pass
                if region in names:
                    region_id = r[0]
                    break
        sql = (
            "SELECT MIN(price * (CASE currency WHEN 'USD' THEN 1.0 ELSE ? END)) "
            f"FROM {px}.{PRICE_TABLE} WHERE vendor_id = ? AND server_id = ? "
            "AND allocation = 'ONDEMAND' AND currency IN ('USD', 'EUR')"
        )
        if region_id is not None:
            price = conn.execute(sql + " AND region_id = ?", (rate, vendor, sid, region_id))
            price = price.fetchone()[0]
            if price is not None:
                return price, f"on-demand price of {vendor} {sid} in {region}"
        price = conn.execute(sql, (rate, vendor, sid)).fetchone()[0]
        if price is None:
            return None, f"the catalog has no on-demand price for {vendor} {sid}"
        where = f"no price in {region}" if region else "region unknown"
        return price, f"cheapest on-demand price of {vendor} {sid} in any region ({where})"
    finally:
        conn.close()


def describe(path: str) -> Dict[str, Any]:
    """What the catalog at path holds: counts and dates (errors as an 'error' key)."""
    out: Dict[str, Any] = {}
    try:
        st = os.stat(path)
        out["size_bytes"] = st.st_size
        import datetime

        out["modified"] = datetime.datetime.fromtimestamp(
            st.st_mtime, datetime.timezone.utc
        ).isoformat(timespec="seconds")
        conn = sqlite3.connect(_uri(path), uri=True)
        try:
            tables = _tables(conn)
            for table, key in (
                ("server", "servers"),
                ("server_price", "prices"),
                ("vendor", "vendors"),
            ):
                if table in tables:
                    out[key] = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            if "server" in tables and "observed_at" in _columns(conn, "server"):
                out["observed_at"] = conn.execute("SELECT MAX(observed_at) FROM server").fetchone()[
                    0
                ]
        finally:
            conn.close()
    except (OSError, sqlite3.Error) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out
