/* Summaries of sampled columns and the resource recommendation rules. No Python here. */
#ifndef RT_STATS_H
#define RT_STATS_H

#include <stddef.h>

typedef struct Summary {
    size_t n;
    double mean; /* weighted by the weights when given (time-weighted for samples) */
    double min, max, sum;
    double p50, p90, p99; /* linear interpolation between order statistics */
} Summary;

/* Summarises n values (weights may be NULL): 0, or -1 when out of memory. n == 0 gives zeros. */
int summarize(const double *values, const double *weights, size_t n, Summary *out);

/* Memory to ask for, in MiB: 128, 256, 512 or 1024, then whole GiB (1024 MiB steps). */
double round_memory_mib(double mib);

/* Cores to ask for: the mean rounded half up, at least 1. */
int recommend_cpu(double mean_cores);

/* Memory (or VRAM) to ask for, in MiB, from a peak: peak + 20 %, rounded as above; 0 stays 0
 * for VRAM (zero_ok), while memory is at least 128. */
double recommend_memory_mib(double peak_mib, int zero_ok);

#define RECOMMEND_HEADROOM 1.2

#endif
