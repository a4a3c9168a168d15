"""`report`: render the HTML report of a saved run."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from .common import PROG, CliError, load_snapshot, render_report, say
from .common import out as write_out
from .parser import FORMATTER

if TYPE_CHECKING:
    from .parser import SubParsers

EXAMPLES = f"""\
examples:
  {PROG} report resource-tracker.json
  {PROG} report runs/resource-tracker.json -o runs/report.html --browse
"""


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """The `report` sub-parser."""
    report = sub.add_parser(
        "report",
        help="render the HTML report of a saved run",
        description="Render the HTML report of a snapshot written by 'run' (or dumps()).",
        epilog=EXAMPLES,
        formatter_class=FORMATTER,
    )
    report.add_argument("snapshot", metavar="SNAPSHOT")
    report.add_argument(
        "-o", "--output", metavar="FILE", help="where to write (default: SNAPSHOT with .html)"
    )
    report.add_argument("--browse", action="store_true", help="open it in the web browser")
    return report


def main(args: argparse.Namespace) -> int:
    """`report`: writes the HTML report of a snapshot; 0 on success."""
    tracker = load_snapshot(args.snapshot)
    out = args.output or os.path.splitext(args.snapshot)[0] + ".html"
    try:
        report = render_report(tracker)
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"report: cannot render {args.snapshot}: {exc}") from None
    try:
        report.save(out)
    except OSError as exc:
        raise CliError(f"report: cannot write {out}: {exc.strerror or exc}") from None
    except Exception as exc:
        raise CliError(f"report: cannot render {args.snapshot}: {exc}") from None
    write_out(out)
    if args.browse:
        _browse(out)
    return 0


def _browse(path: str) -> None:
    """Opens the report in the web browser (a note on stderr when there is none)."""
    import pathlib

    from ..report._browse import open_in_browser

    if not open_in_browser(pathlib.Path(path).resolve().as_uri()):
        say(f"{PROG}: no web browser found; the report is at {path}")
