/* The engine's stop bound (csrc/engine.c) without Python, on a reader that is held up: the
 * program is built with ENGINE_STOP_TIMEOUT injected (a twentieth of a second), so that stop()
 * gives up on the thread (the abandon path a heavily loaded machine takes) without waiting
 * out the real bound.
 *
 * - A thread held up between readings (inside its after_baseline hook) when stop() gives up:
 *   engine_free() returns with the reader not released (the thread still lives and may read);
 *   the thread, let go, releases the reader itself, once, and then frees the source; it takes
 *   no reading after it was given up on.
 * - A thread held up before its first reading (the reader lock held, as a starved thread
 *   would be) when stop() gives up, then let go while engine_free() runs: it takes no reading
 *   at all (before the fix, engine_free() released the reader from the caller and the thread
 *   then read through the released reader: a NULL DIR in rewinddir, the worker's segfault).
 * Every wait is for an event (bounded by WAIT_LIMIT_S only to fail instead of hanging).
 * Prints "ok <checks>"; exits non-zero at the first failed check. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "columns.h"
#include "engine.h"
#include "table.h"

#define WAIT_LIMIT_S 30.0

#include "check.h"

/* A reader that records what the engine did with it (its own lock: it outlives the engine). */
typedef struct Probe {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int hold_after_baseline, in_hook, let_go;
    int reads, reads_after_release, releases, releases_by_caller, freed;
    pthread_t caller;
} Probe;

static void
probe_init(Probe *p, int hold_after_baseline)
{
    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    p->hold_after_baseline = hold_after_baseline;
    p->caller = pthread_self();
}

static void
probe_destroy(Probe *p)
{
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->changed);
}

/* Waits (p->lock held) until *flag is set; fails the check after WAIT_LIMIT_S. */
static void
probe_wait(Probe *p, const int *flag)
{
    double deadline = engine_clock(CLOCK_MONOTONIC) + WAIT_LIMIT_S;

    while (!*flag && engine_clock(CLOCK_MONOTONIC) < deadline)
        engine_wait_until(&p->changed, &p->lock, deadline);
    CHECK(*flag);
}

static int
probe_read(void *arg, double mono, double wall, const EngineOwn *own, double *prow, double *srow)
{
    Probe *p = arg;
    int first;

    (void)mono, (void)wall, (void)own;
    pthread_mutex_lock(&p->lock);
    first = p->reads++ == 0;
    if (p->releases)
        p->reads_after_release++;
    pthread_mutex_unlock(&p->lock);
    memset(prow, 0, PC_COUNT * sizeof(double));
    memset(srow, 0, SC_COUNT * sizeof(double));
    return first ? 0 : 1;
}

/* after_baseline(): held up until the check lets it go, when asked to. */
static void
probe_after_baseline(void *arg)
{
    Probe *p = arg;

    pthread_mutex_lock(&p->lock);
    if (p->hold_after_baseline) {
        p->in_hook = 1;
        pthread_cond_broadcast(&p->changed);
        probe_wait(p, &p->let_go);
    }
    pthread_mutex_unlock(&p->lock);
}

static void
probe_release(void *arg)
{
    Probe *p = arg;

    pthread_mutex_lock(&p->lock);
    p->releases++;
    if (pthread_equal(pthread_self(), p->caller))
        p->releases_by_caller++;
    pthread_mutex_unlock(&p->lock);
}

static void
probe_free(void *arg)
{
    Probe *p = arg;

    pthread_mutex_lock(&p->lock);
    p->freed = 1;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
}

static Engine *
probe_engine(Probe *p)
{
    EngineSource source = {.read = probe_read,
                           .free = probe_free,
                           .after_baseline = probe_after_baseline,
                           .release = probe_release,
                           .arg = p};
    EngineConfig cfg = {.interval = 0.01, .track_processes = 1, .track_system = 1};
    Engine *e = engine_new(&source, &cfg);

    CHECK(e != NULL);
    return e;
}

/* Stops e while its thread is held up: stop() gives up (the state reads stopped). */
static void
stop_gives_up(Engine *e)
{
    engine_stop(e);
    CHECK(engine_state(e) == ENGINE_STOPPED);
    pthread_mutex_lock(&e->sync->lock);
    CHECK(e->abandoned);
    pthread_mutex_unlock(&e->sync->lock);
}

/* After the thread was let go: it released the reader itself, once, then freed the source. */
static void
check_thread_ended_alone(Probe *p)
{
    pthread_mutex_lock(&p->lock);
    probe_wait(p, &p->freed);
    CHECK(p->releases == 1);
    CHECK(p->releases_by_caller == 0);
    CHECK(p->reads_after_release == 0);
    pthread_mutex_unlock(&p->lock);
}

static void
check_held_between_readings(void)
{
    Probe p;
    Engine *e;
    int reads;

    probe_init(&p, 1);
    e = probe_engine(&p);
    CHECK(engine_start(e) == 0);
    pthread_mutex_lock(&p.lock);
    probe_wait(&p, &p.in_hook);
    pthread_mutex_unlock(&p.lock);
    stop_gives_up(e);
    engine_free(e); /* the thread holds the other reference */
    pthread_mutex_lock(&p.lock);
    CHECK(p.releases == 0); /* the thread lives: the reader stays */
    CHECK(!p.freed);
    reads = p.reads;
    p.let_go = 1;
    pthread_cond_broadcast(&p.changed);
    pthread_mutex_unlock(&p.lock);
    check_thread_ended_alone(&p);
    CHECK(p.reads == reads); /* no reading after it was given up on */
    probe_destroy(&p);
}

static void
check_held_before_first_reading(void)
{
    Probe p;
    Engine *e;

    probe_init(&p, 0);
    e = probe_engine(&p);
    engine_lock_reader(e); /* the thread's baseline waits for it */
    CHECK(engine_start(e) == 0);
    stop_gives_up(e);
    engine_unlock_reader(e);
    engine_free(e);
    check_thread_ended_alone(&p);
    CHECK(p.reads == 0);
    probe_destroy(&p);
}

/* The table (csrc/table.c): a mapped column's +0.0 is not written (its pages read as zero), a
 * -0.0 and every other value are; a row taken back reads as zero when a +0.0 takes its place. */
static void
check_table_zeros(void)
{
    Table t;
    double row[2];
    size_t i, kept = 1;

    CHECK(table_init(&t, 2) == 0);
    for (i = 0; i < 5000; i++) { /* past the small blocks: mapped columns */
        row[0] = 0.0, row[1] = (double)i;
        CHECK(table_append(&t, row) == 0);
    }
    for (i = 0; i < 5000; i++)
        kept &= *table_at(&t, i, 0) == 0.0 && *table_at(&t, i, 1) == (double)i;
    CHECK(kept);
    row[0] = -0.0, row[1] = 0.0;
    CHECK(table_append(&t, row) == 0 && signbit(*table_at(&t, 5000, 0)));
    row[0] = 7.0;
    CHECK(table_append(&t, row) == 0 && t.nrows == 5002);
    table_drop_last(&t);
    row[0] = 0.0;
    CHECK(t.nrows == 5001 && table_append(&t, row) == 0 && *table_at(&t, 5001, 0) == 0.0);
    table_free(&t);
    t.nrows = 0;
    table_drop_last(&t); /* no row: nothing */
    CHECK(t.nrows == 0);
}

int
main(void)
{
    int i;

    check_table_zeros();
    for (i = 0; i < 5; i++) {
        check_held_between_readings();
        check_held_before_first_reading();
    }
    printf("ok %d\n", checks);
    return 0;
}
