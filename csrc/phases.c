/* Change points by binary segmentation (see phases.h). The arithmetic is the one the Python
 * version of this detector did, operation for operation, so that the points are the same:
 * prefix sums from the start of the series, and each product rounded on its own (no fused
 * multiply-add: the products are separate statements). */
#include "phases.h"

#include <math.h>

typedef struct Prefix {
    const double *sum; /* sum[i]: values[0] + ... + values[i - 1] */
    const double *sq;  /* sq[i]: the same of the squares */
} Prefix;

/* The squared error of values[lo..hi) around their mean. */
static double
segment_sse(const Prefix *p, size_t lo, size_t hi)
{
    double len = (double)(hi - lo);
    double s = p->sum[hi] - p->sum[lo];
    double s2 = s * s;

    return (p->sq[hi] - p->sq[lo]) - s2 / len;
}

/* The index splitting values[lo..hi) in two with the least squared error (both parts at least
 * min_len long); 0 when the part is too short. */
static size_t
best_split(const Prefix *p, size_t lo, size_t hi, size_t min_len)
{
    double best = INFINITY;
    size_t k, best_k = 0;

    if (hi - lo < 2 * min_len)
        return 0;
    for (k = lo + min_len; k + min_len <= hi; k++) {
        double cost = segment_sse(p, lo, k) + segment_sse(p, k, hi);
        if (cost < best) {
            best = cost;
            best_k = k;
        }
    }
    return best_k;
}

static double
segment_mean(const Prefix *p, size_t lo, size_t hi)
{
    return (p->sum[hi] - p->sum[lo]) / (double)(hi - lo);
}

/* How far the means of values[lo..k) and values[k..hi) are apart, as a share of what a step
 * needs (floor, and twice the deviation within the two parts): above 1 is a step. */
static double
step_strength(const Prefix *p, size_t lo, size_t k, size_t hi, double floor)
{
    double sse = segment_sse(p, lo, k) + segment_sse(p, k, hi);
    double spread = sqrt((0.0 > sse ? 0.0 : sse) / (double)(hi - lo));
    double need = 2 * spread > floor ? 2 * spread : floor;
    double gap = fabs(segment_mean(p, k, hi) - segment_mean(p, lo, k));

    if (!(gap == gap))
        return 0.0; /* NaN: no step */
    return need > 0.0 ? gap / need : (gap > 0.0 ? INFINITY : 0.0);
}

/* Removes points[i] (of n). */
static void
drop_point(size_t *points, size_t n, size_t i)
{
    for (; i + 1 < n; i++)
        points[i] = points[i + 1];
}

/* The index of the weakest point (the least step_strength against its neighbours). */
static size_t
weakest_point(const Prefix *p, const size_t *points, size_t found, size_t n, double floor,
              double *strength)
{
    size_t i, weakest = 0;
    double least = INFINITY;

    for (i = 0; i < found; i++) {
        size_t lo = i == 0 ? 0 : points[i - 1], hi = i + 1 == found ? n : points[i + 1];
        double s = step_strength(p, lo, points[i], hi, floor);
        if (s < least) {
            least = s;
            weakest = i;
        }
    }
    *strength = least;
    return weakest;
}

/* The level of the quieter part values[lo..hi) and how far above it its samples lie (three
 * standard deviations, at least 2% of the step): both from the samples under the band, found
 * again until it holds still, so that the ramp's samples in the part do not widen it. */
static double
low_band(const double *values, size_t lo, size_t hi, double step, double *level)
{
    double cut = INFINITY, mean = 0.0, tol = 0.0;
    int round;

    for (round = 0; round < 8; round++) {
        double sum = 0.0, sq = 0.0, var, floor_tol = 0.02 * step;
        size_t i, count = 0;
        for (i = lo; i < hi; i++)
            if (values[i] <= cut) {
                sum += values[i];
                count++;
            }
        if (count == 0)
            break;
        mean = sum / (double)count;
        for (i = lo; i < hi; i++)
            if (values[i] <= cut) {
                double d = values[i] - mean;
                double d2 = d * d;
                sq += d2;
            }
        var = sq / (double)count;
        tol = 3 * sqrt(var);
        if (!(tol >= floor_tol))
            tol = floor_tol;
        if (mean + tol == cut)
            break;
        cut = mean + tol;
    }
    *level = mean;
    return tol;
}

/* Moves points[i] to the best split between its neighbours, then off a ramp: the samples
 * above the quieter part's band (low_band) go to the busier part, so a ramp up (an
 * allocation) or down (a release) is not counted in the quieter phase. */
static size_t
settle_point(const Prefix *p, const double *values, size_t lo, size_t k, size_t hi, size_t min_len)
{
    size_t best = best_split(p, lo, hi, min_len);
    double left, right, low, tol;
    int up;

    if (best != 0)
        k = best;
    left = segment_mean(p, lo, k);
    right = segment_mean(p, k, hi);
    up = right > left;
    tol = low_band(values, up ? lo : k, up ? k : hi, fabs(right - left), &low);
    if (up) {
        while (k > lo + min_len && values[k - 1] > low + tol)
            k--;
        while (k + min_len < hi && values[k] <= low + tol)
            k++;
    } else {
        while (k + min_len < hi && values[k] > low + tol)
            k++;
        while (k > lo + min_len && values[k - 1] <= low + tol)
            k--;
    }
    return k;
}

/* Fills the prefix sums of values into scratch. */
static Prefix
prefix_sums(const double *values, size_t n, double *scratch)
{
    double *sum = scratch, *sq = scratch + n + 1;
    size_t i;

    sum[0] = sq[0] = 0.0;
    for (i = 0; i < n; i++) {
        double v2 = values[i] * values[i];
        sum[i + 1] = sum[i] + values[i];
        sq[i + 1] = sq[i] + v2;
    }
    return (Prefix){sum, sq};
}

/* Sorts the few points in place (insertion sort). */
static void
sort_points(size_t *points, size_t n)
{
    size_t i, j;

    for (i = 1; i < n; i++) {
        size_t v = points[i];
        for (j = i; j > 0 && points[j - 1] > v; j--)
            points[j] = points[j - 1];
        points[j] = v;
    }
}

/* Candidates: the best split of the whole series, then of each part, oldest part first, kept
 * when the two means differ by more than floor; up to PHASES_MAX_POINTS of them. */
static size_t
candidates(const Prefix *p, size_t n, double floor, size_t min_len, size_t *points)
{
    size_t queue_lo[2 * PHASES_MAX_POINTS + 1], queue_hi[2 * PHASES_MAX_POINTS + 1];
    size_t head = 0, tail = 0, found = 0;

    queue_lo[tail] = 0;
    queue_hi[tail++] = n;
    while (head < tail && found < PHASES_MAX_POINTS) {
        size_t lo = queue_lo[head], hi = queue_hi[head++];
        size_t k = best_split(p, lo, hi, min_len);
        if (k == 0 || !(fabs(segment_mean(p, k, hi) - segment_mean(p, lo, k)) > floor))
            continue;
        points[found++] = k;
        queue_lo[tail] = lo;
        queue_hi[tail++] = k;
        queue_lo[tail] = k;
        queue_hi[tail++] = hi;
    }
    sort_points(points, found);
    return found;
}

size_t
change_points(const double *values, size_t n, double floor, size_t min_len, size_t max_points,
              double *scratch, size_t *out)
{
    size_t points[PHASES_MAX_POINTS], found, i;
    double strength;
    Prefix p;

    if (max_points > PHASES_MAX_POINTS)
        max_points = PHASES_MAX_POINTS;
    if (min_len == 0)
        min_len = 1; /* a part is never empty */
    p = prefix_sums(values, n, scratch);
    found = candidates(&p, n, floor, min_len, points);
    /* the weakest point goes while it is no step against its neighbours, or too many */
    while (found > 0) {
        i = weakest_point(&p, points, found, n, floor, &strength);
        if (strength > 1.0 && found <= max_points)
            break;
        drop_point(points, found--, i);
    }
    for (i = 0; i < found; i++) {
        size_t lo = i == 0 ? 0 : points[i - 1], hi = i + 1 == found ? n : points[i + 1];
        points[i] = settle_point(&p, values, lo, points[i], hi, min_len);
    }
    for (i = 0; i < found; i++)
        out[i] = points[i];
    return found;
}
