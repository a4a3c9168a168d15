/* libFuzzer target: summarize(), table_stats() recommend_runs() and combine_runs() (csrc/stats.c)
 * on any float64 values, NaN and infinities included. The percentiles by selection must equal those
 * of a full sort (when no NaN is in the input), lie between min and max, and nothing may hang
 * or touch memory it should not (ASan/UBSan). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "columns.h"
#include "fuzz_common.h"
#include "stats.h"

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The reference: linear interpolation between order statistics in long double, whose range
 * holds the difference of any two finite doubles (1e308 - -1e308 overflows a double). */
static double
sorted_quantile(const double *sorted, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
    long double below = sorted[lo], above = sorted[hi], frac = pos - (double)lo;

    if (above == below || frac == 0) /* an infinity times 0 would be NaN */
        return sorted[lo];
    return (double)(below + (above - below) * frac);
}

/* equal within the rounding of one interpolation at the scale of the column (its largest
 * magnitude; a few of the smallest subnormals below it), or both NaN (infinities of both signs
 * interpolate to NaN either way) */
static int
same(double a, double b, double scale)
{
    return a == b || (isnan(a) && isnan(b)) ||
           fabs(a - b) <= 4 * DBL_EPSILON * scale + 4 * DBL_TRUE_MIN; /* subnormals too */
}

/* the selection's answers against a full sort: abort on a difference */
static void
check_summary(const double *v, size_t n)
{
    double *sorted, scale;
    Summary s;
    size_t i;

    for (i = 0; i < n; i++)
        if (isnan(v[i]))
            return; /* NaN has no place in an order: only "no crash" is asked */
    if (summarize(v, NULL, n, NULL, &s) != 0 || n == 0)
        return;
    sorted = malloc(n * sizeof(double));
    if (sorted == NULL)
        return;
    memcpy(sorted, v, n * sizeof(double));
    qsort(sorted, n, sizeof(double), cmp_double);
    scale = fmax(fabs(s.min), fabs(s.max));
    if (!same(s.p50, sorted_quantile(sorted, n, 0.50), scale) ||
        !same(s.p90, sorted_quantile(sorted, n, 0.90), scale) ||
        !same(s.p99, sorted_quantile(sorted, n, 0.99), scale) || (s.p50 < s.min) || (s.p99 > s.max))
        abort();
    free(sorted);
}

/* the rule over runs: a peak is one of the finite values and at least the mean of them */
static void
check_combined(const double *v, size_t n)
{
    double top = combine_runs(v, n, 1), mean = combine_runs(v, n, 0);
    size_t i, found = 0;

    for (i = 0; i < n; i++)
        found += v[i] == top;
    if (isnan(top) != isnan(mean) || (!isnan(top) && !found))
        abort();
    if (!isnan(top) && isfinite(mean) && mean > top * (1 + 1e-12) + 1e-300 && top >= 0)
        abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n = size / sizeof(double), k;
    double *v = malloc((n ? n : 1) * sizeof(double));
    TableColumns t;
    TableStats st;
    RunFigures runs[2];
    Recommendation rec;

    if (v == NULL)
        return 0;
    memcpy(v, data, n * sizeof(double));
    check_summary(v, n);
    table_columns_init(&t, process_columns, PC_COUNT);
    for (k = 0; k < PC_COUNT; k++) { /* every column the same values; the timestamps too */
        t.data[k] = v;
        t.len[k] = k % 3 ? n : n / 2; /* some columns shorter: unweighted */
    }
    t.len[0] = n;
    if (table_stats(&t, n ? v[0] : 0, &st) == 0) {
        run_figures_from_stats(&t, &st, run_duration(0, 0, st.first_ts, st.last_ts), &runs[0]);
        runs[1] = runs[0];
        recommend_runs(runs, 2, &rec);
    }
    check_combined(v, n);
    free(v);
    return 0;
}
