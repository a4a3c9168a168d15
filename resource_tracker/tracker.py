"""ResourceTracker: track a process tree and the machine in the background.

The sampling runs in a C thread (``_core.Sampler``) that never takes the GIL; this module
only starts it, reads its columns and turns them into tables, statistics and
recommendations. Where procfs is missing (macOS, Windows) a psutil sampler with the same
interface takes its place.
"""

from __future__ import annotations

import os

# Only what constructing, starting and stopping a tracker needs is imported with the package
# (no pyc is written here: every module imported is compiled, in time and memory). The
# tables (TinyDataFrame, the registry's names), the stored runs (_stored) and the cgroup
# readers (cgroup_usage, in the worker thread) load on first use.
from . import _background, _core, settings

TYPE_CHECKING = False  # no typing import at run time (~2 MiB, milliseconds): annotations only
if TYPE_CHECKING:
    from typing import (
        Any,
        Callable,
        Dict,
        List,
        Literal,
        Mapping,
        Optional,
        Sequence,
        TypeVar,
        Union,
    )

    from .sampler_protocol import RowSampler, Sampler
    from .summary import RunSummary
    from .supervise import CommandRun
    from .tiny_data_frame import TinyDataFrame

    _T = TypeVar("_T")


#: Runs shorter than this (seconds) have no measurable CPU usage (10 clock ticks of 10 ms);
#: the rule lives in the C core (csrc/stats.c), which says how short.
SHORT_RUN_S = _core.SHORT_RUN_S

SNAPSHOT_FORMAT = "resource-tracker-snapshot"
SNAPSHOT_VERSION = 1

#: The shortest and the longest interval between samples, seconds (both backends, the CLI and
#: the Metaflow decorator): a longer one would overflow the clock arithmetic of a timed wait.
#: (The C sampler holds the same values as _core.MIN_INTERVAL / _core.MAX_INTERVAL; a build
#: without it, HAVE_PROCFS False, samples with psutil under these.)
MIN_INTERVAL = 0.0001
MAX_INTERVAL = 86400.0
#: The largest process id Linux can give (pid_max is at most 2**22; this is the type's limit).
MAX_PID = 2**31 - 1


def _check_interval(interval: Any) -> float:
    """The interval as a float, or ValueError saying what is wrong."""
    if isinstance(interval, bool) or not isinstance(interval, (int, float)):
        raise ValueError(f"interval must be a number of seconds, got {interval!r}; use e.g. 1.0")
    try:
        value = float(interval)
    except OverflowError:  # an int beyond any float
        value = float("inf")
    if not MIN_INTERVAL <= value <= MAX_INTERVAL:
        raise ValueError(
            f"interval must be between {MIN_INTERVAL:g} and {MAX_INTERVAL:g} seconds "
            f"(one day), got {interval!r}; use e.g. 1.0"
        )
    return value


def _check_pid(pid: Any) -> int:
    """The pid to track (None: this process), or ValueError when there is no such process."""
    if pid is None:
        return os.getpid()
    if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid <= MAX_PID:
        raise ValueError(f"pid must be a positive process id (at most {MAX_PID}), got {pid!r}")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise ValueError(f"no process with pid {pid}: start the workload first") from None
    except PermissionError:
        pass  # it exists, owned by someone else
    return pid


def _default_method() -> str:
    """'procfs' on Linux (with the C core's procfs sampler), else 'psutil';
    RESOURCE_TRACKER_METHOD overrides."""
    forced: Optional[str] = settings.get("RESOURCE_TRACKER_METHOD")
    if forced:
        return forced
    return "procfs" if _core.HAVE_PROCFS and os.path.exists("/proc/self/stat") else "psutil"


def _new_sampler(
    method: str, pid: int, interval: float, adopted_by: int = 0, **kwargs: bool
) -> RowSampler:
    """The one engine choice: the C procfs sampler or the psutil one (both a
    ``sampling.Sampler``).

    kwargs: children, track_processes, track_system. adopted_by: a pid whose children count
    as the workload's too (the C sampler only; see ResourceTracker._adopt_children_of)."""
    if method == "procfs":
        if not _core.HAVE_PROCFS:
            raise ValueError(
                "method 'procfs' needs the Linux readers of the C core, and this build has none "
                "(a non-Linux platform or RESOURCE_TRACKER_PORTABLE=1): use method='psutil'"
            )
        return _core.Sampler(
            pid,
            interval,
            proc_root=settings.get("RESOURCE_TRACKER_PROCFS_ROOT"),
            sys_root=settings.get("RESOURCE_TRACKER_SYSFS_ROOT"),
            nvml_library=settings.get("RESOURCE_TRACKER_NVML_LIBRARY"),
            adopted_by=adopted_by,
            **kwargs,
        )
    if method == "psutil":
        from .psutil_sampler import PsutilSampler

        return PsutilSampler(pid, interval, **kwargs)
    raise ValueError(f"method must be 'procfs' or 'psutil', got {method!r}")


def _command_line(pid: int) -> str:
    """The command line of pid as one string ('' when unreadable)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        try:
            import psutil

            return " ".join(psutil.Process(pid).cmdline())
        except Exception:
            return ""
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")


class ResourceTracker:
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

    Example:
        >>> tracker = ResourceTracker()
        >>> # ... compute-heavy code ...
        >>> tracker.stop()
        >>> tracker.recommend_resources()
        {'cpu': 1, 'memory': 256, 'gpu': 0, 'vram': 0}
    """

    # set by from_snapshot() only (a stored run's figures); hasattr() tells which
    _cgroup_stored: Optional[Dict[str, Any]]
    _hwm_stored: Optional[float]
    # the run summary once summary() made it (or a snapshot held it)
    _summary: Any  # a RunSummary (Any: read through getattr, which mypy cannot narrow)

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
    ) -> None:
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
        self.label: Optional[str] = None
        self.extra: Dict[str, Any] = {}
        self._server_info: Optional[Dict[str, Any]] = None
        self._cloud_info: Optional[Dict[str, Any]] = None
        self._cloud_job: Optional[Any] = None
        self._export_settings = _export_settings(export)
        self._exporter = None
        self._sampler: Sampler = self._make_sampler()
        self._autostarted = False
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
            command, adopt_orphans=adopt_orphans, forward_signals=forward_signals, **options
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
        first = self._sampler.state == "new"
        self._sampler.start()
        self._start_export()
        if self.discover_cloud and self._cloud_job is None:
            self._cloud_job = _start_cloud_discovery()
        if first:  # last: the worker takes the interpreter lock once start() returned
            self._cgroup_job = _background.submit(self._read_cgroup_start)

    def stop(self, *, failed: Optional[bool] = None) -> None:
        """Stop sampling; the data stays. Safe to call more than once.

        With export on, the final push (run summary) goes out now; stop() waits at most 2 s
        for it. ``failed``: whether the job failed, for that push (None: not known)."""
        was_running = self.running
        self._sampler.stop()
        if was_running:
            self._wait_cgroup_start()
            self._cgroup_end = self._read_cgroup()
        if was_running and self.pid != os.getpid():
            # a child seen before its exec showed its parent's command line (or none)
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

    def export_report(self) -> Optional[Dict[str, Any]]:
        """What the export did (None without export): per target the points sent, failed
        sends, points and rows dropped, the last error and the final push's fate."""
        exporter = getattr(self, "_exporter", None)
        error = getattr(self, "_export_error", None)
        if exporter is None and error is None:
            stored = (getattr(self, "extra", None) or {}).get("export")
            return stored if isinstance(stored, dict) else None
        report = exporter.report() if exporter is not None else {"targets": {}, "rows_dropped": 0}
        if error is not None:
            report["error"] = error
        return report

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
        for the import, the cgroup's location and its files: ~3 ms)."""
        self._cgroup_start = self._read_cgroup()

    def _wait_cgroup_start(self) -> None:
        """Waits for the reading of the start figures, when one is under way."""
        job = getattr(self, "_cgroup_job", None)
        if job is not None:
            job.wait()

    def _read_cgroup(self) -> Any:
        """The cgroup figures of the tracked process now (None: none, or not readable)."""
        if not self.track_processes:
            return None
        try:
            from . import cgroup_usage as _cgroup

            if not hasattr(self, "_cgroup_place"):
                self._cgroup_place = _cgroup.locate_cgroup(
                    self.pid,
                    proc_root=settings.get("RESOURCE_TRACKER_PROCFS_ROOT") or "/proc",
                    sys_root=settings.get("RESOURCE_TRACKER_SYSFS_ROOT"),
                )
            return _cgroup.read_cgroup_at(self._cgroup_place)
        except Exception:  # never let a probe break the caller
            return None

    @property
    def cgroup_metrics(self) -> Optional[Dict[str, Any]]:
        """What the cgroup of the tracked process saw during the run (a dict), or None.

        Memory now (at stop) and its peak, the memory limit and CPU quota, CPU seconds,
        CPU throttling (periods, throttled periods and seconds) and OOM kills during the run,
        and ``dedicated``: whether only the workload was in the cgroup (a container of its
        own). See docs/metrics.md, "The container (cgroup)".
        """
        if hasattr(self, "_cgroup_stored"):
            return self._cgroup_stored
        from ._run_data import cgroup_figures

        return cgroup_figures(self)

    # -- data ------------------------------------------------------------------------

    def _cached(self, what: str, compute: Callable[[], _T]) -> _T:
        """compute() once per state of the samples: recomputed when a row was added (or the
        run stopped), else the value of the last call."""
        from ._run_data import cached

        return cached(self, what, compute)

    def _table_columns(self, table: str) -> Dict[str, Any]:
        """{column: float64 column} of a table. A stopped run's columns are read-only views
        of the sampler's own storage (the samples cross into Python once, uncopied); while
        running, one copy per new row count (cached until the next row)."""
        from ._run_data import table_columns

        return table_columns(self, table)

    def _table(self, table: str) -> TinyDataFrame:
        from ._run_data import table as make_table

        return make_table(self, table)

    @property
    def process_metrics(self) -> TinyDataFrame:
        """Samples of the tracked process tree (TinyDataFrame; columns in DESIGN.md)."""
        return self._table("process")

    @property
    def system_metrics(self) -> TinyDataFrame:
        """Samples of the whole machine (TinyDataFrame)."""
        return self._table("system")

    def get_combined_metrics(self, human_names: bool = False) -> TinyDataFrame:
        """System and process samples side by side, one row per timestamp.

        A view for people: values are rounded as the seeds print them (CPU usage and CPU
        seconds to 4 decimals, KiB and bytes whole, GB to 2 decimals; see
        ``resource_tracker.rounding``), so no float noise such as 0.09999999999999998
        shows. ``process_metrics`` and ``system_metrics`` keep the exact values.
        """
        from ._run_data import combined_metrics

        return combined_metrics(self, human_names)

    def stats(self) -> Dict[str, Any]:
        """Summaries of the samples: mean/max/percentiles, sums, peak disk use, duration.

        Computed once per state of the samples (a stopped run: once), on the sampler's own
        column buffers; each call returns a new dict."""
        from ._run_data import stats

        return stats(self)

    def data_quality(self) -> Dict[str, Any]:
        """What is missing from the data, and why: ``{'samples_dropped': int,
        'incomplete_columns': {stats key: reason}}`` (empty when nothing is).

        - samples_dropped: rows lost because memory ran out (each later row tries again);
        - process_read_bytes / process_write_bytes: /proc/<pid>/io refused (processes of
          another user, tracked without root): their I/O is not counted;
        - process_memory: /proc/<pid>/smaps_rollup refused: memory shared between the
          tracked processes is counted once per process (an over-estimate).
        """
        from ._run_data import data_quality

        return data_quality(self)

    @property
    def memory_hwm(self) -> Optional[float]:
        """KiB: the largest resident set one process of the workload had during the run, from
        the kernel's high-water mark (``VmHWM``), so a peak between two samples shows; None
        where it is not known (psutil backend, old snapshots). One process's peak: a floor
        of the workload's (see docs/metrics.md)."""
        if hasattr(self, "_hwm_stored"):
            return self._hwm_stored
        value = self._sampler.memory_hwm
        return float(value) if value else None

    def recommend_resources(
        self, historical_stats: Optional[Sequence[Mapping[str, Any]]] = None
    ) -> Dict[str, int]:
        """Recommend optimal resource allocation based on the measured resource tracker data.

        The rules:

        - cpu: the average CPU usage of the process tree (cores), rounded, at least 1; a
          run shorter than 0.1 s (``SHORT_RUN_S``) gives no CPU figure (its CPU time is
          below what the kernel's clock-tick counters can measure): then 1
        - memory: the peak memory of the process tree + 20%, rounded up to 128, 256, 512
          or 1024 MiB, or whole GiB beyond that (MiB); the peak is the largest sample, or the
          kernel's high-water mark of one process when that is higher (a peak between samples)
        - gpu: the peak number of GPUs in use by the process tree
        - vram: the peak VRAM use of the process tree + 20%, rounded as memory (MiB)

        Args:
            historical_stats: earlier ``stats()`` results to combine with this run (mean
                of the CPU means, max of the peaks).

        Returns:
            {'cpu': int, 'memory': int MiB, 'gpu': int, 'vram': int MiB}
        """
        from ._run_data import with_kernel_peak

        runs = [with_kernel_peak(self.stats())] + list(historical_stats or [])
        return _core.recommend(runs)  # the rules: csrc/stats.c (recommend_runs)

    def recommend_server(
        self,
        n: Optional[int] = None,
        historical_stats: Optional[Sequence[Mapping[str, Any]]] = None,
        **filters: Any,
    ) -> Any:
        """The cheapest cloud server that fits recommend_resources() (Spare Cores catalog).

        Filters: vendor, region/regions, country, architecture, allocation,
        compliance_framework, green_energy, min_score, max_price; order_by 'price' or
        'score_per_price'; n for a list of the top n.
        """
        from .catalog import recommend_server

        return recommend_server(self.recommend_resources(historical_stats), n=n, **filters)

    def report(
        self,
        historical_stats: Optional[Sequence[Mapping[str, Any]]] = None,
        *,
        status: str | None = None,
        integration: str | None = None,
        status_failed: bool = False,
    ) -> Any:
        """The self-contained HTML report (a Report: str with save(), browse()).

        Args:
            historical_stats: earlier runs to compare with (a list of ``stats()`` dicts).
            status: the status the page shows in place of the tracker's own: 'finished',
                'failed' or 'running' (an integration knows whether the job failed).
            integration: the name of what ran the job (e.g. 'Metaflow'), shown on the page.
            status_failed: True is the same as ``status='failed'``.
        """
        from .report import render_report

        if status_failed:
            status = "failed"
        return render_report(
            self, historical_stats=historical_stats, status=status, integration=integration
        )

    def summary(self, historical_stats: Any = None, *, lookup_server: bool = True) -> RunSummary:
        """The run summary (a frozen ``resource_tracker.summary.RunSummary``): statistics,
        earlier runs, recommendation, cheapest servers and costs, warnings. Built once and
        cached while the run does not change (new samples, stop, label, history); the
        report, the Metaflow card and artifact and the CLI take it.

        Args:
            historical_stats: earlier runs (a list of ``stats()`` dicts, or the Metaflow
                artifact's ``historical_stats`` summary).
            lookup_server: ask the server catalog (False: no catalog lookup at all).
        """
        from .summary import cached_summary

        return cached_summary(self, historical_stats, lookup_server=lookup_server)

    # -- machine ---------------------------------------------------------------------

    @property
    def server_info(self) -> Optional[Dict[str, Any]]:
        """CPU, memory, GPUs, OS and container limits of the machine (None if switched off)."""
        if self._server_info is None and self.discover_server:
            try:
                from .server_info import get_server_info

                self._server_info = get_server_info(
                    pid=self.pid, nvml_library=settings.get("RESOURCE_TRACKER_NVML_LIBRARY")
                )
            except Exception as exc:  # never let a probe break the caller
                self._server_info = {"error": f"{type(exc).__name__}: {exc}"}
        return self._server_info

    @property
    def cloud_info(self) -> Optional[Dict[str, Any]]:
        """Cloud vendor, region and instance type (None if switched off)."""
        if self._cloud_info is None and self._cloud_job is not None:
            self._cloud_info = self._cloud_job.result()
        return self._cloud_info

    # -- persistence -----------------------------------------------------------------

    def snapshot(self) -> Dict[str, Any]:
        """Everything about this run as a dict of plain Python values (lossless).

        The tables are stored as dumps() stores them: ``{"encoding": "float64-le-base64",
        "rows": n, "columns": {name: base64 text}}`` (every float bit for bit, about 11 bytes
        a value; a list of floats would take 32)."""
        from ._stored import snapshot

        return snapshot(self)

    def _snapshot_fields(self) -> Dict[str, Any]:
        """snapshot() without the two tables."""
        from ._stored import snapshot_fields

        return snapshot_fields(self)

    @classmethod
    def from_snapshot(cls, snapshot: Mapping[str, Any]) -> ResourceTracker:
        """A stopped tracker holding the data of snapshot() (report, stats, ... all work).

        Also takes the ``tracker`` entry of the Metaflow artifact (a snapshot whose tables
        are the artifact's TinyDataFrames): ``from_snapshot(data["tracker"]).report()``
        renders the step's page again.
        """
        from ._stored import from_snapshot

        return from_snapshot(cls, snapshot)

    def dumps(self) -> str:
        """The snapshot as compact JSON text (columns as base64 float64: lossless).

        Written in one piece by a streaming encoder: the text of the columns is made from the
        samples directly (no float lists, no intermediate bytes)."""
        from ._stored import dumps

        return dumps(self)

    @classmethod
    def loads(cls, text: Union[str, bytes]) -> ResourceTracker:
        """A stopped tracker from dumps() text (str or bytes)."""
        from ._stored import loads

        return loads(cls, text)

    def __repr__(self) -> str:
        return (
            f"<ResourceTracker pid={self.pid} interval={self.interval} status={self.status} "
            f"samples={self.n_samples}>"
        )


def _export_settings(export: Any) -> Any:
    """The checked export settings (no targets: no export), read once at construction; None
    when export is off (the export package is not even imported: start() stays cheap)."""
    if _export_off(export):
        return None
    from .export import prepare_export

    return prepare_export(export)


def _export_off(export: Any) -> bool:
    """True when neither the argument nor RESOURCE_TRACKER_EXPORT names a target."""
    if export is None:
        return not settings.get("RESOURCE_TRACKER_EXPORT")
    if isinstance(export, str):
        return not export.strip(" ,")
    return isinstance(export, (list, tuple)) and not export


def data_quality_notes(stats: Optional[Mapping[str, Any]]) -> List[str]:
    """One line per problem in stats()['data_quality'] (for the report and the CLI)."""
    from ._run_data import data_quality_notes as notes

    return notes(stats)


def _start_cloud_discovery() -> Any:
    """A background cloud discovery job, or a job answering None when it is unavailable."""
    try:
        from .cloud import start_discovery
    except ImportError:
        return _NoCloud()
    try:
        return start_discovery()
    except Exception:
        return _NoCloud()


class _NoCloud:
    def result(self, timeout: Optional[float] = None) -> None:
        return None
