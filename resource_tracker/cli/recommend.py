"""`recommend`: resources and a server from one or more saved runs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Union

from . import recommend_metaflow
from .common import PROG, CliError, json_text, load_snapshot, out
from .parser import FORMATTER, positive_int
from .servers import find_servers

if TYPE_CHECKING:
    from ..catalog import Server
    from .parser import SubParsers

#: The value of one catalog filter option (None: not given).
FilterValue = Union[None, str, List[str], bool, float]

EXAMPLES = f"""\
examples:
  {PROG} recommend resource-tracker.json
  {PROG} recommend today.json yesterday.json last-week.json --vendor aws --allocation spot
  {PROG} recommend run.json --architecture arm64 --region eu-central-1 --json
  {PROG} recommend --metaflow MyFlow      (every tracked step of the flow's recent runs)

The first snapshot is the current run; the others are earlier runs of the same job
(CPU: mean of the means; memory, GPU and VRAM: the highest peak).
Exit status: 0 with a server; 1 without one (no catalog, or nothing fits: the reason is
printed); 2 for a bad option value (e.g. an unknown --vendor).
"""


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """The `recommend` sub-parser."""
    rec = sub.add_parser(
        "recommend",
        help="recommend resources and a server from one or more saved runs",
        description="Recommend resources (and the cheapest fitting server, when a catalog is "
        "available) from one or more snapshots of the same job.",
        epilog=EXAMPLES,
        formatter_class=FORMATTER,
    )
    rec.add_argument("snapshots", nargs="*", metavar="SNAPSHOT")
    recommend_metaflow.add_arguments(rec)
    _add_filters(rec)
    rec.add_argument(
        "--order-by", choices=("price", "score_per_price"), default="price",
        help="cheapest first (default) or best performance per price",
    )  # fmt: skip
    rec.add_argument("--catalog", metavar="PATH", help="a Spare Cores SQLite catalog file")
    rec.add_argument("-n", type=positive_int, metavar="N", help="list the best N servers")
    rec.add_argument("--json", action="store_true", help="print the result as JSON")
    return rec


def _add_filters(rec: argparse.ArgumentParser) -> None:
    """The server filters: vendor, region, country, allocation, architecture, ..."""
    rec.add_argument(
        "--vendor", action="append",
        help="e.g. aws, gcp, azure, hcloud, upcloud, ovh, alicloud (repeat for several)",
    )  # fmt: skip
    rec.add_argument(
        "--region", action="append", help="a region id of the vendor, e.g. us-east-1 (repeat)"
    )
    rec.add_argument("--country", action="append", help="a country code, e.g. DE (repeat)")
    rec.add_argument("--allocation", choices=("ondemand", "spot", "any"), help="price type")
    rec.add_argument(
        "--architecture", help="x86_64, arm64, or same (the run's: the first snapshot's)"
    )
    rec.add_argument("--compliance-framework", help="e.g. hipaa, iso27001, soc2t2")
    rec.add_argument(
        "--green-energy", action="store_true", help="only regions powered by green energy"
    )
    rec.add_argument("--min-score", type=float, metavar="SCORE", help="lowest benchmark score")
    rec.add_argument("--max-price", type=float, metavar="USD", help="highest hourly price")


def main(args: argparse.Namespace) -> int:
    """`recommend`: prints resources and a server for the runs; 0 with a server, 1 without
    one (no catalog, nothing fits: the reason is printed), 2 for a bad option value."""
    if args.metaflow:
        if args.snapshots:
            raise CliError("recommend: give SNAPSHOTs or --metaflow FLOW, not both")
        return recommend_metaflow.main(args)
    if not args.snapshots:
        raise CliError("recommend: give one or more SNAPSHOTs (or --metaflow FLOW)")
    trackers = [load_snapshot(path) for path in args.snapshots]
    history = [t.stats() for t in trackers[1:]]
    try:
        resources = trackers[0].recommend_resources(historical_stats=history)
    except ValueError as exc:
        raise CliError(f"recommend: {exc}") from None
    run_arch = (trackers[0].server_info or {}).get("architecture")
    filters = _filters(args)
    if str(filters.get("architecture") or "").lower() == "same":
        from ..catalog import same_architecture

        filters = same_architecture(filters, run_arch)
    found, why = find_servers(resources, n=args.n, strict=True, **filters)
    status = 0 if found is not None else 1
    if args.json:
        result = {"runs": len(trackers), "resources": resources, "server": found, "note": why}
        out(json_text(result))
    else:
        _print(len(trackers), resources, found, why, run_arch)
    return status


def _filters(args: argparse.Namespace) -> Dict[str, FilterValue]:
    """The catalog filters of the options (None: not given)."""
    filters: Dict[str, FilterValue] = dict(
        vendor=_one_or_list(args.vendor),
        regions=args.region,
        country=_one_or_list(args.country),
        allocation=args.allocation,
        architecture=args.architecture,
        compliance_framework=args.compliance_framework,
        green_energy=True if args.green_energy else None,
        min_score=args.min_score,
        max_price=args.max_price,
        catalog=args.catalog,
    )
    if args.order_by != "price":
        filters["order_by"] = args.order_by
    return filters


def _one_or_list(values: Optional[List[str]]) -> Union[None, str, List[str]]:
    """None, the single value, or the list of a repeatable option."""
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _print(
    runs: int,
    resources: Mapping[str, Any],
    found: Union[Server, List[Server], None],
    why: Optional[str],
    run_arch: Optional[str] = None,
) -> None:
    """The result as text lines."""
    from .summary import describe_resources, describe_server

    out(f"runs        {runs}")
    out(f"resources   {describe_resources(resources)}")
    if found is None:
        out(f"server      {why}")
    elif isinstance(found, list):
        for i, server in enumerate(found, 1):
            out(f"server {i:<4} {describe_server(server, run_arch)}")
    else:
        out(f"server      {describe_server(found, run_arch)}")
    first = found[0] if isinstance(found, list) and found else found
    if isinstance(first, dict) and first.get("price_source"):
        out(f"prices      {first['price_source']}")
