/* Python jobs started by the sampler thread: start() leaves the thread creation to the
 * sampler thread, which makes the job's thread right after its baseline reading, so the
 * caller of start() never pays for it (~70 us on a 2-vCPU VM).
 *
 * The job's thread is not made by the interpreter: it takes the interpreter lock with
 * PyGILState_Ensure, which is unsafe once the interpreter is finalizing. A gate keeps the two
 * apart: a job runs only while it holds the gate and the gate is open; close_jobs(), an
 * atexit callback (atexit callbacks run before finalization begins), closes it, waiting for
 * a job under way to end (JOB_EXIT_WAIT_S at most). A job that finds the gate closed is left (its
 * reference leaked: the interpreter is going away). The gate is a heap mutex: after fork() the
 * child makes a new one and leaks the old one, which a job thread of the parent may have held (see
 * atfork_child in sampler.c for why a held mutex is never re-initialised). */
#include "py_core.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

/* The longest close_jobs() waits for a job under way (a job stuck in a read then goes on as
 * a daemon thread does: the interpreter ends it when it next takes the lock). */
#define JOB_EXIT_WAIT_S 2

struct PyJob {
    PyObject *fn; /* called with no argument; its exceptions are reported as unraisable */
};

static pthread_mutex_t *gate;
static int gate_closed;
static pthread_once_t gate_once = PTHREAD_ONCE_INIT;

static pthread_mutex_t *
new_gate(void)
{
    pthread_mutex_t *m = malloc(sizeof(*m));

    if (m != NULL)
        pthread_mutex_init(m, NULL);
    return m;
}

static void
gate_after_fork_in_child(void)
{
    pthread_mutex_t *fresh = new_gate();

    if (fresh != NULL)
        gate = fresh; /* the old one is leaked: see above */
}

static void
install_gate(void)
{
    gate = new_gate();
    pthread_atfork(NULL, NULL, gate_after_fork_in_child);
}

PyJob *
rt_job_new(PyObject *fn)
{
    PyJob *job;

    pthread_once(&gate_once, install_gate);
    if (gate == NULL)
        return (PyJob *)PyErr_NoMemory();
    job = PyMem_RawMalloc(sizeof(*job));
    if (job == NULL)
        return (PyJob *)PyErr_NoMemory();
    Py_INCREF(fn);
    job->fn = fn;
    return job;
}

PyObject *
rt_job_take_fn(PyJob *job)
{
    PyObject *fn = job->fn;

    PyMem_RawFree(job);
    return fn;
}

void
rt_job_discard(PyJob *job)
{
    if (job != NULL)
        Py_DECREF(rt_job_take_fn(job));
}

/* The job's thread: runs the job when the gate is open. */
static void *
job_main(void *arg)
{
    PyJob *job = arg;
    pthread_mutex_t *held = gate;

    pthread_mutex_lock(held);
    if (!__atomic_load_n(&gate_closed, __ATOMIC_SEQ_CST)) {
        PyGILState_STATE gil = PyGILState_Ensure();
        PyObject *fn = rt_job_take_fn(job);
        PyObject *result = PyObject_CallObject(fn, NULL);

        if (result == NULL)
            PyErr_WriteUnraisable(fn);
        Py_XDECREF(result);
        Py_DECREF(fn);
        PyGILState_Release(gil);
    }
    pthread_mutex_unlock(held);
    return NULL;
}

int
rt_job_spawn(void *job)
{
    pthread_t thread;
    pthread_attr_t attr;
    int rc;

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&thread, &attr, job_main, job); /* the sampler's signal mask: none */
    pthread_attr_destroy(&attr);
    return rc;
}

static PyObject *
close_jobs_py(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    if (gate == NULL) { /* no job was ever made: none may be from now on */
        __atomic_store_n(&gate_closed, 1, __ATOMIC_SEQ_CST);
        Py_RETURN_NONE;
    }
    Py_BEGIN_ALLOW_THREADS /* a job under way needs the interpreter lock to end */
    struct timespec deadline;
    int locked;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += JOB_EXIT_WAIT_S;
    locked = pthread_mutex_timedlock(gate, &deadline) == 0;
    __atomic_store_n(&gate_closed, 1, __ATOMIC_SEQ_CST);
    if (locked)
        pthread_mutex_unlock(gate);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef job_functions[] = {
    {"close_jobs", close_jobs_py, METH_NOARGS,
     "No job started by a sampler thread runs after this (waits for one under way); "
     "registered with atexit by the first tracker."},
    {NULL, NULL, 0, NULL},
};

int
rt_add_jobs(PyObject *module)
{
    return PyModule_AddFunctions(module, job_functions);
}
