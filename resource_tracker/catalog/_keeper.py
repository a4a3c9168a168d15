"""The online path: the Spare Cores Keeper REST API through the C client (csrc/keeper.c).

The request goes out through libcurl with the header ``X-Application-ID: resource-tracker``;
memory and GPU memory are sent in GiB (the resources are in MiB). The answer is parsed by
cJSON in C. Failures raise CatalogUnavailableError.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple, TypedDict, Union

from .. import _core, settings
from .._text import printable
from ._base import CatalogUnavailableError, NoMatchingServerError, Server
from ._query import _no_match_text, column_value

if TYPE_CHECKING:
    from ._query import Request


VENDORS = ("alicloud", "aws", "azure", "gcp", "hcloud", "ovh", "upcloud")
ORDER = {
    ("price", "any"): ("min_price", "asc"),
    ("price", "ondemand"): ("min_price_ondemand", "asc"),
    ("price", "spot"): ("min_price_spot", "asc"),
}
PRICE_KEY = {"any": "min_price", "ondemand": "min_price_ondemand", "spot": "min_price_spot"}
TIMEOUT_ENV = "RESOURCE_TRACKER_KEEPER_TIMEOUT"
# After a failed request the Keeper is not asked again for a while: an offline machine pays
# the connection timeout once, not in every report, summary and card of the process.
RETRY_AFTER_S = 300.0
_failure: Dict[str, Tuple[float, str]] = {}  # base_url -> (not asked until (monotonic), message)


class KeeperQuery(TypedDict):
    """The keyword arguments of _core.keeper_servers (see its stub), memory in MiB."""

    vcpus_min: int
    memory_min_mib: float
    gpu_min: int
    gpu_memory_min_mib: float
    gpu_memory_total_mib: float
    vendors: Optional[List[str]]
    regions: Optional[List[str]]
    countries: Optional[List[str]]
    architectures: Optional[List[str]]
    compliance_frameworks: Optional[List[str]]
    allocation: Optional[str]
    green_energy: bool
    price_max: float
    order_by: str
    order_dir: str
    limit: int


def _timeout() -> float:
    """Seconds per request: RESOURCE_TRACKER_KEEPER_TIMEOUT (0.1 to 600, default 10)."""
    seconds: float = settings.get(TIMEOUT_ENV)  # a number (settings.py bounds it)
    return seconds


def _call(
    base_url: str, name: str, *args: str, timeout: Optional[float] = None, **kwargs: Any
) -> object:
    """The decoded JSON answer (unchecked) of _core.<name>(base_url, ...) within timeout
    seconds (None: RESOURCE_TRACKER_KEEPER_TIMEOUT); RuntimeError when it failed (a
    remembered failure to get an answer is raised again without asking)."""
    import time

    func = getattr(_core, name, None)
    if func is None:  # a build without libcurl and cJSON (csrc/platform.h)
        raise RuntimeError("this build of resource-tracker has no Keeper API client (non-Linux)")
    until, message = _failure.get(base_url, (0.0, ""))
    if time.monotonic() < until:
        raise _core.KeeperNoAnswerError(f"{message} (not asked again for {RETRY_AFTER_S:.0f} s)")
    try:
        seconds = _timeout() if timeout is None else timeout
        _url, answer = func(base_url, *args, timeout=seconds, **kwargs)
        return answer
    except _core.KeeperNoAnswerError as exc:
        _failure[base_url] = (time.monotonic() + RETRY_AFTER_S, str(exc))
        raise


def query_args(req: Request) -> KeeperQuery:
    """The keyword arguments of _core.keeper_servers for the request (memory still in MiB)."""
    if req.vendors is not None:
        bad = [v for v in req.vendors if v not in VENDORS]
        if bad:
            raise ValueError(
                f"unknown vendor {', '.join(repr(b) for b in bad)}; valid: {', '.join(VENDORS)}"
            )
    if req.architectures is not None:
        bad = [a for a in req.architectures if a not in ("x86_64", "arm64")]
        if bad:
            raise ValueError(
                f"unknown architecture {', '.join(repr(b) for b in bad)}; valid: x86_64, arm64"
            )
    order_by, order_dir = ORDER.get((req.order_by, req.allocation), ("score_per_price", "desc"))
    limit = req.n or 1
    if req.min_score is not None:
        limit = max(limit, 50)  # min_score is applied here, on the answer
    return KeeperQuery(
        vcpus_min=int(max(req.cpu, 1)),
        memory_min_mib=float(req.memory),
        gpu_min=int(req.gpu),
        gpu_memory_min_mib=float(req.vram_each_gpu),
        gpu_memory_total_mib=float(req.vram),
        vendors=req.vendors,
        regions=req.regions,
        countries=req.countries,
        architectures=req.architectures,
        compliance_frameworks=req.compliance,
        allocation=None if req.allocation == "any" else req.allocation,
        green_energy=bool(req.green_energy),
        price_max=float(req.max_price or 0.0),
        order_by=order_by,
        order_dir=order_dir,
        limit=int(limit),
    )


def _normalise(item: Mapping[str, Any], req: Request) -> Server:
    rec = dict(item)
    price = rec.get("price")
    if price is None:
        price = rec.get(PRICE_KEY[req.allocation])
    rec["price"] = price
    for key in ("score", "min_price", "min_price_spot", "min_price_ondemand", "score_per_price"):
        rec.setdefault(key, None)
    if rec["score_per_price"] is None and rec["score"] is not None and price:
        rec["score_per_price"] = rec["score"] / price
    rec.setdefault("selected_benchmark_score", None)
    rec.setdefault("selected_benchmark_score_per_price", None)
    for key, value in rec.items():
        rec[key] = column_value(key, value)
    rec["catalog_source"] = "keeper"
    return rec


def recommend(base_url: str, req: Request, rate: float) -> Union[Server, List[Server]]:
    """recommend_server() answered by the Keeper at base_url (records in the Spare Cores
    shape as the Keeper sends them, the price keys normalised)."""
    args = query_args(req)
    try:
        answer = _call(base_url, "keeper_servers", **args)
    except (RuntimeError, ValueError) as exc:  # ValueError: undecodable text in the answer
        raise CatalogUnavailableError(printable(exc)) from None
    if isinstance(answer, dict):  # some API versions wrap the list
        answer = answer.get("servers") or answer.get("items") or answer.get("data") or []
    if not isinstance(answer, list):
        raise CatalogUnavailableError(f"unexpected Keeper answer from {base_url}: not a list")
    records = [_normalise(x, req) for x in answer if isinstance(x, dict)]
    records = [r for r in records if r["price"] is not None]
    if req.min_score is not None:
        records = [r for r in records if r["score"] is not None and r["score"] >= req.min_score]
    if req.max_price is not None:
        records = [r for r in records if r["price"] <= req.max_price]
    if not records:
        raise NoMatchingServerError(_no_match_text(req) + " (Keeper API)")
    if req.n is None:
        return records[0]
    return records[: req.n]


def answer_of(base_url: str, path: str, timeout: Optional[float] = None) -> object:
    """The decoded JSON answer of GET base_url/path (a query included) within timeout seconds
    (None: RESOURCE_TRACKER_KEEPER_TIMEOUT); RuntimeError when no good answer came, ValueError
    for a path a URL cannot carry as is or a timeout outside (0, 600]."""
    return _call(base_url, "keeper_path", path, timeout=timeout)


def current_price(
    base_url: str, vendor: str, instance_type: str, region: Optional[str], rate: float
) -> Tuple[Optional[float], Optional[str]]:
    """(USD per hour or None, note): the on-demand price of the server from the Keeper."""
    try:
        rows = _call(base_url, "keeper_prices", vendor, instance_type)
    except (RuntimeError, ValueError) as exc:
        return None, f"no price: {exc}"
    if not isinstance(rows, list):
        return None, "no price: unexpected Keeper answer"

    def usd(row: Mapping[str, object]) -> Optional[float]:
        cur = row.get("currency", "USD")
        price = row.get("price")
        if not isinstance(price, (int, float)) or cur not in ("USD", "EUR"):
            return None
        return float(price) * (rate if cur == "EUR" else 1.0)

    ondemand = [  # (USD per hour, price row)
        (price, r)
        for r in rows
        if isinstance(r, dict)
        and str(r.get("allocation", "")).upper() == "ONDEMAND"
        and (price := usd(r))
    ]
    if region:
        here = [p for p, r in ondemand if region in (r.get("region_id"), _api_ref(r))]
        if here:
            note = f"on-demand price of {vendor} {instance_type} in {region} (Keeper API)"
            return min(here), note
    if ondemand:
        where = f"no price in {region}" if region else "region unknown"
        note = f"cheapest on-demand price of {vendor} {instance_type} in any region ({where}"
        return min(p for p, _r in ondemand), note + "; Keeper API)"
    return None, f"the Keeper has no on-demand price for {vendor} {instance_type}"


def _api_ref(row: Mapping[str, object]) -> object:
    region = row.get("region")
    return region.get("api_reference") if isinstance(region, dict) else None
