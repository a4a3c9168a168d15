/* Chart series (see chart.h). */
#include "chart.h"

size_t
chart_points(size_t n, size_t max_points)
{
    return n <= max_points ? n : 2 * (max_points / 2);
}

void
chart_bucket(size_t n, size_t max_points, size_t b, size_t *lo, size_t *hi)
{
    size_t buckets = max_points / 2;

    /* b * n / buckets exactly (no overflow for any n a machine can hold in doubles) */
    *lo = (size_t)((unsigned long long)b * n / buckets);
    *hi = (size_t)((unsigned long long)(b + 1) * n / buckets);
}

/* Row i of col as drawn. */
static double
drawn(const ChartColumn *col, size_t i)
{
    double v = col->values[i], dt;

    switch (col->drawing) {
    case CHART_KIB_AS_MIB:
        return v / 1024.0;
    case CHART_PER_SECOND:
        dt = i == 0 ? col->interval : col->timestamps[i] - col->timestamps[i - 1];
        return dt > 0 ? v / dt : 0.0;
    case CHART_AT_MOST:
        return col->limit < v ? col->limit : v;
    case CHART_AS_IS:
    default:
        return v;
    }
}

/* Writes rows [lo, hi) of col's lowest and highest drawn value to out, in row order. */
static void
bucket_extremes(const ChartColumn *col, size_t lo, size_t hi, double *out)
{
    double low = drawn(col, lo), high = low;
    size_t i, at_low = lo, at_high = lo;

    for (i = lo + 1; i < hi; i++) {
        double v = drawn(col, i);
        if (v < low) {
            low = v;
            at_low = i;
        }
        if (v > high) {
            high = v;
            at_high = i;
        }
    }
    out[0] = at_low <= at_high ? low : high;
    out[1] = at_low <= at_high ? high : low;
}

size_t
chart_downsample(const ChartColumn *col, size_t max_points, double *out)
{
    size_t i, b, lo, hi, points = chart_points(col->n, max_points);

    if (points == col->n) {
        for (i = 0; i < col->n; i++)
            out[i] = drawn(col, i);
        return points;
    }
    for (b = 0; b < points / 2; b++) {
        chart_bucket(col->n, max_points, b, &lo, &hi);
        bucket_extremes(col, lo, hi, out + 2 * b);
    }
    return points;
}

size_t
chart_times(const double *t, size_t n, size_t max_points, double *out)
{
    size_t i, b, lo, hi, points = chart_points(n, max_points);

    if (points == n) {
        for (i = 0; i < n; i++)
            out[i] = t[i];
        return points;
    }
    for (b = 0; b < points / 2; b++) {
        chart_bucket(n, max_points, b, &lo, &hi);
        out[2 * b] = t[lo];
        out[2 * b + 1] = t[hi - 1];
    }
    return points;
}
