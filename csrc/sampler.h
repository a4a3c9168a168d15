/* The sampler thread: one Collector pass per interval, rows stored in two Tables. No Python.
 *
 * Ticks are aligned to the start (tick k at start + k * interval; a late tick skips ahead,
 * never drifts). The thread sleeps on a condition variable with a monotonic deadline, so
 * sampler_stop() wakes it at once; it then takes a last reading for the partial interval
 * (folded into the previous row when shorter than a quarter interval) and exits.
 * After fork() the child has no sampler thread: its samplers read as stopped, with their data. */
#ifndef RT_SAMPLER_H
#define RT_SAMPLER_H

#include <pthread.h>
#include <stddef.h>

#include "collector.h"
#include "table.h"

enum SamplerState { SAMPLER_NEW, SAMPLER_RUNNING, SAMPLER_STOPPED };
enum SamplerTable { SAMPLER_PROCESS, SAMPLER_SYSTEM };

typedef struct Sampler {
    Collector collector;
    double interval;
    pthread_mutex_t lock;
    pthread_cond_t wake;         /* stop requests */
    pthread_cond_t rows_changed; /* new rows, or the thread ended */
    pthread_t thread;
    int thread_alive;
    int stop_requested;
    int state;
    Table process, system;
    double start_wall, start_mono, stop_wall;
    double last_sample_mono, last_row_dt;
    OwnUsage own;
    double cpu_seconds; /* the sampling thread's own CPU time */
    unsigned long samples_taken;
    double pss_seconds;                   /* the collector's counters, copied under the lock */
    unsigned long pss_reads, read_errors; /* after each reading (readers never race the thread) */
    double memory_hwm_kib;                /* the largest resident set of one member */
    int append_failed;                    /* ran out of memory once: later rows are dropped */
    struct Sampler *registry_next;
} Sampler;

/* A new, not yet started sampler: NULL with errno set when procfs cannot be opened. */
Sampler *sampler_new(const CollectorConfig *cfg, double interval);

/* Starts the thread: 0, EBUSY when it was started before, or a pthread error number. */
int sampler_start(Sampler *sampler);

/* Stops and joins the thread (idempotent). */
void sampler_stop(Sampler *sampler);

/* One reading in the calling thread (no background thread may run): 1 when rows were appended
 * (copied to prow/srow if not NULL), 0 for the baseline, -1 when the sampler is running. */
int sampler_sample_now(Sampler *sampler, double *prow, double *srow);

/* Waits up to timeout seconds for at least n rows: 1 when there are, 0 otherwise. */
int sampler_wait_rows(Sampler *sampler, size_t n, double timeout);

/* The table under the sampler's lock: call sampler_unlock() when done with it. */
const Table *sampler_lock_table(Sampler *sampler, int which);
void sampler_unlock(Sampler *sampler);

int sampler_state(Sampler *sampler);
size_t sampler_rows(Sampler *sampler);

/* Stops the sampler and frees it. */
void sampler_free(Sampler *sampler);

#endif
