"""`catalog`: the Spare Cores server catalog: update it or show where it is."""

from __future__ import annotations

import argparse

from .common import PROG, CliError, json_text, out, say
from .parser import FORMATTER

EXAMPLES = f"""\
examples:
  {PROG} catalog info
  {PROG} catalog update
  RESOURCE_TRACKER_CATALOG=/data/sc-data-all.db {PROG} catalog info

Exit status: 0; 1 when `info` finds an error (it still prints what it knows); 2 when
`update` fails.
"""


def add_parser(sub) -> argparse.ArgumentParser:
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
    return catalog


def main(args: argparse.Namespace) -> int:
    """`catalog update|info`: 0 on success; 1 when `info` reports an error (it still prints
    everything it knows); 2 when the action fails."""
    from .servers import import_catalog

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
    try:
        result = func()
    except Exception as exc:
        raise CliError(
            f"catalog {args.action}: {str(exc).splitlines()[0] if str(exc) else exc}"
        ) from None
    _print(result, args.json)
    if isinstance(result, dict) and result.get("error"):
        say(f"{PROG} catalog {args.action}: {str(result['error']).splitlines()[0]}")
        return 1
    return 0


def _print(result, as_json: bool) -> None:
    """Prints the action's result: JSON, or 'key  value' lines."""
    if as_json:
        out(json_text(result))
    elif isinstance(result, dict):
        width = max((len(str(k)) for k in result), default=0)
        for key, value in result.items():
            out(f"{key:<{width}}  {value}")
    elif result is not None:
        out(result)
