/* The procfs sampler: the row engine (engine.h) over the Collector (collector.h). No Python.
 *
 * The engine owns the thread and its rules (ticks on the start's grid, a stop that wakes the
 * thread at once and takes a last reading for the partial interval, folded into the previous
 * row when short; stop() within ENGINE_STOP_TIMEOUT seconds whatever a reading does; readings
 * serialised with sample_now() callers in any number of threads; after fork() the child's
 * samplers read as stopped, with their data). This file is the reader: one Collector pass per
 * reading, and what only the procfs sampler has, as the engine's source hooks: its counters
 * published after each reading, the per-GPU side series, the after-baseline job, the stack
 * captures' row hook, the collector's last reading and release (its descriptors and buffers go
 * as soon as the sampler stops), the cgroup switch under the reader lock.
 *
 * Bounds: the interval is between SAMPLER_MIN_INTERVAL and SAMPLER_MAX_INTERVAL seconds. */
#ifndef RT_SAMPLER_H
#define RT_SAMPLER_H

#include <stddef.h>

#include "collector.h"
#include "engine.h"
#include "table.h"

#define SAMPLER_MIN_INTERVAL 0.0001  /* seconds */
#define SAMPLER_MAX_INTERVAL 86400.0 /* seconds: one day */

/* Called by the thread once, right after its baseline reading, with the arg it was given: 0
 * when it took arg over, else arg is kept for sampler_take_after_baseline(). */
typedef int (*SamplerHook)(void *arg);

/* Called by the thread after each reading that stored or folded rows, with the rows stored;
 * returns the CPU seconds the hook's own thread has used (the tracker's, not the workload's:
 * counted with the sampler thread's). Its arg is freed with the free function when the sampler
 * is (see sampler_set_row_hook). */
typedef double (*SamplerRowHook)(void *arg, size_t rows);

/* The tables (enum EngineTable): SAMPLER_GPUS is the engine's side series, 2 columns a GPU
 * (utilisation %, used memory MiB; GPU i in columns 2i and 2i+1), one row per row of the
 * system table (no columns without GPUs). */
enum SamplerTable { SAMPLER_PROCESS = ENGINE_PROCESS, SAMPLER_SYSTEM, SAMPLER_GPUS };

/* The reader, owned by its engine (freed with it, by whoever lets the engine go last). The
 * counters below are the collector's, copied under the engine's lock after each reading
 * (engine_lock()): the getters read them there. */
typedef struct Sampler {
    Engine *engine;
    Collector collector;
    OwnUsage own;
    int gpu_series_tried;             /* the first row looked for GPUs */
    GpuInfo gpu_info[GPU_SERIES_MAX]; /* their names and memory, fixed once the series opened */
    double pss_seconds;
    unsigned long pss_reads, read_errors;
    unsigned long io_denied, pss_denied;    /* member reads refused (another user's processes) */
    double memory_hwm_kib;                  /* the largest resident set of one member */
    unsigned long listings, probes;         /* ticks that listed procfs / probed new pids */
    unsigned long children_scans;           /* ticks that read the members' children lists */
    unsigned long wait_reads, wait_carried; /* schedstat files read; one-thread tasks unread */
    unsigned long list_failures;       /* times those could not be read (the listing took over) */
    int children_lists;                /* new members are found from the children lists */
    unsigned long fd_sheds, kept_open; /* kept descriptors given back; members kept open */
    unsigned long fds_replaced;        /* kept descriptors the application closed or replaced */
    /* energy sources (powercap.h, gpu.h): RAPL zones read, their failed and wrapped readings,
     * GPU readings whose energy was integrated from the power (no energy counter) */
    unsigned long powercap_zones, powercap_unreadable, powercap_wraps, gpu_energy_integrated;
    /* the GPU libraries read (once tried), the tree's GPU readings that are the GPUs' */
    int gpu_tried;
    GpuSources gpu_sources;
    unsigned long gpu_machine_wide;
    /* where the tree's columns came from (cgroup_tree.h) */
    char tree_source[8], column_source[CG_COLUMNS][8];
    char tree_note[256];
    unsigned long cgroup_reads, cgroup_readings, walks;
    unsigned long tree_seen;    /* readings that found a live process of the tree */
    unsigned long tree_missed;  /* readings that did not, while the root lived */
    SamplerHook after_baseline; /* see sampler_set_after_baseline */
    void *after_baseline_arg;   /* not handed over yet (NULL: none, or handed over) */
    SamplerRowHook row_hook;    /* see sampler_set_row_hook */
    void *row_hook_arg;
    void (*row_hook_free)(void *arg);
} Sampler;

/* A new, not yet started sampler: NULL with errno set when procfs cannot be opened. Run it
 * with the engine's calls on sampler->engine; sampler_free() lets it go. */
Sampler *sampler_new(const CollectorConfig *cfg, double interval);

/* Gives the thread a hook to call after its baseline reading (before the start; the binding
 * starts the cgroup reads of start() so, outside the caller's time). */
void sampler_set_after_baseline(Sampler *sampler, SamplerHook hook, void *arg);

/* Gives the thread a hook to call after each reading that stored rows (before the start; the
 * code profile's stack captures, csrc/stacks.h): free(arg) is called when the sampler is
 * freed, by whoever lets it go last. */
void sampler_set_row_hook(Sampler *sampler, SamplerRowHook hook, void (*free_arg)(void *arg),
                          void *arg);

/* The arg of the hook when the thread has not handed it over (stopped or never started
 * before its baseline, or the hook refused it), now the caller's; else NULL. */
void *sampler_take_after_baseline(Sampler *sampler);

/* Takes the tree's columns from its cgroup from the next reading on (waits for a reading
 * under way). */
void sampler_use_cgroup(Sampler *sampler, const CgroupTreeConfig *cfg);

/* Stops the sampler and frees it (the engine's thread does, if it outlives the stop). */
void sampler_free(Sampler *sampler);

#endif
