"""The attributes and methods of a tracked run that the run data reads (declared for the type
checker only: the module holds no code that runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:
    from ._background import Job
    from .results_types import DataQuality
    from .sampler_protocol import Sampler
    from .tiny_data_frame import TinyDataFrame


class TrackedRun:
    """What the run data reads of a tracker, live or stored: its settings, its sampler, the
    figures a stored run carries, and the methods this layer calls back. Declared once, here,
    for the type checker (nothing at run time): ``_code.CodeResults`` derives from it, so the
    facade (``resource_tracker.tracker.ResourceTracker``) and a stored run wrapped by
    ``TrackerResults._wrap`` are ones; each attribute is set by the facade's ``__init__`` or by
    ``_wrap``."""

    if TYPE_CHECKING:
        pid: int
        interval: float
        children: bool
        method: str
        command: str
        label: Optional[str]
        extra: Dict[str, Any]
        track_system: bool
        track_processes: bool
        discover_server: bool
        discover_cloud: bool
        autostart: Optional[bool]
        _autostarted: bool
        _settings_stored: Dict[str, Any]
        _sampler: Sampler
        _server_info: Optional[Dict[str, Any]]
        _cloud_info: Optional[Dict[str, Any]]
        _cloud_job: Optional[Any]
        _cgroup_job: Job
        # set by _wrap only (a stored run's figures); hasattr() tells which
        _cgroup_stored: Optional[Dict[str, Any]]
        _hwm_stored: Optional[float]
        _tree_source_stored: Optional[Dict[str, Any]]
        _code_stored: Optional[Dict[str, Any]]
        # the run summary once summary() made it (or a snapshot held it): the summary
        # module's RunSummary (a layer above), read through getattr, which mypy cannot narrow
        _summary: Any

        @property
        def running(self) -> bool: ...
        @property
        def start_time(self) -> Optional[float]: ...
        @property
        def stop_time(self) -> Optional[float]: ...
        @property
        def status(self) -> str: ...
        @property
        def memory_hwm(self) -> Optional[float]: ...
        @property
        def tree_source(self) -> Optional[Dict[str, Any]]: ...
        @property
        def cgroup_metrics(self) -> Optional[Dict[str, Any]]: ...
        @property
        def server_info(self) -> Optional[Dict[str, Any]]: ...
        @property
        def cloud_info(self) -> Optional[Dict[str, Any]]: ...
        @property
        def process_metrics(self) -> TinyDataFrame: ...
        @property
        def system_metrics(self) -> TinyDataFrame: ...
        def _wait_cgroup_start(self) -> None: ...
        def _read_cgroup(self) -> Any: ...
        def _code_record(self) -> Optional[Dict[str, Any]]: ...
        def _gpu_devices(self) -> List[Dict[str, Any]]: ...
        def _table_columns(self, table: str) -> Dict[str, Any]: ...
        def data_quality(self) -> DataQuality: ...
        def export_report(self) -> Optional[Dict[str, Any]]: ...
