"""The code profile's part of a tracker: starting the stack captures, and the methods that read
them (a base class of ResourceTracker). The figures are made in ``code_profile`` (loaded on
first use); see docs/code_profile.md.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import TYPE_CHECKING, Any, Dict, Optional

from . import _core, _worker_agent, settings
from ._tracked import TrackedRun

if TYPE_CHECKING:
    from .code_profile import Attribution
    from .tiny_data_frame import TinyDataFrame

_SWITCHED_OFF = "switched off (code_profile=False or RESOURCE_TRACKER_CODE_PROFILE=0)"
_OTHER_PROCESS = (
    "another process is tracked: its Python stacks are recorded only when it runs the agent "
    "(resource-tracker run --code)"
)
_atexit_registered = False


def _off(status: str, note: str, data_quality: bool = False) -> Dict[str, Any]:
    """The record of a run without stacks (``data_quality``: data_quality() says why)."""
    return {"version": 1, "status": status, "note": note, "data_quality": data_quality}


def _main_ident() -> int:
    """The interpreter's main thread (without importing threading: when it is not loaded, no
    thread was started through it, and this one is taken as the main thread)."""
    threading = sys.modules.get("threading")
    if threading is not None:
        return int(threading.main_thread().ident or 0)
    import _thread

    return _thread.get_ident()


def start_stacks(tracker: Any, max_bytes: int = 0) -> Optional[Dict[str, Any]]:
    """Asks a new sampler to record the stacks of this interpreter at each tick: None when it
    will, else the record saying why not (status 'off' or 'not supported', a note)."""
    global _atexit_registered
    wanted = getattr(tracker, "_code_profile", None)
    if not (settings.get("RESOURCE_TRACKER_CODE_PROFILE") if wanted is None else wanted):
        return _off("off", _SWITCHED_OFF)
    if not hasattr(tracker._sampler, "record_stacks"):
        return _off("not supported", f"the {tracker.method} backend records no stacks")
    if tracker.pid != os.getpid():
        return _off("off", _OTHER_PROCESS)
    try:
        tracker._sampler.record_stacks(_main_ident(), max_bytes)
    except (RuntimeError, OSError) as exc:
        return _off("not supported", str(exc), data_quality=True)
    if not _atexit_registered:  # before the interpreter tears down (docs/code_profile.md)
        atexit.register(_core.stop_stacks)
        _atexit_registered = True
    if tracker.children:  # the tree's CPU counts its workers': their code is profiled too
        _worker_agent.start(tracker)
    return None


def finish_stacks(tracker: Any) -> None:
    """After the tracker's sampler stopped: its workers' records read into it (when it
    covered them, ``_worker_agent``)."""
    _worker_agent.finish(tracker)


class CodeResults(TrackedRun):
    """The code profile of a run (docs/code_profile.md)."""

    def _code_record(self, compact: bool = False) -> Optional[Dict[str, Any]]:
        """The raw record (the snapshot's ``code_profile``), None for a run without one.
        ``compact``: the sampler's samples as one bytes object (``Sampler.stacks(True)``), for
        the attribution alone (not kept)."""
        if hasattr(self, "_code_stored"):
            return self._code_stored
        off = getattr(self, "_code_off", None)
        processes = list(getattr(self, "_code_processes", ()))
        record = None
        if off is None and hasattr(self._sampler, "stacks"):
            record = self._sampler.stacks(True) if compact else self._sampler.stacks()
        if record is None and not processes:
            return off
        if record is None:  # run --code: the command's processes only (the agent's)
            record = {"version": 1, "frames": [], "stacks": [], "threads": [], "samples": []}
            record["stats"] = {}
        record.update(status="recorded", note=None, processes=processes)
        if not self.running and not compact:
            self._code_stored = record  # final: read once
        return record

    def _code_attribution(self) -> Attribution:
        """The run's code profile attributed once (``code_profile.Attribution``): kept once
        the run is stopped, made again from the record of the moment while it runs. The
        sampler's samples are read compact (no Python object a sample)."""
        from .code_profile import Attribution, sources

        kept: Optional[Attribution] = getattr(self, "_code_attributed", None)
        if kept is not None:
            return kept
        stopped = not self.running  # before the record: a sample after it is not missed
        record = self._code_record(compact=True)
        made = Attribution(sources(record, self._table_columns("process"), self.start_time or 0))
        if stopped:
            self._code_attributed = made
        return made

    def code_profile(
        self, by: str = "function", user_code: bool = False, limit: Optional[int] = None
    ) -> TinyDataFrame:
        """Where the CPU time and memory went, per function (``by="function"``) or per line
        (``by="line"``): a TinyDataFrame with ``function``, ``file``, ``line``, ``origin``,
        ``cpu_seconds``, ``cpu_self_seconds``, ``cpu_share``, ``seconds_on_stack``,
        ``memory_peak`` (KiB), ``memory_growth`` (KiB), ``gpu_seconds`` and ``samples``,
        largest ``cpu_seconds`` first. ``user_code``: standard-library and site-packages
        frames folded into the user code that called them. ``limit``: at most that many rows.
        Empty without stack samples (``code_profile_status()`` says why)."""
        from .code_profile import check_by

        return self._code_attribution().profile(check_by(by), user_code, limit)

    def code_between(
        self, start: float, end: float, by: str = "function", user_code: bool = True
    ) -> TinyDataFrame:
        """code_profile() over the intervals ending in (start, end] (seconds since the
        epoch), e.g. one phase of the run."""
        from .code_profile import check_by

        return self._code_attribution().profile(check_by(by), user_code, None, start, end)

    def code_timeline(self) -> TinyDataFrame:
        """One row per sampled interval: ``timestamp``, the user code of the busiest thread
        (``function``, ``file``, ``line``), the tree's ``cpu_seconds`` and its largest ``memory``
        (KiB) in that interval."""
        return self._code_attribution().timeline()

    def code_peak(self) -> Optional[Dict[str, Any]]:
        """The code running when the tree's memory peaked: ``memory_peak`` (KiB),
        ``timestamp``, ``function``, ``file``, ``line``, ``origin`` and ``stack`` (user
        frames, root first); None without stack samples."""
        return self._code_attribution().peak()

    def code_profile_status(self) -> Dict[str, Any]:
        """``status`` ('recorded', 'off' or 'not supported'), ``note`` and the counters:
        ``requests``, ``captures``, ``scheduled`` (captures of the own schedule),
        ``idle_skipped`` (own captures left out: the process was idle), ``thinned``,
        ``gil_busy`` (ticks whose capture still waited for the GIL: no stack), ``dropped``,
        ``samples``, ``frame_table_bytes``, ``gil_hold_us_p50`` / ``_p99`` and
        ``gil_wait_us_p50`` / ``_p99`` (microseconds)."""
        from .code_profile import status

        return status(self._code_record())
