"""The export pipeline: a reader thread turns new samples into points, one sender thread per
target sends them; nothing here may slow down, block or break the tracked job.

- The reader wakes every ``period`` seconds (at least the sampling interval and 1 s, longer
  when reading the columns gets costly), reads the rows sampled since its last visit, folds
  them into one :class:`Point` by the registry's fold rules and keeps running totals of the
  interval amounts (so a dropped point loses no counted bytes or CPU seconds).
- Each target has a bounded queue (:data:`QUEUE_POINTS`): when its sender falls behind (an
  endpoint down, failing or hanging) the oldest point is dropped and counted.
- A failed send backs off (1 s doubling to :data:`MAX_BACKOFF_S`).
- Every request goes through the channel's transport.Sender: bounded in time (the send
  timeout), in memory (no response body read) and never following a redirect.
- :meth:`Exporter.finish` sends the final point and the run summary and waits at most
  :data:`FINISH_TIMEOUT_S` in all; a send still under way then is aborted (its socket shut
  down): no sender thread or socket outlives ``stop()``. In a forked child (the threads are
  its parent's) it returns at once.

No exception leaves this module into the caller's code once the exporter is built.
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
import threading
import time
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Callable,
    Deque,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from .._background import tracker_thread
from ..names import PROCESS_COLUMNS, SYSTEM_COLUMNS
from ..registry import columns
from .metrics import fold_rows
from .summary import live_sizing, run_summary
from .transport import Sender

if TYPE_CHECKING:
    from typing import Protocol

    from ..sampler_protocol import Sampler
    from .context import ExportedRun
    from .summary import RunSummary

    class Sink(Protocol):
        """A target (otlp.OtlpSink, pushgateway.PushgatewaySink): sends a point, or the final
        point with the run summary and the export's report; raises on failure."""

        def send(self, point: Point, timeout: float) -> None: ...

        def send_final(
            self,
            point: Optional[Point],
            summary: Optional[RunSummary],
            timeout: float,
            report: Optional[Mapping[str, object]] = None,
        ) -> None: ...

        def close(self) -> None: ...

    #: builds a target's sink over the channel's Sender (called in the sender thread)
    MakeSink = Callable[[Sender], Sink]

QUEUE_POINTS = 16
MAX_BACKOFF_S = 30.0
FINISH_TIMEOUT_S = 2.0
MIN_PERIOD_S = 1.0
#: the reader spends at most this share of its period reading the columns
READ_SHARE = 0.01
SEND_TIMEOUT_S = 5.0
#: the final summary's catalog lookup (its findings priced as the report's) takes at most
#: this share of what is left of the finish deadline; a slower catalog: unpriced findings
LOOKUP_SHARE = 0.5


@dataclass
class Point:
    """What the tables looked like at one moment: per table the folded values of the rows
    since the previous point ({column: value}, the column's own unit), the running totals
    of the ``sum`` columns since the start ({stats key: total}) and how many rows it holds;
    ``sizing``: what the run has now (summary.live_sizing: ask, limits, OOM kills);
    ``period``: the seconds until the next point (0: none follows)."""

    process: Dict[str, float] = field(default_factory=dict)
    system: Dict[str, float] = field(default_factory=dict)
    totals: Dict[str, float] = field(default_factory=dict)
    rows: int = 0
    sizing: Dict[str, float] = field(default_factory=dict)
    period: float = 0.0

    def table(self, name: str) -> Dict[str, float]:
        return self.process if name == "process" else self.system


@dataclass(frozen=True)
class FinalSend:
    """The final send asked of a channel: the final point (None: no new rows) and the run
    summary (None: it could not be computed)."""

    point: Optional[Point]
    summary: Optional[RunSummary]


class RowReader:
    """Reads the rows a sampler added since the last call (the sampler interface's
    ``columns(table)``) and folds them into points."""

    def __init__(self, sampler: Sampler, tables: Sequence[str]):
        self._sampler = sampler
        self._tables = tuple(tables)
        self._consumed: Dict[str, int] = {t: 0 for t in self._tables}
        self._last_time: Dict[str, Optional[float]] = {t: None for t in self._tables}
        self._current: Dict[str, Dict[str, float]] = {t: {} for t in self._tables}
        self.totals: Dict[str, float] = {}
        self.read_seconds = 0.0

    def read(self, final: bool = False) -> Optional[Point]:
        """The point of the rows added since the last read, or None when there are none.

        While sampling runs the newest row is left for the next read (the sampler may still
        fold a short last sample into it); ``final`` takes every row. ``read_seconds``: the
        CPU time it took (this thread's: a loaded machine stretches its wall time, not its
        cost)."""
        began = time.thread_time()
        point = Point(totals=self.totals)
        for table in self._tables:
            rows = self._new_rows(table, final)
            if rows:
                point.rows = max(point.rows, len(rows["timestamp"]))
                self._add(table, rows)
            (point.process if table == "process" else point.system).update(self._current[table])
        self.read_seconds = time.thread_time() - began
        if point.rows == 0 and not (final and (point.process or point.system)):
            return None  # nothing new (the final point repeats the newest values)
        point.totals = dict(self.totals)
        return point

    def _new_rows(self, table: str, final: bool) -> Dict[str, List[float]]:
        names = PROCESS_COLUMNS if table == "process" else SYSTEM_COLUMNS
        raw = self._sampler.columns(table)
        n = len(raw[0]) // 8 if raw else 0
        stop = n if final else n - 1
        start = self._consumed[table]
        if stop <= start:
            return {}
        self._consumed[table] = stop
        rows: Dict[str, List[float]] = {}
        for name, data in zip(names, raw):
            col = array("d")
            col.frombytes(data[start * 8 : stop * 8])
            rows[name] = col.tolist()
        return rows

    def _add(self, table: str, rows: Dict[str, List[float]]) -> None:
        folded = fold_rows(table, rows, self._last_time[table])
        self._last_time[table] = rows["timestamp"][-1]
        for col in columns(table):
            if col.fold == "sum" and col.name in folded:
                self.totals[col.key] = self.totals.get(col.key, 0.0) + folded[col.name]
        self._current[table] = folded


class Channel:
    """One target's bounded queue and sender thread."""

    def __init__(self, name: str, make_sink: MakeSink, capacity: Optional[int] = None):
        """make_sink: builds the target's sink (given the channel's Sender), in the thread."""
        self.name = name
        self.sender = Sender()
        self._aborted = False
        self._make_sink = make_sink
        self._queue: Deque[Point] = deque()
        self._capacity = capacity or QUEUE_POINTS
        self._cond = threading.Condition()
        self._final: Optional[FinalSend] = None  # set once: the final send is asked for
        self.done = threading.Event()
        self.sent = 0
        self.failures = 0
        self.dropped_points = 0
        self.dropped_rows = 0
        self.last_error: Optional[str] = None
        self.final_state = "pending"
        self._backoff = 0.0
        self._backoff_until = 0.0
        self._thread = threading.Thread(
            target=tracker_thread(self._run),
            name=f"resource-tracker-export-{self.name}",
            daemon=True,
        )

    def start(self) -> None:
        self._thread.start()

    def offer(self, point: Point) -> None:
        with self._cond:
            if self._capacity == 0:  # no sink (it could not start)
                self.dropped_points += 1
                self.dropped_rows += point.rows
                return
            if len(self._queue) >= self._capacity:
                lost = self._queue.popleft()
                self.dropped_points += 1
                self.dropped_rows += lost.rows
            self._queue.append(point)
            self._cond.notify()

    def finish(self, point: Optional[Point], summary: Optional[RunSummary]) -> None:
        """Ask for the final send (the point and the run summary), after what is queued is
        dropped (the final point holds the totals and the newest values)."""
        with self._cond:
            self._drop_queued()
            self._final = FinalSend(point, summary)
            self._cond.notify()

    def _next(self) -> Union[Point, FinalSend]:
        """The next point when one is queued and no back-off runs, or the final send as soon
        as it is asked for (it skips the back-off)."""
        with self._cond:
            while True:
                if self._final is not None:
                    return self._final
                wait = self._backoff_left()
                if wait <= 0 and self._queue:
                    return self._queue.popleft()
                self._cond.wait(wait if wait > 0 else None)

    def _backoff_left(self) -> float:
        return self._backoff_until - time.monotonic() if self._backoff else 0.0

    def _run(self) -> None:
        try:
            sink = self._make_sink(self.sender)
        except BaseException as exc:  # the target cannot work here: its points are dropped
            self.last_error = f"could not start: {type(exc).__name__}: {exc}"[:300]
            self.final_state = "failed"
            self._drain()
            return
        try:
            while True:
                item = self._next()
                if isinstance(item, FinalSend):
                    self._send_final(sink, item)
                    return
                self._send(functools.partial(sink.send, item, SEND_TIMEOUT_S))
        except BaseException as exc:  # never let a sender die silently
            self.last_error = f"{type(exc).__name__}: {exc}"
        finally:
            self.done.set()

    def _send(self, call: Callable[[], object]) -> bool:
        try:
            call()
        except Exception as exc:
            self.failures += 1
            if not (self._aborted and self.last_error):  # the endpoint's error says more than
                self.last_error = f"{type(exc).__name__}: {exc}"[:300]  # our own stop's
            self._backoff = min(MAX_BACKOFF_S, self._backoff * 2 or 1.0)
            self._backoff_until = time.monotonic() + self._backoff
            return False
        self.sent += 1
        self._backoff = 0.0
        return True

    def _drain(self) -> None:
        """Without a sink: count what is queued and what comes later as dropped."""
        with self._cond:
            self._capacity = 0
            self._drop_queued()
        self.done.set()

    def _drop_queued(self) -> None:
        """Counts the queued points as dropped and empties the queue (lock held)."""
        while self._queue:
            lost = self._queue.popleft()
            self.dropped_points += 1
            self.dropped_rows += lost.rows

    def _send_final(self, sink: Sink, item: FinalSend) -> None:
        report = self.report()
        ok = self._send(lambda: sink.send_final(item.point, item.summary, FINISH_TIMEOUT_S, report))
        self.final_state = "sent" if ok else "timed out" if self._aborted else "failed"
        try:
            sink.close()
        except Exception:
            pass

    def abort(self) -> None:
        """Ends the send under way and refuses the later ones (the final one included)."""
        self._aborted = True
        self.final_state = "timed out"
        self.sender.abort()

    def report(self) -> Dict[str, object]:
        return {
            "sent": self.sent,
            "failures": self.failures,
            "dropped_points": self.dropped_points,
            "dropped_rows": self.dropped_rows,
            "last_error": self.last_error,
            "final": self.final_state,
        }


class Exporter:
    """Streams a tracker's samples to the chosen targets (see the module docstring)."""

    def __init__(
        self,
        tracker: ExportedRun,
        sinks: Sequence[Tuple[str, MakeSink]],
        tables: Sequence[str],
    ):
        """sinks: [(target name, a callable building its sink in the sender thread)]."""
        self._tracker = tracker
        self._reader = RowReader(tracker._sampler, tables)
        self._channels = [Channel(name, make) for name, make in sinks]
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._finished = False
        self._error: Optional[str] = None
        self.period = max(MIN_PERIOD_S, float(tracker.interval))
        self.started = time.monotonic()
        self._owner: Optional[int] = None  # the process that started it (start())
        self._thread = threading.Thread(
            target=tracker_thread(self._run), name="resource-tracker-export", daemon=True
        )

    @property
    def targets(self) -> List[str]:
        return [c.name for c in self._channels]

    def start(self) -> Exporter:
        for channel in self._channels:
            channel.start()
        self._thread.start()
        self._owner = os.getpid()
        atexit.register(self._at_exit)
        return self

    def _at_exit(self) -> None:
        """A script that ends without stop() still sends its final push (bounded as
        always); an exception that ended it marks the run failed. Not in a forked child:
        the run is its parent's to report."""
        if os.getpid() != self._owner:
            return
        self.finish(failed=getattr(sys, "last_value", None) is not None or None)

    def _run(self) -> None:
        wait = self.period
        while not self._stop.wait(wait):
            try:
                # reading every row costs more as the run grows: keep it a small share
                wait = max(self.period, self._reader.read_seconds / READ_SHARE)
                self._poll(final=False, period=wait)
            except Exception as exc:
                self._error = f"{type(exc).__name__}: {exc}"[:300]

    def _poll(self, final: bool, period: float = 0.0) -> Optional[Point]:
        with self._lock:
            point = self._reader.read(final=final)
        if point is not None and not final:
            point.sizing, point.period = live_sizing(self._tracker), period
            for channel in self._channels:
                channel.offer(point)
        return point

    def finish(self, failed: Optional[bool] = None, timeout: Optional[float] = None) -> None:
        """The final point and the run summary to every target; returns within ``timeout``
        seconds (None: :data:`FINISH_TIMEOUT_S`) whatever the endpoints do (the summary is
        computed off the caller's thread too: it may wait for cloud discovery); a send still
        under way then is aborted. In a forked child: nothing to send, returns at once."""
        if self._finished:
            return
        self._finished = True
        atexit.unregister(self._at_exit)
        if self._owner is not None and os.getpid() != self._owner:
            for channel in self._channels:  # the senders are the parent's threads
                channel.final_state = "not sent (forked child)"
            return
        timeout = FINISH_TIMEOUT_S if timeout is None else timeout
        deadline = time.monotonic() + timeout
        self._stop.set()
        final = threading.Thread(
            target=tracker_thread(functools.partial(self._final, failed, deadline)),
            name="resource-tracker-export-final", daemon=True,
        )  # fmt: skip
        try:
            final.start()
        except RuntimeError:  # at interpreter exit (Python 3.12+ starts no new thread then)
            self._final(failed, deadline)
        for channel in self._channels:
            if not channel.done.wait(max(0.0, deadline - time.monotonic())):
                channel.abort()

    def _final(self, failed: Optional[bool], deadline: float) -> None:
        """The final point and summary, handed to every channel."""
        point: Optional[Point] = None
        summary: Optional[RunSummary] = None
        try:
            self._thread.join(max(0.0, deadline - time.monotonic()))
            point = self._poll(final=True)

            left = deadline - time.monotonic()
            summary = run_summary(self._tracker, failed, lookup_seconds=left * LOOKUP_SHARE)
        except Exception as exc:
            self._error = f"{type(exc).__name__}: {exc}"[:300]
        for channel in self._channels:
            channel.finish(point, summary)

    def report(self) -> Dict[str, object]:
        """What the export did: per target sent/failed/dropped counts, the last error and
        the final push's fate; ``rows_dropped``: samples some target never got live."""
        targets = {c.name: c.report() for c in self._channels}
        return {
            "targets": targets,
            "rows_dropped": max((c.dropped_rows for c in self._channels), default=0),
            "error": self._error,
        }
