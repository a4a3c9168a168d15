"""`catalog`: the Spare Cores server catalog: update it or show where it is."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Dict, Optional

from .common import PROG, CliError, json_text, out, say
from .parser import FORMATTER
from .servers import import_catalog

if TYPE_CHECKING:
    from .parser import SubParsers

EXAMPLES = f"""\
examples:
  {PROG} catalog info
  {PROG} catalog update
  {PROG} catalog update --max-download-mib 1024 --max-unpacked-mib 8192 --max-seconds 1800
  RESOURCE_TRACKER_CATALOG=/data/sc-data-all.db {PROG} catalog info

Exit status: 0; 1 when `info` finds an error (it still prints what it knows); 2 when
`update` fails.
"""


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """The `catalog` sub-parser."""
    catalog = sub.add_parser(
        "catalog",
        help="the Spare Cores server catalog: update it or show where it is",
        description="Manage the local copy of the Spare Cores server catalog.",
        epilog=EXAMPLES,
        formatter_class=FORMATTER,
    )
    catalog.add_argument("action", choices=("update", "info"), help="update: download it; "
                         "info: where it is, its age and size")  # fmt: skip
    catalog.add_argument("--json", action="store_true", help="print the result as JSON")
    limits = catalog.add_argument_group("download limits (update)")
    limits.add_argument(
        "--max-download-mib",
        type=_positive,
        metavar="MIB",
        help="the most MiB downloaded (default 512)",
    )
    limits.add_argument(
        "--max-unpacked-mib",
        type=_positive,
        metavar="MIB",
        help="the most MiB the dump may unpack to, checked while unpacking "
        "(default 4096, and at most 100 times the download)",
    )
    limits.add_argument(
        "--max-seconds",
        type=_positive,
        metavar="S",
        help="the most seconds the whole download may take (default 600)",
    )
    return catalog  # fmt: skip


def _positive(text: str) -> float:
    """argparse type: a positive finite number."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r:.40}")
    return value


def _limits(args: argparse.Namespace) -> Dict[str, float]:
    """The keyword arguments of update_catalog() given on the command line."""
    mib = 1 << 20
    given: Dict[str, Optional[float]] = {
        "max_bytes": args.max_download_mib and int(args.max_download_mib * mib),
        "max_unpacked_bytes": args.max_unpacked_mib and int(args.max_unpacked_mib * mib),
        "max_seconds": args.max_seconds,
    }
    return {k: v for k, v in given.items() if v}


def main(args: argparse.Namespace) -> int:
    """`catalog update|info`: 0 on success; 1 when `info` reports an error (it still prints
    everything it knows); 2 when the action fails."""
    catalog = import_catalog()
    if catalog is None:
        raise CliError(
            "catalog: the server catalog is not part of this installation "
            "(no resource_tracker.catalog module)"
        )
    name = "update_catalog" if args.action == "update" else "catalog_info"
    func = getattr(catalog, name, None)
    if func is None:
        raise CliError(f"catalog: this installation has no resource_tracker.catalog.{name}")
    kwargs = _limits(args) if args.action == "update" else {}
    try:
        result = func(**kwargs)
    except Exception as exc:
        raise CliError(
            f"catalog {args.action}: {str(exc).splitlines()[0] if str(exc) else exc}"
        ) from None
    _print(result, args.json)
    if isinstance(result, dict) and result.get("error"):
        say(f"{PROG} catalog {args.action}: {str(result['error']).splitlines()[0]}")
        return 1
    return 0


def _print(result: object, as_json: bool) -> None:
    """Prints the action's result: JSON, or 'key  value' lines."""
    if as_json:
        out(json_text(result))
    elif isinstance(result, dict):
        width = max((len(str(k)) for k in result), default=0)
        for key, value in result.items():
            out(f"{key:<{width}}  {value}")
    elif result is not None:
        out(str(result))
