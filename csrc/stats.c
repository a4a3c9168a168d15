#include "stats.h"

#include <limits.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the q-quantile of sorted values (0 <= q <= 1) */
static double
quantile(const double *sorted, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - (double)lo);
}

/* 0 on success */
int
summarize(const double *values, const double *weights, size_t n, Summary *out)
{
    double weighted = 0, total_weight = 0;
    double *sorted;
    size_t i;

    memset(out, 0, sizeof(*out));
    out->n = n;
    if (n == 0)
        return 0;
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
    sorted = malloc(n * sizeof(double));
    if (sorted == NULL)
        return -1;
    memcpy(sorted, values, n * sizeof(double));
    qsort(sorted, n, sizeof(double), cmp_double);
    out->p50 = quantile(sorted, n, 0.50);
    out->p90 = quantile(sorted, n, 0.90);
    out->p99 = quantile(sorted, n, 0.99);
    free(sorted);
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
