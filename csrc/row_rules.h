/* The rules a row of samples follows, whoever reads the machine: the CPU-usage rate (over at
 * least one clock tick, never above the CPUs it may use) and the fold of two rows by each
 * column's registry rule (columns.h). Written once, here, for the C sampler (collector.c) and,
 * through _core (py_columns.c), for the psutil backend and the exporter. Portable core: no
 * Python, no Linux. */
#ifndef RT_ROW_RULES_H
#define RT_ROW_RULES_H

#include "columns.h"

/* Cores in use: cpu_s seconds of CPU time over dt seconds of wall time, over at least one
 * clock tick (tick_s: the resolution of CPU time counters), at most cores (none when <= 0),
 * never negative; 0 when dt <= 0. */
double row_cpu_rate(double cpu_s, double dt, double tick_s, double cores);

/* Seconds per clock tick of the CPU time counters: Linux's USER_HZ is 100 on every
 * architecture (the /proc ABI; sysconf(_SC_CLK_TCK) says so), and psutil's counters elsewhere
 * are read at no finer a grain that matters here. */
#define ROW_CLOCK_TICK_S 0.01

/* Folds row `add` (the later) into `into` (n columns of the table `columns`): the later value
 * of a gauge, the sum of an amount, the higher of a peak, and the CPU usage (FOLD_RATE)
 * recomputed from the summed CPU time (the columns with the roles cpu_user and cpu_system)
 * over dt, the time both rows cover; when dt is not known (<= 0), the later row's. */
void row_fold(const ColumnSpec *columns, int n, double *into, const double *add, double dt,
              double tick_s, double cores);

#endif
