"""Text from outside (a server's answer, a file, a process's command line) made safe to print:
control characters, ANSI escape sequences among them, are taken out, and so are the invisible
format characters (Unicode's Cf, the line and paragraph separators): a right-to-left override
(U+202E) would show a terminal line or a page in another order than it is. A lone surrogate
(what a file name that is not UTF-8 decodes to) becomes U+FFFD: it cannot be written as UTF-8,
and a browser fed one in a page's JSON may die.

``printable`` is the one rule: the command-line tool passes every line it writes to a terminal
through it (``resource_tracker.cli.common``: ``out`` for stdout, ``say`` for stderr), the pages
their text from outside, and the library's own error texts of outside origin (a Keeper answer)
go through it too."""

from __future__ import annotations

import re
from typing import Any, Optional

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI), and the rest of
# an escape sequence's introducer once ESC is gone ("[31m" after ESC stays readable text);
# then the format characters (Unicode 15's Cf: soft hyphen, Arabic number signs, zero-width
# ones, bidi embeddings, overrides and isolates, word joiners, BOM, interlinear annotation,
# tags) and U+2028/U+2029
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
    "|[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """text with every lone surrogate as U+FFFD: valid Unicode, so valid UTF-8 and JSON that
    every reader takes (the other characters kept: data, not a terminal line)."""
    return _SURROGATE.sub("\ufffd", text)


def well_formed_data(value: Any) -> Any:
    """value with every text in it well formed (the keys and items of its dicts, lists and
    tuples, at any depth); other values as they are. For JSON written into a page."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, dict):
        return {well_formed_data(k): well_formed_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [well_formed_data(v) for v in value]
    return value


def printable(text: object, limit: Optional[int] = 2000) -> str:
    """str(text) without control characters, escape sequences and format characters (tab and
    newline stay), lone surrogates as U+FFFD, at most limit characters (None: no limit)."""
    cleaned = well_formed(_CONTROL.sub("", str(text)))
    return cleaned if limit is None or len(cleaned) <= limit else cleaned[:limit] + "..."


def one_line(text: object, limit: Optional[int] = 2000) -> str:
    """printable(text) on one line: its newlines and tabs as spaces (a file or step name
    holding a newline cannot split a line that is one per thing)."""
    return printable(str(text).replace("\n", " ").replace("\t", " "), limit)
