#include "sampler.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "columns.h"

#define SAMPLER_STACK_BYTES (256 * 1024)
#define FOLD_SHARE 0.25
#define FINAL_MIN_SECONDS 0.001

/* Every live sampler, for the fork handlers. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static Sampler *registry_head = NULL;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static double
clock_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void
init_sync(Sampler *sampler)
{
    pthread_condattr_t attr;

    pthread_mutex_init(&sampler->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&sampler->wake, &attr);
    pthread_cond_init(&sampler->rows_changed, &attr);
    pthread_condattr_destroy(&attr);
}

/* Before fork(): hold every sampler's lock so that no table is half-written in the child. */
static void
atfork_prepare(void)
{
    Sampler *s;

    pthread_mutex_lock(&registry_lock);
    for (s = registry_head; s; s = s->registry_next)
        pthread_mutex_lock(&s->lock);
}

static void
atfork_parent(void)
{
    Sampler *s;

    for (s = registry_head; s; s = s->registry_next)
        pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(&registry_lock);
}

/* In the child: no sampler thread exists; every sampler reads as stopped, with fresh locks. */
static void
atfork_child(void)
{
    Sampler *s;

    for (s = registry_head; s; s = s->registry_next) {
        pthread_mutex_unlock(&s->lock);
        init_sync(s);
        s->thread_alive = 0;
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
    table_init(&sampler->process, PC_COUNT);
    table_init(&sampler->system, SC_COUNT);
    init_sync(sampler);
    registry_add(sampler);
    return sampler;
}

/* Refreshes the tracker's own usage (thread CPU, memory of the samples) before a reading. */
static void
update_own_usage(Sampler *sampler, int in_sampler_thread)
{
    struct rusage ru;

    if (in_sampler_thread && getrusage(RUSAGE_THREAD, &ru) == 0) {
        sampler->own.cpu.user_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
        sampler->own.cpu.sys_s = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    }
    sampler->own.memory_kib =
        (double)(table_bytes_used(&sampler->process) + table_bytes_used(&sampler->system) +
                 collector_bytes(&sampler->collector)) /
        1024.0;
}

/* Appends one pair of rows under the lock (or folds them into the last rows). */
static void
store_rows(Sampler *sampler, double *prow, double *srow, double dt, int may_fold)
{
    Collector *c = &sampler->collector;
    int fold = may_fold && (sampler->process.nrows || sampler->system.nrows) &&
               dt < FOLD_SHARE * sampler->interval;

    pthread_mutex_lock(&sampler->lock);
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
        collector_fold_rows(pp, ps, prow, srow, sampler->last_row_dt, dt);
        for (i = 0; pp && i < PC_COUNT; i++)
            *table_at(&sampler->process, sampler->process.nrows - 1, i) = last_p[i];
        for (i = 0; ps && i < SC_COUNT; i++)
            *table_at(&sampler->system, sampler->system.nrows - 1, i) = last_s[i];
        sampler->last_row_dt += dt;
    } else if (!sampler->append_failed) {
        if ((c->cfg.track_processes && table_append(&sampler->process, prow) != 0) ||
            (c->cfg.track_system && table_append(&sampler->system, srow) != 0))
            sampler->append_failed = 1;
        sampler->last_row_dt = dt;
    }
    pthread_cond_broadcast(&sampler->rows_changed);
    pthread_mutex_unlock(&sampler->lock);
}

/* One reading at the current time; stores rows unless it is the baseline. */
static int
take_sample(Sampler *sampler, int in_thread, int may_fold, double *prow, double *srow)
{
    double mono = clock_seconds(CLOCK_MONOTONIC), wall = clock_seconds(CLOCK_REALTIME);
    double dt = mono - sampler->last_sample_mono;
    int filled;

    update_own_usage(sampler, in_thread);
    filled = collector_sample(&sampler->collector, mono, wall, &sampler->own, prow, srow);
    sampler->last_sample_mono = mono;
    /* the counters the getters read, published under the lock (a data race otherwise: helgrind) */
    pthread_mutex_lock(&sampler->lock);
    if (in_thread)
        sampler->cpu_seconds = sampler->own.cpu.user_s + sampler->own.cpu.sys_s;
    sampler->samples_taken++;
    sampler->pss_seconds = sampler->collector.tree.pss_seconds;
    sampler->pss_reads = sampler->collector.tree.pss_reads;
    sampler->memory_hwm_kib = (double)sampler->collector.tree.hwm_kib;
    sampler->read_errors =
        sampler->collector.tree.read_errors + sampler->collector.system.read_errors;
    pthread_mutex_unlock(&sampler->lock);
    if (filled)
        store_rows(sampler, prow, srow, dt, may_fold);
    return filled;
}

/* The next deadline after now on the grid start + k * interval. */
static double
next_deadline(const Sampler *sampler, double deadline, double now)
{
    deadline += sampler->interval;
    if (deadline <= now)
        deadline = sampler->start_mono +
                   (floor((now - sampler->start_mono) / sampler->interval) + 1) * sampler->interval;
    return deadline;
}

static void *
sampler_main(void *arg)
{
    Sampler *sampler = arg;
    double prow[PC_COUNT], srow[SC_COUNT];
    double deadline = sampler->start_mono;
    struct timespec ts;

    take_sample(sampler, 1, 0, prow, srow); /* baseline */
    pthread_mutex_lock(&sampler->lock);
    for (;;) {
        deadline = next_deadline(sampler, deadline, clock_seconds(CLOCK_MONOTONIC));
        ts.tv_sec = (time_t)deadline;
        ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
        while (!sampler->stop_requested && clock_seconds(CLOCK_MONOTONIC) < deadline)
            if (pthread_cond_timedwait(&sampler->wake, &sampler->lock, &ts) == ETIMEDOUT)
                break;
        if (sampler->stop_requested)
            break;
        pthread_mutex_unlock(&sampler->lock);
        take_sample(sampler, 1, 0, prow, srow);
        pthread_mutex_lock(&sampler->lock);
    }
    pthread_mutex_unlock(&sampler->lock);
    if (clock_seconds(CLOCK_MONOTONIC) - sampler->last_sample_mono >= FINAL_MIN_SECONDS)
        take_sample(sampler, 1, 1, prow, srow);
    pthread_mutex_lock(&sampler->lock);
    sampler->stop_wall = clock_seconds(CLOCK_REALTIME);
    sampler->state = SAMPLER_STOPPED;
    pthread_cond_broadcast(&sampler->rows_changed);
    pthread_mutex_unlock(&sampler->lock);
    return NULL;
}

/* 0, EBUSY, or a pthread error */
int
sampler_start(Sampler *sampler)
{
    pthread_attr_t attr;
    sigset_t all, saved;
    int rc;

    pthread_mutex_lock(&sampler->lock);
    if (sampler->state != SAMPLER_NEW) {
        pthread_mutex_unlock(&sampler->lock);
        return EBUSY;
    }
    sampler->start_wall = clock_seconds(CLOCK_REALTIME);
    sampler->start_mono = clock_seconds(CLOCK_MONOTONIC);
    sampler->state = SAMPLER_RUNNING;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, SAMPLER_STACK_BYTES);
    sigfillset(&all); /* signals are for the application's threads, not this one */
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    rc = pthread_create(&sampler->thread, &attr, sampler_main, sampler);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        sampler->state = SAMPLER_NEW;
    else
        sampler->thread_alive = 1;
    pthread_mutex_unlock(&sampler->lock);
    return rc;
}

void
sampler_stop(Sampler *sampler)
{
    int join;

    pthread_mutex_lock(&sampler->lock);
    sampler->stop_requested = 1;
    pthread_cond_broadcast(&sampler->wake);
    join = sampler->thread_alive;
    sampler->thread_alive = 0;
    if (sampler->state == SAMPLER_NEW) {
        sampler->state = SAMPLER_STOPPED;
        sampler->stop_wall = clock_seconds(CLOCK_REALTIME);
    }
    /* another caller joins the thread: return only once it has ended (concurrent stop()) */
    while (!join && sampler->state == SAMPLER_RUNNING)
        pthread_cond_wait(&sampler->rows_changed, &sampler->lock);
    pthread_mutex_unlock(&sampler->lock);
    if (join)
        pthread_join(sampler->thread, NULL);
}

/* 1 rows appended, 0 baseline, -1 running */
int
sampler_sample_now(Sampler *sampler, double *prow, double *srow)
{
    double p[PC_COUNT], s[SC_COUNT];
    int filled;

    pthread_mutex_lock(&sampler->lock);
    if (sampler->thread_alive || sampler->state == SAMPLER_STOPPED) {
        pthread_mutex_unlock(&sampler->lock);
        return -1;
    }
    if (sampler->start_mono == 0) {
        sampler->start_wall = clock_seconds(CLOCK_REALTIME);
        sampler->start_mono = clock_seconds(CLOCK_MONOTONIC);
    }
    pthread_mutex_unlock(&sampler->lock);
    filled = take_sample(sampler, 0, 0, p, s);
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
    double deadline = clock_seconds(CLOCK_MONOTONIC) + (timeout > 0 ? timeout : 0);
    struct timespec ts;
    int reached;

    ts.tv_sec = (time_t)deadline;
    ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
    pthread_mutex_lock(&sampler->lock);
    for (;;) {
        reached = rows_locked(sampler) >= n;
        if (reached || sampler->state != SAMPLER_RUNNING ||
            pthread_cond_timedwait(&sampler->rows_changed, &sampler->lock, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&sampler->lock);
    return reached;
}

const Table *
sampler_lock_table(Sampler *sampler, int which)
{
    pthread_mutex_lock(&sampler->lock);
    return which == SAMPLER_PROCESS ? &sampler->process : &sampler->system;
}

void
sampler_unlock(Sampler *sampler)
{
    pthread_mutex_unlock(&sampler->lock);
}

int
sampler_state(Sampler *sampler)
{
    int state;

    pthread_mutex_lock(&sampler->lock);
    state = sampler->state;
    pthread_mutex_unlock(&sampler->lock);
    return state;
}

size_t
sampler_rows(Sampler *sampler)
{
    size_t rows;

    pthread_mutex_lock(&sampler->lock);
    rows = rows_locked(sampler);
    pthread_mutex_unlock(&sampler->lock);
    return rows;
}

void
sampler_free(Sampler *sampler)
{
    if (sampler == NULL)
        return;
    sampler_stop(sampler);
    registry_remove(sampler);
    collector_free(&sampler->collector);
    table_free(&sampler->process);
    table_free(&sampler->system);
    pthread_mutex_destroy(&sampler->lock);
    pthread_cond_destroy(&sampler->wake);
    pthread_cond_destroy(&sampler->rows_changed);
    free(sampler);
}
