"""The sampler interface as typing Protocols: :class:`Sampler` and :class:`RowSampler`.

``resource_tracker.sampling`` documents what a sampler is and re-exports these two classes.
"""

from __future__ import annotations

from typing import (
    Any,
    List,
    Optional,
    Protocol,
    Tuple,
    runtime_checkable,
)

__all__ = ["Sampler", "RowSampler"]


@runtime_checkable
class Sampler(Protocol):
    """A sampler of one workload (a process tree) and the machine.

    Lifecycle: ``state`` goes ``'new'`` -> ``'running'`` (``start()``) -> ``'stopped'``
    (``stop()``, idempotent; it takes a last reading of the partial interval). A stopped
    sampler cannot start again (``RuntimeError``). The first reading after start is a
    baseline that stores no row; then one row per table per tick of the grid
    ``start + k * interval`` (:func:`next_tick`).

    The counters ``rows_dropped``, ``io_denied``, ``pss_denied`` and, where a sampler has
    them, ``read_errors``, ``fds_replaced`` (descriptors kept open between readings that the
    application closed or replaced: each was forgotten, never read nor closed, and its file
    opened again), ``tree_seen`` (readings that found a live process of the tree) and
    ``tree_missed`` (readings that did not while the root lived) feed
    ``ResourceTracker.data_quality()``; ``memory_hwm`` is the largest resident set (KiB) one
    process of the workload had (the kernel's high-water mark), 0 where unknown.
    """

    def start(self) -> None:
        """Starts sampling in the background (RuntimeError when started before)."""

    def stop(self) -> None:
        """Stops sampling after a last reading; the rows stay (safe to call again)."""

    def wait(self, n: int, timeout: float) -> bool:
        """Waits up to timeout seconds until n rows are stored: True when there are."""

    def columns(self, table: str) -> List[bytes]:
        """One buffer of float64 values per column of ``table`` ('process' or 'system')."""

    def column_views(self, table: str) -> Optional[List[Any]]:
        """The stored columns of ``table`` themselves (read-only float64 buffers, no copy)
        once the rows are final (stopped), else None: then ``columns()`` copies them."""

    @property
    def state(self) -> str:
        """'new', 'running' or 'stopped'."""

    @property
    def n_samples(self) -> int:
        """Rows stored so far (the larger of the two tables)."""

    @property
    def start_time(self) -> float:
        """Start, seconds since the epoch (0.0 before start)."""

    @property
    def stop_time(self) -> float:
        """Stop, seconds since the epoch (0.0 while running)."""

    @property
    def interval(self) -> float:
        """Seconds between samples."""

    @property
    def cpu_seconds(self) -> float:
        """CPU time the sampler itself used."""

    @property
    def rows_dropped(self) -> float:
        """Rows lost because memory ran out."""

    @property
    def io_denied(self) -> float:
        """Reads of a process's I/O counters that were refused."""

    @property
    def pss_denied(self) -> float:
        """Reads of a process's shared-memory figures (PSS) that were refused."""

    @property
    def memory_hwm(self) -> float:
        """KiB: the kernel's high-water mark of one process of the workload (0: unknown)."""


@runtime_checkable
class RowSampler(Sampler, Protocol):
    """A live sampler that can also take one reading in the calling thread (the C and the
    psutil sampler; the CSV trackers drive it so, without a thread of their own)."""

    def sample_now(self) -> Optional[Tuple[List[float], List[float]]]:
        """One reading now: (process row, system row), or None for the baseline (the first
        reading). RuntimeError while the sampler's own thread runs."""
