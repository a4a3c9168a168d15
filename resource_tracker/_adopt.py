"""`resource-tracker run` as the subreaper of its command (Linux).

A process that double-forks (a daemon: fork, the child forks again and exits) leaves its
grandchild an orphan. The kernel gives orphans to the nearest ancestor marked as a "child
subreaper" (``prctl(PR_SET_CHILD_SUBREAPER)``), else to init, where they would escape the
tracked tree. The CLI marks itself, so such processes become its children: the sampler counts
the CLI's children as part of the workload (``adopted_by``), the CLI waits for them after the
command exits and reaps them.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Callable, Dict, Iterable, List, Optional, Set

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
SCAN_PERIOD = 0.25  # seconds between looks at the adopted processes after the command exits


def become_subreaper() -> bool:
    """Marks this process as the subreaper of its descendants: True when it is."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def adopted_children(command_pid: int, proc_root: str = "/proc") -> Dict[int, str]:
    """{pid: state letter} of this process's children other than the command: the orphans of
    the command's tree it inherited as their subreaper."""
    me = os.getpid()
    found: Dict[int, str] = {}
    try:
        names = os.listdir(proc_root)
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == command_pid:
            continue
        try:
            with open(os.path.join(proc_root, name, "stat"), "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(me).encode():
            found[int(name)] = fields[0].decode("ascii", "replace")
    return found


def wait_adopted(
    command_pid: int, waited: Optional[Iterable[int]], forward: Callable[[int, int], object]
) -> List[str]:
    """After the command exited: waits (without reaping) until every adopted process has
    exited too, passing signals on to them with ``forward(pid, sig)``; the names sent."""
    sent: List[str] = []
    while True:
        alive = [pid for pid, state in adopted_children(command_pid).items() if state != "Z"]
        if not alive:
            return sent
        info: Optional[signal.struct_siginfo] = None
        if waited:
            info = signal.sigtimedwait(waited, SCAN_PERIOD)
        else:
            time.sleep(SCAN_PERIOD)
        if info is None or info.si_signo == signal.SIGCHLD:
            continue
        for pid in alive:
            forward(pid, info.si_signo)
        sent.append(signal.Signals(info.si_signo).name)


class ZombieReaper:
    """Reaps adopted processes that exit while the command still runs. A zombie is reaped
    only when it was already one at the previous look, at least two sampling intervals
    before: the sampler has read its final counters (as a zombie) by then; and a long run
    does not collect zombies. /proc is only scanned after a SIGCHLD, while zombies wait."""

    def __init__(self, command_pid: int, interval: float):
        self.command_pid = command_pid
        self.delay = 2 * interval + 0.5
        self.pending_since: Optional[float] = None
        self.marked: Set[int] = set()

    def turn(self, child_exited: bool) -> None:
        now = time.monotonic()
        if child_exited and self.pending_since is None:
            self.pending_since = now
        if self.pending_since is None or now - self.pending_since < self.delay:
            return
        children = adopted_children(self.command_pid)
        zombies = {pid for pid, state in children.items() if state == "Z"}
        for pid in zombies & self.marked:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        self.marked = zombies - self.marked
        self.pending_since = now if self.marked else None


def reap_adopted(command_pid: int) -> int:
    """Reaps the adopted processes that have exited: how many."""
    reaped = 0
    for pid, state in adopted_children(command_pid).items():
        if state != "Z":
            continue
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                reaped += 1
        except ChildProcessError:
            pass
    return reaped
