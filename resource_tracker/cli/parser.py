"""The parser: the tool's options, the argument types, and one sub-parser per command (each
command module's ``add_parser``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, NoReturn, Sequence, Tuple

from .._launch import MAX_INTERVAL, MIN_INTERVAL
from .._version import __version__
from ..settings import parse_name
from .common import FORMATS, PROG, CliError

MAIN_EXAMPLES = f"""\
examples:
  {PROG} run -- python train.py
  {PROG} report resource-tracker.json --browse
  {PROG} recommend resource-tracker.json --vendor aws
  {PROG} watch --pid 4242

'{PROG} COMMAND --help' shows the options and examples of each command.
"""

#: Help text layout of every (sub-)parser: the examples' lines as written.
FORMATTER = argparse.RawDescriptionHelpFormatter


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{self.prog}: {message} (see '{self.prog} --help')")


if TYPE_CHECKING:
    #: What each command module's add_parser(sub) adds its sub-parser to.
    SubParsers = argparse._SubParsersAction[Parser]


def build_parser(commands: Sequence[Any]) -> Parser:
    """The argparse parser of the whole tool, one sub-parser per module of ``commands``
    (each has ``add_parser`` and ``main``; passed in, as they import this module);
    ``args.handler(args)`` runs the command."""
    parser = Parser(
        prog=PROG,
        description="Track the CPU, memory, GPU, disk and network use of a command, and find "
        "the resources and the cheapest cloud server it needs.",
        epilog=MAIN_EXAMPLES,
        formatter_class=FORMATTER,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND")
    for command in commands:
        command.add_parser(sub).set_defaults(handler=command.main)
    return parser


# -- argument types ----------------------------------------------------------------------


def interval(text: str) -> float:
    """The interval option as a float within the tracker's bounds."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not MIN_INTERVAL <= value <= MAX_INTERVAL:
        raise argparse.ArgumentTypeError(
            f"invalid interval {text!r}: give a number of seconds between {MIN_INTERVAL:g} and "
            f"{MAX_INTERVAL:g}, e.g. 0.5"
        )
    return value


def add_interval(parser: argparse.ArgumentParser) -> None:
    """The --interval option (run, watch)."""
    parser.add_argument(
        "--interval",
        type=interval,
        default=1.0,
        metavar="S",
        help="seconds between samples (default 1)",
    )


def formats(text: str) -> Tuple[str, ...]:
    """The --format option as a tuple of known formats ('none' for no files)."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if names == ["none"]:
        return ()
    unknown = [n for n in names if n not in FORMATS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"invalid format {text!r}: choose from {','.join(FORMATS)} (comma-separated) or none"
        )
    return tuple(dict.fromkeys(names))


def export_targets(text: str) -> str:
    """The --export option: a comma list of export targets ('none': no export)."""
    from ..export import parse_targets

    try:
        return ",".join(parse_targets(text, "--export"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_int(text: str, what: str = "count", hint: str = "give a positive integer") -> int:
    """An option value as a positive int (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"invalid {what} {text!r}: {hint}")
    return value


def pid(text: str) -> int:
    """The --pid option as a positive int."""
    return positive_int(text, "pid", "give a process id, e.g. 1234")


def job_name(text: str) -> str:
    """The --job option: the job's name (settings.parse_name's rule)."""
    try:
        return parse_name(text, "--job")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
