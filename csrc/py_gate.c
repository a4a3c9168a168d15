/* The gate between the C threads that call Python (the psutil engine's readings, py_reader.c;
 * the jobs a sampler thread starts, py_jobs.c) and the interpreter's exit.
 *
 * Such a thread is not made by the interpreter: it takes the interpreter lock with
 * PyGILState_Ensure, which is unsafe once the interpreter is finalizing. A call into Python
 * runs only while the gate is open, counted in (rt_gate_enter/rt_gate_leave);
 * rt_gate_close(), behind the atexit callbacks close_jobs and close_readers (atexit callbacks
 * run before finalization begins), closes it for good and waits for the calls under way
 * (GATE_EXIT_WAIT_S at most: a call stuck in a read then goes on as a daemon thread does, and
 * the interpreter ends it when it next takes the lock). After fork() the child makes a new
 * gate and leaks the old one, which a thread of the parent may have held (see atfork_child in
 * sampler.c for why a held mutex is never re-initialised). */
#include "py_core.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define GATE_EXIT_WAIT_S 2

typedef struct Gate {
    pthread_mutex_t lock;
    pthread_cond_t idle;
    int busy; /* calls inside Python */
} Gate;

static Gate *gate;
static int gate_closed;
static pthread_once_t gate_once = PTHREAD_ONCE_INIT;

/* A new gate, or NULL when out of memory. */
static Gate *
new_gate(void)
{
    Gate *g = calloc(1, sizeof(*g));

    if (g != NULL) {
        pthread_mutex_init(&g->lock, NULL);
        pthread_cond_init(&g->idle, NULL);
    }
    return g;
}

/* In a forked child: a gate of its own. */
static void
gate_after_fork_in_child(void)
{
    Gate *fresh = new_gate();

    if (fresh != NULL)
        gate = fresh; /* the old one is leaked: see above */
}

/* Makes the gate (once). */
static void
install_gate(void)
{
    gate = new_gate();
    pthread_atfork(NULL, NULL, gate_after_fork_in_child);
}

int
rt_gate_ready(void)
{
    pthread_once(&gate_once, install_gate);
    if (gate == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

int
rt_gate_enter(void)
{
    Gate *g = gate;
    int open;

    if (g == NULL)
        return -1;
    pthread_mutex_lock(&g->lock);
    open = !__atomic_load_n(&gate_closed, __ATOMIC_SEQ_CST);
    if (open)
        g->busy++;
    pthread_mutex_unlock(&g->lock);
    return open ? 0 : -1;
}

void
rt_gate_leave(void)
{
    Gate *g = gate;

    pthread_mutex_lock(&g->lock);
    if (g->busy > 0)
        g->busy--;
    pthread_cond_broadcast(&g->idle);
    pthread_mutex_unlock(&g->lock);
}

void
rt_gate_close(void)
{
    Gate *g = gate;

    __atomic_store_n(&gate_closed, 1, __ATOMIC_SEQ_CST);
    if (g == NULL) /* no call was ever let in: none may be from now on */
        return;
    Py_BEGIN_ALLOW_THREADS /* a call under way needs the interpreter lock to end */
    struct timespec deadline;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += GATE_EXIT_WAIT_S;
    pthread_mutex_lock(&g->lock);
    while (g->busy > 0 && pthread_cond_timedwait(&g->idle, &g->lock, &deadline) == 0)
        ;
    pthread_mutex_unlock(&g->lock);
    Py_END_ALLOW_THREADS
}
