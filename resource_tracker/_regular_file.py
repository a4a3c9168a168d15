"""The one bounded reader of files from a directory that someone else fills: a saved
snapshot (``stats``, ``dashboard --runs``), a ``run --code`` agent's record, a cgroup file.

Only a regular file is read: a FIFO, a device (``/dev/zero`` through a symlink), a socket or
a directory is refused from its ``stat`` without being opened (opening a FIFO blocks until a
writer comes; reading a device has no end), and the file is opened non-blocking and checked
again on its descriptor (replaced between the two). At most ``limit`` bytes are read: a
larger file (or one that grows while it is read) is refused, never read whole.
"""

from __future__ import annotations

import os
import stat
from typing import List

#: What a file that is not a regular one is, by its ``stat`` mode (for the one line).
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
)
#: Open flags: read-only, non-blocking, not inherited, never a controlling terminal (those a
#: platform lacks are 0; O_BINARY: no newline translation where there is one).
_FLAGS = os.O_RDONLY
for _flag in ("O_NONBLOCK", "O_CLOEXEC", "O_NOCTTY", "O_BINARY"):
    _FLAGS |= getattr(os, _flag, 0)


class NotRegularFile(OSError):
    """The path is a FIFO, a device, a socket or a directory: not read (``strerror`` says
    which)."""


class FileTooLarge(OSError):
    """The file holds more than the bytes allowed: ``size`` is its size (at least)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"larger than {limit:,} bytes")
        self.size = size


def _check_regular(mode: int) -> None:
    """NotRegularFile saying what a file of this ``stat`` mode is, unless it is regular."""
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "of another kind")
        raise NotRegularFile(f"not a regular file ({kind})")


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them. NotRegularFile (a
    FIFO, a device, ...: never opened), FileTooLarge, or the OSError of stat/open/read;
    ValueError for a path holding a NUL."""
    _check_regular(os.stat(path).st_mode)
    fd = os.open(path, _FLAGS)
    try:
        info = os.fstat(fd)
        _check_regular(info.st_mode)  # replaced between stat() and open()
        if info.st_size > limit:
            raise FileTooLarge(info.st_size, limit)
        chunks: List[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # it grew after fstat()
                raise FileTooLarge(size, limit)
    finally:
        os.close(fd)
