"""The catalog lookups of the commands: the cheapest fitting server(s) for resources."""

from __future__ import annotations

from .common import CliError


def find_servers(resources: dict, n=None, strict: bool = False, **filters):
    """(server or list, None), or (None, why not) when there is no catalog or no match.

    strict: a bad filter value (ValueError) is a CliError (exit status 2), not a reason.
    """
    from .._text import printable

    try:
        from ..catalog import CatalogUnavailableError, NoMatchingServerError, recommend_server
    except ImportError as exc:
        return None, printable(f"the server catalog cannot be loaded: {exc}")
    filters = {k: v for k, v in filters.items() if v is not None}
    try:
        return recommend_server(resources, n=n, **filters), None
    except NoMatchingServerError as exc:
        return None, printable(f"no server in the catalog fits ({exc})")
    except CatalogUnavailableError as exc:
        return None, printable(str(exc).splitlines()[0] if str(exc) else "no catalog available")
    except ValueError as exc:
        if strict:
            raise CliError(f"recommend: {exc}") from None
        return None, printable(f"{type(exc).__name__}: {exc}")
    except Exception as exc:
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
