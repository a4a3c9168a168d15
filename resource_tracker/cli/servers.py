"""The catalog lookups of the commands: the cheapest fitting server(s) for resources."""

from __future__ import annotations

from .common import CliError


def find_servers(resources: dict, n=None, strict: bool = False, **filters):
    """(server or list, None), or (None, why not) when there is no catalog or no match.

    strict: a bad filter value (ValueError) is a CliError (exit status 2), not a reason.
    """
    from .._text import printable

    try:
        catalog = import_catalog()
    except CliError as exc:
        return None, str(exc)
    if catalog is None:
        return None, "no server catalog in this installation"
    filters = {k: v for k, v in filters.items() if v is not None}
    try:
        return catalog.recommend_server(resources, n=n, **filters), None
    except catalog.NoMatchingServerError as exc:
        return None, printable(f"no server in the catalog fits ({exc})")
    except catalog.CatalogUnavailableError as exc:
        return None, printable(str(exc).splitlines()[0] if str(exc) else "no catalog available")
    except Exception as exc:
        if strict and isinstance(exc, ValueError):
            raise CliError(f"recommend: {exc}") from None
        return None, printable(f"{type(exc).__name__}: {exc}")


def import_catalog():
    """The resource_tracker.catalog package, or None when this installation has none."""
    try:
        from .. import catalog
    except ModuleNotFoundError as exc:
        if exc.name in ("resource_tracker.catalog", "resource_tracker"):
            return None
        raise CliError(f"the server catalog cannot be loaded: {exc}") from None
    except ImportError as exc:
        raise CliError(f"the server catalog cannot be loaded: {exc}") from None
    return catalog


def run_costs(duration: float, cloud_info, server) -> dict:
    """The catalog's cost figures of a run ({} when unknown)."""
    try:
        return import_catalog().run_costs(duration, cloud_info, server) or {}
    except Exception:
        return {}
