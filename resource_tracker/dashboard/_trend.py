"""A robust trend of one figure over a step's runs, and when it reaches a line.

The fit is Theil-Sen (the median of the slopes between every pair of runs; one odd run moves
it little) on the logarithm of the values against the run's index: a figure growing by a
share per run (data that grows with the inputs) is a straight line there, and a figure
growing by a constant amount is fitted slightly steeper (the warning comes a little early,
never late). The crossing is reported when the fitted growth reaches the line (the ask or
the limit) within :data:`HORIZON_RUNS` runs after the newest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

#: Fewest runs a trend is fitted from.
MIN_TREND_RUNS = 5
#: How many runs ahead a crossing is looked for.
HORIZON_RUNS = 30
#: A fitted growth below this share per run is no trend.
MIN_GROWTH = 0.005
#: At most this many newest runs are fitted (the recent trend; Theil-Sen is quadratic).
MAX_FIT_RUNS = 50


@dataclass(frozen=True)
class Trend:
    """``growth``: the fitted share per run (0.05: 5% a run); ``level``: the fitted value
    at the newest run; ``runs_to_line``: runs after the newest until the fit reaches
    ``line`` (None: not within the horizon, or no line)."""

    growth: float
    level: float
    runs: int
    line: Optional[float] = None
    runs_to_line: Optional[int] = None

    def at(self, runs_ahead: float) -> float:
        """The fitted value ``runs_ahead`` runs after the newest (negative: before it)."""
        return self.level * math.pow(1.0 + self.growth, runs_ahead)  # growth > -1


def _median(values: List[float]) -> float:
    values.sort()
    n, mid = len(values), len(values) // 2
    return values[mid] if n % 2 else (values[mid - 1] + values[mid]) / 2


def theil_sen(values: Sequence[Optional[float]]) -> Optional[Tuple[float, float]]:
    """(slope, intercept) of the Theil-Sen line through (i, values[i]); None for < 2 points."""
    points = [(i, v) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    if len(points) < 2:
        return None
    slopes = [
        (vb - va) / (ib - ia) for k, (ia, va) in enumerate(points) for ib, vb in points[k + 1 :]
    ]
    slope = _median(slopes)
    intercept = _median([v - slope * i for i, v in points])
    return slope, intercept


def fit(values: Sequence[Optional[float]], line: Optional[float] = None) -> Optional[Trend]:
    """The trend of ``values`` (oldest first; None for an unknown figure) and, when ``line``
    is given, the runs until it is reached; None with fewer than :data:`MIN_TREND_RUNS`
    positive values."""
    recent = list(values)[-MAX_FIT_RUNS:]
    logs = [math.log(v) if v is not None and v > 0 else math.nan for v in recent]
    if sum(math.isfinite(v) for v in logs) < MIN_TREND_RUNS:
        return None
    line_fit = theil_sen(logs)
    if line_fit is None:  # (not with MIN_TREND_RUNS finite values)
        return None
    slope, intercept = line_fit
    newest = len(logs) - 1
    level = math.exp(intercept + slope * newest)
    growth = math.exp(slope) - 1.0
    return Trend(growth, level, len(logs), line, _runs_to(level, growth, line))


def _runs_to(level: float, growth: float, line: Optional[float]) -> Optional[int]:
    """Whole runs after the newest until level * (1 + growth)^n >= line, within the horizon."""
    if not line or line <= 0 or growth < MIN_GROWTH:
        return None
    if level >= line:
        return 0
    runs = math.ceil(math.log(line / level) / math.log1p(growth) - 1e-9)
    return runs if runs <= HORIZON_RUNS else None
