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

/* The stack captures' own schedule (stacks.c): at least one capture every
 * CAPTURE_DENSE_PERIOD_S for the first CAPTURE_DENSE_SAMPLES, then one every elapsed /
 * CAPTURE_DENSE_SAMPLES seconds, the ticks' requests taking over where that is no denser than
 * the ticks: a 20 s job gets ~200 samples at any interval (its shares within a few points), a
 * long run ~CAPTURE_DENSE_SAMPLES * (1 + ln(interval / CAPTURE_DENSE_PERIOD_S)) more than its
 * ticks (~660 at 1 s), then none. */
#define CAPTURE_DENSE_PERIOD_S 0.1
#define CAPTURE_DENSE_SAMPLES 200.0
/* the ticks are denser than the own schedule when its period is this share of a tick or more */
#define CAPTURE_TICK_SHARE 0.9

/* The seconds from the capture made elapsed seconds into the run to the next one of the own
 * schedule, or 0 when the ticks (tick seconds apart; 0: none seen yet) are dense enough. */
double schedule_capture_period(double elapsed, double tick);

/* An own capture is left out while the process's other threads (the user's, the sampler's, the
 * tracker's) used less than this share of a core since the last capture: nothing ran to
 * attribute, and the few milliseconds they did use go to the next capture's stacks. An idle
 * process (a notebook kernel between cells, a job waiting on I/O) pays no dense start. */
#define CAPTURE_IDLE_SHARE 0.02

/* 1 when an own capture may be left out: others_cpu seconds of CPU used by the process's other
 * threads over the elapsed seconds since the last capture (CAPTURE_IDLE_SHARE). A NaN, a clock
 * gone back or no time elapsed: not left out. */
int schedule_capture_idle(double others_cpu, double elapsed);

/* Once the ticks have taken over, a long run's captures thin again: at least elapsed /
 * CAPTURE_LONG_SAMPLES seconds apart where that is more than a tick (at 1 s: every tick for the
 * first ~9 h, every 2nd tick from ~9 h, every 4th near 24 h: ~63,000 captures in a day rather
 * than 86,400), so a long run's capture CPU stays under 0.01 % of a core where a capture of a
 * busy main thread costs ~100 us (bench/bench_code.py). */
#define CAPTURE_LONG_SAMPLES 21600.0

/* 1 when a tick's request (ticks tick seconds apart; 0: not known yet), elapsed seconds into the
 * run and since seconds after the last capture, is served; 0 when the long run's thinning skips
 * it (its interval then goes to the next capture's stacks, as a busy GIL's does). */
int schedule_serves_tick(double elapsed, double since, double tick);

#endif
