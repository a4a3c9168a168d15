"""ResourceTracker: track a process tree and the machine in the background.

The sampling runs in a C thread (``_core.Sampler``) that never takes the GIL; this module
only starts it, reads its columns and turns them into tables, statistics and
recommendations. Where procfs is missing (macOS, Windows) a psutil sampler with the same
interface takes its place.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Literal, Mapping, Optional, Sequence

# Only what constructing, starting and stopping a tracker needs is imported with the package
# (tests/core/test_core_import.py; what it costs: bench/bench_import.py). The argument checks
# and the sampler's choice are in _launch (the facts it shares with lower layers in
# _identity), the data methods in _results (a base class); the tables, statistics, stored
# runs and reports (_run_data, _stored, summary, report) load on first use. The cgroup
# readers (cgroup_usage and the modules it imports) are imported by the worker thread that
# reads the start figures.
from . import _background, _core, settings
from ._code import finish_stacks, start_stacks
from ._identity import (  # noqa: F401  (importable from here, as before)
    MAX_INTERVAL,
    MAX_PID,
    MIN_INTERVAL,
    _check_interval,
    _check_pid,
    _command_line,
    _process_start,
)
from ._identity import (
    SNAPSHOT_FORMAT as SNAPSHOT_FORMAT,
)
from ._identity import (
    SNAPSHOT_VERSION as SNAPSHOT_VERSION,
)
from ._launch import (  # noqa: F401  (what starting a tracker takes; importable from here)
    _default_method,
    _export_settings,
    _job_name,
    _new_sampler,
    _start_cloud_discovery,
)
from ._results import TrackerResults

if TYPE_CHECKING:
    from .export.pipeline import Exporter
    from .sampler_protocol import RowSampler, Sampler
    from .supervise import CommandRun


#: Runs shorter than this (seconds) have no measurable CPU usage (10 clock ticks of 10 ms);
#: the rule lives in the C core (csrc/stats.c), which says how short.
SHORT_RUN_S = _core.SHORT_RUN_S


class ResourceTracker(TrackerResults):
    """Tracks a process with its descendants, and the whole machine, in the background.

    Args:
        pid: process to track; None tracks the calling process.
        children: also track all descendants (at any depth).
        interval: seconds between samples.
        autostart: start at once (as in the quick start); else call start().
        track_processes: collect process_metrics.
        track_system: collect system_metrics.
        discover_server: collect server_info (CPU, memory, GPUs, container limits).
        discover_cloud: find the cloud vendor, region and instance type (in the background;
            no network request unless local evidence points at a known cloud).
        method: 'procfs' (Linux, the C sampler) or 'psutil'; default: procfs where it exists.
        export: stream the samples to 'otlp' and/or 'pushgateway' (a comma list or a list;
            None: the RESOURCE_TRACKER_EXPORT variable decides, unset means no export). See
            docs/export.md. Raises ValueError / ImportError when a target cannot work.
        job: the job's name (e.g. ``nightly-etl``): the exported ``job`` label, stored in
            the snapshot and shown in the report, so that a dashboard groups this job's
            runs. None: RESOURCE_TRACKER_JOB, else ``flow/step`` in a Metaflow step, else
            ``resource_tracker``. ValueError unless 1 to 200 printable characters.
        code_profile: record where this interpreter's Python code is at each tick, to
            attribute the CPU and memory to it (``code_profile()``; docs/code_profile.md).
            None: the RESOURCE_TRACKER_CODE_PROFILE variable decides (unset means on).

    Example:
        >>> tracker = ResourceTracker()
        >>> # ... compute-heavy code ...
        >>> tracker.stop()
        >>> tracker.recommend_resources()
        {'cpu': 1, 'memory': 256, 'gpu': 0, 'vram': 0}
    """

    def __init__(
        self,
        pid: Optional[int] = None,
        children: bool = True,
        interval: float = 1.0,
        autostart: bool = True,
        track_processes: bool = True,
        track_system: bool = True,
        discover_server: bool = True,
        discover_cloud: bool = True,
        method: Optional[str] = None,
        export: Any = None,
        job: Optional[str] = None,
        code_profile: Optional[bool] = None,
    ) -> None:
        if isinstance(autostart, str):  # ResourceTracker(pid, children, interval, "psutil")
            raise TypeError(
                f"autostart must be True or False, got {autostart!r}: the 4th argument of the "
                f"0.4/0.5 packages was method; write method={autostart!r}"
            )
        self.interval = _check_interval(interval)
        self.pid = _check_pid(pid)
        self.children = bool(children)
        self.track_processes = bool(track_processes)
        self.track_system = bool(track_system)
        self.discover_server = bool(discover_server)
        self.discover_cloud = bool(discover_cloud) and settings.get(
            "RESOURCE_TRACKER_DISCOVER_CLOUD"
        )
        self.method = method or _default_method()
        self.command = _command_line(self.pid)
        self._root_start = _process_start(self.pid)  # with the pid: the root's identity
        self.label: Optional[str] = None
        self.job: str = _job_name(job)
        self.extra: Dict[str, Any] = {}
        self._server_info: Optional[Dict[str, Any]] = None
        self._cloud_info: Optional[Dict[str, Any]] = None
        self._cloud_job: Optional[Any] = None
        self._export_settings = _export_settings(export)
        self._exporter: Optional[Exporter] = None
        self._code_profile = code_profile
        self._sampler: Sampler = self._make_sampler()
        self._autostarted = False
        self.autostart = bool(autostart)
        if autostart:
            self.start()
            self._autostarted = True

    def _make_sampler(self) -> RowSampler:
        kwargs = dict(
            children=self.children,
            track_processes=self.track_processes,
            track_system=self.track_system,
        )
        return _new_sampler(
            self.method,
            self.pid,
            self.interval,
            adopted_by=getattr(self, "_adopted_by", 0),
            **kwargs,
        )

    def _adopt_children_of(self, pid: int) -> None:
        """Counts the children of ``pid`` (and their descendants) as part of the workload too.

        For ``resource-tracker run``: the CLI is the subreaper of the command, so processes
        that double-fork away from the command's tree become its children. Call before
        start(); the C sampler only (the psutil sampler ignores it).
        """
        if self.method == "procfs" and self._sampler.state == "new":
            self._adopted_by = int(pid)
            self._sampler = self._make_sampler()

    @classmethod
    def run(
        cls,
        command: Sequence[str],
        *,
        adopt_orphans: bool = False,
        forward_signals: Optional[bool] = None,
        **options: Any,
    ) -> CommandRun:
        """Runs ``command`` (a list: program and arguments) to its end and tracks it.

        Returns a ``CommandRun`` (resource_tracker.supervise): ``status`` is the command's
        exit status (128+N when signal N killed it), ``tracker`` the stopped tracker of its
        process tree (None when tracking could not start: ``not_tracked`` says why),
        ``signals_forwarded`` the signals passed on to it. ``options`` are this class's
        (``interval``, ``method``, ``discover_cloud`` ...; not ``pid`` or ``autostart``).
        In the main thread, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are passed
        on to the command while it runs. ``adopt_orphans`` (Linux) makes this process the
        subreaper of the command so that processes which double-fork away from it are
        tracked, waited for and reaped (it changes who reaps orphans for the whole program:
        off by default). Raises ``CommandStartError`` (``status`` 127: not found, 126: not
        executable) when the command cannot be started, ValueError/TypeError for bad options.

        Example:
            >>> run = ResourceTracker.run(["python", "train.py"], interval=0.5)
            >>> run.status, run.tracker.recommend_resources()
            (0, {'cpu': 1, 'memory': 256, 'gpu': 0, 'vram': 0})
        """
        from .supervise import track_command

        return track_command(
            command, cls, adopt_orphans=adopt_orphans, forward_signals=forward_signals, **options
        )

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start sampling (and cloud discovery in the background).

        On a tracker that started itself (``autostart=True``, the default) the first
        ``start()`` while it runs does nothing, so code written as
        ``tracker = ResourceTracker(); tracker.start()`` keeps working; starting it again
        after that raises ``RuntimeError``.
        """
        if self._autostarted and self.running:
            self._autostarted = False  # this start() is the one the constructor already did
            return
        if self._sampler.state == "new":  # read beside the caller, after the baseline
            self._cgroup_job = _background.after_baseline(
                self._sampler, _background.weak_call(self, "_read_cgroup_start")
            )
            self._code_off = start_stacks(self)
        self._sampler.start()
        self._start_export()
        if self.discover_cloud and self._cloud_job is None:
            self._cloud_job = _start_cloud_discovery()

    def stop(self, *, failed: Optional[bool] = None) -> None:
        """Stop sampling; the data stays. Safe to call more than once.

        With export on, the final push (run summary) goes out now; stop() waits at most 2 s
        for it. ``failed``: whether the job failed, for that push (None: not known)."""
        was_running = self.running
        self._sampler.stop()
        finish_stacks(self)
        if was_running:  # the end figures, read beside the caller (after the start figures)
            start_job = getattr(self, "_cgroup_job", None)
            _background.settle(self._sampler, start_job)
            self._cgroup_job = _background.submit(lambda: self._read_cgroup_end(start_job))
            # no thread could be made: read here (stats()["data_quality"] says so)
            self._read_in_caller = self._cgroup_job.in_caller
        if was_running and self.pid != os.getpid() and _process_start(self.pid) == self._root_start:
            # a child seen before its exec showed its parent's command line (or none); the
            # same start time: still the root (after it exited, its pid may be another's)
            self.command = _command_line(self.pid) or self.command
        self._finish_export(failed)

    # -- export ----------------------------------------------------------------------

    def _start_export(self) -> None:
        """Start streaming to the export targets (never raises: a failure is recorded)."""
        settings = getattr(self, "_export_settings", None)
        if settings is None or not settings.targets or self._exporter is not None:
            return
        try:
            from .export import start_export

            self._exporter = start_export(self, settings)
        except Exception as exc:
            self._export_error = f"export could not start: {type(exc).__name__}: {exc}"

    def _finish_export(self, failed: Optional[bool] = None) -> None:
        exporter = getattr(self, "_exporter", None)
        if exporter is not None:
            try:
                exporter.finish(failed=failed)
            except Exception as exc:  # never into the caller
                self._export_error = f"export could not finish: {type(exc).__name__}: {exc}"
            self.extra["export"] = self.export_report()  # kept by snapshot() / dumps()

    @property
    def running(self) -> bool:
        """True while the sampler runs."""
        return self._sampler.state == "running"

    @property
    def status(self) -> str:
        """'running', 'finished' or 'new' (created with autostart=False)."""
        state = self._sampler.state
        return {"stopped": "finished"}.get(state, state)

    @property
    def n_samples(self) -> int:
        """Samples stored so far."""
        return self._sampler.n_samples

    def wait_for_samples(self, n: int = 1, timeout: Optional[float] = None) -> bool:
        """Block until n samples are stored or timeout seconds pass; True when there are n.

        Once one sample is stored, the cgroup's start figures (read beside start()) are too.
        Raises ValueError for an n that is not a whole number from 0 to 2**62, or a timeout
        that is not a number of seconds >= 0."""
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 2**62:
            raise ValueError(
                f"wait_for_samples: n must be a whole number from 0 to 2**62, got {n!r}"
            )
        if timeout is None:
            timeout = min((n + 2) * self.interval + 5.0, 1e9)
        try:
            timeout = float(timeout)
        except (TypeError, ValueError):
            timeout = float("nan")
        if not 0 <= timeout <= 1e9:
            raise ValueError(
                f"wait_for_samples: timeout must be seconds from 0 to 1e9, got {timeout!r}"
            )
        stored = self._sampler.wait(n, timeout)
        if stored and n >= 1:
            self._wait_cgroup_start()  # a run's first sample comes with its start figures
        return stored

    @property
    def start_time(self) -> Optional[float]:
        """When sampling started (seconds since the epoch), None before start."""
        return self._sampler.start_time or None

    @property
    def stop_time(self) -> Optional[float]:
        """When sampling stopped (seconds since the epoch), None while running."""
        return self._sampler.stop_time or None

    def __enter__(self) -> ResourceTracker:
        if self._sampler.state == "new":
            self.start()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        self.stop(failed=exc_type is not None)
        return False

    # -- the container ---------------------------------------------------------------

    def _read_cgroup_start(self) -> None:
        """The cgroup figures at the start, read beside the caller (start() does not wait
        for the import, the cgroup's location and its files: ~3 ms); then the tree's own
        cgroup handed to the sampler when it has one (docs/metrics.md, "The tree from its
        own cgroup")."""
        self._cgroup_start = self._read_cgroup()
        try:
            from ._tree_cgroup import start_tree_source  # in the worker thread

            start_tree_source(self)
        except Exception:  # never let a probe break the run
            pass

    def _read_cgroup_end(self, start_job: Any) -> None:
        """The cgroup figures at the end, read beside the caller of stop() (~0.3 ms that
        stop() does not wait for), after the start figures (``start_job``)."""
        if start_job is not None:
            start_job.wait()
        self._cgroup_end = self._read_cgroup()

    def _wait_cgroup_start(self) -> None:
        """Waits for the cgroup readings under way (the start figures, or the end figures
        after stop(), read after the start ones)."""
        job = getattr(self, "_cgroup_job", None)
        if job is not None:
            job.wait()

    def _read_cgroup(self) -> Any:
        """The cgroup figures of the tracked process now (None: none, or not readable)."""
        if not self.track_processes:
            return None
        try:
            from . import cgroup_usage as _cgroup  # first in the worker thread, after start()

            if not hasattr(self, "_cgroup_place"):
                self._cgroup_place = _cgroup.locate_cgroup(
                    self.pid,
                    proc_root=settings.get("RESOURCE_TRACKER_PROCFS_ROOT") or "/proc",
                    sys_root=settings.get("RESOURCE_TRACKER_SYSFS_ROOT"),
                )
            return _cgroup.read_cgroup_at(self._cgroup_place)
        except Exception:  # never let a probe break the caller
            return None

    def _repr_html_(self) -> Optional[str]:
        """Jupyter's display of the tracker: its state and the headline figures so far."""
        try:
            # only in a notebook: its figures' modules (tuning, insights) cost ~0.1 s to import
            from ._display import tracker_html

            return tracker_html(self)
        except Exception:  # a display never breaks the notebook: None shows the repr
            return None

    def __repr__(self) -> str:
        return (
            f"<ResourceTracker pid={self.pid} interval={self.interval} status={self.status} "
            f"samples={self.n_samples}>"
        )


def data_quality_notes(stats: Optional[Mapping[str, Any]]) -> List[str]:
    """One line per problem in stats()['data_quality'] (for the report and the CLI)."""
    from ._run_data import data_quality_notes as notes

    return notes(stats)
