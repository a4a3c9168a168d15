/* Python jobs started by the sampler thread: start() leaves the thread creation to the
 * sampler thread, which makes the job's thread right after its baseline reading, so the
 * caller of start() never pays for it (~70 us on a 2-vCPU VM).
 *
 * The job's thread is not made by the interpreter: it calls Python behind the gate of
 * py_gate.c; close_jobs() (an atexit callback) closes the gate, waiting for a job under way. A
 * job that finds the gate closed is left (its reference leaked: the interpreter is going
 * away). Its thread state is made with the job, the GIL held (thread_state.h). */
#include "py_core.h"

#include <pthread.h>
#include <unistd.h>

#include "thread_start.h"
#include "thread_state.h"

struct PyJob {
    PyObject *fn;          /* called with no argument; its exceptions are reported as unraisable */
    PyThreadState *tstate; /* the job thread's */
    pid_t pid;             /* the process that made it */
};

PyJob *
rt_job_new(PyObject *fn)
{
    PyJob *job;

    if (rt_gate_ready() < 0)
        return NULL;
    job = PyMem_RawMalloc(sizeof(*job));
    if (job == NULL)
        return (PyJob *)PyErr_NoMemory();
    job->pid = getpid();
    job->tstate = ts_new();
    if (job->tstate == NULL) {
        PyMem_RawFree(job);
        return NULL;
    }
    Py_INCREF(fn);
    job->fn = fn;
    return job;
}

PyObject *
rt_job_take_fn(PyJob *job)
{
    PyObject *fn = job->fn;

    ts_discard(job->tstate, job->pid);
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

    if (rt_gate_enter() == 0) {
        PyThreadState *tstate = job->tstate;
        PyObject *fn = job->fn, *result;

        ts_adopt(tstate);
        ts_enter(tstate);
        PyMem_RawFree(job);
        result = PyObject_CallObject(fn, NULL);
        if (result == NULL)
            PyErr_WriteUnraisable(fn);
        Py_XDECREF(result);
        Py_DECREF(fn);
        ts_end(tstate);
        rt_gate_leave();
    }
    return NULL;
}

int
rt_job_spawn(void *job)
{
    pthread_t thread;

    return rt_thread_start(&thread, 0, 1, job_main, job);
}

static PyObject *
close_jobs_py(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    rt_gate_close();
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
