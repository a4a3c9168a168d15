#include "stats.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Selection gives up after this many partition rounds (an adversarial order) and sorts the
 * rest: O(n log n) at worst, never quadratic. */
#define SELECT_MAX_ROUNDS 64

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double
median3(double a, double b, double c)
{
    if (a < b)
        return b < c ? b : (a < c ? c : a);
    return a < c ? a : (b < c ? c : b);
}

/* Reorders a[lo..hi] so that a[k] holds the value a sort would put there, everything before it
 * no greater and everything after it no smaller (Hoare partitions; NaN ends scans, so the loops
 * always end). */
static void
select_kth(double *a, ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t k)
{
    int rounds = 0;

    while (lo < hi) {
        double pivot = median3(a[lo], a[lo + (hi - lo) / 2], a[hi]);
        ptrdiff_t i = lo, j = hi;
        if (++rounds > SELECT_MAX_ROUNDS) {
            qsort(a + lo, (size_t)(hi - lo + 1), sizeof(double), cmp_double);
            return;
        }
        while (i <= j) {
            while (i <= hi && a[i] < pivot)
                i++;
            while (j >= lo && a[j] > pivot)
                j--;
            if (i <= j) {
                double t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return; /* between the parts: equal to the pivot */
    }
}

/* the smallest of a[from..n-1] (a[from - 1] when the range is empty) */
static double
min_from(const double *a, size_t from, size_t n)
{
    double m;
    size_t i;

    if (from >= n)
        return a[n - 1];
    m = a[from];
    for (i = from + 1; i < n; i++)
        if (a[i] < m)
            m = a[i];
    return m;
}

/* below + (above - below) * frac for below <= above, never outside [below, above]: far-apart
 * finite values (-1e308 and 1e308, whose difference overflows) are weighted one by one */
static double
interpolate(double below, double above, double frac)
{
    double d = above - below, v;

    if (above == below || frac <= 0)
        return below;
    v = isinf(d) && isfinite(below) && isfinite(above) ? below * (1 - frac) + above * frac
                                                       : below + d * frac;
    return v < below ? below : (v > above ? above : v);
}

/* The q-quantiles (ascending q) of a[0..n-1], which is reordered: each selection works on
 * the part left of the previous one, so three quantiles cost about three passes. */
static void
quantiles(double *a, size_t n, const double *q, double *out, size_t nq)
{
    ptrdiff_t hi = (ptrdiff_t)n - 1;
    size_t j;

    for (j = nq; j-- > 0;) {
        double pos = q[j] * (double)(n - 1);
        size_t lo = (size_t)floor(pos);
        double below, above;
        select_kth(a, 0, hi, (ptrdiff_t)lo);
        below = a[lo];
        above = lo + 1 < n ? min_from(a, lo + 1, n) : below;
        out[j] = interpolate(below, above, pos - (double)lo);
        hi = (ptrdiff_t)lo;
    }
}

/* n, sum, weighted mean, min and max in one pass */
static void
moments(const double *values, const double *weights, size_t n, Summary *out)
{
    double weighted = 0, total_weight = 0;
    size_t i;

    out->min = out->max = values[0];
    for (i = 0; i < n; i++) {
        double w = weights && weights[i] > 0 ? weights[i] : (weights ? 0 : 1);
        out->sum += values[i];
        weighted += values[i] * w;
        total_weight += w;
        if (values[i] < out->min)
            out->min = values[i];
        if (values[i] > out->max)
            out->max = values[i];
    }
    out->mean = total_weight > 0 ? weighted / total_weight : out->sum / (double)n;
}

/* 0 on success */
int
summarize(const double *values, const double *weights, size_t n, double *scratch, Summary *out)
{
    static const double q[3] = {0.50, 0.90, 0.99};
    double p[3], *work = scratch;

    memset(out, 0, sizeof(*out));
    out->n = n;
    if (n == 0)
        return 0;
    moments(values, weights, n, out);
    if (out->min == out->max) { /* a constant column (idle GPUs, a fixed pid): no selection */
        out->p50 = out->p90 = out->p99 = out->min;
        return 0;
    }
    if (work == NULL && (work = malloc(n * sizeof(double))) == NULL)
        return -1;
    memcpy(work, values, n * sizeof(double));
    quantiles(work, n, q, p, 3);
    out->p50 = p[0];
    out->p90 = p[1];
    out->p99 = p[2];
    if (work != scratch)
        free(work);
    return 0;
}

void
table_columns_init(TableColumns *t, const ColumnSpec *specs, size_t ncols)
{
    memset(t, 0, sizeof(*t));
    t->specs = specs;
    t->ncols = ncols < STATS_MAX_COLUMNS ? ncols : STATS_MAX_COLUMNS;
}

/* Seconds each row covers: from the previous timestamp (the first from start when known). */
static void
row_weights(const double *ts, size_t n, double start, double *w)
{
    size_t i;

    for (i = 0; i < n; i++)
        w[i] = i ? ts[i] - ts[i - 1] : (start > 0 && start < ts[0] ? ts[0] - start : 0);
    if (n > 1 && w[0] <= 0)
        w[0] = w[1];
    if (n == 1 && w[0] <= 0)
        w[0] = 1;
}

/* 0, or -1 when out of memory */
int
table_stats(const TableColumns *t, double start, TableStats *out)
{
    size_t n = t->ncols ? t->len[0] : 0, cap = n, k;
    double *w, *scratch;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (t->ncols == 0 || t->data[0] == NULL || n == 0)
        return 0;
    out->rows = n;
    out->first_ts = t->data[0][0];
    out->last_ts = t->data[0][n - 1];
    for (k = 1; k < t->ncols; k++)
        if (t->data[k] && t->len[k] > cap)
            cap = t->len[k];
    w = malloc(n * sizeof(double));
    scratch = malloc(cap * sizeof(double));
    if (w == NULL || scratch == NULL) {
        free(w);
        free(scratch);
        return -1;
    }
    row_weights(t->data[0], n, start, w);
    for (k = 1; k < t->ncols && rc == 0; k++) {
        if (t->specs[k].aggregate == AGG_NONE || t->data[k] == NULL)
            continue;
        rc = summarize(t->data[k], t->len[k] == n ? w : NULL, t->len[k], scratch, &out->col[k]);
        out->has[k] = rc == 0;
    }
    free(w);
    free(scratch);
    return rc;
}

double
run_duration(double start, double stop, double first_ts, double last_ts)
{
    if (stop <= 0)
        stop = last_ts;
    return start > 0 && stop >= start ? stop - start : last_ts - first_ts;
}

/* ---- the recommendation ---------------------------------------------------------------- */

const char *
resource_stat_field(enum ColumnResource resource)
{
    return resource == RES_CPU ? "mean" : "max";
}

/* MiB per unit of a column (memory and VRAM are asked for in MiB) */
static double
mib_per_unit(const char *unit)
{
    if (strcmp(unit, "KiB") == 0)
        return 1.0 / 1024.0;
    if (strcmp(unit, "B") == 0)
        return 1.0 / (1024.0 * 1024.0);
    return 1.0; /* MiB, or not a size (cores, GPUs) */
}

void
run_figures_set(RunFigures *run, const ColumnSpec *spec, double value)
{
    enum ColumnResource r = spec->resource;

    if (r == RES_NONE || (int)r >= RESOURCE_COUNT || !isfinite(value))
        return;
    if (r == RES_MEMORY || r == RES_VRAM)
        value *= mib_per_unit(spec->unit);
    run->value[r] = value;
    run->known[r] = 1;
}

void
run_figures_from_stats(const TableColumns *process, const TableStats *stats, double duration,
                       RunFigures *out)
{
    size_t k;

    memset(out, 0, sizeof(*out));
    out->duration = duration;
    for (k = 0; k < process->ncols; k++) {
        const ColumnSpec *spec = &process->specs[k];
        if (spec->resource == RES_NONE || !stats->has[k])
            continue;
        run_figures_set(out, spec,
                        spec->resource == RES_CPU ? stats->col[k].mean : stats->col[k].max);
    }
}

/* v as an int in 0..INT_MAX: a value beyond saturates (a cast would wrap to negative) */
static int
saturate_int(double v)
{
    if (!(v > 0))
        return 0;
    return v >= (double)INT_MAX ? INT_MAX : (int)v;
}

static int
too_short_for_cpu(const RunFigures *run)
{
    return run->duration > 0 && run->duration < RECOMMEND_SHORT_RUN_S;
}

void
run_combiner_add(RunCombiner *c, double value)
{
    if (!isfinite(value))
        return;
    c->sum += value;
    c->top = c->used ? fmax(c->top, value) : value;
    c->used++;
}

double
run_combiner_value(const RunCombiner *c, int peaks)
{
    if (c->used == 0)
        return NAN;
    return peaks ? c->top : c->sum / (double)c->used;
}

double
combine_runs(const double *values, size_t n, int peaks)
{
    RunCombiner c = {0, 0, 0};
    size_t i;

    for (i = 0; i < n; i++)
        run_combiner_add(&c, values[i]);
    return run_combiner_value(&c, peaks);
}

/* 0, or -1 when there is not enough data */
int
recommend_runs(const RunFigures *runs, size_t n, Recommendation *out)
{
    RunCombiner by[RESOURCE_COUNT];
    size_t i, known[RESOURCE_COUNT] = {0};
    double cpu, peak[RESOURCE_COUNT];
    int r;

    memset(out, 0, sizeof(*out));
    memset(by, 0, sizeof(by));
    for (i = 0; i < n; i++)
        for (r = 0; r < RESOURCE_COUNT; r++) {
            if (!runs[i].known[r])
                continue;
            known[r]++;
            if (!(r == RES_CPU && too_short_for_cpu(&runs[i])))
                run_combiner_add(&by[r], runs[i].value[r]);
        }
    if (known[RES_CPU] == 0 || known[RES_MEMORY] == 0)
        return -1;
    for (r = 0; r < RESOURCE_COUNT; r++) {
        double v = run_combiner_value(&by[r], r != RES_CPU);
        peak[r] = isfinite(v) ? v : 0;
    }
    cpu = run_combiner_value(&by[RES_CPU], 0);
    out->cpu = isfinite(cpu) ? recommend_cpu(cpu) : 1; /* only short runs: 1 core */
    out->memory_mib = saturate_int(recommend_memory_mib(peak[RES_MEMORY], 0));
    out->gpu = saturate_int(ceil(peak[RES_GPU] - 1e-9));
    out->vram_mib = saturate_int(recommend_memory_mib(peak[RES_VRAM], 1));
    return 0;
}

/* MiB, rounded up to the next step */
double
round_memory_mib(double mib)
{
    static const double steps[] = {128, 256, 512, 1024};
    size_t i;

    for (i = 0; i < sizeof(steps) / sizeof(*steps); i++)
        if (mib <= steps[i])
            return steps[i];
    return ceil(mib / 1024.0) * 1024.0;
}

/* at least one core */
int
recommend_cpu(double mean_cores)
{
    double cores = floor(mean_cores + 0.5);
    if (!(cores >= 1))
        return 1;
    return cores >= (double)INT_MAX ? INT_MAX : (int)cores; /* saturates, never wraps */
}

/* MiB with headroom */
double
recommend_memory_mib(double peak_mib, int zero_ok)
{
    if (peak_mib <= 0 && zero_ok)
        return 0;
    return round_memory_mib(peak_mib * RECOMMEND_HEADROOM);
}
