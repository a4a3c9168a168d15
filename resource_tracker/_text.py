"""Text from outside (a server's answer, a file, a process's command line) made safe to print:
control characters, ANSI escape sequences among them, are taken out."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI), and the rest of
# an escape sequence's introducer once ESC is gone ("[31m" after ESC stays readable text)
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def printable(text: object, limit: int = 2000) -> str:
    """str(text) without control characters and escape sequences, at most limit characters."""
    cleaned = _CONTROL.sub("", str(text))
    return cleaned if len(cleaned) <= limit else cleaned[:limit] + "..."
