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

double
schedule_capture_period(double elapsed, double tick)
{
    double period = elapsed / CAPTURE_DENSE_SAMPLES;

    if (!(period > CAPTURE_DENSE_PERIOD_S)) /* a NaN or a clock gone back: dense */
        period = CAPTURE_DENSE_PERIOD_S;
    if (tick > 0.0 && period >= tick * CAPTURE_TICK_SHARE)
        return 0.0;
    return period;
}

int
schedule_capture_idle(double others_cpu, double elapsed)
{
    /* a NaN compares false; below zero is the two clocks' reads a microsecond apart */
    return elapsed > 0.0 && others_cpu < CAPTURE_IDLE_SHARE * elapsed;
}

int
schedule_serves_tick(double elapsed, double since, double tick)
{
    double gap = elapsed / CAPTURE_LONG_SAMPLES;

    if (!(tick > 0.0) || !(gap > tick)) /* every tick (no tick known, a NaN, a clock gone back) */
        return 1;
    return since + tick * 0.5 >= gap;
}
