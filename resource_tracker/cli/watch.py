"""`watch`: a live view of a process tree or of the machine."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING, Optional

from ..tracker import ResourceTracker
from .common import PROG, CliError, say
from .parser import FORMATTER, add_interval, pid, positive_int

if TYPE_CHECKING:
    from ..tracker import ResourceTracker
    from .parser import SubParsers

EXAMPLES = f"""\
examples:
  {PROG} watch                      # the whole machine, one refreshing line
  {PROG} watch --pid 4242           # a running job (and its children) and the machine
  {PROG} watch --system --interval 5 >> machine.log   # plain lines when not a terminal

Stops at Ctrl-C, when the process exits, or after --count samples.
"""


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """The `watch` sub-parser."""
    watch = sub.add_parser(
        "watch",
        help="a live view of a process or the machine",
        description="Show the use of a process tree (--pid) or the machine (--system, the "
        "default) live: one refreshing line on a terminal, plain lines otherwise.",
        epilog=EXAMPLES,
        formatter_class=FORMATTER,
    )
    target = watch.add_mutually_exclusive_group()
    target.add_argument("--pid", type=pid, help="process to watch (with its descendants)")
    target.add_argument("--system", action="store_true", help="the machine only (default)")
    add_interval(watch)
    watch.add_argument("--count", type=positive_int, metavar="N", help="stop after N samples")
    return watch


def main(args: argparse.Namespace) -> int:
    """`watch`: a live view until Ctrl-C, the process's exit or --count samples; 0."""

    def on_term(signum: int, frame: Optional[FrameType]) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        tracker = ResourceTracker(
            pid=args.pid,
            interval=args.interval,
            track_processes=args.pid is not None,
            discover_server=True,
            discover_cloud=False,
        )
    except ValueError as exc:
        raise CliError(f"watch: {exc}") from None
    tty = sys.stdout.isatty()
    ended = ""
    try:
        ended = _show(tracker, args, tty)
    except KeyboardInterrupt:
        pass
    finally:
        tracker.stop()
        if tty:
            try:
                sys.stdout.write("\n")
                sys.stdout.flush()
            except OSError:
                pass
    if ended:
        say(f"{PROG}: {ended}")
    return 0


def _show(tracker: ResourceTracker, args: argparse.Namespace, tty: bool) -> str:
    """Shows a line per sample until --count samples, the process's exit ('process N
    exited') or the tracker's stop ('tracking stopped'): why it ended ('' for --count)."""
    import time

    from .summary import watch_line

    vcpus = (tracker.server_info or {}).get("vcpus")
    shown = 0
    while True:
        tracker.wait_for_samples(shown + 1, timeout=args.interval * 3 + 5)
        n = tracker.n_samples
        if n > shown:
            shown = n
            _write_line(watch_line(tracker, args.pid, vcpus), tty)
        if args.count and shown >= args.count:
            return ""
        if args.pid is not None and not alive(args.pid):
            return f"process {args.pid} exited"
        if not tracker.running:
            return "tracking stopped"
        time.sleep(0.01)


def _write_line(line: str, tty: bool) -> None:
    """On a terminal: one line rewritten in place (cut to the width: no wrapping)."""
    if tty:
        import shutil

        width = shutil.get_terminal_size().columns - 1
        sys.stdout.write("\r\x1b[K" + line[: max(width, 20)])
    else:
        sys.stdout.write(line + "\n")
    sys.stdout.flush()


def alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):  # procfs is there: no such process
            return False
    except OSError:
        pass
    try:  # no procfs (macOS): a signal 0 says whether it exists
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
