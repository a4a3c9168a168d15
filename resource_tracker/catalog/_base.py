"""What every module of the catalog package shares: its two errors and the cache directory
(re-exported by ``resource_tracker.catalog``; here so that its modules need not import the
package that imports them)."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from .. import settings

ENV_CACHE_DIR = "RESOURCE_TRACKER_CACHE_DIR"

#: A server record (the Spare Cores shape, with catalog_source and price_source).
Server = Dict[str, Any]


class CatalogUnavailableError(RuntimeError):
    """No server catalog could be read (the message says how to get one)."""

    __module__ = "resource_tracker.catalog"  # its public home


class NoMatchingServerError(ValueError):
    """The catalog has no server (with a price) that meets the resources and filters."""

    __module__ = "resource_tracker.catalog"


def cache_dir() -> str:
    """The user cache directory of resource-tracker (RESOURCE_TRACKER_CACHE_DIR overrides)."""
    explicit: Optional[str] = settings.get(ENV_CACHE_DIR)
    if explicit:
        return os.path.abspath(explicit)
    return os.path.join(_xdg_cache_home(), "resource-tracker")


def _xdg_cache_home() -> str:
    """$XDG_CACHE_HOME, else ~/.cache."""
    return settings.foreign("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
