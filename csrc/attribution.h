/* The code profile's attribution rule (docs/code_profile.md, "Attribution") over one process's
 * stack samples: each interval's CPU-seconds, memory change and GPU use shared among the
 * threads sampled at its end, then summed per code location. No Python here: py_attribution.c
 * binds it, resource_tracker/code_profile.py calls it once per record and view. */
#ifndef RT_ATTRIBUTION_H
#define RT_ATTRIBUTION_H

#include <stddef.h>

/* One stack sample: the row whose interval it ends, its stack, its place in the record (the
 * order of a row's samples), the thread's own CPU-seconds since its previous sample, and
 * whether the thread is the main thread. */
typedef struct AttrSample {
    size_t row, stack, order, thread;
    double cpu;
    int is_main;
} AttrSample;

/* The process's columns (n rows each; gpu may be NULL) and what the rule needs beside them. */
typedef struct AttrColumns {
    const double *timestamp, *cpu, *memory, *gpu;
    size_t n;
    double start_time; /* the end of the interval before row 0 */
    int agent;         /* an agent's process: its threads' own CPU only, no remainder */
    /* The CPU-seconds other sources attribute themselves: their segments' end times, sorted,
     * and the CPU summed up to each (n_other + 1 values, the first 0). */
    const double *other_times, *other_cumulative;
    size_t n_other;
} AttrColumns;

/* A segment: the rows after the previous sampled row up to a sampled row. */
enum { SEG_END_ROW, SEG_TIMESTAMP, SEG_SECONDS, SEG_CPU, SEG_MEMORY_PEAK, SEG_FIRST, SEG_FIELDS };
/* An entry: one sampled thread's share of its segment. */
enum { ENTRY_STACK, ENTRY_CPU, ENTRY_MEMORY, ENTRY_GPU, ENTRY_THREAD, ENTRY_FIELDS };
/* The figures of a code location (code_profile()'s columns). */
enum {
    TOTAL_CPU,
    TOTAL_SELF_CPU,
    TOTAL_ON_STACK,
    TOTAL_PEAK,
    TOTAL_GROWTH,
    TOTAL_GPU,
    TOTAL_SAMPLES,
    TOTAL_PROCESSES, /* 1 for a location of this process's stacks: summed over the processes */
    TOTAL_FIELDS
};

/* The attributed segments of samples[0..ns) (samples naming a row >= cols->n are left out):
 * SEG_FIELDS values a segment into segments (room for ns segments), ENTRY_FIELDS an entry into
 * entries (room for ns entries), in row order, the samples of a row in their order. Sets
 * *n_segments and *n_entries. 0, or -1 when memory ran out. */
int attr_segments(const AttrSample *samples, size_t ns, const AttrColumns *cols, double *segments,
                  size_t *n_segments, double *entries, size_t *n_entries);

/* The stack of each segment's running code: the last entry of its busiest thread (most CPU over
 * the segment's entries, the first on a tie; a thread sampled several times in a segment by the
 * captures' own schedule is seen at its last sample, the one nearest the segment's end) among
 * the threads whose last stack has preferred[stack] != 0, else among all: n_segments values into
 * out. */
void attr_busiest(const double *segments, size_t n_segments, const double *entries,
                  size_t n_entries, const double *preferred, size_t n_stacks, double *out);

/* The code locations of the stacks: key_first[stack] .. key_first[stack + 1] index the keys of
 * a stack in keys (each once), self_key[stack] is its top location (< 0: none). */
typedef struct AttrKeys {
    const double *key_first, *keys, *self_key;
    size_t n_stacks, n_keys;
} AttrKeys;

/* Sums the segments ending in (start, end] into totals (TOTAL_FIELDS values a key, zeroed
 * first). seen: scratch of n_keys values. */
void attr_totals(const double *segments, size_t n_segments, const double *entries, size_t n_entries,
                 const AttrKeys *keys, double start, double end, double *totals, size_t *seen);

/* The figures of a group of intervals (code_view's running code: a function, its file). */
enum {
    GROUP_COUNT,
    GROUP_FIRST,
    GROUP_SECONDS,
    GROUP_PEAK,
    GROUP_PEAK_AT,
    GROUP_GROWTH,
    GROUP_FIELDS
};

/* Sums the intervals i in [0, n) whose code codes[i] has a group (0 <= group_of[code] <
 * n_groups) by group, over those ending in (start, end]: GROUP_FIELDS values a group into out
 * (zeroed first): how many, the first (its index), their wall seconds (each from the previous
 * interval that has a group; interval for the first), the largest memory and the first
 * interval with it, and the change of memory since each one's previous interval with a group
 * (0 for the first). */
void attr_groups(const double *codes, const double *times, const double *memory, size_t n,
                 const double *group_of, size_t n_codes, size_t n_groups, double interval,
                 double start, double end, double *out);

#endif
