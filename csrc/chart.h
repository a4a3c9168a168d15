/* The report's chart series: a column as drawn (units, rates, a cap) and downsampled to a
 * bounded number of points that keeps every bucket's lowest and highest value. No Python
 * here: py_series.c binds it and writes the JSON. */
#ifndef RT_CHART_H
#define RT_CHART_H

#include <stddef.h>

/* How a column's values are drawn. */
typedef enum ChartDrawing {
    CHART_AS_IS,      /* the value */
    CHART_KIB_AS_MIB, /* value / 1024 */
    CHART_PER_SECOND, /* an amount per interval as a rate: value / seconds since the last row
                       * (the first row: the sampling interval); 0 when that is not > 0 */
    CHART_AT_MOST,    /* the value, no more than the limit (the machine's vCPUs) */
} ChartDrawing;

typedef struct ChartColumn {
    const double *values;
    const double *timestamps; /* CHART_PER_SECOND: the row times (n of them) */
    size_t n;
    ChartDrawing drawing;
    double interval; /* CHART_PER_SECOND: the seconds of the first row */
    double limit;    /* CHART_AT_MOST */
} ChartColumn;

/* Points chart_downsample() writes for n rows: n when n <= max_points, else two per bucket
 * (max_points / 2 buckets). */
size_t chart_points(size_t n, size_t max_points);

/* Row b's bucket edges: rows [lo, hi) of bucket b of chart_points(n, max_points) / 2. */
void chart_bucket(size_t n, size_t max_points, size_t b, size_t *lo, size_t *hi);

/* The drawn values of col, downsampled: every row when there are at most max_points, else per
 * bucket its lowest and highest drawn value in the order they came (the first of equal values
 * counts; a NaN is kept only when it is a bucket's first value, as Python's min() and max()
 * do). Writes chart_points(col->n, max_points) values to out; returns that number. */
size_t chart_downsample(const ChartColumn *col, size_t max_points, double *out);

/* The timestamps of the same points: every row's, or each bucket's first and last. */
size_t chart_times(const double *t, size_t n, size_t max_points, double *out);

#endif
