"""The catalog lookups of the commands: the cheapest fitting server(s) for resources."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Tuple, Union

from .._text import printable
from .common import CliError

if TYPE_CHECKING:
    from ..catalog import Server


def find_servers(
    resources: Mapping[str, Any], n: Optional[int] = None, strict: bool = False, **filters: Any
) -> Tuple[Union[Server, List[Server], None], Optional[str]]:
    """(server or list, None), or (None, why not) when there is no catalog or no match.

    strict: a bad filter value (ValueError) is a CliError (exit status 2), not a reason.
    """
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


def import_catalog() -> Optional[ModuleType]:
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
