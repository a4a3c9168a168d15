"""The methods of :class:`~resource_tracker.tracker.ResourceTracker` that read what a run
collected: its tables, statistics, recommendations, report, machine information and stored
form.

A base class of ResourceTracker, in a module of its own so that each module compiled with
the package stays small (without a pyc, compiling a module costs memory in proportion to
its length, and that memory stays with the process). The work is done in modules loaded on
first use: ``_run_data`` (tables, statistics), ``_stored`` (snapshots), ``summary``,
``report``, ``catalog``.
"""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
    Union,
    cast,
    overload,
)

from . import _core, settings
from ._code import CodeResults

if TYPE_CHECKING:
    from ._stored import DecodedRun
    from .results_types import DataQuality, Resources, RunStats, ServerRecord
    from .summary import RunSummary
    from .tiny_data_frame import StatSpec, TinyDataFrame

_T = TypeVar("_T")
_R = TypeVar("_R", bound="TrackerResults")
_History = Optional[Sequence[Mapping[str, Any]]]


class TrackerResults(CodeResults):
    """What a tracker collected (ResourceTracker's data methods; see its documentation; the
    code profile's in CodeResults)."""

    @property
    def tree_source(self) -> Optional[Dict[str, Any]]:
        """Where the tree's figures came from (C sampler only; None otherwise): ``source``
        ('cgroup', 'procfs' or 'mixed'), ``columns`` (cpu, memory, io: each 'cgroup' or
        'procfs'), ``note`` (why a column is walked, or why the cgroup source ended) and the
        counters ``cgroup_readings``, ``cgroup_reads`` (files read for it) and ``walks``
        (ticks that walked the processes). See docs/metrics.md, "The tree from its own cgroup".
        """
        if hasattr(self, "_tree_source_stored"):
            return self._tree_source_stored
        from ._run_data import tree_source

        return tree_source(self)

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

    def _gpu_devices(self) -> List[Dict[str, Any]]:
        """Each GPU's series, aligned with the system table's timestamps: index, name,
        memory_total_mib, utilization (%) and memory_used_mib (float64 columns); [] where the
        sampler keeps none (psutil backend, no GPU, an older snapshot)."""
        from ._gpu_series import of_sampler

        return of_sampler(self._sampler)

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

    def get_combined_metrics(
        self,
        bytes: bool = False,
        human_names: bool = False,
        system_prefix: Optional[str] = None,
        process_prefix: Optional[str] = None,
        offset: Optional[int] = None,
    ) -> TinyDataFrame:
        """System and process samples side by side, one row per timestamp.

        A view for people: values are rounded as the seeds print them (CPU usage and CPU
        seconds to 4 decimals, KiB and bytes whole, GB to 2 decimals; see
        ``resource_tracker.rounding``), so no float noise such as 0.09999999999999998
        shows. ``process_metrics`` and ``system_metrics`` keep the exact values.

        Args:
            bytes: memory (KiB), VRAM (MiB) and disk space (GB) in bytes (the names stay).
            human_names: the registry's labels ('System CPU usage', ...) as names.
            system_prefix, process_prefix: the names' prefixes (default 'system_' and
                'process_', or 'System ' and 'Process ' with human_names).
            offset: only the rows after the first ``offset`` (the rows not read yet).
        """
        from ._run_data import combined_metrics

        return combined_metrics(
            self,
            human_names,
            in_bytes=bytes,
            prefixes=(system_prefix, process_prefix),
            offset=offset,
        )

    if TYPE_CHECKING:

        @overload
        def stats(self, specs: None = None) -> RunStats: ...
        @overload
        def stats(self, specs: Sequence[StatSpec]) -> Dict[str, Dict[str, float]]: ...

    def stats(
        self, specs: Optional[Sequence[StatSpec]] = None
    ) -> Union[RunStats, Dict[str, Dict[str, float]]]:
        """Summaries of the samples: mean/max/percentiles, sums, peak disk use, duration.

        Computed once per state of the samples (a stopped run: once), on the sampler's own
        column buffers; each call returns a new dict. ``specs`` (StatSpecs, as the original
        package took them): those statistics of ``get_combined_metrics()`` instead."""
        from ._renamed import Stats

        if specs is not None:
            return Stats(self.get_combined_metrics().stats(specs))
        from ._run_data import stats

        return cast("RunStats", Stats(stats(self)))  # a 0.5 key's KeyError names the new key

    def data_quality(self) -> DataQuality:
        """What is missing from the data, and why: ``{'samples_dropped': int,
        'incomplete_columns': {stats key: reason}}`` (empty when nothing is).

        - samples_dropped: rows lost because memory ran out (each later row tries again);
        - process_read_bytes / process_write_bytes: /proc/<pid>/io refused (processes of
          another user, tracked without root): their I/O is not counted;
        - process_memory: /proc/<pid>/smaps_rollup refused: memory shared between the
          tracked processes is counted once per process (an over-estimate).

        ``read_in_caller`` (a sentence; only when it happened): stop() could make no thread
        (RLIMIT_NPROC, a container's pids.max, RLIMIT_AS), so the cgroup's end figures were
        read in its caller.
        """
        from ._run_data import data_quality

        return cast("DataQuality", data_quality(self))

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

    def recommend_resources(self, historical_stats: _History = None) -> Resources:
        """Recommend optimal resource allocation based on the measured resource tracker data.

        The rules:

        - cpu: the average CPU usage of the process tree (cores), rounded, at least 1; a
          run shorter than 0.1 s (``SHORT_RUN_S``) gives no CPU figure (its CPU time is
          below what the kernel's clock-tick counters can measure): then 1
        - memory: the peak memory of the process tree + 20%, rounded up to 128, 256, 512
          or 1024 MiB, or whole GiB beyond that (MiB); the peak is the largest sample, or the
          kernel's high-water mark of one process when that is higher (a peak between samples)
        - gpu: the GPUs the process tree kept busy (``stats()["gpu_fit"]``: GPUs that showed
          utilisation, at most the ones it held), else the peak number of GPUs it held
        - vram: those GPUs times the peak used memory of the fullest busy GPU, else the
          peak VRAM of the process tree; + 20%, rounded as memory (MiB). An 80 GiB GPU
          holding 10 GiB asks 12 GiB: a 24 GiB GPU fits (docs/metrics.md, "GPU right-sizing")

        Args:
            historical_stats: earlier ``stats()`` results to combine with this run (mean
                of the CPU means, max of the peaks).

        Returns:
            {'cpu': int, 'memory': int MiB, 'gpu': int, 'vram': int MiB}

        Raises:
            ValueError: no recommendation from nothing: the tracked process was never
                visible in this run (``stats()['data_quality']['process_visible']`` is
                False: hidepid, another user's process, failing procfs reads) nor in any
                historical run given; the message says why. A run that was never visible
                is left out of the historical runs too.
        """
        from ._run_data import has_measurements, with_gpu_fit, with_kernel_peak

        stats = self.stats()
        runs = [with_gpu_fit(r) for r in [with_kernel_peak(stats), *(historical_stats or [])]]
        measured = [run for run in runs if has_measurements(run)]
        if not measured:
            errors = stats.get("data_quality", {}).get("errors") or ["no measurements"]
            raise ValueError(f"nothing was measured: {errors[0]}")
        return cast("Resources", _core.recommend(measured))  # csrc/stats.c (recommend_runs)

    if TYPE_CHECKING:

        @overload
        def recommend_server(
            self,
            n: None = None,
            historical_stats: _History = None,
            **filters: Any,
        ) -> ServerRecord: ...
        @overload
        def recommend_server(
            self,
            n: int,
            historical_stats: _History = None,
            **filters: Any,
        ) -> List[ServerRecord]: ...

    def recommend_server(
        self,
        n: Optional[int] = None,
        historical_stats: _History = None,
        **filters: Any,
    ) -> Union[ServerRecord, List[ServerRecord]]:
        """The cheapest cloud server that fits recommend_resources() (Spare Cores catalog).

        Filters: vendor, region/regions, country, architecture (``"same"``: the run's),
        allocation, compliance_framework, green_energy, min_score, max_price; order_by
        'price' or 'score_per_price'; n for a list of the top n.
        """
        from .catalog import recommend_server, same_architecture

        run_arch = (getattr(self, "server_info", None) or {}).get("architecture")
        filters = same_architecture(filters, run_arch)
        found = recommend_server(self.recommend_resources(historical_stats), n=n, **filters)
        return cast("Union[ServerRecord, List[ServerRecord]]", found)

    def report(
        self,
        historical_stats: _History = None,
        *,
        status: str | None = None,
        integration: str | None = None,
        status_failed: bool = False,
        integration_version: str | None = None,
    ) -> Any:
        """The self-contained HTML report (a Report: str with save(), browse()).

        Args:
            historical_stats: earlier runs to compare with (a list of ``stats()`` dicts).
                A string here is the integration, as the original package's first argument
                (``report("Metaflow")``).
            status: the status the page shows in place of the tracker's own: 'finished',
                'failed' or 'running' (an integration knows whether the job failed); the
                page says Finished, Failed or Pending.
            integration: the name of what ran the job (e.g. 'Metaflow'), shown on the page
                ('standalone': none).
            status_failed: True is the same as ``status='failed'``.
            integration_version: the integration's version, shown after its name.
        """
        from .report import render_report

        if isinstance(historical_stats, str):  # report("Metaflow"): the 0.4/0.5 order
            integration, historical_stats = historical_stats, None
        if integration == "standalone":
            integration = None
        if integration and integration_version:
            integration = f"{integration} {integration_version}"
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
        """Cloud vendor, instance_type and region ('unknown' where not found) and
        discovery_time (seconds), as get_cloud_info() gives them (None if switched off)."""
        if self._cloud_info is None and self._cloud_job is not None:
            found = self._cloud_job.result()
            if found is not None:  # 'unknown' where not found, as get_cloud_info()
                from .cloud import documented_cloud_info

                self._cloud_info = documented_cloud_info(found)
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
    def from_snapshot(cls: type[_R], snapshot: Mapping[str, Any]) -> _R:
        """A stopped tracker holding the data of snapshot() (report, stats, ... all work).

        Also takes the ``tracker`` entry of the Metaflow artifact (a snapshot whose tables
        are the artifact's TinyDataFrames): ``from_snapshot(data["tracker"]).report()``
        renders the step's page again.
        """
        from ._stored import from_snapshot

        return cls._wrap(from_snapshot(snapshot))

    @classmethod
    def _wrap(cls: type[_R], run: DecodedRun) -> _R:
        """A stopped tracker around the run data of a snapshot (``_stored.DecodedRun``)."""
        from .summary import stored_summary

        tracker = cls.__new__(cls)
        for key, value in run.fields.items():
            setattr(tracker, key, value)
        tracker.discover_server = tracker.discover_cloud = False
        tracker._settings_stored = run.settings
        tracker.extra = run.extra
        tracker._server_info = run.server_info
        tracker._cloud_info = run.cloud_info
        tracker._cloud_job = None
        tracker._autostarted = False
        tracker._cgroup_stored = run.cgroup_metrics
        tracker._hwm_stored = run.memory_hwm
        tracker._tree_source_stored = run.tree_source
        tracker._code_stored = run.code_record
        tracker._summary = stored_summary(run.summary)
        tracker._sampler = run.sampler
        return tracker

    def dumps(self) -> str:
        """The snapshot as compact JSON text (columns as base64 float64: lossless).

        Written in one piece by a streaming encoder: the text of the columns is made from the
        samples directly (no float lists, no intermediate bytes)."""
        from ._stored import dumps

        return dumps(self)

    @classmethod
    def loads(cls: type[_R], text: Union[str, bytes]) -> _R:
        """A stopped tracker from dumps() text (str or bytes)."""
        from ._stored import loads

        return loads(text, cls._wrap)

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
