/* The sampler thread: one Collector pass per interval, rows stored in two Tables. No Python.
 *
 * Ticks are aligned to the start (tick k at start + k * interval; a late tick skips ahead,
 * never drifts). The thread sleeps on a condition variable with a monotonic deadline, so
 * sampler_stop() wakes it at once; it then takes a last reading for the partial interval
 * (folded into the previous row when shorter than a quarter interval) and exits.
 * After fork() the child has no sampler thread: its samplers read as stopped, with their data.
 *
 * Bounds: the interval is between SAMPLER_MIN_INTERVAL and SAMPLER_MAX_INTERVAL seconds;
 * sampler_stop() returns within SAMPLER_STOP_TIMEOUT seconds whatever a reading does (a
 * wedged NVML call, a FIFO in a fake procfs): a thread still inside a reading then is left
 * to finish on its own and store nothing. The thread holds a reference to the sampler, so
 * the memory is freed by whoever lets go last (sampler_free() or the thread's end).
 * Readings are serialised: the thread and sampler_sample_now() callers in any number of
 * threads take one collector lock, so the collector is never used by two threads at once.
 * The descriptors and buffers of the collector are released as soon as the sampler stops. */
#ifndef RT_SAMPLER_H
#define RT_SAMPLER_H

#include <pthread.h>
#include <stddef.h>

#include "collector.h"
#include "engine.h"
#include "table.h"

#define SAMPLER_MIN_INTERVAL 0.0001  /* seconds */
#define SAMPLER_MAX_INTERVAL 86400.0 /* seconds: one day */
#define SAMPLER_STOP_TIMEOUT 2.0     /* seconds stop() waits for the thread */

/* Called by the thread once, right after its baseline reading, with the arg it was given: 0
 * when it took arg over, else arg is kept for sampler_take_after_baseline(). */
typedef int (*SamplerHook)(void *arg);

/* Called by the thread after each reading that stored or folded rows, with the rows stored;
 * returns the CPU seconds the hook's own thread has used (the tracker's, not the workload's:
 * counted with the sampler thread's). Its arg is freed with the free function when the sampler
 * is (see sampler_set_row_hook). */
typedef double (*SamplerRowHook)(void *arg, size_t rows);

enum SamplerState { SAMPLER_NEW, SAMPLER_RUNNING, SAMPLER_STOPPED };
/* SAMPLER_GPUS: the per-GPU side series, 2 columns a GPU (utilisation %, used memory MiB; GPU
 * i in columns 2i and 2i+1), one row per row of the system table (no columns without GPUs). */
enum SamplerTable { SAMPLER_PROCESS, SAMPLER_SYSTEM, SAMPLER_GPUS };

/* The sampler's locks and condition variables (engine.h). */
typedef EngineSync SamplerSync;

typedef struct Sampler {
    Collector collector;
    double interval;
    SamplerSync *sync;
    pthread_t thread;
    int thread_alive; /* a thread to join or detach (cleared by the stop() that does it) */
    int thread_done;  /* the thread has finished its work */
    int abandoned;    /* stop() timed out: the thread stores nothing more */
    int refs;         /* the owner and the thread: the last one frees */
    int stop_requested;
    int state;
    int tables_final; /* stopped and handed out as views: no row is stored or folded any more */
    Table process, system;
    Table gpus;                       /* the per-GPU series (SAMPLER_GPUS) */
    size_t gpu_count;                 /* GPUs in it (0: none), set at the first row */
    int gpu_series_tried;             /* the first row looked for GPUs */
    GpuInfo gpu_info[GPU_SERIES_MAX]; /* their names and memory, fixed once gpu_count is set */
    double start_wall, start_mono, stop_wall;
    double last_sample_mono, last_row_dt;
    OwnUsage own;
    double cpu_seconds; /* the tracker's threads' own CPU time (sampler, row hook's) */
    unsigned long samples_taken;
    double pss_seconds;                   /* the collector's counters, copied under the lock */
    unsigned long pss_reads, read_errors; /* after each reading (readers never race the thread) */
    unsigned long rows_dropped;           /* rows lost because memory ran out (retried) */
    unsigned long io_denied, pss_denied;  /* member reads refused (another user's processes) */
    double memory_hwm_kib;                /* the largest resident set of one member */
    unsigned long listings, probes;       /* ticks that listed procfs / probed new pids */
    unsigned long fd_sheds, kept_open;    /* kept descriptors given back; members kept open */
    /* where the tree's columns came from (cgroup_tree.h), copied after each reading */
    char tree_source[8], column_source[CG_COLUMNS][8];
    char tree_note[256];
    unsigned long cgroup_reads, cgroup_readings, walks;
    unsigned long tree_seen;    /* readings that found a live process of the tree */
    unsigned long tree_missed;  /* readings that did not, while the root lived */
    SamplerHook after_baseline; /* see sampler_set_after_baseline */
    void *after_baseline_arg;   /* not handed over yet (NULL: none, or handed over) */
    SamplerRowHook row_hook;    /* see sampler_set_row_hook */
    double row_hook_cpu_s;      /* what it returned last (the sampler thread's only) */
    void *row_hook_arg;
    void (*row_hook_free)(void *arg);
    struct Sampler *registry_next;
} Sampler;

/* A new, not yet started sampler: NULL with errno set when procfs cannot be opened. */
Sampler *sampler_new(const CollectorConfig *cfg, double interval);

/* Starts the thread: 0, EBUSY when it was started before, or a pthread error number. */
int sampler_start(Sampler *sampler);

/* Gives the thread a hook to call after its baseline reading (before sampler_start(); the
 * binding starts the cgroup reads of start() so, outside the caller's time). */
void sampler_set_after_baseline(Sampler *sampler, SamplerHook hook, void *arg);

/* Gives the thread a hook to call after each reading that stored rows (before
 * sampler_start(); the code profile's stack captures, csrc/stacks.h): free(arg) is called when
 * the sampler is freed, by whoever lets it go last. */
void sampler_set_row_hook(Sampler *sampler, SamplerRowHook hook, void (*free_arg)(void *arg),
                          void *arg);

/* The arg of the hook when the thread has not handed it over (stopped or never started
 * before its baseline, or the hook refused it), now the caller's; else NULL. */
void *sampler_take_after_baseline(Sampler *sampler);

/* Stops the thread and joins it, waiting at most SAMPLER_STOP_TIMEOUT seconds; releases the
 * collector's descriptors (idempotent). */
void sampler_stop(Sampler *sampler);

/* One reading in the calling thread (no background thread may run; callers in several threads
 * take turns): 1 when rows were appended
 * (copied to prow/srow if not NULL), 0 for the baseline, -1 when the sampler is running. */
int sampler_sample_now(Sampler *sampler, double *prow, double *srow);

/* Takes the tree's columns from its cgroup from the next reading on (waits for a reading
 * under way). */
void sampler_use_cgroup(Sampler *sampler, const CgroupTreeConfig *cfg);

/* Waits up to timeout seconds for at least n rows: 1 when there are, 0 otherwise. */
int sampler_wait_rows(Sampler *sampler, size_t n, double timeout);

/* The table under the sampler's lock: call sampler_unlock() when done with it. */
const Table *sampler_lock_table(Sampler *sampler, int which);
void sampler_unlock(Sampler *sampler);

/* The table of a stopped sampler, final from now on (a reading still under way in another
 * thread stores nothing): safe to read without the lock for the sampler's lifetime. NULL while
 * the sampler is new or running. */
const Table *sampler_final_table(Sampler *sampler, int which);

int sampler_state(Sampler *sampler);
size_t sampler_rows(Sampler *sampler);

/* Stops the sampler and frees it. */
void sampler_free(Sampler *sampler);

#endif
