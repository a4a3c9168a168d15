/* The sampling schedule (see schedule.h). */
#include "schedule.h"

#include <math.h>

double
schedule_next_tick(double start, double previous, double now, double interval)
{
    double deadline = previous + interval;

    if (deadline <= now)
        deadline = start + (floor((now - start) / interval) + 1) * interval;
    return deadline;
}

int
schedule_folds(double dt, double interval, int has_rows, int may_fold)
{
    return may_fold && has_rows && (dt < FOLD_SHARE * interval || dt < FOLD_MIN_SECONDS);
}

int
schedule_takes_final(double since_last, int has_rows)
{
    return since_last >= FINAL_MIN_SECONDS || !has_rows;
}
