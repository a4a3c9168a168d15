/* The rules of a row (see row_rules.h). */
#include "row_rules.h"

#include <string.h>

double
row_cpu_rate(double cpu_s, double dt, double tick_s, double cores)
{
    double usage;

    if (dt <= 0)
        return 0.0;
    usage = cpu_s / (dt > tick_s ? dt : tick_s);
    if (cores > 0 && usage > cores)
        usage = cores;
    return usage > 0 ? usage : 0.0;
}

static double
max2(double a, double b)
{
    return a > b ? a : b;
}

/* the summed CPU seconds of a row: its cpu_user and cpu_system columns */
static double
cpu_seconds(const ColumnSpec *columns, int n, const double *row)
{
    double seconds = 0.0;
    int i;

    for (i = 0; i < n; i++)
        if (strcmp(columns[i].role, "cpu_user") == 0 || strcmp(columns[i].role, "cpu_system") == 0)
            seconds += row[i];
    return seconds;
}

void
row_fold(const ColumnSpec *columns, int n, double *into, const double *add, double dt,
         double tick_s, double cores)
{
    int i;

    for (i = 0; i < n; i++) {
        switch (columns[i].fold) {
        case FOLD_SUM:
            into[i] += add[i];
            break;
        case FOLD_PEAK:
            into[i] = max2(into[i], add[i]);
            break;
        case FOLD_LATEST:
        case FOLD_RATE: /* recomputed below, from the sums */
            into[i] = add[i];
            break;
        }
    }
    if (dt <= 0)
        return;
    for (i = 0; i < n; i++)
        if (columns[i].fold == FOLD_RATE)
            into[i] = row_cpu_rate(cpu_seconds(columns, n, into), dt, tick_s, cores);
}
