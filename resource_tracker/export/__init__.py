"""Opt-in export of the samples to the systems teams already run: an OpenTelemetry collector
(OTLP/HTTP metrics) and a Prometheus Pushgateway. Never on by default.

Choose targets with ``ResourceTracker(export="otlp,pushgateway")``, the environment variable
``RESOURCE_TRACKER_EXPORT``, ``@track_resources(export=...)`` or ``resource-tracker run
--export ...``. See docs/export.md.

- config: the settings (targets, the Pushgateway address)
- metrics: the exported metrics, derived from the column registry, and the one table
  mapping columns to OpenTelemetry semantic conventions
- context: the identity (host, process, Metaflow ids) as resource attributes and labels
- summary: the run summary of the final push (an adapter over the tracker)
- pipeline: the reader thread, the bounded queues, the sender threads
- otlp, pushgateway: the two targets
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Tuple, Union

from .config import (
    TARGETS,
    ExportSettings,
    check_settings,
    parse_targets,
    read_otlp_settings,
    read_settings,
)

if TYPE_CHECKING:
    from .context import ExportedRun
    from .otlp import OtlpSink
    from .pipeline import Exporter, MakeSink
    from .pushgateway import PushgatewaySink
    from .transport import Sender

__all__ = [
    "TARGETS",
    "ExportSettings",
    "parse_targets",
    "prepare_export",
    "read_settings",
    "start_export",
]


def _tables(tracker: ExportedRun) -> List[str]:
    tables = []
    if tracker.track_processes:
        tables.append("process")
    if tracker.track_system:
        tables.append("system")
    return tables


def _sink_factories(tracker: ExportedRun, settings: ExportSettings) -> List[Tuple[str, MakeSink]]:
    """[(target, factory)]: each factory builds its target's sink over the channel's
    transport.Sender. The sender thread calls it, so the SDK's imports and set-up cost the
    caller nothing, and the identity is read once the tracked process runs its own command."""
    from .context import identity_of

    tables = _tables(tracker)

    def otlp(sender: Sender) -> OtlpSink:
        from .otlp import OtlpSink

        identity = identity_of(tracker, settings.command_line)
        return OtlpSink(identity, tables, settings.otlp or read_otlp_settings(), sender)

    def pushgateway(sender: Sender) -> PushgatewaySink:
        from .pushgateway import PushgatewaySink

        identity = identity_of(tracker, settings.command_line)
        if settings.pushgateway_url is None:  # settings not checked by prepare_export()
            raise ValueError("export to pushgateway needs RESOURCE_TRACKER_PUSHGATEWAY_URL")
        return PushgatewaySink(settings.pushgateway_url, identity, tables, sender)

    factories: Dict[str, MakeSink] = {"otlp": otlp, "pushgateway": pushgateway}
    return [(target, factories[target]) for target in settings.targets]


def prepare_export(export: Union[None, str, Iterable[str]] = None) -> ExportSettings:
    """The settings for ``export`` (None: RESOURCE_TRACKER_EXPORT), checked: ValueError or
    ImportError saying what to do when a chosen target cannot work."""
    settings = read_settings(export)
    check_settings(settings)
    return settings


def start_export(tracker: ExportedRun, settings: ExportSettings) -> Optional[Exporter]:
    """A started pipeline.Exporter of tracker's samples to the targets, or None (no targets).

    The pipeline and the targets' packages are imported only here (export off costs no
    import)."""
    from .pipeline import Exporter

    if not settings.targets:
        return None
    return Exporter(tracker, _sink_factories(tracker, settings), _tables(tracker)).start()
