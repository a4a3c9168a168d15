"""@track_resources: track a Metaflow step's resource use, store it, and show it in a card.

In the task process the decorator starts a ResourceTracker on the task process and its
descendants just before the user code (``task_decorate`` wraps the step function) and stops it
just after. ``task_post_step`` / ``task_exception`` store the artifact (a dict, see
``build_artifact``), so a failed step has its data too. The card of type
``tracked_resources`` is attached in ``step_init`` (unless ``create_card=False``); it renders
at the end of the task, also when the task failed, and while the step runs it is re-rendered
every ``live_interval`` seconds from the data so far.

Nothing here may break the user's step: an error in our code is recorded in the artifact's
``error`` field and the step goes on.
"""

from __future__ import annotations

import os
import time
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
)

from metaflow.decorators import StepDecorator

if TYPE_CHECKING:
    from metaflow.datastore import FlowDataStore, TaskDataStore
    from metaflow.decorators import Decorator
    from metaflow.flowspec import FlowSpec
    from metaflow.graph import FlowGraph
    from metaflow.metadata_provider.metadata import MetadataProvider
    from metaflow.metaflow_environment import MetaflowEnvironment
    from metaflow.runtime import CLIArgs

    from resource_tracker import ResourceTracker
    from resource_tracker._artifact_types import (
        DocumentedCloudInfo,
        DocumentedStats,
        Overhead,
        Recommendations,
        StepError,
        TrackResourcesArtifact,
        TuningEntry,
        TuningResult,
    )
    from resource_tracker.metaflow_history import HistoryLookup, Record, Stats
    from resource_tracker.summary import RunSummary

    from .track_resources_live import LiveCard, LivePage
    from .track_resources_record import RecordWriter

CARD_TYPE = "tracked_resources"
CARD_ID = "resource_tracker"

#: Metaflow's logger of the step (``step_init``'s ``logger``): ``logger(text, bad=True)``
Logger = Callable[..., None]
#: What a step asks for (``asked_resources``): ``cpu``, ``memory`` (MiB), ``gpu``, ``source``
Asked = Dict[str, Any]


class TrackedCard(Protocol):
    """The @card decorator @track_resources adds (``_card_decorator_class``)."""

    owner: Optional[TrackResourcesDecorator]
    tracked_data: Optional[TrackResourcesArtifact]

    def live_page(self, user: Dict[str, Any]) -> LivePage:
        """The card's HTML and data update for the live data ``user``."""
        ...

    def save_live(self, page: LivePage) -> None:
        """Write a live page to the card datastore (where `card create` would)."""
        ...


def _as_bool(value: object) -> bool:
    """Decorator attributes arrive as str from --with: 'False', '0', 'no' mean False."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "no", "off", "")
    return bool(value)


def _as_float(value: Any, name: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"@track_resources({name}=...) must be a number, got {value!r}") from None
    if not number > 0:
        raise ValueError(f"@track_resources({name}=...) must be positive, got {value!r}")
    return number


def _bounded_interval(value: float) -> float:
    """The interval within the tracker's bounds, or ValueError naming the attribute."""
    from resource_tracker._launch import _check_interval

    try:
        return _check_interval(value)
    except ValueError as exc:
        raise ValueError(f"@track_resources(interval=...): {exc}") from None


def _check_artifact_name(name: object, flow: FlowSpec) -> str:
    """The artifact name, or ValueError when it cannot be a data artifact of this flow."""
    text = str(name)
    if not text.isidentifier() or text.startswith("_") or hasattr(type(flow), text):
        raise ValueError(
            f"@track_resources(artifact_name={text!r}): use a Python identifier that does not "
            "start with '_' and is not an attribute or step of the flow"
        )
    return text


def _check_export(value: Any) -> Optional[str]:
    """The export targets (None: RESOURCE_TRACKER_EXPORT decides), or ValueError naming the
    attribute (``value``: the attribute as given, any value: parse_targets checks it)."""
    if value is None:
        return None
    from resource_tracker.export import parse_targets

    return ",".join(parse_targets(value, "@track_resources(export=...)"))


def _given(deco: Decorator) -> Dict[str, Any]:
    """The options a @track_resources was given (Metaflow's record of them, else those
    that differ from the defaults)."""
    given = getattr(deco, "_user_defined_attributes", None)
    if given is None:
        given = [k for k, v in deco.attributes.items() if deco.defaults.get(k) != v]
    return {k: deco.attributes[k] for k in given if k in deco.attributes}


def merged_options(
    deco: TrackResourcesDecorator, decorators: Sequence[Decorator]
) -> Optional[Dict[str, Any]]:
    """The options of the step's @track_resources when ``deco`` is the first of them on the
    step (``decorators``): the defaults, then the options given in the code, then those of
    ``--with track_resources:...`` (the command line wins, as for Metaflow's own
    decorators). None for a later one: it stays on the step, so that Metaflow passes its
    ``--with`` on to the task process (where the merge is made again), and does nothing."""
    mine = [d for d in decorators if getattr(d, "name", None) == deco.name]
    if mine and mine[0] is not deco:
        return None
    options = dict(deco.defaults)
    for each in sorted(mine or [deco], key=lambda d: not d.statically_defined):  # code first
        options.update(_given(each))
    return options


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# Metaflow's classes are untyped (pyproject.toml: metaflow is Any to mypy)
class TrackResourcesDecorator(StepDecorator):  # type: ignore[misc]
    """Track the resource use of a step; store it as an artifact and show it in a card.

    Parameters
    ----------
    interval : float, default 1.0
        Seconds between samples.
    artifact_name : str, default "resource_tracker_data"
        Name of the artifact holding the data.
    create_card : bool, default True
        Attach a card of type "tracked_resources" showing the report.
    history : bool, default True
        Use the same step of earlier successful runs (same namespace) in the statistics and
        recommendations.
    history_runs : int, default 5
        How many earlier runs to use at most.
    history_timeout : float, default 10.0
        Seconds the history lookup may take; a slower metadata service gives less history.
    live : bool, default True
        Re-render the card while the step runs.
    live_interval : float, default 5.0
        Seconds between live renders.
    export : str, optional
        Stream the samples while the step runs: "otlp", "pushgateway" or both as a comma
        list (docs/export.md); the series carry the flow, run, step and task ids. Default:
        the RESOURCE_TRACKER_EXPORT variable decides (unset: no export).
    tune : bool, default False
        Set the step's @resources (and @kubernetes / @batch) from its history: at least 3
        successful earlier runs, never below the highest observed peak plus the margin,
        raised after an OOM kill or heavy throttling; the changes are written in the
        artifact (``tuning``) and the card. With less history values are only raised.
        The rule: ``resource_tracker.tuning`` (docs/insights.md).
    min_cpu, max_cpu, min_memory, max_memory, min_gpu, max_gpu : float, optional
        Guardrails of the tuning (cores, MiB, GPUs).
    """

    name = "track_resources"
    attributes: Dict[str, Any]  # set by Metaflow's Decorator: the options, then merged
    # Metaflow drops a `--with track_resources:...` when the step has @track_resources; allowed
    # several, the first merges the others' options into its own in step_init (merged_options)
    allow_multiple = True
    defaults: Dict[str, Any] = {
        "interval": 1.0,
        "artifact_name": "resource_tracker_data",
        "create_card": True,
        "history": True,
        "history_runs": 5,
        "history_timeout": 10.0,
        "live": True,
        "live_interval": 5.0,
        "export": None,
        "tune": False,
        "min_cpu": None,
        "max_cpu": None,
        "min_memory": None,
        "max_memory": None,
        "min_gpu": None,
        "max_gpu": None,
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._merged = False  # a later @track_resources of the step, merged into the first
        self._tune_on = False  # set by step_init (not for a merged one)
        self._card: Optional[TrackedCard] = None
        self._asked: Optional[Asked] = None
        self._logger: Optional[Logger] = None
        self._tuning: Optional[TuningResult] = None
        self._code: Optional[str] = None  # the step function's fingerprint (set by step_init)
        self._reset_task_state()

    def _reset_task_state(self) -> None:
        self._tracker: Optional[ResourceTracker] = None
        self._record: Optional[RecordWriter] = None
        self._datastore: Optional[TaskDataStore] = None
        self._earlier_attempts: List[Record] = []
        self._error: Optional[str] = None
        self._history: Optional[HistoryLookup] = None
        self._live: Optional[LiveCard] = None
        self._flow: Optional[FlowSpec] = None
        self._run_id: Optional[str] = None
        self._pathspec: Optional[str] = None
        self._finished = False
        self._step_error: Optional[StepError] = None  # the user code's exception
        self._overhead: Overhead = {}

    # -- every process that loads the flow: cheap, no side effects -------------------

    def step_init(
        self,
        flow: FlowSpec,
        graph: FlowGraph,
        step_name: str,
        decorators: List[Decorator],
        environment: MetaflowEnvironment,
        flow_datastore: FlowDataStore,
        logger: Logger,
    ) -> None:
        options = merged_options(self, decorators)
        self._merged = options is None
        if options is None:
            return
        self.attributes = options
        self._step_name = step_name
        self._logger = logger
        self._interval = _bounded_interval(_as_float(self.attributes["interval"], "interval"))
        self._live_interval = _as_float(self.attributes["live_interval"], "live_interval")
        self._history_timeout = _as_float(self.attributes["history_timeout"], "history_timeout")
        self._history_runs = int(self.attributes["history_runs"])
        self._artifact_name = _check_artifact_name(self.attributes["artifact_name"], flow)
        self._export = _check_export(self.attributes.get("export"))
        self._tuning = None
        self._flow_datastore: Optional[FlowDataStore] = flow_datastore
        self._decorators = decorators
        self._static_asked = asked_resources(decorators)
        self._tune_on = _as_bool(self.attributes["tune"])
        self._bounds = _check_bounds(self.attributes)
        self._cpu_step = _platform_cpu_step() if self._tune_on else 1.0
        self._code = _step_code(flow, step_name)
        if self._tune_on:
            self._tuning = self._tune(flow, step_name, decorators)
        self._asked = asked_resources(decorators)
        if _as_bool(self.attributes["create_card"]):
            self._card = _attach_card(self, step_name, decorators)

    def make_decorator_spec(self) -> str:
        """The ``--with`` text Metaflow gives the task process for this decorator: the
        options given only (with the defaults too, they would hide the options the code
        gave the step's @track_resources, see merged_options)."""
        kept = self.attributes
        try:
            self.attributes = _given(self)
            spec: str = super().make_decorator_spec()
            return spec
        finally:
            self.attributes = kept

    def _tune(
        self,
        flow: FlowSpec,
        step_name: str,
        decorators: List[Decorator],
        records: Optional[List[Record]] = None,
    ) -> TuningResult:
        """Tune the step's requests from its history (``records``, newest first; default:
        looked up once per process); the tuning as a dict for the artifact, or a note of
        why it could not be made."""
        try:
            from resource_tracker.tuning import limit_runs, tune_resources

            if records is None:
                key = (flow.name, step_name, self._artifact_name)
                if key not in _TUNED_HISTORY:
                    _TUNED_HISTORY[key] = _history_records(
                        flow.name, step_name, self._artifact_name, self._history_runs,
                        self._history_timeout,
                    )  # fmt: skip
                records = _TUNED_HISTORY[key]
            records = limit_runs(records, self._history_runs)
            tuning = tune_resources(records, self._static_asked, self._bounds, self._code,
                                    self._cpu_step)  # fmt: skip
            static = self._static_asked or {}
            changed = {k: v for k, v in tuning.resources.items() if static.get(k) != v}
            if changed:  # an ask kept as it is stays as the code wrote it
                _apply_tuning(decorators, changed)
            return tuning.to_dict()
        except Exception as exc:  # never break the flow: no tuning, and why
            return {
                "runs": 0,
                "resources": {},
                "changes": [],
                "note": f"not tuned: {_describe(exc)}",
            }

    # -- the runtime (the process launching the tasks) ------------------------------

    def runtime_step_cli(
        self,
        cli_args: CLIArgs,
        retry_count: int,
        max_user_code_retries: int,
        ubf_context: Optional[str],
    ) -> None:
        """A @retry attempt of a tuned step is launched with the ask tuned again, with the
        earlier attempts' records (an OOM-killed attempt raises the memory of the next one:
        @kubernetes / @batch read the attributes, or their options are updated here)."""
        if self._merged or not self._tune_on or not retry_count:
            return
        try:
            task = cli_args.task
            earlier = _earlier_attempts(
                self._flow_datastore, task.run_id, self._step_name, task.task_id, retry_count
            )
            if not earlier:
                return
            key = (task.flow.name, self._step_name, self._artifact_name)
            history = [r for r in _TUNED_HISTORY.get(key, ()) if r.get("run") != str(task.run_id)]
            self._tuning = self._tune(task.flow, self._step_name, self._decorators,
                                      earlier + history)  # fmt: skip
            for name, value in (self._tuning.get("resources") or {}).items():
                if name in cli_args.command_options:
                    cli_args.command_options[name] = str(value)
        except Exception as exc:  # the retry runs with the ask it had
            if self._logger:
                self._logger(f"[@track_resources] retry not re-tuned: {_describe(exc)}")

    # -- the task process --------------------------------------------------------------

    def task_pre_step(
        self,
        step_name: str,
        task_datastore: TaskDataStore,
        metadata: MetadataProvider,
        run_id: str,
        task_id: str,
        flow: FlowSpec,
        graph: FlowGraph,
        retry_count: int,
        max_user_code_retries: int,
        ubf_context: Optional[str],
        inputs: Optional[List[Any]],
    ) -> None:
        if self._merged:
            return
        began = time.perf_counter()
        self._reset_task_state()
        self._flow = flow
        self._run_id = run_id
        self._pathspec = f"{flow.name}/{run_id}/{step_name}/{task_id}"
        self._datastore = task_datastore
        self._start_history(flow, step_name, run_id)
        self._earlier_attempts = _earlier_attempts(
            self._flow_datastore, run_id, step_name, task_id, retry_count
        )
        if self._tune_on and self._history is not None:
            # this attempt's ask: the runs before this one and this task's earlier attempts
            records = self._earlier_attempts + self._history.tuning_records()
            self._tuning = self._tune(flow, step_name, self._decorators, records)
            self._asked = asked_resources(self._decorators)
        self._overhead["pre_step"] = time.perf_counter() - began

    def _start_history(self, flow: FlowSpec, step_name: str, run_id: str) -> None:
        if _as_bool(self.attributes["history"]) and self._history_runs > 0:
            try:
                from resource_tracker.metaflow_history import HistoryLookup

                self._history = HistoryLookup(
                    flow.name,
                    step_name,
                    self._artifact_name,
                    run_id,
                    max_runs=self._history_runs,
                    timeout=self._history_timeout,
                ).start()
            except Exception as exc:
                self._history = None
                self._error = f"history lookup could not start: {_describe(exc)}"

    def task_decorate(
        self,
        step_func: Callable[..., Any],
        flow: FlowSpec,
        graph: FlowGraph,
        retry_count: int,
        max_user_code_retries: int,
        ubf_context: Optional[str],
    ) -> Callable[..., Any]:
        if self._merged:
            return step_func
        deco = self

        def step_with_resource_tracking(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            deco._start_tracking()
            deco._overhead["start"] = time.perf_counter() - began
            failed = True
            try:
                result = step_func(*args, **kwargs)
                failed = False
                return result
            except BaseException as exc:
                deco._step_error = step_error(exc)
                raise
            finally:
                began = time.perf_counter()
                deco._stop_tracking(failed)
                deco._overhead["stop"] = time.perf_counter() - began

        return step_with_resource_tracking

    def task_post_step(
        self,
        step_name: str,
        flow: FlowSpec,
        graph: FlowGraph,
        retry_count: int,
        max_user_code_retries: int,
    ) -> None:
        if not self._merged:
            self._store(flow, failed=False)

    def task_exception(
        self,
        exception: BaseException,
        step_name: str,
        flow: FlowSpec,
        graph: FlowGraph,
        retry_count: int,
        max_user_code_retries: int,
    ) -> None:
        if not self._merged:
            self._step_error = self._step_error or step_error(exception)
            self._store(flow, failed=True)
        return None  # we never handle the user's exception

    # -- helpers -----------------------------------------------------------------------

    def _start_tracking(self) -> None:
        try:
            from resource_tracker import ResourceTracker

            self._tracker = ResourceTracker(
                pid=os.getpid(), children=True, interval=self._interval, export=self._export
            )
        except Exception as exc:
            self._tracker = None
            self._error = f"resource tracking could not start: {_describe(exc)}"
            return
        self._start_record()
        if self._card is not None and _as_bool(self.attributes["live"]):
            try:
                from .track_resources_live import LiveCard

                self._live = LiveCard(self._tracker, self._card, self._live_interval).start()
            except Exception as exc:
                self._live = None
                self._error = f"live card could not start: {_describe(exc)}"

    def _start_record(self) -> None:
        """Keep the attempt's tuning record in the datastore while the step runs."""
        if self._datastore is None:
            return
        try:
            from .track_resources_record import RecordWriter

            self._record = RecordWriter(
                self._tracker, self._datastore, self._asked, {"code": self._code}
            ).start()
        except Exception as exc:
            self._record = None
            self._error = f"tuning record could not start: {_describe(exc)}"

    def _describe_run(self, failed: Optional[bool]) -> None:
        """Attach what the summary needs (the ask, the history, the tuning's inputs) to the
        tracker before it stops: the export's final summary is then the card's."""
        if self._tracker is None or self._tracker.extra.get("integration"):
            return
        stats_list, _, _ = self._history.result() if self._history else ([], [], [])
        _describe_step(self._tracker, self._history, failed, self._pathspec, self._asked,
                       stats_list)  # fmt: skip
        if failed and self._step_error:
            self._tracker.extra["step_error"] = dict(self._step_error)
        if self._tune_on:
            earlier = self._history.tuning_records() if self._history else []
            self._tracker.extra["tuning_input"] = {
                "records": self._earlier_attempts + earlier,
                "asked": dict(self._static_asked or {}),
                "bounds": dict(self._bounds),
                "runs": self._history_runs,
                "run": str(self._run_id),
                "code": self._code,
                "cpu_step": self._cpu_step,
            }

    def _stop_tracking(self, failed: Optional[bool] = None) -> None:
        try:
            self._describe_run(failed)
        except Exception as exc:
            self._error = f"describing the run failed: {_describe(exc)}"
        try:
            if self._tracker is not None:
                self._tracker.stop(failed=failed)
        except Exception as exc:
            self._error = f"resource tracking could not stop: {_describe(exc)}"
        if self._live is not None:
            try:
                self._live.stop()
            except Exception as exc:
                self._error = f"live card could not stop: {_describe(exc)}"

    def _store(self, flow: FlowSpec, failed: bool) -> None:
        if self._finished:
            return
        self._finished = True
        began = time.perf_counter()
        self._stop_tracking()
        try:
            artifact = build_artifact(
                self._tracker,
                self._history,
                failed,
                self._error,
                label=self._pathspec,
                asked=self._asked,
            )
        except Exception as exc:
            artifact = error_artifact(f"building the artifact failed: {_describe(exc)}", failed)
        self._overhead["store"] = time.perf_counter() - began
        self._finish_record(artifact, failed)
        # seconds our hooks took in the task (before/after the user code; not the card render)
        artifact["overhead_s"] = self._overhead.copy()
        if self._history is not None and isinstance(artifact.get("historical_stats"), dict):
            artifact["historical_stats"]["lookup_cpu_s"] = self._history.cpu_seconds
        if self._live is not None:
            artifact["live_card"] = {"renders": self._live.renders, "errors": self._live.errors}
        if self._tuning is not None:
            artifact["tuning"] = _tuning_entry(self._tuning, artifact, self._bounds)
        if self._card is not None:
            self._card.tracked_data = artifact
        try:
            setattr(flow, self._artifact_name, artifact)
        except Exception as exc:  # e.g. a name clash with a flow property
            if self._logger:
                self._logger(
                    f"[@track_resources] could not store {self._artifact_name}: {_describe(exc)}",
                    bad=True,
                )

    def _finish_record(self, artifact: TrackResourcesArtifact, failed: bool) -> None:
        """The attempt's last record (``final``): what the next run and a retry read."""
        if self._record is None:
            return
        self._record.stop()
        self._record.write("failed" if failed else "ok")
        artifact["tuning_record"] = {"writes": self._record.writes,
                                     "errors": self._record.errors[:3]}  # fmt: skip


#: The history records tuning read, per (flow, step, artifact name): looked up once a process
_TUNED_HISTORY: Dict[Tuple[str, str, str], List[Record]] = {}


def _platform_cpu_step() -> float:
    """The CPU step of the tuned asks (``RESOURCE_TRACKER_TUNED_CPU``); a value it cannot use
    stops the flow with one line saying what it takes (a platform asked for has no right
    guess; a MetaflowException: Metaflow prints it without a traceback)."""
    from metaflow.exception import MetaflowException

    from resource_tracker.tuning import platform_cpu_step

    try:
        return platform_cpu_step()
    except ValueError as exc:  # settings.SettingError
        raise MetaflowException(f"@track_resources(tune=True): {exc}") from None


def _check_bounds(attributes: Mapping[str, Any]) -> Dict[str, float]:
    """The tuning guardrails of the decorator's attributes (ValueError naming a bad one)."""
    from resource_tracker.tuning import BOUND_NAMES, check_bounds

    return check_bounds({name: attributes.get(name) for name in BOUND_NAMES})


def _history_records(
    flow_name: str, step_name: str, artifact_name: str, max_runs: int, timeout: float
) -> List[Record]:
    """The tuning records of the step in the flow's latest runs (newest first; failed and
    killed runs included)."""
    from resource_tracker.metaflow_history import HistoryLookup

    lookup = HistoryLookup(
        flow_name, step_name, artifact_name, current_run_id="", max_runs=max_runs, timeout=timeout
    )
    return lookup.start().tuning_records()


def _earlier_attempts(
    flow_datastore: Optional[FlowDataStore],
    run_id: str,
    step_name: str,
    task_id: str,
    retry_count: int,
) -> List[Record]:
    """The records of this task's earlier attempts (a @retry), newest first."""
    if not retry_count or flow_datastore is None:
        return []
    from resource_tracker.metaflow_history import read_record

    found: List[Record] = []
    for attempt in range(int(retry_count) - 1, -1, -1):
        try:
            record = read_record(flow_datastore, run_id, step_name, task_id, attempt)
        except Exception:
            record = None
        if record is not None:
            found.append(record)
    return found


def _step_code(flow: Any, step_name: str) -> Optional[str]:
    """The fingerprint of the step function's code (``tuning.code_fingerprint``), or None."""
    try:
        from resource_tracker.tuning import code_fingerprint

        return code_fingerprint(getattr(flow, step_name, None))
    except Exception:  # a flow object Metaflow made in another way: no fingerprint
        return None


def _tuning_entry(
    tuning: TuningResult, artifact: TrackResourcesArtifact, bounds: Mapping[str, float]
) -> TuningEntry:
    """The artifact's ``tuning``: what this run was tuned to, what the pod actually got
    (its cgroup limits) and the ask of the next run (the run summary's recommendation)."""
    detailed: Mapping[str, Any] = artifact.get("detailed_stats") or {}
    cgroup = detailed.get("cgroup") or {}
    recommended = artifact.get("recommendations")
    entry: TuningEntry = {
        **tuning,
        "got": {"cpu": cgroup.get("cpu_limit_cores"), "memory": cgroup.get("memory_limit_mib")},
        "bounds": dict(bounds),
        "next": (recommended["resources"] if recommended else None) or None,
        "next_note": None,
    }
    try:  # what the next run's tuning says (starved or killed runs, bounds): the same rule
        from resource_tracker.tuning import next_tuning

        snapshot = artifact.get("tracker") or {}
        upcoming = next_tuning(snapshot.get("extra") or {}, detailed,
                               artifact.get("server_info"))  # fmt: skip
        entry["next_note"] = upcoming.note if upcoming is not None else None
    except Exception as exc:
        entry["next_note"] = f"not known: {_describe(exc)}"
    return entry


def _apply_tuning(decorators: List[Decorator], resources: Mapping[str, Any]) -> None:
    """Set the tuned values on the step's @resources, @kubernetes and @batch (Metaflow
    requests the largest among them); a @resources is added when the step has none."""
    found = False
    for deco in decorators:
        if getattr(deco, "name", None) in ASKING_DECORATORS:
            found = True
            for key, value in resources.items():
                if key in deco.attributes:
                    deco.attributes[key] = str(value)  # Metaflow's own attributes are text
    if not found:
        from metaflow.plugins.resources_decorator import ResourcesDecorator

        deco = ResourcesDecorator(
            attributes={k: str(v) for k, v in resources.items()}, statically_defined=False
        )
        decorators.append(deco)


def step_error(exc: BaseException) -> StepError:
    """What the card says of a step's exception: ``{"type", "message"}`` (the summary makes
    them printable and bounds their length; the page escapes them)."""
    try:
        message = str(exc)
    except Exception:  # a __str__ that raises still names its type
        message = ""
    return {"type": type(exc).__name__, "message": message[:2000]}


def error_artifact(message: str, failed: Optional[bool]) -> TrackResourcesArtifact:
    """The artifact when there is nothing to show but an error."""
    from resource_tracker.metaflow_history import summarize_history

    return {
        "process_metrics": None,
        "system_metrics": None,
        "cloud_info": None,
        "server_info": None,
        "stats": None,
        "detailed_stats": None,
        "historical_stats": summarize_history([]),
        "recommendations": None,
        "insights": [],
        "step_failed": bool(failed),
        "error": message,
        "tracker": None,
    }


#: The step decorators whose attributes say what a step asks for (Metaflow requests the
#: largest value of each among them).
ASKING_DECORATORS = ("resources", "kubernetes", "batch")


def asked_resources(decorators: Iterable[Decorator]) -> Optional[Asked]:
    """What the step asks for: the largest ``cpu``, ``memory`` (MiB) and ``gpu`` among its
    @resources / @kubernetes / @batch attributes, with ``source`` naming them; None when
    the step has none of them."""
    asked: Dict[str, float] = {}
    sources: List[str] = []
    for deco in decorators:
        if getattr(deco, "name", None) not in ASKING_DECORATORS:
            continue
        sources.append("@" + deco.name)
        for key in ("cpu", "memory", "gpu"):
            try:
                value = float(deco.attributes.get(key) or 0)
            except (TypeError, ValueError):
                continue
            if value > 0:
                asked[key] = max(asked.get(key, 0.0), value)
    if not sources:
        return None
    return {**asked, "source": " ".join(dict.fromkeys(sources))}


def _set_schedule(tracker: ResourceTracker, history: Optional[HistoryLookup]) -> None:
    """The step's run frequency (runs a month) from the earlier runs' and this run's start
    times, for the monthly costs of the insights (unset: one run a day is assumed)."""
    from resource_tracker.insights import runs_per_month

    started = list(getattr(history, "started", None) or [])
    if started and tracker.start_time:
        per_month = runs_per_month(started + [tracker.start_time])
        if per_month:
            tracker.extra["schedule"] = {"runs_per_month": per_month}


def _describe_step(
    tracker: ResourceTracker,
    history: Optional[HistoryLookup],
    failed: Optional[bool],
    label: Optional[str],
    asked: Optional[Mapping[str, Any]],
    stats_list: List[Stats],
) -> None:
    """What the summary needs to know of the step: its label, Metaflow, whether it failed,
    what it asked for, its earlier runs and how often it runs."""
    if label:
        tracker.label = label
    tracker.extra.update(integration="Metaflow", step_failed=bool(failed))
    if asked:
        tracker.extra["resources_asked"] = dict(asked)
    if stats_list:
        tracker.extra["historical_stats"] = list(stats_list)
    _set_schedule(tracker, history)


def _recommendations(summary: RunSummary) -> Recommendations:
    """The artifact's ``recommendations``: resources, the best server and why there is none."""
    return {
        "resources": summary.resources,
        "server": summary.server.best,
        "server_note": (
            (summary.server.unavailable or summary.server.no_match)
            if summary.resources is not None
            else None
        ),
    }


def build_artifact(
    tracker: Optional[ResourceTracker],
    history: Optional[HistoryLookup],
    failed: Optional[bool],
    error: Optional[str] = None,
    label: Optional[str] = None,
    asked: Optional[Mapping[str, Any]] = None,
) -> TrackResourcesArtifact:
    """The artifact dict of a stopped tracker.

    The keys the seeds document: ``process_metrics``, ``system_metrics`` (TinyDataFrames,
    exact values), ``cloud_info`` (vendor, instance_type, region: 'unknown' when unknown;
    discovery_time), ``server_info``, ``stats`` (the documented summary, rounded as the
    documents show it) and ``historical_stats``. Beside them: ``detailed_stats`` (all of
    ``ResourceTracker.stats()``, exact), ``historical_runs_stats``, ``recommendations``,
    ``step_failed``, ``error`` and ``tracker``: the run's snapshot, so that
    ``ResourceTracker.from_snapshot(data["tracker"])`` is the tracker again (its tables are
    the same frames as ``process_metrics`` / ``system_metrics``, stored once).
    """
    from resource_tracker.metaflow_history import summarize_history

    if history is not None:
        stats_list, notes, runs = history.result()
    else:
        stats_list, notes, runs = [], [], []
    if tracker is None:
        artifact = error_artifact(error or "resource tracking did not run", failed)
        artifact["historical_stats"] = summarize_history(stats_list, notes, runs)
        return artifact
    if not tracker.extra.get("integration"):  # not attached before stop()
        _describe_step(tracker, history, failed, label, asked, stats_list)
    # computed once here (the catalog lookup included, bounded in time); the snapshot below
    # stores it, so the card renders it without asking the catalog again
    summary = tracker.summary(historical_stats=list(stats_list) or None)
    errors = ([error] if error else []) + [
        f"no resource recommendation: {text}" for text in summary.warnings_about("recommendation")
    ]
    process, system = tracker.process_metrics, tracker.system_metrics
    snapshot = tracker._snapshot_fields()
    snapshot.update(process_metrics=process, system_metrics=system)
    return {
        "process_metrics": process,
        "system_metrics": system,
        "cloud_info": _cloud_entry(summary.cloud_info),
        "server_info": summary.server_info,
        "stats": _stats_entry(summary.stats),
        "detailed_stats": summary.stats,
        "historical_stats": summarize_history(stats_list, notes, runs),
        "historical_runs_stats": stats_list,
        "recommendations": _recommendations(summary),
        "insights": [insight.to_dict() for insight in summary.insights],
        "code_profile": _code_profile_entry(tracker),
        "step_failed": bool(failed),
        "step_error": (tracker.extra or {}).get("step_error"),
        "error": "; ".join(errors) or None,
        "tracker": snapshot,
    }


def _cloud_entry(info: Optional[Dict[str, Any]]) -> DocumentedCloudInfo:
    """The artifact's ``cloud_info``: ``resource_tracker.cloud.documented_cloud_info`` under
    its declared keys."""
    from resource_tracker.cloud import documented_cloud_info

    doc = documented_cloud_info(info)
    return {
        "vendor": doc["vendor"],
        "instance_type": doc["instance_type"],
        "region": doc["region"],
        "discovery_time": doc["discovery_time"],
    }


def _stats_entry(stats: Optional[Dict[str, Any]]) -> Optional[DocumentedStats]:
    """The artifact's ``stats``: ``resource_tracker.rounding.documented_stats`` under its
    declared keys."""
    from resource_tracker.rounding import documented_stats

    doc = documented_stats(stats)
    if doc is None:
        return None
    return {
        "cpu_usage": doc["cpu_usage"],
        "memory_usage": doc["memory_usage"],
        "gpu_usage": doc["gpu_usage"],
        "gpu_vram": doc["gpu_vram"],
        "gpu_utilized": doc["gpu_utilized"],
        "disk_usage": doc["disk_usage"],
        "traffic": doc["traffic"],
        "duration": doc["duration"],
    }


def _code_profile_entry(tracker: ResourceTracker) -> Dict[str, Any]:
    """The artifact's ``code_profile`` (docs/code_profile.md): top functions and lines, the
    peak's code, the timeline; a note instead when it cannot be made (never breaks the step)."""
    try:
        from resource_tracker.code_profile import artifact_entry

        return artifact_entry(tracker)
    except Exception as exc:
        return {"status": "error", "note": f"the code profile could not be made: {_describe(exc)}"}


def _live_page(deco: Any, user: Dict[str, Any]) -> LivePage:
    """The live card of ``deco`` rendered in this process, as `card create` would render it
    with ``--mode render_runtime`` (the HTML) and ``--mode refresh`` (the data update)."""
    from metaflow.cards import MetaflowCard

    from .cards.resource_tracker_card.tracked_resources_card import TrackedResourcesCard

    card = TrackedResourcesCard(options=deco.card_options)
    data = {"user": user, "components": {}, "render_seq": user["seq"], "component_update_ts": 0}
    token = f"render-seq-{user['seq']}"  # the token of RELOAD_POLICY_ALWAYS
    html = card.render_runtime(None, data).replace(MetaflowCard.RELOAD_POLICY_TOKEN, token)
    update = {"reload_token": token, "data": card.refresh(None, data), "created_on": time.time()}
    return str(html), update


def _save_live(deco: Any, page: LivePage) -> None:
    """Write a live page of ``deco``'s card where `card create` writes it (same card uuid:
    the final render replaces it): the cards' root of the flow's datastore (a copy of its
    storage: the task's own keeps its root)."""
    import copy
    from types import SimpleNamespace

    from metaflow import current
    from metaflow.plugins.cards.card_datastore import CardDatastore

    flow_store = deco._flow_datastore
    storage = copy.copy(flow_store._storage_impl)
    root = CardDatastore.get_storage_root(storage.TYPE)
    if root is not None:  # as `card create` sets it
        storage.datastore_root = root
    pathspec = "/".join(
        [current.flow_name, str(current.run_id), current.step_name, str(current.task_id)]
    )
    cards = SimpleNamespace(_storage_impl=storage, flow_name=flow_store.flow_name)
    store = CardDatastore(cards, pathspec=pathspec)
    card_type, card_id = deco.attributes["type"], deco._user_set_card_id
    store.save_card(deco._card_uuid, card_type, page[0], card_id=card_id)
    store.save_data(deco._card_uuid, card_type, page[1], card_id=card_id)


_CARD_CLASS: Any = None


def _card_decorator_class() -> Any:
    """A CardDecorator that renders its card also when the task failed (a subclass of
    Metaflow's untyped CardDecorator: Any to the checker)."""
    global _CARD_CLASS
    if _CARD_CLASS is not None:
        return _CARD_CLASS
    from metaflow.plugins.cards.card_decorator import CardDecorator

    class TrackedResourcesCardDecorator(CardDecorator):  # type: ignore[misc]
        """@card(type='tracked_resources') added by @track_resources.

        Metaflow's card decorator renders only for successful tasks; this one renders also
        when the step failed, as long as our artifact was stored (it then shows the failure).
        """

        owner: Optional[TrackResourcesDecorator] = None
        tracked_data: Optional[TrackResourcesArtifact] = None
        task_flow: Optional[FlowSpec] = None

        def task_pre_step(
            self,
            step_name: str,
            task_datastore: TaskDataStore,
            metadata: MetadataProvider,
            run_id: str,
            task_id: str,
            flow: FlowSpec,
            *args: Any,
        ) -> None:
            self.task_flow = flow
            super().task_pre_step(step_name, task_datastore, metadata, run_id, task_id, flow, *args)

        def task_finished(
            self,
            step_name: str,
            flow: FlowSpec,
            graph: FlowGraph,
            is_task_ok: bool,
            retry_count: int,
            max_user_code_retries: int,
        ) -> None:
            render = is_task_ok or self.tracked_data is not None
            super().task_finished(
                step_name, flow, graph, render, retry_count, max_user_code_retries
            )

        def live_page(self, user: Dict[str, Any]) -> LivePage:
            """This card's HTML and data update for the live data ``user``."""
            return _live_page(self, user)

        def save_live(self, page: LivePage) -> None:
            """Write a live page to the card datastore (where `card create` would)."""
            _save_live(self, page)

    _bind_classmethods(TrackedResourcesCardDecorator, CardDecorator)
    _CARD_CLASS = TrackedResourcesCardDecorator
    return _CARD_CLASS


def _bind_classmethods(subclass: type, base: type) -> None:
    """Bind every classmethod of ``base`` to ``base`` itself on ``subclass``.

    @card keeps per-task state in class attributes (counters, the card creator) and sets
    them through classmethods; called on our subclass they would set separate copies there,
    which breaks the count of cards on the step when ours is not the last card."""
    for name, value in vars(base).items():
        if isinstance(value, classmethod):
            setattr(subclass, name, staticmethod(getattr(base, name)))


def _attach_card(
    owner: TrackResourcesDecorator, step_name: str, decorators: List[Decorator]
) -> Optional[TrackedCard]:
    """Append our card decorator to the step (once); the card object, or None."""
    from metaflow.plugins.cards.card_decorator import CardDecorator

    card_class = _card_decorator_class()
    for deco in decorators:
        if isinstance(deco, CardDecorator) and deco.attributes.get("type") == CARD_TYPE:
            if isinstance(deco, card_class):
                ours: TrackedCard = deco
                ours.owner = owner
                return ours
            return None  # the user added a plain @card of our type: it renders as usual
    attributes: Dict[str, Any] = {
        "type": CARD_TYPE,
        "id": CARD_ID,
        "options": {"artifact_name": owner._artifact_name},
        "timeout": 120,
        "refresh_interval": owner._live_interval,
    }
    # only what this Metaflow version's @card knows (older ones have no refresh_interval)
    attributes = {k: v for k, v in attributes.items() if k in card_class.defaults}
    try:
        card = card_class(
            attributes=attributes, statically_defined=False, inserted_by=["track_resources"]
        )
    except TypeError:  # Metaflow before 2.13 has no inserted_by
        card = card_class(attributes=attributes, statically_defined=False)
    if hasattr(card, "external_init"):
        card.external_init()
    decorators.append(card)
    attached: TrackedCard = card
    attached.owner = owner
    # Metaflow counts the @card decorators of a step when the first one runs step_init; when
    # that happened before we appended ours, correct the count so that current.card is
    # finalised after the last card's task_pre_step (the user's card keeps working).
    if step_name in CardDecorator.total_decos_on_step:
        count = sum(isinstance(deco, CardDecorator) for deco in decorators)
        CardDecorator._set_card_counts_per_step(step_name, count)
    return attached
