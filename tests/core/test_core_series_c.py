"""The report's per-row work in C (csrc/phases.c and csrc/chart.c, through
``_core.change_points``, ``_core.chart_series`` and ``_core.chart_times``): the phases' change
points and the charts' series of a long run.

Each is checked against the plain-Python definition it replaced, kept here as the reference:
the C must find the same points and write the same JSON text, character for character, so that
a report is the same page as before. The inputs are random series with steps, noise, ties, NaN,
infinities and -0.0, the edges around the downsampling threshold, and a 24 h run at 1 s."""

from __future__ import annotations

import math
import random
from array import array

import pytest

from resource_tracker import _core
from resource_tracker.insights import MIN_PHASE_SAMPLES, change_points

SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, 1e300, -1.5]


# -- the references: the Python the report used before ---------------------------------------


def ref_change_points(values, floor, max_phases=4, m=MIN_PHASE_SAMPLES):
    """Candidates by binary segmentation on the floor alone, judged against their neighbours
    (the weakest goes while it is no step or there are too many), then settled between their
    neighbours and off a ramp (the samples between two levels go to the higher side)."""
    n, max_points = len(values), max_phases - 1
    prefix, prefix2 = [0.0], [0.0]
    for v in values:
        prefix.append(prefix[-1] + v)
        prefix2.append(prefix2[-1] + v * v)

    def sse(lo, hi):
        s = prefix[hi] - prefix[lo]
        return (prefix2[hi] - prefix2[lo]) - s * s / (hi - lo)

    def mean(lo, hi):
        return (prefix[hi] - prefix[lo]) / (hi - lo)

    def best_split(lo, hi):
        if hi - lo < 2 * m:
            return 0
        best, best_k = math.inf, 0
        for k in range(lo + m, hi - m + 1):
            cost = sse(lo, k) + sse(k, hi)
            if cost < best:
                best, best_k = cost, k
        return best_k

    def strength(lo, k, hi):
        total = sse(lo, k) + sse(k, hi)
        spread = math.sqrt((0.0 if 0.0 > total else total) / (hi - lo))
        need = 2 * spread if 2 * spread > floor else floor
        gap = abs(mean(k, hi) - mean(lo, k))
        if gap != gap:
            return 0.0
        return gap / need if need > 0.0 else (math.inf if gap > 0.0 else 0.0)

    def neighbours(points, i):
        return (points[i - 1] if i else 0), (points[i + 1] if i + 1 < len(points) else n)

    def low_band(lo, hi, step):
        cut, level, tol = math.inf, 0.0, 0.0
        for _ in range(8):
            kept = [v for v in values[lo:hi] if v <= cut]
            if not kept:
                break
            total = 0.0
            for v in kept:
                total += v
            level = total / len(kept)
            sq = 0.0
            for v in kept:
                sq += (v - level) * (v - level)
            tol = 3 * math.sqrt(sq / len(kept))
            if not tol >= 0.02 * step:
                tol = 0.02 * step
            if level + tol == cut:
                break
            cut = level + tol
        return level, tol

    def settle(lo, k, hi):
        k = best_split(lo, hi) or k
        left, right = mean(lo, k), mean(k, hi)
        up = right > left
        low, tol = low_band(lo, k, abs(right - left)) if up else low_band(k, hi, abs(right - left))
        if up:
            while k > lo + m and values[k - 1] > low + tol:
                k -= 1
            while k + m < hi and values[k] <= low + tol:
                k += 1
        else:
            while k + m < hi and values[k] > low + tol:
                k += 1
            while k > lo + m and values[k - 1] <= low + tol:
                k -= 1
        return k

    segments, points = [(0, n)], []
    while segments and len(points) < 64:
        lo, hi = segments.pop(0)
        k = best_split(lo, hi)
        if k and abs(mean(k, hi) - mean(lo, k)) > floor:
            points.append(k)
            segments += [(lo, k), (k, hi)]
    points.sort()
    while points:
        s = [strength(neighbours(points, i)[0], p, neighbours(points, i)[1])
             for i, p in enumerate(points)]  # fmt: skip
        weakest = min(range(len(points)), key=lambda i: (s[i], i))
        if s[weakest] > 1.0 and len(points) <= max(max_points, 0):
            break
        del points[weakest]
    for i in range(len(points)):
        lo, hi = neighbours(points, i)
        points[i] = settle(lo, points[i], hi)
    return points


def ref_drawn(values, drawing, t, interval, limit):
    if drawing == "at_most":
        return [min(v, limit) for v in values]
    if drawing == "kib_as_mib":
        return [v / 1024.0 for v in values]
    if drawing == "per_second":
        dts = [interval] + [b - a for a, b in zip(t, t[1:])] if len(t) else []
        return [v / d if d > 0 else 0.0 for v, d in zip(values, dts)]
    return list(values)


def ref_downsample(t, col, max_points):
    n = len(t)
    if n <= max_points:
        return list(t), list(col)
    buckets = max_points // 2
    t_out, out = [], []
    bounds = [b * n // buckets for b in range(buckets + 1)]
    for lo, hi in zip(bounds, bounds[1:]):
        t_out += [t[lo], t[hi - 1]]
        seg = list(col[lo:hi])
        lo_v, hi_v = min(seg), max(seg)
        out += [lo_v, hi_v] if seg.index(lo_v) <= seg.index(hi_v) else [hi_v, lo_v]
    return t_out, out


def ref_json_numbers(values):
    parts = []
    for v in values:
        if v != v or v in (math.inf, -math.inf):
            parts.append("null")
        elif v == 0:
            parts.append("0")
        else:
            parts.append(f"{v:.5g}")
    return "[" + ",".join(parts) + "]"


def ref_json_times(t, t0):
    return "[" + ",".join(f"{v - t0:.3f}" for v in t) + "]"


# -- random series ----------------------------------------------------------------------------


def stepped(rnd, n, specials=0.0):
    """Levels changing at a few random places, noise, some repeated values, some specials."""
    cuts = sorted(rnd.sample(range(n), min(n, rnd.randint(0, 4)))) if n else []
    level, out = rnd.uniform(0, 5), []
    for i in range(n):
        if cuts and i == cuts[0]:
            cuts.pop(0)
            level = rnd.uniform(0, 5)
        v = level + rnd.gauss(0, rnd.choice([0.0, 0.01, 0.3]))
        if rnd.random() < 0.1:
            v = round(v, 1)  # ties
        if rnd.random() < specials:
            v = rnd.choice(SPECIALS)
        out.append(v)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_change_points_as_the_python_detector(seed):
    rnd = random.Random(seed)
    n = rnd.choice([0, 1, 5, 6, 7, 20, 150, 600])
    values = stepped(rnd, n, specials=0.02 if seed % 4 == 0 else 0.0)
    floor = rnd.choice([0.0, 0.3, 1.0, 10.0][: 3 if seed % 5 else 4])
    for max_phases in (1, 2, 4, 7):
        want = ref_change_points(values, floor, max_phases)
        assert change_points(values, floor, max_phases) == want
        assert change_points(array("d", values), floor, max_phases) == want  # read in place


def test_change_points_finds_real_steps():
    values = [1.0] * 100 + [6.0] * 100 + [3.0] * 100
    assert change_points(values, 0.3) == [100, 200]
    assert change_points(values, 5.0) == []  # steps below the floor
    assert change_points([2.0] * 300, 0.0) == []


def test_change_points_of_a_day_at_one_second():
    rnd = random.Random(86_400)
    day = 86_400 / (2 * math.pi)
    values = array("d", (1 + math.sin(i / day) + 0.2 * rnd.random() for i in range(86_400)))
    values[30_000:50_000] = array("d", (v + 2 for v in values[30_000:50_000]))
    want = ref_change_points(list(values), 0.3)
    assert want and change_points(values, 0.3) == want


def test_change_points_rejects_what_it_cannot_use():
    with pytest.raises(TypeError, match="float64"):
        _core.change_points(array("i", [1, 2, 3]), 0.3, 3, 3)
    with pytest.raises(TypeError, match="not a number"):
        _core.change_points([1.0, "x"], 0.3, 3, 3)
    with pytest.raises(ValueError, match="min_len"):
        _core.change_points([1.0, 2.0], 0.3, 3, 0)


DRAWINGS = ["as_is", "kib_as_mib", "per_second", "at_most"]


@pytest.mark.parametrize("max_points", [2, 3, 10, 2400])
@pytest.mark.parametrize("drawing", DRAWINGS)
def test_chart_series_as_the_python_downsampling(drawing, max_points):
    rnd = random.Random(f"{drawing}{max_points}")
    for n in sorted({0, 1, 2, max_points - 1, max_points, max_points + 1, 3 * max_points + 7}):
        n = max(n, 0)
        t = [1.79e9 + i + rnd.choice([0.0, 0.0, -0.6, 1e-4]) for i in range(n)]  # steps <= 0 too
        values = stepped(rnd, n, specials=0.05)
        limit, interval = rnd.choice([1.0, 2.5]), rnd.choice([1.0, 0.0])
        drawn = ref_drawn(values, drawing, t, interval, limit)
        t_out, want = ref_downsample(t, drawn, max_points)
        got = _core.chart_series(array("d", values), drawing, max_points, t, interval, limit)
        assert got == ref_json_numbers(want), (n, max_points)
        assert (
            _core.chart_series(values, drawing, max_points, array("d", t), interval, limit) == got
        )
        t0 = math.floor(t[0]) if n else 0
        assert _core.chart_times(t, t0, max_points) == ref_json_times(t_out, t0)


def test_chart_series_of_a_day_at_one_second_keeps_the_peaks():
    rnd = random.Random(1)
    t = array("d", (1.79e9 + i for i in range(86_400)))
    values = array("d", (rnd.random() for _ in range(86_400)))
    values[43_210], values[777] = 50.0, -3.0
    text = _core.chart_series(values, "per_second", 2400, t, 1.0)
    assert text == ref_json_numbers(ref_downsample(t, list(values), 2400)[1])
    assert text.count(",") == 2399 and "50," in text and "-3," in text


def test_chart_series_rejects_what_it_cannot_use():
    with pytest.raises(ValueError, match="drawing 'log'"):
        _core.chart_series([1.0], "log", 10)
    with pytest.raises(ValueError, match="needs the timestamps"):
        _core.chart_series([1.0], "per_second", 10)
    with pytest.raises(ValueError, match="as many timestamps"):
        _core.chart_series([1.0, 2.0], "per_second", 10, [1.0])
    with pytest.raises(ValueError, match="max_points"):
        _core.chart_times([1.0], 0.0, -1)
    with pytest.raises(TypeError, match="float64"):
        _core.chart_series(array("f", [1.0]), "as_is", 10)
