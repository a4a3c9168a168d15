"""What the commands share: the program's name, the one-line error, stderr, snapshots."""

from __future__ import annotations

import os
import sys

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
    """Writes one line to stderr (control characters of foreign text taken out)."""
    from .._text import printable

    try:
        print(printable(text, limit=4000), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


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


def load_snapshot(path: str):
    """The tracker saved in path; CliError (one line) when it cannot be read."""
    from ..tracker import ResourceTracker

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CliError(f"cannot read {path}: not a resource-tracker snapshot (not text)") from None
    try:
        return ResourceTracker.loads(text)
    except (ValueError, TypeError, KeyError) as exc:
        raise CliError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None


def render_report(tracker, historical_stats=None):
    """The HTML Report of tracker; CliError when the report package is unavailable."""
    try:
        from ..report import render_report as render
    except ImportError as exc:
        raise CliError(f"the HTML report is not available in this installation ({exc})") from None
    return render(tracker, historical_stats=historical_stats)


def write_text(path: str, text: str) -> None:
    """Writes text to path through a temporary file (never a half-written file)."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
