/* The sampling schedule's rules for the last, partial interval (when stop() comes between two
 * ticks). Shared by the C sampler and, through _core, by the Python samplers (sampling.py).
 * No Python here; no Linux either (part of the portable core). */
#ifndef RT_SCHEDULE_H
#define RT_SCHEDULE_H

/* a final reading this share of an interval long or shorter is folded into the previous row */
#define FOLD_SHARE 0.25
/* so is one this short (seconds) whatever the interval: too short to measure CPU time in clock
 * ticks (10 ms) */
#define FOLD_MIN_SECONDS 0.1
/* a final reading closer than this (seconds) to the last one is not taken at all */
#define FINAL_MIN_SECONDS 0.001

#endif
