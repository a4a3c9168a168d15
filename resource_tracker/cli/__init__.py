"""The command-line tool: ``resource-tracker`` (also ``python -m resource_tracker``).

Commands: ``run`` (track any command), ``report`` / ``stats`` / ``recommend`` (work on saved
runs), ``watch`` (a live view) and ``catalog`` (the Spare Cores server catalog). Every error
is one line on stderr with a non-zero exit status (2 for usage errors); ``run`` exits with
the tracked command's status, 127 when it is not found and 126 when it cannot be executed.

One module per command (``run``, ``report``, ``stats``, ``recommend``, ``watch``,
``catalog``: each has ``add_parser()`` and ``main(args)``), the parser in ``parser``, the
summary and watch lines in ``summary``, the catalog lookups in ``servers``, what they share
in ``common``. The process supervision of ``run`` is ``resource_tracker.supervise`` (the
library's ``ResourceTracker.run()`` uses it too).

This package is not imported by ``resource_tracker/__init__.py``: its imports (argparse,
subprocess, ...) cost nothing to users of the Python API.
"""

from __future__ import annotations

import sys
from typing import Optional, Sequence, TextIO, Type, Union

from . import catalog, dashboard, recommend, report, run, stats, watch
from .common import PROG, CliError, error_line, quiet_stdout, say
from .parser import build_parser

__all__ = ["main", "CliError"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the tool with argv (default: sys.argv[1:]); returns the exit status."""
    if argv is None:
        argv = sys.argv[1:]
    _one_line_warnings()
    try:
        parser = build_parser((run, report, stats, recommend, watch, catalog, dashboard))
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, --version
            return exc.code if isinstance(exc.code, int) else 0
        if args.cmd is None:
            parser.print_help(sys.stderr)
            return 2
        status: int = args.handler(args)  # the command module's main(args)
        return status
    except CliError as exc:
        say(error_line(str(exc)))
        return exc.status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        quiet_stdout()
        return 0


def _one_line_warnings() -> None:
    """Warnings (e.g. a SettingWarning on a mistyped on/off variable) as one stderr line."""
    import warnings

    def show(
        message: Union[Warning, str],
        category: Type[Warning],
        filename: str,
        lineno: int,
        file: Optional[TextIO] = None,
        line: Optional[str] = None,
    ) -> None:
        say(f"{PROG}: warning: {message}")

    warnings.showwarning = show
