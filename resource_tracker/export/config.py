"""The export settings: which targets, where they are, what identifies the run.

The RESOURCE_TRACKER_* variables are read through resource_tracker.settings (declared and
parsed there, like every other); the standard OTLP exporter variables (``OTEL_EXPORTER_OTLP_*``,
the metrics-specific one winning) through its :func:`~resource_tracker.settings.foreign`, here,
at construction: an invalid one is an error then, naming it. ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_SERVICE_NAME`` and the temporality preference are read by the OpenTelemetry SDK.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, Optional, Tuple, Union

from .. import settings
from .transport import check_url

#: ``host``, ``host:port`` or ``host:port/path``: an address without its scheme
_HOST_PORT = re.compile(r"^[A-Za-z0-9_.-]+(:[0-9]+)?(/.*)?$")

#: The export targets, in the order they are started.
TARGETS: Tuple[str, ...] = ("otlp", "pushgateway")

#: What each target needs installed: (import name, pip extra).
EXTRAS = {
    "otlp": ("opentelemetry.exporter.otlp.proto.http", "otlp"),
    "pushgateway": ("prometheus_client", "prometheus"),
}


#: where OTLP goes when no variable says (the OTLP/HTTP default)
OTLP_DEFAULT_ENDPOINT = "http://localhost:4318/v1/metrics"
OTLP_COMPRESSIONS = ("none", "gzip", "deflate")


@dataclass(frozen=True)
class OtlpSettings:
    """The OTLP/HTTP exporter variables: endpoint (the full metrics URL), headers (sent on
    every request), timeout (seconds per request; None: ours), compression, and the TLS
    files (a CA bundle; a client certificate and its key)."""

    endpoint: str = OTLP_DEFAULT_ENDPOINT
    headers: Dict[str, str] = field(default_factory=dict)
    timeout: Optional[float] = None
    compression: str = "none"
    certificate: Optional[str] = None
    client_certificate: Optional[str] = None
    client_key: Optional[str] = None


@dataclass(frozen=True)
class ExportSettings:
    """targets: the chosen targets (empty: no export); pushgateway_url: the Pushgateway's
    base URL (None when not set); otlp: the
    OTLP variables (None unless otlp is chosen); command_line: whether the tracked command
    line is sent whole (RESOURCE_TRACKER_EXPORT_COMMAND_LINE; else its executable only)."""

    targets: Tuple[str, ...]
    pushgateway_url: Optional[str]
    otlp: Optional[OtlpSettings] = None
    command_line: bool = False


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
    if export is None:
        chosen = settings.get("RESOURCE_TRACKER_EXPORT")
        targets = tuple(t for t in TARGETS if t in chosen)
    else:
        targets = parse_targets(export)
    url = settings.get("RESOURCE_TRACKER_PUSHGATEWAY_URL")
    return ExportSettings(
        targets=targets,
        pushgateway_url=url,
        otlp=read_otlp_settings() if "otlp" in targets else None,
        command_line=settings.get("RESOURCE_TRACKER_EXPORT_COMMAND_LINE"),
    )


def _otel(name: str) -> Tuple[Optional[str], str]:
    """(text, variable) of OTEL_EXPORTER_OTLP_METRICS_<name>, else OTEL_EXPORTER_OTLP_<name>."""
    for variable in (f"OTEL_EXPORTER_OTLP_METRICS_{name}", f"OTEL_EXPORTER_OTLP_{name}"):
        text = settings.foreign(variable)
        if text is not None and text.strip():
            return text.strip(), variable
    return None, f"OTEL_EXPORTER_OTLP_{name}"


def otlp_endpoint() -> str:
    """The metrics URL: the metrics variable as given, the general one + ``/v1/metrics``
    (the OTLP rule), else the default; ValueError naming the variable when it is no
    http(s) address with a host and a valid port."""
    text, variable = _otel("ENDPOINT")
    if text is None:
        return OTLP_DEFAULT_ENDPOINT
    example = "http://collector:4318" + ("/v1/metrics" if "METRICS" in variable else "")
    check_url(text, variable, example)
    if "METRICS" in variable:
        return text
    return text.rstrip("/") + "/v1/metrics"


def _otlp_headers() -> Dict[str, str]:
    """OTEL_EXPORTER_OTLP_[METRICS_]HEADERS: ``key=value`` pairs, comma separated,
    percent-encoded; ValueError naming the variable for a pair without ``=``."""
    from urllib.parse import unquote

    text, variable = _otel("HEADERS")
    headers: Dict[str, str] = {}
    for pair in (text or "").split(","):
        if not pair.strip():
            continue
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(
                f"{variable}: {pair.strip()!r} is not key=value: give e.g. 'x-api-key=secret'"
            )
        headers[unquote(key.strip()).lower()] = unquote(value.strip())
    return headers


def _otlp_timeout() -> Optional[float]:
    import math

    text, variable = _otel("TIMEOUT")
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 600):
        raise ValueError(f"{variable}={text!r} is not valid: give seconds, above 0, at most 600")
    return value


def read_otlp_settings() -> OtlpSettings:
    """The OTLP variables, checked (ValueError naming the invalid one and what to give)."""
    compression, variable = _otel("COMPRESSION")
    compression = (compression or "none").lower()
    if compression not in OTLP_COMPRESSIONS:
        raise ValueError(
            f"{variable}={compression!r} is not valid: give one of {', '.join(OTLP_COMPRESSIONS)}"
        )
    return OtlpSettings(
        endpoint=otlp_endpoint(),
        headers=_otlp_headers(),
        timeout=_otlp_timeout(),
        compression=compression,
        certificate=_otel("CERTIFICATE")[0],
        client_certificate=_otel("CLIENT_CERTIFICATE")[0],
        client_key=_otel("CLIENT_KEY")[0],
    )


def base_url(text: str, source: str, example: str) -> str:
    """A server's base URL (``host:port`` taken as ``http://host:port``, as
    prometheus-client does); ValueError naming ``source`` when it is no http(s) address with
    a host and a valid port."""
    url = "http://" + text if _HOST_PORT.match(text) else text
    return check_url(url, source, example)


def pushgateway_url(text: str) -> str:
    """The Pushgateway's base URL (see :func:`base_url`; errors name
    RESOURCE_TRACKER_PUSHGATEWAY_URL)."""
    return base_url(text, "RESOURCE_TRACKER_PUSHGATEWAY_URL", "http://pushgateway:9091")


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
    if "pushgateway" in settings.targets:
        pushgateway_url(str(settings.pushgateway_url))
