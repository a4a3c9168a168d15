"""The self-contained HTML report of a tracked run.

``render_report(tracker)`` (what ``ResourceTracker.report()`` calls) returns a ``Report``: the
HTML page as a ``str`` with ``save(path)``, ``browse()`` and ``_repr_html_()`` (inline in
Jupyter). The page inlines its CSS, JavaScript and data: it needs no network at all.
"""

from __future__ import annotations

from typing import Union

from .. import _core
from ._render import Report, render_report

__all__ = ["Report", "render_report", "round_memory"]


def round_memory(mib: Union[int, float]) -> int:
    """MiB rounded up as the recommendation rounds memory: 128, 256, 512 or 1024 MiB, or
    whole GiB beyond that (the original package's function of this name).

    Example:
        >>> round_memory(68), round_memory(896), round_memory(3863)
        (128, 1024, 4096)
    """
    return _core.round_memory_mib(float(mib))
