#include "engine.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "columns.h"
#include "platform.h"
#include "row_rules.h"
#include "schedule.h"

#define ENGINE_STACK_BYTES (256 * 1024)
#define WAIT_SLICE_SECONDS 60.0       /* one timed wait at most (deadlines beyond are re-waited) */
#define WAIT_ERROR_SLEEP_NS 10000000L /* after a failed timed wait: no busy loop */

/* Every live engine, for the fork handlers. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static Engine *registry_head = NULL;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

double
engine_clock(clockid_t clock)
{
    struct timespec ts;

    if (clock_gettime(clock, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The condition variables' clock: monotonic where it can be chosen (Linux), else the wall
 * clock (POSIX's default; macOS has no pthread_condattr_setclock), the deadline moved onto it. */
#if RT_HAVE_PROCFS
#define COND_CLOCK CLOCK_MONOTONIC
#else
#define COND_CLOCK CLOCK_REALTIME
#endif

void
engine_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, double deadline)
{
    double now = engine_clock(CLOCK_MONOTONIC), at;
    struct timespec ts;
    int rc;

    if (!(deadline > now))
        return;
    if (deadline > now + WAIT_SLICE_SECONDS)
        deadline = now + WAIT_SLICE_SECONDS;
    at = COND_CLOCK == CLOCK_MONOTONIC ? deadline : engine_clock(COND_CLOCK) + (deadline - now);
    ts.tv_sec = (time_t)at;
    ts.tv_nsec = (long)((at - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec < 0 || ts.tv_nsec > 999999999L)
        ts.tv_nsec = 0;
    rc = pthread_cond_timedwait(cond, lock, &ts);
    if (rc != 0 && rc != ETIMEDOUT) {
        struct timespec pause = {0, WAIT_ERROR_SLEEP_NS};
        pthread_mutex_unlock(lock);
        nanosleep(&pause, NULL);
        pthread_mutex_lock(lock);
    }
}

EngineSync *
engine_sync_new(void)
{
    EngineSync *sync = calloc(1, sizeof(*sync));
    pthread_condattr_t attr;

    if (sync == NULL)
        return NULL;
    pthread_mutex_init(&sync->lock, NULL);
    pthread_mutex_init(&sync->collect_lock, NULL);
    pthread_condattr_init(&attr);
#if RT_HAVE_PROCFS
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
#endif
    pthread_cond_init(&sync->wake, &attr);
    pthread_cond_init(&sync->rows_changed, &attr);
    pthread_condattr_destroy(&attr);
    return sync;
}

void
engine_sync_free(EngineSync *sync)
{
    pthread_mutex_destroy(&sync->lock);
    pthread_mutex_destroy(&sync->collect_lock);
    pthread_cond_destroy(&sync->wake);
    pthread_cond_destroy(&sync->rows_changed);
    free(sync);
}

/* Before fork(): every engine's lock held, so that no table is half-written in the child. */
static void
atfork_prepare(void)
{
    Engine *e;

    pthread_mutex_lock(&registry_lock);
    for (e = registry_head; e; e = e->registry_next)
        pthread_mutex_lock(&e->sync->lock);
}

/* After fork() in the parent: the locks taken before it let go. */
static void
atfork_parent(void)
{
    Engine *e;

    for (e = registry_head; e; e = e->registry_next)
        pthread_mutex_unlock(&e->sync->lock);
    pthread_mutex_unlock(&registry_lock);
}

/* In the child: no engine thread; every engine reads as stopped, with a new set of locks (the
 * old one is leaked: a lock the parent's thread held can never be unlocked here, see
 * atfork_child in sampler.c). */
static void
atfork_child(void)
{
    Engine *e;

    for (e = registry_head; e; e = e->registry_next) {
        EngineSync *fresh = engine_sync_new();
        if (fresh)
            e->sync = fresh;
        else
            pthread_mutex_unlock(&e->sync->lock);
        e->thread_alive = 0;
        e->thread_done = 1;
        if (e->refs > 1)
            e->refs = 1;
        if (e->state == ENGINE_RUNNING) {
            e->state = ENGINE_STOPPED;
            e->stop_wall = engine_clock(CLOCK_REALTIME);
        }
    }
    pthread_mutex_unlock(&registry_lock);
}

/* Installs the fork handlers (once). */
static void
install_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Takes engine out of the fork handlers' list. */
static void
registry_remove(Engine *engine)
{
    Engine **link;

    pthread_mutex_lock(&registry_lock);
    for (link = &registry_head; *link; link = &(*link)->registry_next)
        if (*link == engine) {
            *link = engine->registry_next;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
}

Engine *
engine_new(const EngineSource *source, const EngineConfig *cfg)
{
    Engine *engine;

    pthread_once(&atfork_once, install_atfork);
    engine = calloc(1, sizeof(*engine));
    if (engine == NULL)
        return NULL;
    engine->sync = engine_sync_new();
    if (engine->sync == NULL) {
        free(engine);
        return NULL;
    }
    engine->source = *source;
    engine->cfg = *cfg;
    engine->refs = 1;
    table_init(&engine->process, PC_COUNT);
    table_init(&engine->system, SC_COUNT);
    pthread_mutex_lock(&registry_lock);
    engine->registry_next = registry_head;
    registry_head = engine;
    pthread_mutex_unlock(&registry_lock);
    return engine;
}

/* Appends a row to each tracked table (they stay aligned): 0, or -1 out of memory. */
static int
append_rows(Engine *engine, const double *prow, const double *srow)
{
    if (engine->cfg.track_processes && table_append(&engine->process, prow) != 0)
        return -1;
    if (engine->cfg.track_system && table_append(&engine->system, srow) != 0) {
        if (engine->cfg.track_processes)
            engine->process.nrows--;
        return -1;
    }
    return 0;
}

/* Folds row into the last row of table (n columns of columns), by each column's rule. */
static void
fold_last(Table *table, const ColumnSpec *columns, int n, const double *row, double span,
          double cores)
{
    double last[TABLE_MAX_COLS];
    size_t r = table->nrows - 1;
    int i;

    for (i = 0; i < n; i++)
        last[i] = *table_at(table, r, (size_t)i);
    row_fold(columns, n, last, row, span, ROW_CLOCK_TICK_S, cores);
    for (i = 0; i < n; i++)
        *table_at(table, r, (size_t)i) = last[i];
}

/* Folds a short reading (dt s) into the last rows, by each column's rule (row_fold). */
static void
fold_rows(Engine *engine, const double *prow, const double *srow, double dt)
{
    double span = engine->last_row_dt + dt;

    if (engine->process.nrows)
        fold_last(&engine->process, process_columns, PC_COUNT, prow, span,
                  engine->cfg.process_cores);
    if (engine->system.nrows)
        fold_last(&engine->system, system_columns, SC_COUNT, srow, span, engine->cfg.system_cores);
    engine->last_row_dt = span;
}

/* Rows stored (the longer table); the caller holds the lock. */
static size_t
rows_locked(const Engine *engine)
{
    return engine->process.nrows > engine->system.nrows ? engine->process.nrows
                                                        : engine->system.nrows;
}

/* Stores a reading's rows (appended, or folded into the last ones when short and final). */
static void
store_rows(Engine *engine, const double *prow, const double *srow, double dt, int may_fold)
{
    pthread_mutex_lock(&engine->sync->lock);
    if (engine->abandoned || engine->tables_final) {
        /* stop() gave up on this reading, or the tables are handed out: nothing changes */
    } else if (schedule_folds(dt, engine->cfg.interval, rows_locked(engine) > 0, may_fold)) {
        fold_rows(engine, prow, srow, dt);
    } else if (append_rows(engine, prow, srow) == 0) {
        engine->last_row_dt = dt;
    } else {
        engine->rows_dropped++; /* out of memory now: the next row tries again */
    }
    pthread_cond_broadcast(&engine->sync->rows_changed);
    pthread_mutex_unlock(&engine->sync->lock);
}

/* One reading now (the caller holds collect_lock): 1 rows stored, 0 baseline, -1 failed. */
static int
take_sample(Engine *engine, int in_thread, int may_fold, double *prow, double *srow)
{
    double mono = engine_clock(CLOCK_MONOTONIC), wall = engine_clock(CLOCK_REALTIME);
    double dt = mono - engine->last_sample_mono;
    EngineOwn own;
    int filled;

    pthread_mutex_lock(&engine->sync->lock);
    own.cpu_s = in_thread ? engine_clock(CLOCK_THREAD_CPUTIME_ID) : -1.0;
    own.memory_kib =
        (double)(table_bytes_used(&engine->process) + table_bytes_used(&engine->system)) / 1024.0;
    pthread_mutex_unlock(&engine->sync->lock);
    filled = engine->source.read(engine->source.arg, mono, wall, &own, prow, srow);
    engine->last_sample_mono = mono;
    pthread_mutex_lock(&engine->sync->lock);
    if (in_thread)
        engine->cpu_seconds = engine_clock(CLOCK_THREAD_CPUTIME_ID);
    engine->samples_taken++;
    if (filled < 0)
        engine->read_errors++;
    pthread_mutex_unlock(&engine->sync->lock);
    if (filled > 0)
        store_rows(engine, prow, srow, dt, may_fold);
    return filled;
}

/* One reading by the thread, under the read lock. */
static void
thread_sample(Engine *engine, int may_fold, double *prow, double *srow)
{
    pthread_mutex_lock(&engine->sync->collect_lock);
    take_sample(engine, 1, may_fold, prow, srow);
    pthread_mutex_unlock(&engine->sync->collect_lock);
}

/* Frees everything the engine holds, the source's arg too (no thread uses it any more). */
static void
engine_destroy(Engine *engine)
{
    if (engine->source.free)
        engine->source.free(engine->source.arg);
    table_free(&engine->process);
    table_free(&engine->system);
    engine_sync_free(engine->sync);
    free(engine);
}

/* Drops one reference; frees on the last one. */
static void
engine_release(Engine *engine)
{
    int last;

    pthread_mutex_lock(&engine->sync->lock);
    last = --engine->refs == 0;
    pthread_mutex_unlock(&engine->sync->lock);
    if (last)
        engine_destroy(engine);
}

/* The thread's end: the last reading (a run stopped right after its baseline still gets its
 * one row), the state published. */
static void
finish_thread(Engine *engine, double *prow, double *srow)
{
    int abandoned, has_rows;

    pthread_mutex_lock(&engine->sync->lock);
    abandoned = engine->abandoned;
    has_rows = rows_locked(engine) > 0;
    pthread_mutex_unlock(&engine->sync->lock);
    if (!abandoned &&
        schedule_takes_final(engine_clock(CLOCK_MONOTONIC) - engine->last_sample_mono, has_rows))
        thread_sample(engine, 1, prow, srow);
    pthread_mutex_lock(&engine->sync->lock);
    if (!engine->abandoned) {
        engine->stop_wall = engine_clock(CLOCK_REALTIME);
        engine->state = ENGINE_STOPPED;
    }
    engine->thread_done = 1;
    pthread_cond_broadcast(&engine->sync->rows_changed);
    pthread_mutex_unlock(&engine->sync->lock);
}

/* The thread: the baseline, a reading per tick until stop, the final reading. */
static void *
engine_main(void *arg)
{
    Engine *engine = arg;
    double prow[PC_COUNT], srow[SC_COUNT];
    double deadline = engine->start_mono;

    thread_sample(engine, 0, prow, srow); /* baseline */
    pthread_mutex_lock(&engine->sync->lock);
    for (;;) {
        deadline = schedule_next_tick(engine->start_mono, deadline, engine_clock(CLOCK_MONOTONIC),
                                      engine->cfg.interval);
        while (!engine->stop_requested && engine_clock(CLOCK_MONOTONIC) < deadline)
            engine_wait_until(&engine->sync->wake, &engine->sync->lock, deadline);
        if (engine->stop_requested)
            break;
        pthread_mutex_unlock(&engine->sync->lock);
        thread_sample(engine, 0, prow, srow);
        pthread_mutex_lock(&engine->sync->lock);
    }
    pthread_mutex_unlock(&engine->sync->lock);
    finish_thread(engine, prow, srow);
    engine_release(engine);
    return NULL;
}

int
engine_start(Engine *engine)
{
    pthread_attr_t attr;
    sigset_t all, saved;
    int rc;

    pthread_mutex_lock(&engine->sync->lock);
    if (engine->state != ENGINE_NEW) {
        pthread_mutex_unlock(&engine->sync->lock);
        return EBUSY;
    }
    engine->start_wall = engine_clock(CLOCK_REALTIME);
    engine->start_mono = engine_clock(CLOCK_MONOTONIC);
    engine->state = ENGINE_RUNNING;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, ENGINE_STACK_BYTES);
    sigfillset(&all); /* signals are for the application's threads, not this one */
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    rc = pthread_create(&engine->thread, &attr, engine_main, engine);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        engine->state = ENGINE_NEW;
    } else {
        engine->thread_alive = 1;
        engine->refs++; /* the thread's */
    }
    pthread_mutex_unlock(&engine->sync->lock);
    return rc;
}

/* Waits (the lock held) until the thread has ended or the stop bound has passed: 1 when it
 * ended; else the engine is marked stopped and the thread abandoned. */
static int
wait_thread_end(Engine *engine)
{
    double deadline = engine_clock(CLOCK_MONOTONIC) + ENGINE_STOP_TIMEOUT;

    while (!engine->thread_done && engine->state == ENGINE_RUNNING &&
           engine_clock(CLOCK_MONOTONIC) < deadline)
        engine_wait_until(&engine->sync->rows_changed, &engine->sync->lock, deadline);
    if (engine->state == ENGINE_RUNNING) {
        engine->abandoned = 1; /* a reading hangs: the thread ends on its own, storing nothing */
        engine->state = ENGINE_STOPPED;
        engine->stop_wall = engine_clock(CLOCK_REALTIME);
        pthread_cond_broadcast(&engine->sync->rows_changed);
    }
    return engine->thread_done;
}

void
engine_stop(Engine *engine)
{
    int join, ended;

    pthread_mutex_lock(&engine->sync->lock);
    engine->stop_requested = 1;
    pthread_cond_broadcast(&engine->sync->wake);
    if (engine->thread_alive && pthread_equal(engine->thread, pthread_self())) {
        /* the reader let go of the last owner inside its own reading: the thread ends itself */
        engine->thread_alive = 0;
        pthread_mutex_unlock(&engine->sync->lock);
        pthread_detach(pthread_self());
        return;
    }
    join = engine->thread_alive;
    engine->thread_alive = 0;
    if (engine->state == ENGINE_NEW) {
        engine->state = ENGINE_STOPPED;
        engine->stop_wall = engine_clock(CLOCK_REALTIME);
    }
    ended = wait_thread_end(engine);
    pthread_mutex_unlock(&engine->sync->lock);
    if (join && ended)
        pthread_join(engine->thread, NULL);
    else if (join)
        pthread_detach(engine->thread); /* it holds a reference: it frees what it uses */
}

int
engine_sample_now(Engine *engine, double *prow, double *srow)
{
    int filled;

    pthread_mutex_lock(&engine->sync->collect_lock); /* callers in several threads take turns */
    pthread_mutex_lock(&engine->sync->lock);
    if (engine->thread_alive || engine->state != ENGINE_NEW) {
        pthread_mutex_unlock(&engine->sync->lock);
        pthread_mutex_unlock(&engine->sync->collect_lock);
        return -1;
    }
    if (engine->start_mono == 0) {
        engine->start_wall = engine_clock(CLOCK_REALTIME);
        engine->start_mono = engine_clock(CLOCK_MONOTONIC);
    }
    pthread_mutex_unlock(&engine->sync->lock);
    filled = take_sample(engine, 0, 0, prow, srow);
    pthread_mutex_unlock(&engine->sync->collect_lock);
    return filled < 0 ? -2 : filled;
}

int
engine_wait_rows(Engine *engine, size_t n, double timeout)
{
    double deadline = engine_clock(CLOCK_MONOTONIC) + (timeout > 0 ? timeout : 0);
    int reached;

    pthread_mutex_lock(&engine->sync->lock);
    for (;;) {
        reached = rows_locked(engine) >= n;
        if (reached || engine->state != ENGINE_RUNNING || engine_clock(CLOCK_MONOTONIC) >= deadline)
            break;
        engine_wait_until(&engine->sync->rows_changed, &engine->sync->lock, deadline);
    }
    pthread_mutex_unlock(&engine->sync->lock);
    return reached;
}

const Table *
engine_lock_table(Engine *engine, int which)
{
    pthread_mutex_lock(&engine->sync->lock);
    return which == ENGINE_PROCESS ? &engine->process : &engine->system;
}

void
engine_unlock(Engine *engine)
{
    pthread_mutex_unlock(&engine->sync->lock);
}

const Table *
engine_final_table(Engine *engine, int which)
{
    const Table *table = NULL;

    pthread_mutex_lock(&engine->sync->lock);
    if (engine->state == ENGINE_STOPPED) {
        engine->tables_final = 1;
        table = which == ENGINE_PROCESS ? &engine->process : &engine->system;
    }
    pthread_mutex_unlock(&engine->sync->lock);
    return table;
}

void
engine_figures(Engine *engine, EngineFigures *out)
{
    pthread_mutex_lock(&engine->sync->lock);
    out->state = engine->state;
    out->rows = rows_locked(engine);
    out->start_wall = engine->start_wall;
    out->stop_wall = engine->stop_wall;
    out->cpu_seconds = engine->cpu_seconds;
    out->samples_taken = engine->samples_taken;
    out->read_errors = engine->read_errors;
    out->rows_dropped = engine->rows_dropped;
    pthread_mutex_unlock(&engine->sync->lock);
}

void
engine_free(Engine *engine)
{
    if (engine == NULL)
        return;
    engine_stop(engine);
    registry_remove(engine);
    engine_release(engine); /* an abandoned thread may still hold the other reference */
}
