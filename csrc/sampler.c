#include "sampler.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "columns.h"
#include "schedule.h"

static void publish_tree_source(Sampler *sampler);

#define SAMPLER_STACK_BYTES (256 * 1024)

/* Every live sampler, for the fork handlers. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static Sampler *registry_head = NULL;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* Before fork(): hold every sampler's lock so that no table is half-written in the child. */
static void
atfork_prepare(void)
{
    Sampler *s;

    pthread_mutex_lock(&registry_lock);
    for (s = registry_head; s; s = s->registry_next)
        pthread_mutex_lock(&s->sync->lock);
}

static void
atfork_parent(void)
{
    Sampler *s;

    for (s = registry_head; s; s = s->registry_next)
        pthread_mutex_unlock(&s->sync->lock);
    pthread_mutex_unlock(&registry_lock);
}

/* In the child: no sampler thread exists; every sampler reads as stopped, with fresh locks.
 *
 * The old locks and condition variables are leaked on purpose, as memray does after fork
 * (tracking_api.cpp, Tracker::childFork): the parent's sampler thread may have held the
 * collector lock, or waited on a condition variable, at the moment of fork(). That thread does
 * not exist in the child, so the lock can never be unlocked by its owner, and POSIX leaves
 * re-initialising (or destroying) a locked mutex or a waited-on condition variable undefined.
 * A new set is made instead; the old one (a few hundred bytes per sampler) is never touched
 * again. When the new set cannot be allocated the sampler keeps the old one: the lock taken
 * in atfork_prepare is released by this thread, which owns it. */
static void
atfork_child(void)
{
    Sampler *s;

    for (s = registry_head; s; s = s->registry_next) {
        SamplerSync *fresh = engine_sync_new();
        if (fresh)
            s->sync = fresh; /* the old set is leaked: see above */
        else
            pthread_mutex_unlock(&s->sync->lock);
        s->thread_alive = 0;
        s->thread_done = 1;
        if (s->refs > 1)
            s->refs = 1; /* the parent's thread (and its reference) does not exist here */
        if (s->state == SAMPLER_RUNNING)
            s->state = SAMPLER_STOPPED;
    }
    pthread_mutex_unlock(&registry_lock);
}

static void
install_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static void
registry_add(Sampler *sampler)
{
    pthread_mutex_lock(&registry_lock);
    sampler->registry_next = registry_head;
    registry_head = sampler;
    pthread_mutex_unlock(&registry_lock);
}

static void
registry_remove(Sampler *sampler)
{
    Sampler **link;

    pthread_mutex_lock(&registry_lock);
    for (link = &registry_head; *link; link = &(*link)->registry_next)
        if (*link == sampler) {
            *link = sampler->registry_next;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
}

/* a new sampler, or NULL with errno */
Sampler *
sampler_new(const CollectorConfig *cfg, double interval)
{
    Sampler *sampler;

    pthread_once(&atfork_once, install_atfork);
    sampler = calloc(1, sizeof(*sampler));
    if (sampler == NULL)
        return NULL;
    if (collector_init(&sampler->collector, cfg) != 0) {
        int saved = errno;
        free(sampler);
        errno = saved;
        return NULL;
    }
    sampler->interval = interval;
    sampler->refs = 1;
    table_init(&sampler->process, PC_COUNT);
    table_init(&sampler->system, SC_COUNT);
    sampler->sync = engine_sync_new();
    if (sampler->sync == NULL) {
        collector_free(&sampler->collector);
        free(sampler);
        errno = ENOMEM;
        return NULL;
    }
    publish_tree_source(sampler);
    registry_add(sampler);
    return sampler;
}

/* Refreshes the tracker's own usage (thread CPU, memory of the samples) before a reading. */
static void
update_own_usage(Sampler *sampler, int in_sampler_thread)
{
    struct rusage ru;

    if (in_sampler_thread && getrusage(RUSAGE_THREAD, &ru) == 0) {
        sampler->own.cpu.user_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
                                  sampler->row_hook_cpu_s; /* the stack captures' thread */
        sampler->own.cpu.sys_s = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    }
    sampler->own.memory_kib =
        (double)(table_bytes_used(&sampler->process) + table_bytes_used(&sampler->system) +
                 table_bytes_used(&sampler->gpus) + collector_bytes(&sampler->collector)) /
        1024.0;
}

/* At the first row: the GPUs of the per-GPU series (the first GPU_SERIES_MAX), their names
 * and memory. The caller holds the collector lock; the series needs the system table. */
static void
open_gpu_series(Sampler *sampler)
{
    size_t n = gpu_monitor_count(sampler->collector.gpu);

    sampler->gpu_series_tried = 1;
    if (n == 0 || !sampler->collector.cfg.track_system)
        return;
    n = n < GPU_SERIES_MAX ? n : GPU_SERIES_MAX;
    gpu_monitor_inventory(sampler->collector.gpu, sampler->gpu_info, n);
    pthread_mutex_lock(&sampler->sync->lock);
    if (!sampler->tables_final && !sampler->abandoned && sampler->system.nrows == 0 &&
        table_init(&sampler->gpus, 2 * n) == 0)
        sampler->gpu_count = n;
    pthread_mutex_unlock(&sampler->sync->lock);
}

/* The per-GPU row of the last reading: utilisation % and used MiB of each GPU in turn. */
static void
gpu_row(const Sampler *sampler, double *row)
{
    const GpuReading *g = &sampler->collector.gpu_last;
    size_t i;

    for (i = 0; i < sampler->gpu_count; i++) {
        row[2 * i] = g->device_util[i];
        row[2 * i + 1] = g->device_vram_mib[i];
    }
}

/* Appends a row to each tracked table, all or none: 0, or -1 when out of memory. */
static int
append_rows(Sampler *sampler, const double *prow, const double *srow)
{
    const CollectorConfig *cfg = &sampler->collector.cfg;
    double grow[2 * GPU_SERIES_MAX];

    if (cfg->track_processes && table_append(&sampler->process, prow) != 0)
        return -1;
    if (cfg->track_system && table_append(&sampler->system, srow) != 0) {
        if (cfg->track_processes)
            sampler->process.nrows--; /* take the process row back: the tables stay aligned */
        return -1;
    }
    gpu_row(sampler, grow);
    if (sampler->gpu_count && table_append(&sampler->gpus, grow) != 0) {
        sampler->system.nrows--; /* the series stays aligned with the system table */
        if (cfg->track_processes)
            sampler->process.nrows--;
        return -1;
    }
    return 0;
}

/* Folds the per-GPU row of a short reading (part_dt s) into the last one (prev_dt s): their
 * mean over the time each covers. */
static void
fold_gpu_row(Sampler *sampler, double prev_dt, double part_dt)
{
    double grow[2 * GPU_SERIES_MAX], total = prev_dt + part_dt;
    size_t i;

    if (sampler->gpu_count == 0 || sampler->gpus.nrows == 0 || !(total > 0))
        return;
    gpu_row(sampler, grow);
    for (i = 0; i < sampler->gpus.ncols; i++) {
        double *last = table_at(&sampler->gpus, sampler->gpus.nrows - 1, i);
        *last = (*last * prev_dt + grow[i] * part_dt) / total;
    }
}

/* Appends one pair of rows under the lock (or folds them into the last rows). */
static void
store_rows(Sampler *sampler, double *prow, double *srow, double dt, int may_fold)
{
    int fold = schedule_folds(dt, sampler->interval,
                              sampler->process.nrows || sampler->system.nrows, may_fold);

    pthread_mutex_lock(&sampler->sync->lock);
    if (sampler->abandoned || sampler->tables_final) {
        pthread_mutex_unlock(&sampler->sync->lock); /* stop() has returned: the data is final */
        return;
    }
    if (fold) {
        double *pp = NULL, *ps = NULL;
        size_t i;
        double last_p[PC_COUNT], last_s[SC_COUNT];
        if (sampler->process.nrows) {
            for (i = 0; i < PC_COUNT; i++)
                last_p[i] = *table_at(&sampler->process, sampler->process.nrows - 1, i);
            pp = last_p;
        }
        if (sampler->system.nrows) {
            for (i = 0; i < SC_COUNT; i++)
                last_s[i] = *table_at(&sampler->system, sampler->system.nrows - 1, i);
            ps = last_s;
        }
        collector_fold_rows(&sampler->collector, pp, ps, prow, srow, sampler->last_row_dt, dt);
        fold_gpu_row(sampler, sampler->last_row_dt, dt);
        for (i = 0; pp && i < PC_COUNT; i++)
            *table_at(&sampler->process, sampler->process.nrows - 1, i) = last_p[i];
        for (i = 0; ps && i < SC_COUNT; i++)
            *table_at(&sampler->system, sampler->system.nrows - 1, i) = last_s[i];
        sampler->last_row_dt += dt;
    } else if (append_rows(sampler, prow, srow) == 0) {
        sampler->last_row_dt = dt;
    } else {
        sampler->rows_dropped++; /* out of memory now: the next row tries again */
    }
    pthread_cond_broadcast(&sampler->sync->rows_changed);
    pthread_mutex_unlock(&sampler->sync->lock);
}

/* Copies where the tree's columns come from (the caller holds the lock). */
static void
publish_tree_source(Sampler *sampler)
{
    const CgroupTree *cg = &sampler->collector.cgroup;
    int i;

    snprintf(sampler->tree_source, sizeof(sampler->tree_source), "%s", cgroup_tree_source(cg));
    for (i = 0; i < CG_COLUMNS; i++)
        snprintf(sampler->column_source[i], sizeof(sampler->column_source[i]), "%s",
                 cgroup_tree_column_source(cg, i));
    snprintf(sampler->tree_note, sizeof(sampler->tree_note), "%s", cg->note);
    sampler->cgroup_reads = cg->reads;
    sampler->cgroup_readings = cg->ticks;
    sampler->walks = sampler->collector.walks;
}

void
sampler_use_cgroup(Sampler *sampler, const CgroupTreeConfig *cfg)
{
    pthread_mutex_lock(&sampler->sync->collect_lock);
    collector_use_cgroup(&sampler->collector, cfg);
    pthread_mutex_unlock(&sampler->sync->collect_lock);
}

/* One reading at the current time; stores rows unless it is the baseline. */
static int
take_sample(Sampler *sampler, int in_thread, int may_fold, double *prow, double *srow)
{
    double mono = engine_clock(CLOCK_MONOTONIC), wall = engine_clock(CLOCK_REALTIME);
    double dt = mono - sampler->last_sample_mono;
    int filled;

    update_own_usage(sampler, in_thread);
    filled = collector_sample(&sampler->collector, mono, wall, &sampler->own, prow, srow);
    sampler->last_sample_mono = mono;
    /* the counters the getters read, published under the lock (a data race otherwise: helgrind) */
    pthread_mutex_lock(&sampler->sync->lock);
    if (in_thread)
        sampler->cpu_seconds = sampler->own.cpu.user_s + sampler->own.cpu.sys_s;
    sampler->samples_taken++;
    sampler->pss_seconds = sampler->collector.tree.pss_seconds;
    sampler->pss_reads = sampler->collector.tree.pss_reads;
    sampler->memory_hwm_kib = (double)sampler->collector.tree.hwm_kib;
    sampler->read_errors =
        sampler->collector.tree.read_errors + sampler->collector.system.read_errors;
    sampler->io_denied = sampler->collector.tree.io_denied;
    sampler->pss_denied = sampler->collector.tree.pss_denied;
    sampler->listings = sampler->collector.tree.listings;
    sampler->probes = sampler->collector.tree.probes;
    sampler->fd_sheds = sampler->collector.tree.fd_sheds;
    sampler->kept_open = (unsigned long)sampler->collector.tree.kept_open;
    sampler->tree_seen = sampler->collector.tree_seen;
    sampler->tree_missed = sampler->collector.tree_missed;
    publish_tree_source(sampler);
    pthread_mutex_unlock(&sampler->sync->lock);
    if (filled && !sampler->gpu_series_tried)
        open_gpu_series(sampler);
    if (filled)
        store_rows(sampler, prow, srow, dt, may_fold);
    return filled;
}

/* One reading by the thread, under the collector lock; then the row hook, if any. */
static void
thread_sample(Sampler *sampler, int may_fold, double *prow, double *srow)
{
    int filled;

    pthread_mutex_lock(&sampler->sync->collect_lock);
    filled = take_sample(sampler, 1, may_fold, prow, srow);
    pthread_mutex_unlock(&sampler->sync->collect_lock);
    if (filled && sampler->row_hook)
        sampler->row_hook_cpu_s = sampler->row_hook(sampler->row_hook_arg, sampler_rows(sampler));
}

/* Frees everything the sampler holds (no thread uses it any more). */
static void
sampler_destroy(Sampler *sampler)
{
    if (sampler->row_hook_free)
        sampler->row_hook_free(sampler->row_hook_arg);
    collector_free(&sampler->collector);
    table_free(&sampler->process);
    table_free(&sampler->system);
    table_free(&sampler->gpus);
    engine_sync_free(sampler->sync);
    free(sampler);
}

/* Drops one reference (the caller does not hold the lock); frees on the last one. */
static void
sampler_release(Sampler *sampler)
{
    int last;

    pthread_mutex_lock(&sampler->sync->lock);
    last = --sampler->refs == 0;
    pthread_mutex_unlock(&sampler->sync->lock);
    if (last)
        sampler_destroy(sampler);
}

/* The thread's end: the last reading, the collector released, the state published. */
static void
finish_thread(Sampler *sampler, double *prow, double *srow)
{
    int abandoned, no_rows;

    pthread_mutex_lock(&sampler->sync->lock);
    abandoned = sampler->abandoned;
    no_rows = sampler->process.nrows == 0 && sampler->system.nrows == 0;
    pthread_mutex_unlock(&sampler->sync->lock);
    /* a run stopped right after its baseline still gets its one row (its CPU usage is
     * measured over at least one clock tick: no division by a tiny interval) */
    if (!abandoned &&
        schedule_takes_final(engine_clock(CLOCK_MONOTONIC) - sampler->last_sample_mono, !no_rows)) {
        collector_last_reading(&sampler->collector);
        thread_sample(sampler, 1, prow, srow);
    }
    pthread_mutex_lock(&sampler->sync->collect_lock);
    collector_release(&sampler->collector);
    pthread_mutex_unlock(&sampler->sync->collect_lock);
    pthread_mutex_lock(&sampler->sync->lock);
    if (!sampler->abandoned) {
        sampler->stop_wall = engine_clock(CLOCK_REALTIME);
        sampler->state = SAMPLER_STOPPED;
    }
    sampler->thread_done = 1;
    pthread_cond_broadcast(&sampler->sync->rows_changed);
    pthread_mutex_unlock(&sampler->sync->lock);
}

void
sampler_set_after_baseline(Sampler *sampler, SamplerHook hook, void *arg)
{
    pthread_mutex_lock(&sampler->sync->lock);
    sampler->after_baseline = hook;
    sampler->after_baseline_arg = arg;
    pthread_mutex_unlock(&sampler->sync->lock);
}

void
sampler_set_row_hook(Sampler *sampler, SamplerRowHook hook, void (*free_arg)(void *arg), void *arg)
{
    pthread_mutex_lock(&sampler->sync->lock);
    sampler->row_hook = hook;
    sampler->row_hook_arg = arg;
    sampler->row_hook_free = free_arg;
    pthread_mutex_unlock(&sampler->sync->lock);
}

void *
sampler_take_after_baseline(Sampler *sampler)
{
    void *arg;

    pthread_mutex_lock(&sampler->sync->lock);
    arg = sampler->after_baseline_arg;
    sampler->after_baseline_arg = NULL;
    pthread_mutex_unlock(&sampler->sync->lock);
    return arg;
}

/* Hands the hook its arg (once); an arg the hook refused is kept for its owner. */
static void
run_after_baseline(Sampler *sampler)
{
    void *arg = sampler_take_after_baseline(sampler);

    if (arg != NULL && sampler->after_baseline(arg) != 0) {
        pthread_mutex_lock(&sampler->sync->lock);
        sampler->after_baseline_arg = arg;
        pthread_mutex_unlock(&sampler->sync->lock);
    }
}

static void *
sampler_main(void *arg)
{
    Sampler *sampler = arg;
    double prow[PC_COUNT], srow[SC_COUNT];
    double deadline = sampler->start_mono;

    thread_sample(sampler, 0, prow, srow); /* baseline */
    run_after_baseline(sampler);
    pthread_mutex_lock(&sampler->sync->lock);
    for (;;) {
        deadline = schedule_next_tick(sampler->start_mono, deadline, engine_clock(CLOCK_MONOTONIC),
                                      sampler->interval);
        while (!sampler->stop_requested && engine_clock(CLOCK_MONOTONIC) < deadline)
            engine_wait_until(&sampler->sync->wake, &sampler->sync->lock, deadline);
        if (sampler->stop_requested)
            break;
        pthread_mutex_unlock(&sampler->sync->lock);
        thread_sample(sampler, 0, prow, srow);
        pthread_mutex_lock(&sampler->sync->lock);
    }
    pthread_mutex_unlock(&sampler->sync->lock);
    finish_thread(sampler, prow, srow);
    sampler_release(sampler);
    return NULL;
}

/* 0, EBUSY, or a pthread error */
int
sampler_start(Sampler *sampler)
{
    pthread_attr_t attr;
    sigset_t all, saved;
    int rc;

    pthread_mutex_lock(&sampler->sync->lock);
    if (sampler->state != SAMPLER_NEW) {
        pthread_mutex_unlock(&sampler->sync->lock);
        return EBUSY;
    }
    sampler->start_wall = engine_clock(CLOCK_REALTIME);
    sampler->start_mono = engine_clock(CLOCK_MONOTONIC);
    sampler->state = SAMPLER_RUNNING;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, SAMPLER_STACK_BYTES);
    sigfillset(&all); /* signals are for the application's threads, not this one */
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    rc = pthread_create(&sampler->thread, &attr, sampler_main, sampler);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        sampler->state = SAMPLER_NEW;
    } else {
        sampler->thread_alive = 1;
        sampler->refs++; /* the thread's */
    }
    pthread_mutex_unlock(&sampler->sync->lock);
    return rc;
}

/* Releases the collector when no reading is under way (else the reader does, see below). */
static void
release_if_idle(Sampler *sampler)
{
    if (pthread_mutex_trylock(&sampler->sync->collect_lock) == 0) {
        collector_release(&sampler->collector);
        pthread_mutex_unlock(&sampler->sync->collect_lock);
    }
}

/* Waits (the lock held) until the thread has ended or the stop bound has passed: 1 when it
 * ended; else the sampler is marked stopped and the thread abandoned. */
static int
wait_thread_end(Sampler *sampler)
{
    double deadline = engine_clock(CLOCK_MONOTONIC) + SAMPLER_STOP_TIMEOUT;

    while (!sampler->thread_done && sampler->state == SAMPLER_RUNNING &&
           engine_clock(CLOCK_MONOTONIC) < deadline)
        engine_wait_until(&sampler->sync->rows_changed, &sampler->sync->lock, deadline);
    if (sampler->state == SAMPLER_RUNNING) {
        sampler->abandoned = 1; /* a reading hangs: the thread ends on its own, storing nothing */
        sampler->state = SAMPLER_STOPPED;
        sampler->stop_wall = engine_clock(CLOCK_REALTIME);
        pthread_cond_broadcast(&sampler->sync->rows_changed);
    }
    return sampler->thread_done;
}

void
sampler_stop(Sampler *sampler)
{
    int join, ended;

    pthread_mutex_lock(&sampler->sync->lock);
    sampler->stop_requested = 1;
    pthread_cond_broadcast(&sampler->sync->wake);
    join = sampler->thread_alive;
    sampler->thread_alive = 0;
    if (sampler->state == SAMPLER_NEW) {
        sampler->state = SAMPLER_STOPPED;
        sampler->stop_wall = engine_clock(CLOCK_REALTIME);
    }
    /* a concurrent stop() handles the thread: this one waits as long, no longer */
    ended = wait_thread_end(sampler);
    pthread_mutex_unlock(&sampler->sync->lock);
    if (join && ended)
        pthread_join(sampler->thread, NULL);
    else if (join)
        pthread_detach(sampler->thread); /* it holds a reference: it frees what it uses */
    if (!join && ended != 1)
        release_if_idle(sampler); /* sample_now() samplers: no thread to release it */
}

/* 1 rows appended, 0 baseline, -1 running */
int
sampler_sample_now(Sampler *sampler, double *prow, double *srow)
{
    double p[PC_COUNT], s[SC_COUNT];
    int filled, stopped;

    pthread_mutex_lock(&sampler->sync->collect_lock); /* callers in several threads take turns */
    pthread_mutex_lock(&sampler->sync->lock);
    if (sampler->thread_alive || sampler->state != SAMPLER_NEW) {
        pthread_mutex_unlock(&sampler->sync->lock);
        pthread_mutex_unlock(&sampler->sync->collect_lock);
        return -1;
    }
    if (sampler->start_mono == 0) {
        sampler->start_wall = engine_clock(CLOCK_REALTIME);
        sampler->start_mono = engine_clock(CLOCK_MONOTONIC);
    }
    pthread_mutex_unlock(&sampler->sync->lock);
    filled = take_sample(sampler, 0, 0, p, s);
    pthread_mutex_lock(&sampler->sync->lock);
    stopped = sampler->state == SAMPLER_STOPPED;
    pthread_mutex_unlock(&sampler->sync->lock);
    if (stopped) /* stop() came during this reading: release what it could not */
        collector_release(&sampler->collector);
    pthread_mutex_unlock(&sampler->sync->collect_lock);
    if (filled && prow)
        memcpy(prow, p, sizeof(p));
    if (filled && srow)
        memcpy(srow, s, sizeof(s));
    return filled;
}

/* rows stored (the longer table); the caller holds the lock */
static size_t
rows_locked(const Sampler *sampler)
{
    return sampler->process.nrows > sampler->system.nrows ? sampler->process.nrows
                                                          : sampler->system.nrows;
}

/* 1 when n rows are there */
int
sampler_wait_rows(Sampler *sampler, size_t n, double timeout)
{
    double deadline = engine_clock(CLOCK_MONOTONIC) + (timeout > 0 ? timeout : 0);
    int reached;

    pthread_mutex_lock(&sampler->sync->lock);
    for (;;) {
        reached = rows_locked(sampler) >= n;
        if (reached || sampler->state != SAMPLER_RUNNING ||
            engine_clock(CLOCK_MONOTONIC) >= deadline)
            break;
        engine_wait_until(&sampler->sync->rows_changed, &sampler->sync->lock, deadline);
    }
    pthread_mutex_unlock(&sampler->sync->lock);
    return reached;
}

/* the table named by which (enum SamplerTable) */
static const Table *
table_of(const Sampler *sampler, int which)
{
    if (which == SAMPLER_GPUS)
        return &sampler->gpus;
    return which == SAMPLER_PROCESS ? &sampler->process : &sampler->system;
}

const Table *
sampler_lock_table(Sampler *sampler, int which)
{
    pthread_mutex_lock(&sampler->sync->lock);
    return table_of(sampler, which);
}

void
sampler_unlock(Sampler *sampler)
{
    pthread_mutex_unlock(&sampler->sync->lock);
}

const Table *
sampler_final_table(Sampler *sampler, int which)
{
    const Table *table = NULL;

    pthread_mutex_lock(&sampler->sync->lock);
    if (sampler->state == SAMPLER_STOPPED) {
        sampler->tables_final = 1;
        table = table_of(sampler, which);
    }
    pthread_mutex_unlock(&sampler->sync->lock);
    return table;
}

int
sampler_state(Sampler *sampler)
{
    int state;

    pthread_mutex_lock(&sampler->sync->lock);
    state = sampler->state;
    pthread_mutex_unlock(&sampler->sync->lock);
    return state;
}

size_t
sampler_rows(Sampler *sampler)
{
    size_t rows;

    pthread_mutex_lock(&sampler->sync->lock);
    rows = rows_locked(sampler);
    pthread_mutex_unlock(&sampler->sync->lock);
    return rows;
}

void
sampler_free(Sampler *sampler)
{
    if (sampler == NULL)
        return;
    sampler_stop(sampler);
    registry_remove(sampler);
    sampler_release(sampler); /* an abandoned thread may still hold the other reference */
}
