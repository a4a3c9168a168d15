"""Live card updates for @track_resources while the step runs.

Every ``interval`` seconds (slower as a long step goes on, see ``LiveCard.next_wait``) a
thread in the task process writes the tracker's data so far (``tracker.dumps()``) to a
temporary file and has Metaflow's ``card create`` command render the card from it
(``--mode render_runtime``: the HTML, then ``--mode refresh``: the data update that tells
``card server`` to reload). The renders run detached (``sh -c 'cmd &'``): they are not
descendants of the task process, so the tracker does not count their CPU and memory as the
step's. At most one render runs at a time; ``stop()`` ends an unfinished one, so the final
card that Metaflow renders at the end of the task is never overwritten.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Protocol

if TYPE_CHECKING:
    from resource_tracker import ResourceTracker

LIVE_RENDER_TIMEOUT_S = 60.0
_SPAWN_DETACHED = '"$@" </dev/null >/dev/null 2>&1 & echo $!'


def _alive(pid: int) -> bool:
    """True while pid runs (a zombie counts as finished)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


def _terminate(pid: int, grace: float = 2.0) -> None:
    """Stop pid: SIGTERM, then SIGKILL after grace seconds."""
    import signal

    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        try:
            os.kill(pid, sig)
        except OSError:
            return
        deadline = time.monotonic() + wait
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if not _alive(pid):
            return


class RenderedCard(Protocol):
    """The card decorator the live thread renders through (@track_resources' own)."""

    def card_command(self, mode: str, data_file: str, timeout: float = ...) -> List[str]:
        """The `card create` command line rendering the card in ``mode`` from data_file."""
        ...


class LiveCard:
    """Re-renders the card from the running tracker's data every interval seconds."""

    def __init__(self, tracker: ResourceTracker, card: RenderedCard, interval: float = 5.0) -> None:
        self.tracker = tracker
        self.card = card
        self.interval = float(interval)
        self.renders = 0
        self.errors: List[str] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> LiveCard:
        """Start the refresh thread (returns at once)."""
        self._thread = threading.Thread(
            target=self._loop, name="resource-tracker-live-card", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop refreshing; an unfinished render is ended. Safe to call more than once."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def next_wait(self, elapsed: float) -> float:
        """Seconds until the next render: `interval` at first, slower as the step goes on.

        Each render costs about a second of CPU on the machine (outside the tracked tree);
        backing off to elapsed/12 (at most 2 minutes) keeps a long step to ~60 renders in
        its first hour instead of several hundred.
        """
        return max(self.interval, min(elapsed / 12.0, 120.0))

    def _loop(self) -> None:
        seq = 0
        started = time.monotonic()
        while not self._stop.wait(self.next_wait(time.monotonic() - started)):
            seq += 1
            try:
                user = {"snapshot": self.tracker.dumps(), "status": "running", "seq": seq}
                for mode in ("render_runtime", "refresh"):
                    if self._stop.is_set():
                        return
                    self._render(mode, seq, user)
                self.renders += 1
            except Exception as exc:  # a broken live card must not touch the step
                self.errors.append(f"{type(exc).__name__}: {exc}")
                if len(self.errors) >= 3:
                    return

    def _render(self, mode: str, seq: int, user: Dict[str, Any]) -> None:
        import json
        import subprocess
        import tempfile

        data: Dict[str, Any] = {
            "user": user,
            "components": {},
            "render_seq": seq,
            "component_update_ts": 0,
            "mode": mode,
        }
        fd, path = tempfile.mkstemp(prefix="rt-live-card-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f)
            cmd = self.card.card_command(mode, path, timeout=LIVE_RENDER_TIMEOUT_S)
            spawned = subprocess.run(
                ["/bin/sh", "-c", _SPAWN_DETACHED, "sh", *cmd],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                timeout=10,
                check=True,
            )
            pid = int(spawned.stdout.decode().strip())
            deadline = time.monotonic() + LIVE_RENDER_TIMEOUT_S + 5
            while _alive(pid):
                if self._stop.is_set() or time.monotonic() > deadline:
                    _terminate(pid)
                    break
                self._stop.wait(0.05)
        finally:
            try:
                os.unlink(path)  # normally deleted by `card create --delete-input-files`
            except OSError:
                pass
