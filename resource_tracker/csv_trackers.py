"""PidTracker and SystemTracker: write samples as CSV lines, in the calling thread.

They start no thread of their own: ``run()`` (or iterating) takes one reading per interval,
aligned to the start (the samplers' grid: ``sampling.next_tick``), and writes it as one CSV
line to stdout or a file. Use them in a process of their own, e.g.
``python -c "from resource_tracker import SystemTracker;
SystemTracker(output_file='system.csv').run()"``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Dict, Iterator, Optional, Tuple

from ._identity import _check_interval, _check_pid
from ._launch import _default_method, _new_sampler
from .names import PROCESS_COLUMNS, SYSTEM_COLUMNS
from .sampling import next_tick

if TYPE_CHECKING:
    from .sampler_protocol import RowSampler


class _CsvTracker:
    _columns: Tuple[str, ...] = ()
    _row_index = 0

    def __init__(
        self,
        sampler: RowSampler,
        interval: float,
        output_file: Optional[str] = None,
        header: bool = True,
    ) -> None:
        self.interval = interval
        self.output_file = output_file
        self.header = header
        self._sampler = sampler

    def __iter__(self) -> Iterator[Dict[str, float]]:
        """Yields one row dict per interval, forever (the first after one interval)."""
        self._sampler.sample_now()  # baseline
        start = deadline = time.monotonic()
        while True:
            deadline = next_tick(start, deadline, time.monotonic(), self.interval)
            time.sleep(max(0.0, deadline - time.monotonic()))
            rows = self._sampler.sample_now()
            if rows is None:  # only the first reading is a baseline
                continue
            yield dict(zip(self._columns, rows[self._row_index]))

    def run(self, n_samples: Optional[int] = None, duration: Optional[float] = None) -> None:
        """Write samples as CSV lines until n_samples or duration seconds (default: forever)."""
        out = open(self.output_file, "a", encoding="utf-8") if self.output_file else sys.stdout
        try:
            if self.header:
                out.write(",".join(self._columns) + "\n")
                out.flush()
            deadline = time.monotonic() + duration if duration else None
            for i, row in enumerate(self, start=1):
                out.write(",".join(repr(v) for v in row.values()) + "\n")
                out.flush()
                if (n_samples and i >= n_samples) or (deadline and time.monotonic() >= deadline):
                    break
        except KeyboardInterrupt:
            pass
        finally:
            if out is not sys.stdout:
                out.close()


class PidTracker(_CsvTracker):
    """CSV lines of process_metrics for a process and its descendants.

    Args:
        pid: the process (None: this process).
        interval: seconds between samples.
        children: include descendants.
        output_file: file to append to (None: stdout).
        header: write the column names first.
    """

    _columns = PROCESS_COLUMNS
    _row_index = 0

    def __init__(
        self,
        pid: Optional[int] = None,
        interval: float = 1.0,
        children: bool = True,
        output_file: Optional[str] = None,
        header: bool = True,
    ) -> None:
        interval = _check_interval(interval)
        pid = _check_pid(pid)
        sampler = _new_sampler(
            _default_method(), pid, interval, children=children, track_system=False
        )
        super().__init__(sampler, interval, output_file, header)


class SystemTracker(_CsvTracker):
    """CSV lines of system_metrics for the whole machine.

    Args:
        interval: seconds between samples.
        output_file: file to append to (None: stdout).
        header: write the column names first.
    """

    _columns = SYSTEM_COLUMNS
    _row_index = 1

    def __init__(
        self, interval: float = 1.0, output_file: Optional[str] = None, header: bool = True
    ) -> None:
        interval = _check_interval(interval)
        sampler = _new_sampler(_default_method(), os.getpid(), interval, track_processes=False)
        super().__init__(sampler, interval, output_file, header)
