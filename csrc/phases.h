/* Change points of a series (the phases of a run): binary segmentation on the mean. No Python
 * here: py_series.c binds it, resource_tracker/insights.py (phases) calls it. */
#ifndef RT_PHASES_H
#define RT_PHASES_H

#include <stddef.h>

/* Most points change_points() finds (the split queue is sized by it). */
#define PHASES_MAX_POINTS 64

/* Indices where the mean of values[0..n) steps by more than floor. Candidates by binary
 * segmentation: the best split of the whole series (least squared error, both parts at least
 * min_len long), then of each part, oldest part first, kept when the two means differ by more
 * than floor (up to PHASES_MAX_POINTS). Each candidate is then judged against its neighbours
 * only (so that the other steps do not inflate the deviation of a part): the weakest goes
 * while its two sides' means are apart by no more than floor and twice the deviation within
 * them, or while there are more than max_points. Each point left is moved to the best split
 * between its neighbours, then off a ramp: the samples between the two levels go to the
 * higher side. Writes the points to out (room for max_points) in increasing order and returns
 * how many. scratch: room for 2 * (n + 1) doubles (prefix sums). max_points above
 * PHASES_MAX_POINTS counts as PHASES_MAX_POINTS. */
size_t change_points(const double *values, size_t n, double floor, size_t min_len,
                     size_t max_points, double *scratch, size_t *out);

#endif
