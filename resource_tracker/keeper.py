"""The Spare Cores Keeper API helpers that code written for the original package (0.4/0.5)
imports from ``resource_tracker.keeper``, asked through this package's Keeper client (the C
client of csrc/keeper.c: libcurl, the ``X-Application-ID: resource-tracker`` header, cJSON).

The Keeper asked is the configured one (``RESOURCE_TRACKER_KEEPER_URL``; ``off``: none is
asked and the helpers answer None or ``[]``). A Keeper that gave no answer is not asked again
for a while, as everywhere in this package (docs/catalog.md). For a recommendation from the
local catalog, the Keeper or the embedded snapshot, use ``recommend_server()``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .catalog import (
    CatalogUnavailableError,
    NoMatchingServerError,
    _keeper,
    eur_usd_rate,
    keeper_url,
    recommend_server,
)

__all__ = ["get_instance_price", "get_recommended_cloud_servers", "keeper_request"]


def keeper_request(path: str, timeout: float = 2, endpoint: Optional[str] = None) -> Any:
    """The decoded JSON answer (a dict or a list) of GET ``endpoint`` + ``path`` (a query
    included), or None when no good answer came within ``timeout`` seconds (unreachable, an
    HTTP error, not JSON, a bad path or timeout). ``endpoint`` None: the configured Keeper
    (None at once when it is switched off)."""
    base = endpoint if endpoint is not None else keeper_url()
    if base is None:
        return None
    try:
        return _keeper.answer_of(base, path, timeout=float(timeout))
    except (RuntimeError, ValueError, TypeError):
        return None


def get_instance_price(vendor_id: str, region_id: str, instance_type: str) -> Optional[float]:
    """USD per hour of the on-demand price of ``instance_type`` of ``vendor_id`` in
    ``region_id`` from the Keeper's ``/server/{vendor}/{server}/prices``; where that region
    has no price, the cheapest on-demand price in any region; None when there is none or no
    answer came. Prices in EUR are converted (``eur_usd_rate()``)."""
    base = keeper_url()
    if base is None:
        return None
    price, _note = _keeper.current_price(
        base, vendor_id, instance_type, region_id or None, eur_usd_rate()
    )
    return price


def get_recommended_cloud_servers(
    cpu: int, memory: int, gpu: Optional[int] = None, vram: Optional[int] = None, n: int = 10
) -> List[Dict[str, Any]]:
    """The ``n`` servers with the lowest on-demand price that have at least ``cpu`` vCPUs,
    ``memory`` MiB, ``gpu`` GPUs and ``vram`` GiB of GPU memory in all, cheapest first, as
    the Keeper lists them (each with ``price``: USD per hour on demand); ``[]`` when none
    fits or no answer came. Arguments that are not numbers raise ValueError."""
    if keeper_url() is None:
        return []
    resources = {"cpu": cpu, "memory": memory, "gpu": gpu or 0, "vram": (vram or 0) * 1024}
    try:
        found = recommend_server(resources, n=n, catalog="keeper", allocation="ondemand")
    except (CatalogUnavailableError, NoMatchingServerError):
        return []
    return list(found) if isinstance(found, list) else [found]
