/* The row engine: a sampling thread over any reader of the machine, rows stored in two Tables
 * (and an optional side series). Portable core (POSIX threads only, no Python, no Linux): it
 * runs the procfs sampler (sampler.c: the collector's readings) and the psutil backend's
 * reader (py_reader.c, which fills a row from what psutil gives).
 *
 * Its rules: ticks on the grid start + k * interval (a late
 * tick skips ahead, schedule.c); a stop request wakes the thread at once, which then takes a
 * last reading for the partial interval, folded into the previous row when short (row_fold,
 * row_rules.c); engine_stop() returns within ENGINE_STOP_TIMEOUT seconds whatever a reading
 * does (a thread still inside one, or held up between readings, is left to finish on its own:
 * it takes no further reading, stores nothing, and releases the reader itself); a reading
 * that fails is counted (read_errors), never ends the thread; after fork() the child has no
 * engine thread: its engines read as stopped, with their rows. The thread holds a reference to
 * the engine, so the memory (and the source's arg) is freed by whoever lets go last. */
#ifndef RT_ENGINE_H
#define RT_ENGINE_H

#include <pthread.h>
#include <stddef.h>
#include <time.h>

#include "table.h"

#ifndef ENGINE_STOP_TIMEOUT     /* a C check compiles the engine with a shorter bound */
#define ENGINE_STOP_TIMEOUT 2.0 /* seconds engine_stop() waits for the thread */
#endif

enum EngineState { ENGINE_NEW, ENGINE_RUNNING, ENGINE_STOPPED };
/* ENGINE_SIDE: the side series (engine_open_side), one row per row of the system table. */
enum EngineTable { ENGINE_PROCESS, ENGINE_SYSTEM, ENGINE_SIDE };

/* What a reading is told about the tracker's own cost (taken off the workload when its
 * process is in the tree). */
typedef struct EngineOwn {
    double cpu_s;      /* CPU seconds of the engine thread (+ hook_cpu_s); < 0 outside it */
    double hook_cpu_s; /* of them, what after_rows() said its own thread used (0 outside) */
    double memory_kib; /* memory held for the stored rows (the side series' too) */
} EngineOwn;

/* The reader. read(): one reading at (mono, wall): 1 when prow (PC_COUNT values) and srow
 * (SC_COUNT) were filled, 0 for the baseline (no row), -1 when it failed (counted). Readings
 * never overlap (they hold the reader lock). free(): called once with arg when the engine is
 * freed (may be NULL). Every other hook is optional (NULL: none) and called with arg:
 *   publish(): after each reading, under the engine's lock (engine_lock): copy the reader's
 *     own counters where a getter reads them under that lock;
 *   side_row(row, ncols): under the engine's lock, the side series' row of the reading just
 *     made (engine_open_side), appended with the system row (all or none), folded with it as
 *     the mean of each column over the time each row covers;
 *   after_baseline(): by the thread, once, right after its baseline reading;
 *   after_rows(rows): by the thread after each of its readings that stored or folded rows
 *     (rows: the count now), outside both locks; returns the CPU seconds its own helper thread
 *     has used, counted with the engine thread's (cpu_seconds, EngineOwn.cpu_s);
 *   last_reading(): by the thread just before its final reading (nothing is left for later);
 *   release(): once the engine is stopped and no reading is under way, the reader's
 *     descriptors may go (the thread's end; stop() of an engine that never ran a thread;
 *     a sample_now() that a stop() overtook); under the reader lock. */
typedef struct EngineSource {
    int (*read)(void *arg, double mono, double wall, const EngineOwn *own, double *prow,
                double *srow);
    void (*free)(void *arg);
    void (*publish)(void *arg);
    void (*side_row)(void *arg, double *row, size_t ncols);
    void (*after_baseline)(void *arg);
    double (*after_rows)(void *arg, size_t rows);
    void (*last_reading)(void *arg);
    void (*release)(void *arg);
    void *arg;
} EngineSource;

typedef struct EngineConfig {
    double interval;      /* seconds, > 0 (the caller checks the range) */
    int track_processes;  /* store the process rows */
    int track_system;     /* store the system rows */
    double process_cores; /* the process CPU-usage cap (<= 0: none) */
    double system_cores;  /* the machine's */
} EngineConfig;

/* The engine's counters and times, as one copy taken under its lock. */
typedef struct EngineFigures {
    int state;
    size_t rows;
    double start_wall, stop_wall, cpu_seconds;
    unsigned long samples_taken, read_errors, rows_dropped;
} EngineFigures;

/* A sampling thread's locks and condition variables, on the heap: after fork() the child
 * replaces them with a new set and leaks the old one (see atfork_child in engine.c). */
typedef struct EngineSync {
    pthread_mutex_t lock;         /* the sampler's fields, its tables */
    pthread_mutex_t collect_lock; /* the reader: one reading at a time */
    pthread_cond_t wake;          /* stop requests */
    pthread_cond_t rows_changed;  /* new rows, or the thread ended */
} EngineSync;

/* A new set (the condition variables on the monotonic clock where it can be chosen), or NULL
 * when out of memory; engine_sync_free() destroys and frees one. */
EngineSync *engine_sync_new(void);
void engine_sync_free(EngineSync *sync);

/* Seconds on clock (CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_THREAD_CPUTIME_ID: the calling
 * thread's CPU); 0 when the clock cannot be read. */
double engine_clock(clockid_t clock);

/* Waits on cond (lock held) until signalled or the monotonic deadline, at most one slice of a
 * minute; robust to any deadline and any error (a failing wait sleeps a little: no caller's
 * loop spins). */
void engine_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, double deadline);

typedef struct Engine {
    EngineSource source;
    EngineConfig cfg;
    EngineSync *sync;
    pthread_t thread;
    int thread_alive, thread_done, abandoned, refs, stop_requested, state, tables_final;
    int thread_started; /* a thread was started (it releases the reader at its end) */
    Table process, system;
    Table side; /* the side series (engine_open_side; ncols 0: none) */
    double start_wall, start_mono, stop_wall;
    double last_sample_mono, last_row_dt, cpu_seconds;
    double hook_cpu_s; /* what after_rows() returned last (the thread's only) */
    unsigned long samples_taken, read_errors, rows_dropped;
    struct Engine *registry_next;
} Engine;

/* A new engine (not started) that owns source from now on: NULL when out of memory (the
 * source is then still the caller's). */
Engine *engine_new(const EngineSource *source, const EngineConfig *cfg);

/* Starts the thread: 0, EBUSY when it was started before, or a pthread error number. */
int engine_start(Engine *engine);

/* Stops the thread and joins it, waiting at most ENGINE_STOP_TIMEOUT seconds (idempotent;
 * called from the engine's own thread, it only asks). */
void engine_stop(Engine *engine);

/* One reading in the calling thread (no engine thread may run): 1 rows stored (copied to
 * prow/srow), 0 baseline, -1 when running or stopped, -2 when the reading failed. */
int engine_sample_now(Engine *engine, double *prow, double *srow);

/* Waits up to timeout seconds for at least n rows: 1 when there are. */
int engine_wait_rows(Engine *engine, size_t n, double timeout);

/* Opens the side series with ncols columns (a reader calls it from its read(), at its first
 * row): 0 when opened; -1 when the system table is not tracked or has rows already, the
 * tables are final, or memory ran out. */
int engine_open_side(Engine *engine, size_t ncols);

/* The table under the engine's lock (enum EngineTable): call engine_unlock() when done. */
const Table *engine_lock_table(Engine *engine, int which);
void engine_lock(Engine *engine);
void engine_unlock(Engine *engine);

/* The reader lock: no reading runs while it is held (a reader's settings changed between
 * readings). */
void engine_lock_reader(Engine *engine);
void engine_unlock_reader(Engine *engine);

/* The table of a stopped engine, final from now on (safe to read without the lock for the
 * engine's lifetime); NULL while new or running. */
const Table *engine_final_table(Engine *engine, int which);

void engine_figures(Engine *engine, EngineFigures *out);
int engine_state(Engine *engine);   /* enum EngineState */
size_t engine_rows(Engine *engine); /* rows stored (the longer table) */

/* Stops the engine and frees it (the thread frees it if it outlives the stop). */
void engine_free(Engine *engine);

#endif
