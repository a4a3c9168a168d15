"""The export settings: which targets, and where the Pushgateway is.

The RESOURCE_TRACKER_* variables are read through resource_tracker.settings (declared and
parsed there, like every other); the OpenTelemetry ``OTEL_*`` variables are read by the
OpenTelemetry SDK itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Tuple, Union

#: The export targets, in the order they are started.
TARGETS: Tuple[str, ...] = ("otlp", "pushgateway")

#: What each target needs installed: (import name, pip extra).
EXTRAS = {
    "otlp": ("opentelemetry.exporter.otlp.proto.http", "otlp"),
    "pushgateway": ("prometheus_client", "prometheus"),
}


@dataclass(frozen=True)
class ExportSettings:
    """targets: the chosen targets (empty: no export); pushgateway_url: the Pushgateway's
    base URL (None when not set); pushgateway_job: the ``job`` grouping key."""

    targets: Tuple[str, ...]
    pushgateway_url: Optional[str]
    pushgateway_job: str = "resource_tracker"


def parse_targets(
    value: Union[None, str, Iterable[str]], source: str = "export"
) -> Tuple[str, ...]:
    """The targets named by a comma list (or a list of names), or ValueError naming the bad
    one. Empty, ``none``, ``off``, ``0`` or ``false`` mean no export."""
    if value is None:
        return ()
    names = value.split(",") if isinstance(value, str) else list(value)
    chosen = []
    for raw in names:
        if not isinstance(raw, str):
            raise ValueError(f"{source}: targets are names, got {raw!r}; use e.g. 'pushgateway'")
        name = raw.strip().lower()
        if name in ("", "none", "off", "0", "false"):
            continue
        if name not in TARGETS:
            raise ValueError(
                f"{source}: unknown export target {raw.strip()!r}: the targets are "
                f"{', '.join(TARGETS)} (a comma list, e.g. 'otlp,pushgateway')"
            )
        if name not in chosen:
            chosen.append(name)
    return tuple(t for t in TARGETS if t in chosen)


def read_settings(export: Union[None, str, Iterable[str]] = None) -> ExportSettings:
    """The export settings: ``export`` (an argument; None: RESOURCE_TRACKER_EXPORT decides)
    and RESOURCE_TRACKER_PUSHGATEWAY_URL. An invalid variable is a ValueError naming it."""
    from .. import settings

    if export is None:
        chosen = settings.get("RESOURCE_TRACKER_EXPORT")
        targets = tuple(t for t in TARGETS if t in chosen)
    else:
        targets = parse_targets(export)
    url = settings.get("RESOURCE_TRACKER_PUSHGATEWAY_URL")
    return ExportSettings(targets=targets, pushgateway_url=url)


def check_settings(settings: ExportSettings) -> None:
    """ValueError / ImportError saying what to do when a chosen target cannot work."""
    import importlib.util

    for target in settings.targets:
        module, extra = EXTRAS[target]
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            raise ImportError(
                f"export to {target} needs the optional packages: "
                f"pip install 'resource-tracker[{extra}]'"
            )
    if "pushgateway" in settings.targets and not settings.pushgateway_url:
        raise ValueError(
            "export to pushgateway needs the Pushgateway's address: set "
            "RESOURCE_TRACKER_PUSHGATEWAY_URL (e.g. http://pushgateway:9091)"
        )
