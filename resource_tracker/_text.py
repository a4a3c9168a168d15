"""Text from outside (a server's answer, a file, a process's command line) made safe to print:
control characters, ANSI escape sequences among them, are taken out.

``printable`` is the one rule: the command-line tool passes every line it writes to a terminal
through it (``resource_tracker.cli.common``: ``out`` for stdout, ``say`` for stderr), and the
library's own error texts of outside origin (a Keeper answer) go through it too."""

from __future__ import annotations

import re
from typing import Optional

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI), and the rest of
# an escape sequence's introducer once ESC is gone ("[31m" after ESC stays readable text)
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def printable(text: object, limit: Optional[int] = 2000) -> str:
    """str(text) without control characters and escape sequences (tab and newline stay), at
    most limit characters (None: no limit)."""
    cleaned = _CONTROL.sub("", str(text))
    return cleaned if limit is None or len(cleaned) <= limit else cleaned[:limit] + "..."
