"""Helpers that code written for the original package (0.4/0.5) imports from
``resource_tracker.helpers``."""

from __future__ import annotations

import numbers
from typing import Any, Dict, List

from . import _core

__all__ = ["aggregate_stats"]

#: The figures that combine as a mean over the runs (the others: the highest).
_AVERAGED = ("mean", "duration")


def aggregate_stats(stats: List[Dict[str, Dict[str, Any]]]) -> Dict[str, Dict[str, Any]]:
    """Combines ``stats()`` results of several runs: per column and figure, the mean over
    the runs for ``mean`` and ``duration``, the highest value for the others (``max``,
    ``sum``, percentiles). Figures that are not numbers (``data_quality``, ...) are left out.

    Example:
        >>> runs = [{"cpu": {"mean": 1.0, "max": 2.0}}, {"cpu": {"mean": 3.0, "max": 5.0}}]
        >>> aggregate_stats(runs)
        {'cpu': {'mean': 2.0, 'max': 5.0}}
    """
    values: Dict[str, Dict[str, List[float]]] = {}
    for run in stats:
        for column, figures in run.items():
            if not isinstance(figures, dict):
                continue
            for name, value in figures.items():
                if isinstance(value, numbers.Real) and not isinstance(value, bool):
                    values.setdefault(column, {}).setdefault(name, []).append(float(value))
    return {
        column: {
            name: _core.combine_runs(found, name not in _AVERAGED)
            for name, found in figures.items()
        }
        for column, figures in values.items()
    }
