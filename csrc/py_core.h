/* Shared by the binding files of the _core module (the only C files that include Python.h). */
#ifndef RT_PY_CORE_H
#define RT_PY_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Per-module state (PEP 489): the types whose instances the module's functions make. */
typedef struct CoreState {
    PyTypeObject *column_view_type; /* py_views.c */
} CoreState;

/* Adds value to the module under name, stealing it: 0, or -1 with an exception (a NULL value
 * passes on the error that made it). Here, not in module.c: the binding files call it, and
 * module.c calls them (tools/check_c_deps.py: no circle between the C files). */
static inline int
rt_add_object(PyObject *module, const char *name, PyObject *value)
{
    if (value == NULL)
        return -1;
    if (PyModule_AddObject(module, name, value) < 0) {
        Py_DECREF(value);
        return -1;
    }
    return 0;
}

/* Each binding file adds its types and functions to the module: 0, or -1 with an exception. */
int rt_add_columns(PyObject *module);
int rt_add_rules(PyObject *module);
int rt_add_files(PyObject *module);
int rt_add_sampler(PyObject *module);
int rt_add_stats(PyObject *module);
int rt_add_encode(PyObject *module);
int rt_add_series(PyObject *module);
int rt_add_attribution(PyObject *module);
int rt_add_gpu(PyObject *module);
int rt_add_cloud(PyObject *module);
int rt_add_catalog(PyObject *module);
int rt_add_views(PyObject *module);
int rt_add_jobs(PyObject *module);
int rt_add_reader(PyObject *module);

/* The gate of the C threads that call Python (py_gate.c): rt_gate_ready() before the first
 * call (0, or -1 with MemoryError); rt_gate_enter() before taking the interpreter lock (0, or
 * -1 when the interpreter is going away: do not call), rt_gate_leave() after letting it go;
 * rt_gate_close() (the interpreter lock held) closes it for good, waiting for calls under way. */
int rt_gate_ready(void);
int rt_gate_enter(void);
void rt_gate_leave(void);
void rt_gate_close(void);

/* A Python function to run in a thread of its own, started by a C thread (py_jobs.c). */
typedef struct PyJob PyJob;
/* A job of fn (the interpreter lock held): NULL with an exception. */
PyJob *rt_job_new(PyObject *fn);
/* Frees the job (the interpreter lock held): its fn, a new reference. */
PyObject *rt_job_take_fn(PyJob *job);
/* Frees the job and its fn (the interpreter lock held; NULL: nothing). */
void rt_job_discard(PyJob *job);
/* Starts the job's thread, which owns it from then on (no interpreter lock needed): 0, or a
 * pthread error number (the job stays the caller's). A SamplerHook. */
int rt_job_spawn(void *job);

/* Read-only memoryviews of a final table's columns, each keeping owner alive (py_views.c);
 * state: the module's (its ColumnView type). */
struct Table;
PyObject *rt_column_views(CoreState *state, PyObject *owner, const struct Table *table);

/* Shared by the samplers' bindings (py_engine.c): a list of n floats; a table's columns as
 * one bytes object of float64 values each (NULL with an exception); 0 for 'process', 1 for
 * 'system' into *which, or -1 with ValueError. */
PyObject *rt_row_list(const double *row, size_t n);
PyObject *rt_table_bytes(const struct Table *table);
int rt_table_from_name(PyObject *arg, int *which);

/* The head of the engine types' objects (_core.Sampler, _core.ReaderSampler): the methods and
 * getters below (py_engine.c) find the engine there (NULL before __init__). */
struct Engine;
typedef struct EngineObject {
    PyObject_HEAD struct Engine *engine;
} EngineObject;

/* The engine of self, or NULL with RuntimeError when __init__ did not run. */
struct Engine *rt_engine_of(PyObject *self);

/* Methods of both types: start(), sample_now(), wait(n, timeout), columns(table),
 * column_views(table). */
PyObject *rt_engine_start(PyObject *self, PyObject *unused);
PyObject *rt_engine_sample_now(PyObject *self, PyObject *unused);
PyObject *rt_engine_wait(PyObject *self, PyObject *args);
PyObject *rt_engine_columns(PyObject *self, PyObject *arg);
PyObject *rt_engine_column_views(PyObject *self, PyObject *arg);

/* A getter of both types: the figure named by closure (RT_FIG_*, cast to a pointer). */
enum {
    RT_FIG_STATE,
    RT_FIG_ROWS,
    RT_FIG_START,
    RT_FIG_STOP,
    RT_FIG_INTERVAL,
    RT_FIG_CPU,
    RT_FIG_SAMPLES,
    RT_FIG_ERRORS,
    RT_FIG_DROPPED
};
PyObject *rt_engine_get(PyObject *self, void *closure);
#define RT_FIGURE(name, fig, doc)                                                                  \
    {                                                                                              \
        name, rt_engine_get, NULL, doc, (void *)(intptr_t)(fig)                                    \
    }
/* The getset entries both types have alike (their cpu_seconds, read_errors and the rest are
 * their own). */
#define RT_ENGINE_FIGURES                                                                          \
    RT_FIGURE("state", RT_FIG_STATE, "'new', 'running' or 'stopped'"),                             \
        RT_FIGURE("n_samples", RT_FIG_ROWS, "rows stored so far"),                                 \
        RT_FIGURE("start_time", RT_FIG_START, "start, seconds since the epoch"),                   \
        RT_FIGURE("stop_time", RT_FIG_STOP, "stop (0 while running)"),                             \
        RT_FIGURE("interval", RT_FIG_INTERVAL, "seconds between samples")

/* Reads a buffer of float64 (array('d'), memoryview) or a sequence of numbers into a new C array
 * (free it with PyMem_Free): 0, or -1 with TypeError naming what. */
int rt_as_doubles(PyObject *obj, const char *what, double **out, Py_ssize_t *n);

/* A column held for the C functions: a borrowed float64 buffer, or a copy of a sequence. */
typedef struct ColumnHold {
    Py_buffer view; /* view.obj != NULL: borrowed */
    double *owned;  /* else a PyMem copy (or NULL) */
} ColumnHold;

/* The C array of obj: borrowed when obj is a C-contiguous float64 buffer (array('d'), the
 * sampler's column views), else copied (a sequence of numbers). 0, or -1 with TypeError naming
 * what. Release it with rt_release_column. */
int rt_hold_column(PyObject *obj, const char *what, ColumnHold *hold, const double **data,
                   size_t *len);
void rt_release_column(ColumnHold *hold);

#endif
