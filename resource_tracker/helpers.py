"""Helpers that code written for the original package (0.4/0.5) imports from
``resource_tracker.helpers``."""

from __future__ import annotations

import numbers
from typing import Any, Dict, FrozenSet, List, Tuple, get_type_hints

from . import _core
from .results_types import Distribution, Peak, RunStats, Timing, Total

__all__ = ["aggregate_stats"]

#: The summaries a metric column of stats() has (results_types.py declares them).
_METRIC_KINDS = (Distribution, Peak, Total, Timing)

#: Every figure name of a metric column: mean, max, p50, p90, p99, sum, duration, samples.
FIGURES: Tuple[str, ...] = tuple(
    dict.fromkeys(name for kind in _METRIC_KINDS for name in get_type_hints(kind))
)

#: The figures that combine as a mean over the runs (the others: the highest).
_AVERAGED = ("mean", "duration")

#: The sections of stats() that describe the run rather than sum a column up (data_quality,
#: cgroup, tree_source, export): left out of the aggregate.
INFO_SECTIONS: FrozenSet[str] = frozenset(
    key for key, kind in get_type_hints(RunStats).items() if kind not in _METRIC_KINDS
)


def _check_figure(column: str, name: str) -> None:
    """Nothing; ValueError naming the figure, its column and the known figures when the
    figure is not one that stats() gives."""
    if name not in FIGURES:
        raise ValueError(
            f"Unsupported aggregation type: {name!r} in column {column!r}; "
            f"supported: {', '.join(FIGURES)}"
        )


def aggregate_stats(stats: List[Dict[str, Dict[str, Any]]]) -> Dict[str, Dict[str, Any]]:
    """Combines ``stats()`` results of several runs: per column and figure, the mean over
    the runs for ``mean`` and ``duration``, the highest value for the others (``max``,
    ``sum``, percentiles, ``samples``). The sections that describe a run (``INFO_SECTIONS``:
    ``data_quality``, ...) are left out; a figure of a column that ``stats()`` never gives
    raises ValueError naming it.

    Example:
        >>> runs = [{"cpu": {"mean": 1.0, "max": 2.0}}, {"cpu": {"mean": 3.0, "max": 5.0}}]
        >>> aggregate_stats(runs)
        {'cpu': {'mean': 2.0, 'max': 5.0}}
    """
    values: Dict[str, Dict[str, List[float]]] = {}
    for run in stats:
        for column, figures in run.items():
            if column in INFO_SECTIONS or not isinstance(figures, dict):
                continue
            for name, value in figures.items():
                _check_figure(column, name)
                if isinstance(value, numbers.Real) and not isinstance(value, bool):
                    values.setdefault(column, {}).setdefault(name, []).append(float(value))
    return {
        column: {
            name: _core.combine_runs(found, name not in _AVERAGED)
            for name, found in figures.items()
        }
        for column, figures in values.items()
    }
