"""The shape of the artifact @track_resources stores (``resource_tracker_data``).

One place for the keys and value types of the Metaflow artifact (docs/metaflow.md, "What it
stores"): the extension builds it (``track_resources_decorator.build_artifact``), the card,
the history lookup, ``recommend --metaflow`` and the dashboard read it. A test of a real
Metaflow run (tests/metaflow/test_metaflow_artifact_contract.py) checks a stored artifact
against these types, and the docs' table of keys against :class:`TrackResourcesArtifact`.

Imports only ``typing`` and the foundation's ``TinyDataFrame`` (the tables' type, so that
``typing.get_type_hints`` resolves these classes at run time), so any layer may import it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, TypedDict

from .tiny_data_frame import TinyDataFrame

# Optional[...], not X | None: the class bodies below are read at run time on 3.9 too.


class MeanMax(TypedDict):
    """A documented mean/max pair (rounded as the documents show it)."""

    mean: float
    max: float


class PeakOnly(TypedDict):
    """``disk_usage``: the machine's peak disk space used (GB)."""

    max: float


class Traffic(TypedDict):
    """``traffic``: bytes the machine received (``inbound``) and sent (``outbound``)."""

    inbound: float
    outbound: float


class DocumentedStats(TypedDict):
    """``stats``: the documented summary of the step (``rounding.documented_stats``)."""

    cpu_usage: MeanMax
    memory_usage: MeanMax
    gpu_usage: MeanMax
    gpu_vram: MeanMax
    gpu_utilized: MeanMax
    disk_usage: PeakOnly
    traffic: Traffic
    duration: float


class DocumentedCloudInfo(TypedDict):
    """``cloud_info``: strings (``'unknown'`` when not found) and the discovery's seconds."""

    vendor: str
    instance_type: str
    region: str
    discovery_time: float


class _HistoricalStatsBase(TypedDict):
    available: bool
    runs_analyzed: int
    avg_cpu_mean: Optional[float]
    max_memory_max: Optional[float]
    avg_gpu_mean: Optional[float]
    max_vram_max: Optional[float]
    max_gpu_count: Optional[float]
    avg_duration: Optional[float]
    runs: List[str]
    notes: List[str]


class HistoricalStats(_HistoricalStatsBase, total=False):
    """``historical_stats``: the earlier runs by the one history rule (None values without
    history); ``lookup_cpu_s`` when a lookup ran (its CPU seconds in the task)."""

    lookup_cpu_s: Optional[float]


class Recommendations(TypedDict):
    """``recommendations``: ``recommend_resources()`` with the history, the cheapest server
    (a catalog row) and why there is none."""

    resources: Optional[Dict[str, Any]]
    server: Optional[Dict[str, Any]]
    server_note: Optional[str]


class InsightEntry(TypedDict):
    """One finding (``insights.Insight.to_dict``)."""

    kind: str
    severity: str
    message: str
    numbers: Dict[str, Any]


class StepError(TypedDict):
    """``step_error``: the user code's exception."""

    type: str
    message: str


class _TuningResultBase(TypedDict):
    runs: int
    resources: Dict[str, float]  # whole numbers; CPU also in quarters (tuning.CPU_STEPS)
    changes: List[str]
    note: str


class TuningResult(_TuningResultBase, total=False):
    """What ``tuning.Tuning.to_dict`` gives (``why`` and ``basis`` are missing when the
    tuning could not be made: ``note`` says why)."""

    why: str
    basis: Dict[str, Any]


class TuningGot(TypedDict):
    """The cgroup limits the task had (None: no limit seen)."""

    cpu: Optional[float]
    memory: Optional[float]


class TuningEntry(TuningResult):
    """``tuning`` (with ``tune=True``): the tuning, what the task got, the guardrails, the
    next run's ask (= ``recommendations["resources"]``) and the note of its tuning."""

    got: TuningGot
    bounds: Dict[str, float]
    next: Optional[Dict[str, Any]]
    next_note: Optional[str]


class WriteCounts(TypedDict):
    """``tuning_record``: writes of the attempt's record and the first errors."""

    writes: int
    errors: List[str]


class LiveCardCounts(TypedDict):
    """``live_card``: live renders of the card and the errors of those that failed."""

    renders: int
    errors: List[str]


class Overhead(TypedDict, total=False):
    """``overhead_s``: seconds the extension's hooks took in the task, by phase."""

    pre_step: float
    start: float
    stop: float
    store: float


class _ArtifactBase(TypedDict):
    process_metrics: Optional[TinyDataFrame]
    system_metrics: Optional[TinyDataFrame]
    cloud_info: Optional[DocumentedCloudInfo]
    #: ``ResourceTracker.server_info`` (vcpus, memory_mb, gpu_*, cpu_model, ...: a dict of
    #: discovered values, some keys only on some machines)
    server_info: Optional[Dict[str, Any]]
    stats: Optional[DocumentedStats]
    #: ``ResourceTracker.stats()``, exact
    detailed_stats: Optional[Dict[str, Any]]
    historical_stats: HistoricalStats
    recommendations: Optional[Recommendations]
    insights: List[InsightEntry]
    step_failed: bool
    error: Optional[str]
    #: the run's snapshot (``ResourceTracker.from_snapshot`` reads it)
    tracker: Optional[Dict[str, Any]]


class TrackResourcesArtifact(_ArtifactBase, total=False):
    """The artifact of a @track_resources step. The keys of ``_ArtifactBase`` are always
    there; an artifact made when tracking did not run (``error`` says why) has no
    ``historical_runs_stats``, ``code_profile`` or ``step_error``; ``tuning`` needs
    ``tune=True``, ``live_card`` a live card, ``tuning_record`` a task datastore."""

    #: the ``stats()`` of the earlier runs used
    historical_runs_stats: List[Dict[str, Any]]
    #: docs/code_profile.md: status, note, functions, lines, peak, timeline
    code_profile: Dict[str, Any]
    step_error: Optional[StepError]
    overhead_s: Overhead
    live_card: LiveCardCounts
    tuning: TuningEntry
    tuning_record: WriteCounts
