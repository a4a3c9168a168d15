"""Cloud server recommendations from the Spare Cores catalog, offline first.

Public API (see docs/catalog.md):

- ``recommend_server(resources, *, n=None, order_by="price", catalog=None, **filters)``: the
  cheapest server (a dict in the Spare Cores record shape) that meets ``resources`` (the dict of
  ``ResourceTracker.recommend_resources()``), or a list of the best ``n``.
- ``run_costs(duration_s, cloud_info, server, catalog=None)``: what the run cost on the server it
  ran on and what it would cost on ``server``, in USD.
- ``update_catalog(url=None)``: download the published dump into the user cache, atomically.
- ``catalog_info(catalog=None)``: where the catalog is and what it holds (never raises).
- ``CatalogUnavailableError`` (RuntimeError), ``NoMatchingServerError`` (ValueError).

Where the catalog comes from, first match wins: the ``catalog=`` argument, the
``RESOURCE_TRACKER_CATALOG`` environment variable, the database cached by the
``sparecores-data`` package (when installed; it is not imported), the file that
``update_catalog()`` writes in the cache directory; then the Spare Cores Keeper API (online,
unless ``RESOURCE_TRACKER_KEEPER_URL`` is ``off``); then the snapshot embedded in the package
(``_embedded``: real servers of 2026-01 and AWS on-demand prices of 2024-02; switched off by
``RESOURCE_TRACKER_EMBEDDED_CATALOG=off``). ``catalog="keeper"`` (or the environment
variable set to ``keeper``) asks the Keeper API only. Every record names its source in
``catalog_source`` and, with the date of its prices, in ``price_source``.

Catalog data: (c) Spare Cores, CC BY-SA 4.0.

This module is imported lazily (by ``recommend_server`` and the CLI): it keeps its heavy
imports (sqlite3, urllib, ...) inside functions anyway.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from .. import settings
from ..cloud import found_cloud_info
from . import _embedded
from ._base import (  # noqa: F401  (the package's names, defined below its modules)
    ENV_CACHE_DIR,
    CatalogUnavailableError,
    NoMatchingServerError,
    Server,
    _xdg_cache_home,
    cache_dir,
)

__all__ = [
    "CatalogUnavailableError",
    "NoMatchingServerError",
    "Server",
    "DEFAULT_CATALOG_URL",
    "DEFAULT_KEEPER_URL",
    "DEFAULT_EUR_USD_RATE",
    "recommend_server",
    "run_costs",
    "update_catalog",
    "catalog_info",
    "find_catalog",
    "cache_dir",
    "eur_usd_rate",
    "source_text",
    "same_architecture",
]

DEFAULT_CATALOG_URL = "https://sc-data-public-40e9d310.s3.amazonaws.com/sc-data-all.db.bz2"
DEFAULT_KEEPER_URL = "https://keeper.sparecores.net"
# USD per EUR used to compare EUR prices (hcloud, upcloud, ovh) with USD ones. An approximate
# rate of early 2026; override with eur_usd_rate= or RESOURCE_TRACKER_EUR_USD.
DEFAULT_EUR_USD_RATE = 1.17
CACHE_FILE = "sc-data-all.db"

ENV_CATALOG = "RESOURCE_TRACKER_CATALOG"
ENV_CATALOG_URL = "RESOURCE_TRACKER_CATALOG_URL"
ENV_KEEPER_URL = "RESOURCE_TRACKER_KEEPER_URL"
ENV_EUR_USD = "RESOURCE_TRACKER_EUR_USD"
KEEPER = "keeper"
HOW_TO_GET = (
    "Get one with `resource-tracker catalog update` (or resource_tracker.catalog."
    "update_catalog()), point RESOURCE_TRACKER_CATALOG or catalog= at a Spare Cores SQLite "
    "file (e.g. sc-data-all.db), install `sparecores-data`, or allow the online Keeper API "
    "(RESOURCE_TRACKER_KEEPER_URL)."
)


# -- configuration ---------------------------------------------------------------------------


# no currency pair is this far apart: a larger rate is a mistake (inf would reach the SQL)
MAX_EUR_USD_RATE = 1000.0


def eur_usd_rate(rate: Optional[float] = None) -> float:
    """USD per EUR: the argument, else RESOURCE_TRACKER_EUR_USD, else DEFAULT_EUR_USD_RATE."""
    if rate is None:
        rate = settings.get(ENV_EUR_USD)  # a positive number of USD per EUR (settings.py)
        if rate is None:
            return DEFAULT_EUR_USD_RATE
    if (
        isinstance(rate, bool)
        or not isinstance(rate, (int, float))
        or not 0 < rate <= MAX_EUR_USD_RATE
    ):
        raise ValueError(
            f"eur_usd_rate must be a positive number of USD per EUR (at most "
            f"{MAX_EUR_USD_RATE:g}), got {rate!r:.40}"
        )
    return float(rate)


def keeper_url() -> Optional[str]:
    """The Keeper base URL, or None when switched off (RESOURCE_TRACKER_KEEPER_URL=off)."""
    if not (settings.raw(ENV_KEEPER_URL) or "").strip():
        return DEFAULT_KEEPER_URL
    url: Optional[str] = settings.get(ENV_KEEPER_URL)  # None: switched off (0/false/no/off)
    return url


def catalog_url() -> str:
    """The URL of the dump that update_catalog() downloads (RESOURCE_TRACKER_CATALOG_URL)."""
    return settings.get(ENV_CATALOG_URL) or DEFAULT_CATALOG_URL


def _sparecores_data_paths() -> List[str]:
    """Where an installed sparecores-data package keeps its database (without importing it)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("sc_data")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return []
    paths: List[str] = []
    custom = settings.foreign("SC_DATA_DB_PATH")
    if custom:
        paths.append(custom)
    base = _xdg_cache_home()
    for name in ("sc-data-all.db", "sc-data-priceless.db"):
        paths.append(os.path.join(base, "sparecores-data", name))
    for folder in spec.submodule_search_locations or []:
        for name in ("sc-data-all.db", "spare_cores.db"):
            paths.append(os.path.join(folder, "data", name))
    return paths


def find_catalog(
    catalog: Optional[Union[str, os.PathLike[str]]] = None,
) -> Tuple[Optional[str], Optional[str]]:
    """(path or "keeper" or None, source): the catalog to use, by the resolution order."""
    if catalog is not None:
        given = os.fspath(catalog)
        if given == KEEPER:
            return KEEPER, "argument"
        if not os.path.isfile(given):
            raise CatalogUnavailableError(
                f"no catalog file at {given!r} (catalog= argument). {HOW_TO_GET}"
            )
        return given, "argument"
    env = settings.get(ENV_CATALOG)
    if env:
        if env == KEEPER:
            return KEEPER, ENV_CATALOG
        if not os.path.isfile(env):
            raise CatalogUnavailableError(
                f"no catalog file at {env!r} ({ENV_CATALOG}). {HOW_TO_GET}"
            )
        return env, ENV_CATALOG
    for path in _sparecores_data_paths():
        if os.path.isfile(path) and os.path.getsize(path) > 0:
            return path, "sparecores-data"
    path = os.path.join(cache_dir(), CACHE_FILE)
    if os.path.isfile(path):
        return path, "cache"
    return None, None


# -- the API -----------------------------------------------------------------------------------


def recommend_server(
    resources: Mapping[str, Any],
    *,
    n: Optional[int] = None,
    order_by: str = "price",
    catalog: Optional[str] = None,
    eur_usd_rate: Optional[float] = None,
    **filters: Any,
) -> Union[Server, List[Server]]:
    """The cheapest server that meets resources (a dict), or the best n as a list.

    resources: {'cpu': vCPUs, 'memory': MiB, 'gpu': count, 'vram': MiB (total)}.
    Filters: vendor, region/regions, country, architecture (``"same"``: this machine's, see
    :func:`same_architecture`), allocation, compliance_framework, green_energy, min_score,
    max_price (USD/hour). order_by: 'price' or 'score_per_price'.
    Raises NoMatchingServerError, CatalogUnavailableError, ValueError (bad filter).
    """
    from . import _query

    filters = same_architecture(filters)
    request = _query.Request.build(resources, n=n, order_by=order_by, filters=filters)
    rate = globals()["eur_usd_rate"](eur_usd_rate)
    path, source = find_catalog(catalog)
    if path == KEEPER:
        url = keeper_url() or DEFAULT_KEEPER_URL
        return _keeper_answer(request, url, rate, local_missing=False)
    if path is not None:
        return _tagged(_query.recommend_local(path, request, rate), source, path)
    keeper_error: Optional[CatalogUnavailableError] = None
    online = keeper_url()
    if online is not None:
        try:
            return _keeper_answer(request, online, rate, local_missing=True)
        except CatalogUnavailableError as exc:
            keeper_error = exc
    embedded = _embedded.path()
    if embedded is None:
        if keeper_error is not None:
            raise keeper_error
        raise CatalogUnavailableError(f"no server catalog found. {HOW_TO_GET}")
    return _tagged(_query.recommend_local(embedded, request, rate), _embedded.SOURCE, embedded)


def same_architecture(filters: Mapping[str, Any], run: Optional[str] = None) -> Dict[str, Any]:
    """filters with ``architecture="same"`` made the run's architecture (``run``, e.g. a
    snapshot's ``server_info["architecture"]``; None: this machine's), so that the pick runs
    the code the run ran."""
    filters = dict(filters)
    wanted = filters.get("architecture")
    if isinstance(wanted, str) and wanted.strip().lower() == "same":
        import platform

        filters["architecture"] = run or platform.machine()
    return filters


def source_text(source: Optional[str], path: Optional[str] = None) -> str:
    """One line naming a catalog source, with the date of its prices where known."""
    if source == _embedded.SOURCE:
        meta = _embedded.describe()
        return str(meta.get("description") or "snapshot embedded in resource-tracker")
    if source == KEEPER:
        return "Spare Cores Keeper API (current prices)"
    where = {"argument": "catalog=", ENV_CATALOG: ENV_CATALOG, "cache": "catalog update"}
    return f"Spare Cores catalog {path} ({where.get(source or '', source)})"


def _tagged(
    found: Union[Server, List[Server]], source: Optional[str], path: Optional[str]
) -> Union[Server, List[Server]]:
    """found (a record or a list of them) with catalog_source and price_source set."""
    text = source_text(source, path)
    for rec in found if isinstance(found, list) else [found]:
        rec["catalog_source"] = source
        rec["price_source"] = text
    return found


def _keeper_answer(
    request: Any, url: str, rate: float, local_missing: bool
) -> Union[Server, List[Server]]:
    from . import _keeper

    try:
        return _tagged(_keeper.recommend(url, request, rate), KEEPER, None)
    except CatalogUnavailableError as exc:
        if local_missing:
            raise CatalogUnavailableError(
                f"no local server catalog, and the online Keeper API failed ({exc}). {HOW_TO_GET}"
            ) from None
        raise


def run_costs(
    duration_s: Optional[float],
    cloud_info: Optional[Mapping[str, Any]],
    server: Union[Server, List[Server], None],
    catalog: Optional[str] = None,
    eur_usd_rate: Optional[float] = None,
) -> Dict[str, Any]:
    """The cost of this run (duration_s seconds) where it ran and on server, in USD.

    Keys: current_hourly_usd, current_price_note, current_price_source (the catalog and the
    date of its prices), run_cost_usd, recommended_hourly_usd, recommended_run_cost_usd,
    saving_usd, eur_usd_rate (None when unknown). Never raises for a missing catalog or an
    unknown server: the values are None and the note says why.
    """
    rate = globals()["eur_usd_rate"](eur_usd_rate)
    if isinstance(server, list):
        server = server[0] if server else None
    hours: Optional[float] = None
    try:
        if duration_s is not None and float(duration_s) >= 0:
            hours = float(duration_s) / 3600.0
    except (TypeError, ValueError):
        hours = None
    current: Optional[float] = None
    note: Optional[str] = None
    where: Optional[str] = None

    info = found_cloud_info(cloud_info)  # 'unknown': not found
    vendor, itype = info["vendor"], info["instance_type"]
    if not vendor or not itype:
        note = "not on a known cloud server"
    else:
        try:
            current, note, where = _current_price(catalog, vendor, itype, info.get("region"), rate)
        except CatalogUnavailableError:
            note = "no server catalog to look up the price of this server"
    recommended: Optional[float] = None
    if isinstance(server, dict) and server.get("price") is not None:
        recommended = float(server["price"])
    run_cost = current * hours if current is not None and hours is not None else None
    rec_cost = recommended * hours if recommended is not None and hours is not None else None
    saving = run_cost - rec_cost if run_cost is not None and rec_cost is not None else None
    return {
        "current_hourly_usd": current,
        "current_price_note": note,
        "current_price_source": where,
        "run_cost_usd": run_cost,
        "recommended_hourly_usd": recommended,
        "recommended_run_cost_usd": rec_cost,
        "saving_usd": saving,
        "eur_usd_rate": rate,
    }


def _current_price(
    catalog: Optional[str], vendor: str, itype: str, region: Optional[str], rate: float
) -> Tuple[Optional[float], Optional[str], str]:
    """(USD per hour or None, note, source line) of vendor/itype, by the resolution order."""
    from . import _query

    path, source = find_catalog(catalog)
    if path is not None and path != KEEPER:
        price, note = _query.current_price(path, vendor, itype, region, rate)
        return price, note, source_text(source, path)
    url = keeper_url() or (DEFAULT_KEEPER_URL if path == KEEPER else None)
    if url is not None:
        from . import _keeper

        price, note = _keeper.current_price(url, vendor, itype, region, rate)
        if price is not None or path == KEEPER:
            return price, note, source_text(KEEPER)
    embedded = _embedded.path()
    if embedded is None:
        raise CatalogUnavailableError("no catalog")
    price, note = _query.current_price(embedded, vendor, itype, region, rate)
    return price, note, source_text(_embedded.SOURCE)


def update_catalog(
    url: Optional[str] = None,
    timeout: float = 600.0,
    max_bytes: Optional[int] = None,
    max_seconds: Optional[float] = None,
    max_unpacked_bytes: Optional[int] = None,
) -> Dict[str, Any]:
    """Downloads the Spare Cores dump (.db.bz2, .sql.xz, .db) into the cache, atomically.

    The dump is loaded as data into a schema of our own: none of its SQL (defaults, checks,
    generated columns, views, triggers) is ever run.

    Args:
        url: http(s) address of the dump (default: catalog_url()).
        timeout: seconds one network read may wait.
        max_bytes: the most bytes downloaded (default 512 MiB).
        max_seconds: the most seconds the whole transfer may take (default 600).
        max_unpacked_bytes: the most bytes the dump may unpack to, counted while streaming
            (default: 4 GiB and at most 100 times the bytes downloaded).

    Returns a dict (path, url, bytes, servers, prices, seconds). An interrupted, corrupt,
    too large or too slow download, a redirect to another host, or a SQL dump that does more
    than create and fill tables raises CatalogUnavailableError and leaves the previous copy
    untouched; a limit that is not a positive number raises ValueError.
    """
    from . import _download

    return _download.update(
        url or catalog_url(),
        os.path.join(cache_dir(), CACHE_FILE),
        timeout,
        max_bytes=max_bytes,
        max_seconds=max_seconds,
        max_unpacked_bytes=max_unpacked_bytes,
    )


def catalog_info(catalog: Optional[str] = None) -> Dict[str, Any]:
    """Where the catalog is and what it holds, as a dict (never raises)."""
    from . import _query

    info: Dict[str, Any] = {}
    try:
        path, source = find_catalog(catalog)
    except CatalogUnavailableError as exc:
        path, source = None, None
        info["error"] = str(exc)
    if path == KEEPER:
        info.update(path=None, source=f"online Keeper API ({source})", keeper_url=keeper_url())
    elif path is None and "error" not in info and (embedded := _embedded.path()) is not None:
        info.update(path=embedded, source=_embedded.SOURCE)
        info.update(_query.describe(embedded))
        info["description"] = source_text(_embedded.SOURCE)
        order = "the online Keeper API, then " if keeper_url() else ""
        info["note"] = (
            f"no local catalog: recommendations come from {order}the embedded snapshot "
            "(dated prices). For current prices: `resource-tracker catalog update`."
        )
    elif path is None:
        if "error" not in info:
            where = "the online Keeper API" if keeper_url() else "nothing (Keeper API off)"
            info["error"] = f"no local catalog; recommendations use {where}. {HOW_TO_GET}"
        info.update(path=None, source=None)
    else:
        info.update(path=path, source=source)
        info.update(_query.describe(path))
    info["cache_dir"] = cache_dir()
    info["download_url"] = catalog_url()
    info["keeper_url"] = keeper_url() or "off"
    info["eur_usd_rate"] = eur_usd_rate()
    info["license"] = "Spare Cores data, CC BY-SA 4.0"
    return info
