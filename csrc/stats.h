/* Statistics of sampled columns and the resource recommendation rules, on C arrays.
 * No Python here: py_stats.c converts, fuzz/fuzz_stats.c and tests/core/stats_check.c drive
 * these functions directly. */
#ifndef RT_STATS_H
#define RT_STATS_H

#include <stddef.h>

#include "columns.h"

typedef struct Summary {
    size_t n;
    double mean; /* weighted by the weights when given (time-weighted for samples) */
    double min, max, sum;
    double p50, p90, p99; /* linear interpolation between order statistics */
} Summary;

/* Summarises n values (weights may be NULL). scratch: NULL, or room for n doubles that the
 * percentiles may reorder (saves an allocation per column). 0, or -1 when out of memory.
 * n == 0 gives zeros. Percentiles by selection (no full sort): O(n) expected. */
int summarize(const double *values, const double *weights, size_t n, double *scratch, Summary *out);

/* ---- one table ------------------------------------------------------------------------- */

#define STATS_MAX_COLUMNS 32

/* A table's columns as C arrays, in the registry's order (specs[0] is the timestamp). */
typedef struct TableColumns {
    const ColumnSpec *specs;               /* process_columns or system_columns */
    size_t ncols;                          /* PC_COUNT or SC_COUNT */
    const double *data[STATS_MAX_COLUMNS]; /* NULL: the column is absent */
    size_t len[STATS_MAX_COLUMNS];
} TableColumns;

/* Points t at specs with every column absent. */
void table_columns_init(TableColumns *t, const ColumnSpec *specs, size_t ncols);

typedef struct TableStats {
    size_t rows; /* the timestamp column's length (0: no table) */
    double first_ts, last_ts;
    unsigned char has[STATS_MAX_COLUMNS]; /* a summary for the column (aggregate != AGG_NONE) */
    Summary col[STATS_MAX_COLUMNS];
} TableStats;

/* The summaries of every aggregated column, time-weighted by the seconds each row covers
 * (the first row from start when known). 0, or -1 when out of memory. */
int table_stats(const TableColumns *t, double start, TableStats *out);

/* The run's duration: stop - start when both are known, else the span of the timestamps. */
double run_duration(double start, double stop, double first_ts, double last_ts);

/* ---- the recommendation ---------------------------------------------------------------- */

#define RECOMMEND_HEADROOM 1.2
#define RECOMMEND_SHORT_RUN_S 0.1 /* a shorter run has no measurable CPU usage (10 ms ticks) */
#define RESOURCE_COUNT (RES_VRAM + 1)

/* What one run contributes, per resource (ColumnResource), in the recommendation's units:
 * cores (the run's mean), MiB (memory, VRAM: the run's peak), GPUs (the peak). */
typedef struct RunFigures {
    double value[RESOURCE_COUNT];
    unsigned char known[RESOURCE_COUNT];
    double duration; /* seconds; 0 when unknown */
} RunFigures;

typedef struct Recommendation {
    int cpu;        /* cores */
    int memory_mib; /* MiB */
    int gpu;        /* GPUs */
    int vram_mib;   /* MiB */
} Recommendation;

/* The summary field a resource's column gives a run: "mean" for CPU, "max" otherwise. */
const char *resource_stat_field(enum ColumnResource resource);

/* Records the figure of column spec (its resource_stat_field value, in the column's unit):
 * converted to the recommendation's unit; not finite values are left unknown. */
void run_figures_set(RunFigures *run, const ColumnSpec *spec, double value);

/* A run's figures from the stats of its process table. */
void run_figures_from_stats(const TableColumns *process, const TableStats *stats, double duration,
                            RunFigures *out);

/* The rule over runs for one figure ("mean of the means, highest of the peaks"): the highest of
 * the values when they are peaks, else their mean (means, totals, durations). Values that are
 * not finite are left out; NAN when none is left. The report's history and the recommender
 * both go by it. */
double combine_runs(const double *values, size_t n, int peaks);

/* The same rule, one run at a time: add each run's value, then read the combined one. */
typedef struct RunCombiner {
    double sum, top;
    size_t used;
} RunCombiner;
void run_combiner_add(RunCombiner *c, double value);
double run_combiner_value(const RunCombiner *c, int peaks);

/* The rule over runs applied to the resources: CPU is the mean over the
 * runs of each run's mean CPU (runs shorter than RECOMMEND_SHORT_RUN_S left out; only those:
 * 1 core); memory, GPUs and VRAM are the highest peak over the runs. 0, or -1 when no run
 * has both a CPU and a memory figure to go by. */
int recommend_runs(const RunFigures *runs, size_t n, Recommendation *out);

/* Memory to ask for, in MiB: 128, 256, 512 or 1024, then whole GiB (1024 MiB steps). */
double round_memory_mib(double mib);

/* Cores to ask for: the mean rounded half up, at least 1. */
int recommend_cpu(double mean_cores);

/* Memory (or VRAM) to ask for, in MiB, from a peak: peak + 20 %, rounded as above; 0 stays 0
 * for VRAM (zero_ok), while memory is at least 128. */
double recommend_memory_mib(double peak_mib, int zero_ok);

#endif
