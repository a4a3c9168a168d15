/* The sampling schedule: the grid of ticks and the rules for the last, partial interval (when
 * stop() comes between two ticks). Written once (schedule.c) for the C sampler and, through
 * _core, for the Python samplers (sampling.py, psutil_sampler.py, the CSV trackers).
 * No Python here; no Linux either (part of the portable core). */
#ifndef RT_SCHEDULE_H
#define RT_SCHEDULE_H

/* a final reading this share of an interval long or shorter is folded into the previous row */
#define FOLD_SHARE 0.25
/* so is one this short (seconds) whatever the interval: too short to measure CPU time in clock
 * ticks (10 ms) */
#define FOLD_MIN_SECONDS 0.1
/* a final reading closer than this (seconds) to the last one is not taken at all (unless the
 * reader has a last reading to make: engine.c's finish_thread) */
#define FINAL_MIN_SECONDS 0.001

/* The next tick of the grid start + k * interval (monotonic seconds): the one after previous;
 * when that one has passed already (a reading took longer than an interval), the first after
 * now: a late sampler skips ahead on the grid and never bunches readings to catch up. */
double schedule_next_tick(double start, double previous, double now, double interval);

/* 1 when a reading dt seconds after the last row folds into that row (has_rows: there is one;
 * may_fold: it is the final reading), else 0. */
int schedule_folds(double dt, double interval, int has_rows, int may_fold);

/* 1 when the final reading is taken, since_last seconds after the last one (has_rows: rows
 * were stored; a run stopped right after its baseline still gets its one row). */
int schedule_takes_final(double since_last, int has_rows);

#endif
