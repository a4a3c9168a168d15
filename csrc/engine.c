#include "engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "columns.h"
#include "platform.h"
#include "row_rules.h"
#include "schedule.h"
#include "thread_start.h"

/* the psutil reader runs Python on this thread (and whatever finalizers a collection runs) */
#define ENGINE_STACK_BYTES (1024 * 1024)
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

/* In the child: no engine thread exists; every engine reads as stopped, with fresh locks.
 *
 * The old locks and condition variables are leaked on purpose, as memray does after fork
 * (tracking_api.cpp, Tracker::childFork): the parent's engine thread may have held the reader
 * lock, or waited on a condition variable, at the moment of fork(). That thread does not exist
 * in the child, so the lock can never be unlocked by its owner, and POSIX leaves
 * re-initialising (or destroying) a locked mutex or a waited-on condition variable undefined.
 * A new set is made instead; the old one (a few hundred bytes per engine) is never touched
 * again. When the new set cannot be allocated the engine keeps the old one: the lock taken in
 * atfork_prepare is released by this thread, which owns it. */
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

int
engine_open_side(Engine *engine, size_t ncols)
{
    int rc = -1;

    pthread_mutex_lock(&engine->sync->lock);
    if (engine->cfg.track_system && !engine->tables_final && !engine->abandoned &&
        engine->system.nrows == 0 && engine->side.ncols == 0 && ncols > 0 &&
        ncols <= TABLE_MAX_COLS && table_init(&engine->side, ncols) == 0)
        rc = 0;
    pthread_mutex_unlock(&engine->sync->lock);
    return rc;
}

/* The side series' row of the reading just made (the caller holds the lock). */
static void
side_row(Engine *engine, double *row)
{
    engine->source.side_row(engine->source.arg, row, engine->side.ncols);
}

/* Appends a row to each tracked table, all or none (they stay aligned): 0, or -1 out of
 * memory. */
static int
append_rows(Engine *engine, const double *prow, const double *srow)
{
    double row[TABLE_MAX_COLS];

    if (engine->cfg.track_processes && table_append(&engine->process, prow) != 0)
        return -1;
    if (engine->cfg.track_system && table_append(&engine->system, srow) != 0) {
        if (engine->cfg.track_processes)
            table_drop_last(&engine->process);
        return -1;
    }
    if (engine->side.ncols == 0)
        return 0;
    side_row(engine, row);
    if (table_append(&engine->side, row) != 0) {
        table_drop_last(&engine->system); /* the series stays aligned with the system table */
        if (engine->cfg.track_processes)
            table_drop_last(&engine->process);
        return -1;
    }
    return 0;
}

/* Folds the side row of a short reading (part_dt s) into the last one (prev_dt s): the mean
 * of each column over the time each covers. */
static void
fold_side(Engine *engine, double prev_dt, double part_dt)
{
    double row[TABLE_MAX_COLS], total = prev_dt + part_dt;
    size_t i;

    if (engine->side.ncols == 0 || engine->side.nrows == 0 || !(total > 0))
        return;
    side_row(engine, row);
    for (i = 0; i < engine->side.ncols; i++) {
        double *last = table_at(&engine->side, engine->side.nrows - 1, i);
        *last = (*last * prev_dt + row[i] * part_dt) / total;
    }
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
    fold_side(engine, engine->last_row_dt, dt);
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
    own.hook_cpu_s = in_thread ? engine->hook_cpu_s : 0.0;
    own.cpu_s = in_thread ? engine_clock(CLOCK_THREAD_CPUTIME_ID) + own.hook_cpu_s : -1.0;
    own.memory_kib = (double)(table_bytes_used(&engine->process) +
                              table_bytes_used(&engine->system) + table_bytes_used(&engine->side)) /
                     1024.0;
    pthread_mutex_unlock(&engine->sync->lock);
    filled = engine->source.read(engine->source.arg, mono, wall, &own, prow, srow);
    engine->last_sample_mono = mono;
    pthread_mutex_lock(&engine->sync->lock);
    if (in_thread)
        engine->cpu_seconds = engine_clock(CLOCK_THREAD_CPUTIME_ID) + engine->hook_cpu_s;
    engine->samples_taken++;
    if (filled < 0)
        engine->read_errors++;
    if (engine->source.publish)
        engine->source.publish(engine->source.arg);
    pthread_mutex_unlock(&engine->sync->lock);
    if (filled > 0)
        store_rows(engine, prow, srow, dt, may_fold);
    return filled;
}

/* 1 when stop() gave up on the thread (it takes no reading any more). */
static int
given_up(Engine *engine)
{
    int abandoned;

    pthread_mutex_lock(&engine->sync->lock);
    abandoned = engine->abandoned;
    pthread_mutex_unlock(&engine->sync->lock);
    return abandoned;
}

/* One reading by the thread, under the read lock (none once stop() gave up on it: a thread
 * held up, by a slow reading or by the scheduler, reads nothing after it); then the
 * after_rows hook, if any. */
static void
thread_sample(Engine *engine, int may_fold, double *prow, double *srow)
{
    int filled;
    double hook_cpu_s;

    pthread_mutex_lock(&engine->sync->collect_lock);
    filled = given_up(engine) ? 0 : take_sample(engine, 1, may_fold, prow, srow);
    pthread_mutex_unlock(&engine->sync->collect_lock);
    if (filled > 0 && engine->source.after_rows) {
        hook_cpu_s = engine->source.after_rows(engine->source.arg, engine_rows(engine));
        pthread_mutex_lock(&engine->sync->lock);
        engine->hook_cpu_s = hook_cpu_s;
        pthread_mutex_unlock(&engine->sync->lock);
    }
}

/* The reader's release hook, under the reader lock (the caller holds neither lock). */
static void
release_source(Engine *engine)
{
    if (engine->source.release == NULL)
        return;
    pthread_mutex_lock(&engine->sync->collect_lock);
    engine->source.release(engine->source.arg);
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
    table_free(&engine->side);
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
    /* a reader with a last reading (the C one re-reads every member's io: an idle member may
     * have written since its io was read) takes it however soon after the last tick */
    if (!abandoned && (engine->source.last_reading != NULL ||
                       schedule_takes_final(
                           engine_clock(CLOCK_MONOTONIC) - engine->last_sample_mono, has_rows))) {
        if (engine->source.last_reading)
            engine->source.last_reading(engine->source.arg);
        thread_sample(engine, 1, prow, srow);
    }
    release_source(engine);
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
    if (engine->source.after_baseline)
        engine->source.after_baseline(engine->source.arg);
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
    int rc;

    pthread_mutex_lock(&engine->sync->lock);
    if (engine->state != ENGINE_NEW) {
        pthread_mutex_unlock(&engine->sync->lock);
        return EBUSY;
    }
    engine->start_wall = engine_clock(CLOCK_REALTIME);
    engine->start_mono = engine_clock(CLOCK_MONOTONIC);
    engine->state = ENGINE_RUNNING;
    rc = rt_thread_start(&engine->thread, ENGINE_STACK_BYTES, 0, engine_main, engine);
    if (rc != 0) {
        engine->state = ENGINE_NEW;
    } else {
        engine->thread_alive = 1;
        engine->thread_started = 1; /* from now on only the thread releases the reader */
        engine->refs++;             /* the thread's */
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
    int join, ended, threaded;

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
    threaded = engine->thread_started;
    pthread_mutex_unlock(&engine->sync->lock);
    if (join && ended)
        pthread_join(engine->thread, NULL);
    else if (join)
        pthread_detach(engine->thread); /* it holds a reference: it frees what it uses */
    if (!threaded && engine->source.release &&
        pthread_mutex_trylock(&engine->sync->collect_lock) == 0) {
        /* no thread to release the reader (sample_now() engines); a reading under way in
         * sample_now() releases it itself when it ends. A thread given up on by an earlier
         * stop() may still read (it may not even have taken its baseline yet): it releases
         * the reader itself at its end (finish_thread) */
        engine->source.release(engine->source.arg);
        pthread_mutex_unlock(&engine->sync->collect_lock);
    }
}

int
engine_sample_now(Engine *engine, double *prow, double *srow)
{
    int filled, stopped;

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
    pthread_mutex_lock(&engine->sync->lock);
    stopped = engine->state == ENGINE_STOPPED;
    pthread_mutex_unlock(&engine->sync->lock);
    if (stopped && engine->source.release) /* stop() came during this reading */
        engine->source.release(engine->source.arg);
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

/* The table named by which (enum EngineTable). */
static const Table *
table_of(const Engine *engine, int which)
{
    if (which == ENGINE_SIDE)
        return &engine->side;
    return which == ENGINE_PROCESS ? &engine->process : &engine->system;
}

const Table *
engine_lock_table(Engine *engine, int which)
{
    pthread_mutex_lock(&engine->sync->lock);
    return table_of(engine, which);
}

void
engine_lock(Engine *engine)
{
    pthread_mutex_lock(&engine->sync->lock);
}

void
engine_unlock(Engine *engine)
{
    pthread_mutex_unlock(&engine->sync->lock);
}

void
engine_lock_reader(Engine *engine)
{
    pthread_mutex_lock(&engine->sync->collect_lock);
}

void
engine_unlock_reader(Engine *engine)
{
    pthread_mutex_unlock(&engine->sync->collect_lock);
}

const Table *
engine_final_table(Engine *engine, int which)
{
    const Table *table = NULL;

    pthread_mutex_lock(&engine->sync->lock);
    if (engine->state == ENGINE_STOPPED) {
        engine->tables_final = 1;
        table = table_of(engine, which);
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

int
engine_state(Engine *engine)
{
    int state;

    pthread_mutex_lock(&engine->sync->lock);
    state = engine->state;
    pthread_mutex_unlock(&engine->sync->lock);
    return state;
}

size_t
engine_rows(Engine *engine)
{
    size_t rows;

    pthread_mutex_lock(&engine->sync->lock);
    rows = rows_locked(engine);
    pthread_mutex_unlock(&engine->sync->lock);
    return rows;
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
