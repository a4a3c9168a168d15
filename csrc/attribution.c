/* The code profile's attribution rule over one process's stack samples (attribution.h). The
 * same rule as docs/code_profile.md states it, in the same order of operations as the Python
 * that stated it first, so that the figures are those of that rule. */
#include "attribution.h"

#include <stdlib.h>
#include <string.h>

static int
by_row(const void *a, const void *b)
{
    const AttrSample *x = a, *y = b;

    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    return x->order < y->order ? -1 : (x->order > y->order);
}

/* The first index in sorted times[0..n) whose value is above t. */
static size_t
upper_bound(const double *times, size_t n, double t)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (times[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* CPU-seconds the other sources attribute themselves in (t0, t1]. */
static double
elsewhere(const AttrColumns *c, double t0, double t1)
{
    if (c->n_other == 0)
        return 0.0;
    return c->other_cumulative[upper_bound(c->other_times, c->n_other, t1)] -
           c->other_cumulative[upper_bound(c->other_times, c->n_other, t0)];
}

/* The figures of the rows first..last into seg (all but the CPU shared and the first entry). */
static void
segment_rows(const AttrColumns *c, size_t first, size_t last, double *seg, double *cpu, double *gpu,
             double *memory_change)
{
    double before = first ? c->timestamp[first - 1] : c->start_time;
    double seconds = c->timestamp[last] - before, peak = c->memory[first];
    size_t r;

    *cpu = 0.0;
    *gpu = 0.0;
    for (r = first; r <= last; r++) {
        double prev = r ? c->timestamp[r - 1] : c->start_time, span = c->timestamp[r] - prev;
        *cpu += c->cpu[r];
        *gpu += (c->gpu ? c->gpu[r] : 0.0) * (span < 0.0 ? 0.0 : span);
        if (c->memory[r] > peak)
            peak = c->memory[r];
    }
    *memory_change = c->memory[last] - (first ? c->memory[first - 1] : c->memory[first]);
    seg[SEG_END_ROW] = (double)last;
    seg[SEG_TIMESTAMP] = c->timestamp[last];
    seg[SEG_SECONDS] = seconds < 0.0 ? 0.0 : seconds;
    seg[SEG_MEMORY_PEAK] = peak;
}

/* Whether s[i] is among the samples s[0..k) that take the remainder: the main thread's (all of
 * them: the captures' own schedule may take several in one segment), else the busiest (the
 * first on a tie). Sets *heirs to their number. */
static int
is_heir(const AttrSample *s, size_t k, size_t i, size_t *heirs)
{
    size_t j, best = 0, mains = 0;

    for (j = 0; j < k; j++)
        mains += s[j].is_main != 0;
    if (mains) {
        *heirs = mains;
        return s[i].is_main != 0;
    }
    for (j = 1; j < k; j++)
        if (s[j].cpu > s[best].cpu)
            best = j;
    *heirs = 1;
    return i == best;
}

/* Shares one segment among its samples s[0..k) into entries (ENTRY_FIELDS each): each thread its
 * own CPU, the remainder split evenly among the heirs (is_heir); memory and GPU by CPU share
 * (to the heirs when none ran). */
static void
share(const AttrSample *s, size_t k, double remainder, double memory_change, double gpu,
      double *seg, double *entries)
{
    size_t i, heirs = 1;
    double total = 0.0;

    for (i = 0; i < k; i++)
        total += s[i].cpu;
    total += remainder;
    seg[SEG_CPU] = total;
    for (i = 0; i < k; i++) {
        int heir = is_heir(s, k, i, &heirs);
        double each = heir ? remainder / (double)heirs : 0.0;
        double part = s[i].cpu + each;
        double weight = total > 0 ? part / total : (heir ? 1.0 / (double)heirs : 0.0);
        double *e = entries + i * ENTRY_FIELDS;
        e[ENTRY_STACK] = (double)s[i].stack;
        e[ENTRY_CPU] = part;
        e[ENTRY_MEMORY] = memory_change * weight;
        e[ENTRY_GPU] = gpu * weight;
        e[ENTRY_THREAD] = (double)s[i].thread;
    }
}

static int
sorted_by_row(const AttrSample *samples, size_t ns)
{
    size_t i;

    for (i = 1; i < ns; i++)
        if (samples[i].row < samples[i - 1].row)
            return 0;
    return 1;
}

int
attr_segments(const AttrSample *samples, size_t ns, const AttrColumns *cols, double *segments,
              size_t *n_segments, double *entries, size_t *n_entries)
{
    AttrSample *s = malloc((ns ? ns : 1) * sizeof(*s));
    size_t i = 0, j, nv = 0, first = 0, nseg = 0, nent = 0;
    double unexplained = 0.0; /* the tree's CPU no sampled thread used, not yet given */

    if (s == NULL)
        return -1;
    for (j = 0; j < ns; j++)
        if (samples[j].row < cols->n)
            s[nv++] = samples[j];
    if (!sorted_by_row(s, nv))
        qsort(s, nv, sizeof(*s), by_row);
    while (i < nv) {
        size_t row = s[i].row, k;
        double cpu, gpu, change, own = 0.0, remainder, *seg = segments + nseg * SEG_FIELDS;
        for (j = i; j < nv && s[j].row == row; j++)
            own += s[j].cpu;
        k = j - i;
        segment_rows(cols, first, row, seg, &cpu, &gpu, &change);
        if (!cols->agent) /* counted over the run: the tree's clock-tick rounding evens out */
            unexplained += cpu - own -
                           elsewhere(cols, first ? cols->timestamp[first - 1] : cols->start_time,
                                     cols->timestamp[row]);
        remainder = unexplained > 0.0 ? unexplained : 0.0;
        unexplained -= remainder;
        seg[SEG_FIRST] = (double)nent;
        share(s + i, k, remainder, change, gpu, seg, entries + nent * ENTRY_FIELDS);
        nent += k;
        nseg++;
        first = row + 1;
        i = j;
    }
    free(s);
    *n_segments = nseg;
    *n_entries = nent;
    return 0;
}

/* The entries of segment i: [*begin, *end). */
static void
entries_of(const double *segments, size_t n_segments, size_t n_entries, size_t i, size_t *begin,
           size_t *end)
{
    *begin = (size_t)segments[i * SEG_FIELDS + SEG_FIRST];
    *end = i + 1 < n_segments ? (size_t)segments[(i + 1) * SEG_FIELDS + SEG_FIRST] : n_entries;
}

/* When entry x is its thread's last in the segment's entries [begin, end): that thread's CPU
 * over them; else -1. */
static double
thread_last(const double *entries, size_t begin, size_t end, size_t x)
{
    double thread = entries[x * ENTRY_FIELDS + ENTRY_THREAD], cpu = 0.0;
    size_t e;

    for (e = x + 1; e < end; e++)
        if (entries[e * ENTRY_FIELDS + ENTRY_THREAD] == thread)
            return -1.0;
    for (e = begin; e <= x; e++)
        if (entries[e * ENTRY_FIELDS + ENTRY_THREAD] == thread)
            cpu += entries[e * ENTRY_FIELDS + ENTRY_CPU];
    return cpu;
}

void
attr_busiest(const double *segments, size_t n_segments, const double *entries, size_t n_entries,
             const double *preferred, size_t n_stacks, double *out)
{
    size_t i, e, begin, end;

    for (i = 0; i < n_segments; i++) {
        size_t best = (size_t)-1, any = (size_t)-1;
        double best_cpu = -1.0, any_cpu = -1.0;
        entries_of(segments, n_segments, n_entries, i, &begin, &end);
        for (e = begin; e < end; e++) {
            size_t stack = (size_t)entries[e * ENTRY_FIELDS + ENTRY_STACK];
            double cpu = thread_last(entries, begin, end, e);
            if (cpu < 0.0)
                continue;
            if (cpu > any_cpu)
                any = e, any_cpu = cpu;
            if (stack < n_stacks && preferred[stack] != 0 && cpu > best_cpu)
                best = e, best_cpu = cpu;
        }
        if (best == (size_t)-1)
            best = any;
        out[i] = best == (size_t)-1 ? -1.0 : entries[best * ENTRY_FIELDS + ENTRY_STACK];
    }
}

/* Adds one entry of a segment to the totals of its stack's keys. */
static void
add_entry(const double *seg, const double *e, size_t stamp, const AttrKeys *keys, double *totals,
          size_t *seen)
{
    size_t stack = (size_t)e[ENTRY_STACK], k, begin, end;

    if (stack >= keys->n_stacks)
        return;
    begin = (size_t)keys->key_first[stack];
    end = (size_t)keys->key_first[stack + 1];
    for (k = begin; k < end; k++) {
        size_t key = (size_t)keys->keys[k];
        double *t = totals + key * TOTAL_FIELDS;
        if (key >= keys->n_keys)
            continue;
        t[TOTAL_CPU] += e[ENTRY_CPU];
        t[TOTAL_GROWTH] += e[ENTRY_MEMORY];
        t[TOTAL_GPU] += e[ENTRY_GPU];
        t[TOTAL_SAMPLES] += 1.0;
        if (seg[SEG_MEMORY_PEAK] > t[TOTAL_PEAK])
            t[TOTAL_PEAK] = seg[SEG_MEMORY_PEAK];
        if (seen[key] != stamp) { /* once per segment, however many stacks hold it */
            t[TOTAL_ON_STACK] += seg[SEG_SECONDS];
            seen[key] = stamp;
        }
    }
    if (keys->self_key[stack] >= 0 && (size_t)keys->self_key[stack] < keys->n_keys)
        totals[(size_t)keys->self_key[stack] * TOTAL_FIELDS + TOTAL_SELF_CPU] += e[ENTRY_CPU];
}

void
attr_totals(const double *segments, size_t n_segments, const double *entries, size_t n_entries,
            const AttrKeys *keys, double start, double end, double *totals, size_t *seen)
{
    size_t i, e, begin, stop;

    memset(totals, 0, keys->n_keys * TOTAL_FIELDS * sizeof(*totals));
    memset(seen, 0, keys->n_keys * sizeof(*seen));
    for (i = 0; i < n_segments; i++) {
        const double *seg = segments + i * SEG_FIELDS;
        if (!(seg[SEG_TIMESTAMP] > start && seg[SEG_TIMESTAMP] <= end))
            continue;
        entries_of(segments, n_segments, n_entries, i, &begin, &stop);
        for (e = begin; e < stop; e++)
            add_entry(seg, entries + e * ENTRY_FIELDS, i + 1, keys, totals, seen);
    }
    for (i = 0; i < keys->n_keys; i++) /* the process it ran in: this one */
        totals[i * TOTAL_FIELDS + TOTAL_PROCESSES] = totals[i * TOTAL_FIELDS + TOTAL_SAMPLES] > 0;
}

/* The group of interval i's code, or -1. */
static long
group_at(const double *codes, size_t i, const double *group_of, size_t n_codes, size_t n_groups)
{
    double code = codes[i], group;

    if (!(code >= 0 && code < (double)n_codes))
        return -1;
    group = group_of[(size_t)code];
    return group >= 0 && group < (double)n_groups ? (long)group : -1;
}

void
attr_groups(const double *codes, const double *times, const double *memory, size_t n,
            const double *group_of, size_t n_codes, size_t n_groups, double interval, double start,
            double end, double *out)
{
    size_t i, before = (size_t)-1; /* the previous interval with a group */

    memset(out, 0, n_groups * GROUP_FIELDS * sizeof(*out));
    for (i = 0; i < n; i++) {
        long g = group_at(codes, i, group_of, n_codes, n_groups);
        double *x;
        if (g < 0)
            continue;
        if (times[i] > start && times[i] <= end) {
            x = out + (size_t)g * GROUP_FIELDS;
            if (x[GROUP_COUNT] == 0 || memory[i] > x[GROUP_PEAK]) {
                x[GROUP_PEAK] = memory[i];
                x[GROUP_PEAK_AT] = (double)i;
            }
            if (x[GROUP_COUNT] == 0)
                x[GROUP_FIRST] = (double)i;
            x[GROUP_COUNT] += 1;
            x[GROUP_SECONDS] += before == (size_t)-1 ? interval : times[i] - times[before];
            x[GROUP_GROWTH] += before == (size_t)-1 ? 0.0 : memory[i] - memory[before];
        }
        before = i;
    }
}
