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

/* The index splitting values[lo..hi) in two with the least squared error when the two means
 * differ by more than floor and twice the within-part deviation; 0 when there is none. */
static size_t
best_split(const Prefix *p, size_t lo, size_t hi, double floor, size_t min_len)
{
    double best = INFINITY, left, right, spread, need;
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
    if (best_k == 0)
        return 0;
    left = (p->sum[best_k] - p->sum[lo]) / (double)(best_k - lo);
    right = (p->sum[hi] - p->sum[best_k]) / (double)(hi - best_k);
    spread = sqrt((0.0 > best ? 0.0 : best) / (double)(hi - lo));
    need = 2 * spread > floor ? 2 * spread : floor;
    return fabs(right - left) > need ? best_k : 0;
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

size_t
change_points(const double *values, size_t n, double floor, size_t min_len, size_t max_points,
              double *scratch, size_t *out)
{
    size_t queue_lo[2 * PHASES_MAX_POINTS + 1], queue_hi[2 * PHASES_MAX_POINTS + 1];
    size_t head = 0, tail = 0, found = 0;
    Prefix p;

    if (max_points > PHASES_MAX_POINTS)
        max_points = PHASES_MAX_POINTS;
    if (min_len == 0)
        min_len = 1; /* a part is never empty */
    p = prefix_sums(values, n, scratch);
    queue_lo[tail] = 0;
    queue_hi[tail++] = n;
    while (head < tail && found < max_points) {
        size_t lo = queue_lo[head], hi = queue_hi[head++];
        size_t k = best_split(&p, lo, hi, floor, min_len);
        if (k == 0)
            continue;
        out[found++] = k;
        queue_lo[tail] = lo;
        queue_hi[tail++] = k;
        queue_lo[tail] = k;
        queue_hi[tail++] = hi;
    }
    sort_points(out, found);
    return found;
}
