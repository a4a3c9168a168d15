"""Which cloud server the workload runs on: vendor, instance type and region.

Local evidence comes first (DMI/sysfs strings under ``RESOURCE_TRACKER_SYSFS_ROOT``,
default ``/sys``): when nothing points at a known cloud no request is made at all and the
answer (vendor ``unknown``) takes well under a millisecond. When it does, only that
vendor's metadata service is asked, with a short total timeout, at its own address or at
``RESOURCE_TRACKER_METADATA_URL`` (scheme, host and port; paths and headers stay the
vendor's). ``RESOURCE_TRACKER_DISCOVER_CLOUD=0`` switches discovery off.

Vendor ids are the Spare Cores ones (``aws``, ``gcp``, ``azure``, ``hcloud``, ``upcloud``,
``alicloud``, ``ovh``). ``instance_type`` is the catalog's ``server_id`` for aws, azure
and alicloud, and its ``api_reference`` for gcp and ovh; hcloud and upcloud metadata do
not say the server type (None). ``region`` is the catalog's ``region_id`` for aws, azure,
alicloud and upcloud, and its ``api_reference`` (or alias) for gcp and hcloud.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Mapping, Optional

from . import _core, settings
from ._background import tracker_thread

DEFAULT_TIMEOUT = 2.0
_KEYS = ("vendor", "instance_type", "region", "discovery_time")


def discovery_enabled() -> bool:
    """False when ``RESOURCE_TRACKER_DISCOVER_CLOUD`` is 0/false/no/off (settings.py)."""
    return bool(settings.get("RESOURCE_TRACKER_DISCOVER_CLOUD"))


def discover_cloud(timeout: float = DEFAULT_TIMEOUT) -> Optional[Dict[str, Any]]:
    """Discover the cloud now (blocking at most about ``timeout`` seconds).

    Returns ``{'vendor', 'instance_type', 'region', 'discovery_time'}`` (vendor
    ``'unknown'`` when not in a known cloud or when the metadata service does not answer
    properly), or None when discovery is switched off by ``RESOURCE_TRACKER_DISCOVER_CLOUD=0``.
    """
    if not discovery_enabled():
        return None

    if not hasattr(_core, "discover_cloud"):  # a build without the Linux readers (platform.h)
        return {"vendor": "unknown", "instance_type": None, "region": None, "discovery_time": 0.0}
    raw = _core.discover_cloud(
        sysfs_root=settings.get("RESOURCE_TRACKER_SYSFS_ROOT"),
        metadata_url=settings.get("RESOURCE_TRACKER_METADATA_URL"),
        timeout=float(timeout),
    )
    return {key: raw[key] for key in _KEYS}


class CloudDiscovery:
    """A discovery running in a background thread (the C code runs without the GIL)."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.timeout = float(timeout)
        self._result: Optional[Dict[str, Any]] = None
        self._error: Optional[BaseException] = None
        self._thread: Optional[threading.Thread] = None
        if not discovery_enabled():
            self._done = True
            return

        sysfs_root = settings.get("RESOURCE_TRACKER_SYSFS_ROOT")
        if not hasattr(_core, "cloud_evidence") or _core.cloud_evidence(sysfs_root) is None:
            # nothing points at a cloud: answer at once, no thread, no request
            self._result = discover_cloud(self.timeout)
            self._done = True
            return
        self._done = False
        self._thread = threading.Thread(
            target=tracker_thread(self._run), name="resource-tracker-cloud", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = discover_cloud(self.timeout)
        except Exception as exc:  # reported by result(), never raised in the thread
            self._error = exc

    def done(self) -> bool:
        """True once the answer is there."""
        return self._done or self._thread is None or not self._thread.is_alive()

    def result(self, timeout: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """The discovery's dict (None when switched off or still running after ``timeout``).

        ``timeout=None`` waits for the discovery, which itself gives up after its own
        timeout (plus a little), so this never blocks for long.
        """
        if self._thread is not None:
            self._thread.join(self.timeout + 1.0 if timeout is None else timeout)
            if self._thread.is_alive():
                return None
        if self._error is not None:
            return {
                "vendor": "unknown",
                "instance_type": None,
                "region": None,
                "discovery_time": None,
            }
        return self._result


def get_cloud_info(timeout: float = DEFAULT_TIMEOUT) -> Dict[str, Any]:
    """The cloud this runs on, as the seeds document it (blocking at most about ``timeout`` s).

    Returns ``{'vendor', 'instance_type', 'region', 'discovery_time'}`` with ``'unknown'``
    in place of what could not be found (also when discovery is switched off by
    ``RESOURCE_TRACKER_DISCOVER_CLOUD=0``: then ``discovery_time`` is 0.0).
    """
    return documented_cloud_info(discover_cloud(timeout))


def documented_cloud_info(info: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """A cloud_info dict (or None) with 'unknown' for every vendor/instance_type/region
    that is missing, and discovery_time as a number of seconds (0.0 when unknown)."""
    info = dict(info or {})
    out: Dict[str, Any] = {
        key: info.get(key) or "unknown" for key in ("vendor", "instance_type", "region")
    }
    out["discovery_time"] = float(info.get("discovery_time") or 0.0)
    return out


def found_cloud_info(info: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The vendor, instance_type and region of a cloud_info that were found: 'unknown' (the
    documented form's word for not found) and missing values are None."""
    info = info if isinstance(info, dict) else {}
    return {
        key: None if info.get(key) in (None, "", "unknown") else info.get(key)
        for key in ("vendor", "instance_type", "region")
    }


def start_discovery(timeout: float = DEFAULT_TIMEOUT) -> CloudDiscovery:
    """Start discovering in the background; ``.result(timeout=None)`` gives the dict."""
    return CloudDiscovery(timeout)
