"""The self-contained HTML report of a tracked run.

``render_report(tracker)`` (what ``ResourceTracker.report()`` calls) returns a ``Report``: the
HTML page as a ``str`` with ``save(path)``, ``browse()`` and ``_repr_html_()`` (inline in
Jupyter). The page inlines its CSS, JavaScript and data: it needs no network at all.
"""

from __future__ import annotations

from ._render import Report, render_report

__all__ = ["Report", "render_report"]
