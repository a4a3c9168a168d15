"""Live card updates for @track_resources while the step runs.

Every ``interval`` seconds (slower as a long step goes on, see ``LiveCard.next_wait``) a
thread in the task process renders the card from the tracker's data so far
(``tracker.dumps()``) and writes it to the card datastore itself: the HTML Metaflow's
``card create --mode render_runtime`` would write, then the data update
(``--mode refresh``) that tells ``card server`` to reload.

No process is started for a refresh. A `card create` process (a fresh Python importing
Metaflow, the flow and the report: about a second of CPU) would run inside the task's
cgroup, spend the step's CPU quota beside the step's own work and get the step throttled,
while the tracker, which counts the step's process tree, would not see it. Rendered here,
a refresh costs a few milliseconds of CPU (the renderer is loaded by ``start`` before the
step's code runs) and is counted with the step. ``stop()`` waits for a refresh under way,
so the final card Metaflow renders at the end of the task is never overwritten.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Protocol, Tuple

from resource_tracker._background import tracker_thread, tracker_work

if TYPE_CHECKING:
    from resource_tracker import ResourceTracker

#: A refresh's HTML and its data update (``{"reload_token", "data", "created_on"}``)
LivePage = Tuple[str, Dict[str, Any]]


class RuntimeCard(Protocol):
    """The card decorator the live thread renders through (@track_resources' own)."""

    def live_page(self, user: Dict[str, Any]) -> LivePage:
        """The card's HTML and data update for the live data ``user``."""
        ...

    def save_live(self, page: LivePage) -> None:
        """Write a live page to the card datastore (where `card create` would)."""
        ...


class LiveCard:
    """Re-renders the card from the running tracker's data every interval seconds."""

    def __init__(self, tracker: ResourceTracker, card: RuntimeCard, interval: float = 5.0) -> None:
        self.tracker = tracker
        self.card = card
        self.interval = float(interval)
        self.renders = 0
        self.errors: List[str] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> LiveCard:
        """Load the renderer (a first render, not saved: its imports cost ~0.1 s of CPU,
        spent now rather than beside the step's work, and not in the step's code profile),
        then start the refresh thread."""
        with tracker_work():
            self._page(0)
        self._thread = threading.Thread(
            target=tracker_thread(self._loop), name="resource-tracker-live-card", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop refreshing (a refresh under way ends first). Safe to call more than once."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def next_wait(self, elapsed: float) -> float:
        """Seconds until the next render: `interval` at first, slower as the step goes on.

        A render's cost grows with the samples taken (the report of all of them); backing
        off to elapsed/12 (at most 2 minutes) keeps a long step to ~60 renders in its first
        hour instead of several hundred.
        """
        return max(self.interval, min(elapsed / 12.0, 120.0))

    def _page(self, seq: int) -> LivePage:
        user = {"snapshot": self.tracker.dumps(), "status": "running", "seq": seq}
        return self.card.live_page(user)

    def _loop(self) -> None:
        seq = 0
        started = time.monotonic()
        while not self._stop.wait(self.next_wait(time.monotonic() - started)):
            seq += 1
            try:
                page = self._page(seq)
                if self._stop.is_set():
                    return
                self.card.save_live(page)
                self.renders += 1
            except Exception as exc:  # a broken live card must not touch the step
                self.errors.append(f"{type(exc).__name__}: {exc}")
                if len(self.errors) >= 3:
                    return
