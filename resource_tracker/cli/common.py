"""What the commands share: the program's name, the one-line error, stderr, snapshots."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from .._regular_file import FileTooLarge, read_regular
from .._text import printable, well_formed
from ..tracker import ResourceTracker

if TYPE_CHECKING:
    from ..report import Report
    from ..tracker import ResourceTracker

PROG = "resource-tracker"
FORMATS = ("html", "json", "csv")
COMMANDS = ("run", "report", "stats", "recommend", "watch", "catalog")
SNAPSHOT_NAME = "resource-tracker.json"


class CliError(Exception):
    """An error shown to the user as one line, with exit status 2 (or ``status``)."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


def error_line(message: str) -> str:
    """The one error line: 'resource-tracker run: ...' or 'resource-tracker: ...'."""
    first = message.split(":", 1)[0]
    if message.startswith(PROG):
        return message
    if first in COMMANDS:
        return f"{PROG} {message}"
    return f"{PROG}: {message}"


def say(text: str) -> None:
    """Writes text to stderr, each line made printable (_text.printable) and cut to 4000
    characters."""
    lines = (printable(line, limit=4000) for line in str(text).split("\n"))
    try:
        print("\n".join(lines), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def out(text: str) -> None:
    """Writes text to stdout made printable (_text.printable): every line a command prints
    passes here, so no string from outside (a snapshot's command, a catalog's server name)
    reaches the terminal with its escape sequences."""
    print(printable(text, limit=None))


def json_text(value: object, sort_keys: bool = False) -> str:
    """value as strict JSON for stdout: NaN and infinities (a column with gaps, a damaged
    figure) as null, lone surrogates as U+FFFD, what JSON has no type for as its str()."""
    import json
    import math

    def finite(v: object) -> object:
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        if isinstance(v, str):  # no lone surrogate (a file name that is not UTF-8)
            return well_formed(v)
        if isinstance(v, dict):
            return {well_formed(str(k)): finite(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [finite(x) for x in v]
        return v

    return json.dumps(finite(value), indent=2, sort_keys=sort_keys, default=str, allow_nan=False)


def quiet_stdout() -> None:
    """Points stdout at /dev/null (after a broken pipe, so that exit does not complain)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def short(text: str, width: int = 60) -> str:
    """text on one line, cut to width characters."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def load_snapshot(path: str) -> ResourceTracker:
    """The tracker saved in path; CliError (one line) when it cannot be read. A file larger
    than the snapshot size limit (RESOURCE_TRACKER_MAX_SNAPSHOT_MIB) is refused unread, and so
    is a FIFO or a device (``_regular_file.read_regular``: never opened, never blocks)."""
    from .._stored import snapshot_limit, too_large

    try:
        limit = snapshot_limit()
        text = read_regular(path, limit).decode("utf-8-sig")  # a UTF-8 BOM is taken off
    except FileTooLarge as exc:
        raise CliError(f"cannot read {path}: {too_large(exc.size, limit)}") from None
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CliError(f"cannot read {path}: not a resource-tracker snapshot (not text)") from None
    except ValueError as exc:  # an invalid RESOURCE_TRACKER_MAX_SNAPSHOT_MIB, a NUL in path
        raise CliError(str(exc).splitlines()[0]) from None
    try:
        return ResourceTracker.loads(text)
    except ValueError as exc:
        raise CliError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None


def render_report(
    tracker: ResourceTracker, historical_stats: Optional[Sequence[Mapping[str, Any]]] = None
) -> Report:
    """The HTML Report of tracker; CliError when the report package is unavailable."""
    try:
        from ..report import render_report as render
    except ImportError as exc:
        raise CliError(f"the HTML report is not available in this installation ({exc})") from None
    report: Report = render(tracker, historical_stats=historical_stats)
    return report


def write_text(path: str, text: str) -> None:
    """Writes text to path through a temporary file (never a half-written file)."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
