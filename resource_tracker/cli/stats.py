"""`stats`: show the statistics of a saved run."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .common import PROG, json_text, load_snapshot, out, short
from .parser import FORMATTER

if TYPE_CHECKING:
    from .parser import SubParsers

EXAMPLES = f"""\
examples:
  {PROG} stats resource-tracker.json
  {PROG} stats resource-tracker.json --json | python -m json.tool
"""


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """The `stats` sub-parser."""
    stats = sub.add_parser(
        "stats",
        help="show the statistics of a saved run",
        description="Show the statistics of a snapshot: the summary, or stats() as JSON.",
        epilog=EXAMPLES,
        formatter_class=FORMATTER,
    )
    stats.add_argument("snapshot", metavar="SNAPSHOT")
    stats.add_argument("--json", action="store_true", help="print stats() as JSON")
    return stats


def main(args: argparse.Namespace) -> int:
    """`stats`: prints the statistics of a snapshot; 0."""
    from .summary import describe_status, summary_lines

    tracker = load_snapshot(args.snapshot)
    if args.json:
        out(json_text(tracker.stats(), sort_keys=True))
        return 0
    status = tracker.extra.get("exit_status")
    head = f"{args.snapshot}: `{short(tracker.command or str(tracker.pid))}`"
    if status is not None:
        head += " " + describe_status(status)
    out("\n".join([head] + summary_lines(tracker, server=False)))
    return 0
