/* _core.ReaderSampler: the row engine (engine.h) over a Python reader, the psutil backend's
 * (resource_tracker/psutil_sampler.py). The engine owns the thread, the schedule, the fold, the
 * rows, the final reading and stop(); the reader only turns what it reads into one row of each
 * table: read(mono, wall, own_cpu_s, own_memory_kib) -> (process_row, system_row), or None for
 * the baseline. An exception in it is caught and counted (read_errors), as a failed procfs
 * read is, and the thread goes on.
 *
 * The engine thread is not made by the interpreter: it takes the interpreter lock with
 * PyGILState_Ensure for each reading, behind the gate of py_gate.c (no call once the
 * interpreter is going away: such a reading fails and is counted).
 */
#include "py_core.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "columns.h"
#include "engine.h"

/* -- the reader ------------------------------------------------------------------------------- */

/* Copies a row of n floats from obj: 0, or -1 with an exception. */
static int
copy_row(PyObject *obj, double *row, Py_ssize_t n, const char *what)
{
    double *values;
    Py_ssize_t len;

    if (rt_as_doubles(obj, what, &values, &len) < 0)
        return -1;
    if (len != n) {
        PyMem_Free(values);
        PyErr_Format(PyExc_ValueError, "%s: %zd values, the table has %zd columns", what, len, n);
        return -1;
    }
    memcpy(row, values, (size_t)n * sizeof(double));
    PyMem_Free(values);
    return 0;
}

/* The reading's result into prow/srow: 1 rows, 0 baseline (None), -1 with an exception. */
static int
rows_from_result(PyObject *result, double *prow, double *srow)
{
    if (result == Py_None)
        return 0;
    if (!PyTuple_Check(result) || PyTuple_GET_SIZE(result) != 2) {
        PyErr_SetString(PyExc_TypeError, "a reader returns (process_row, system_row) or None");
        return -1;
    }
    if (copy_row(PyTuple_GET_ITEM(result, 0), prow, PC_COUNT, "the process row") < 0 ||
        copy_row(PyTuple_GET_ITEM(result, 1), srow, SC_COUNT, "the system row") < 0)
        return -1;
    return 1;
}

/* An EngineSource read(): the Python reader called under the interpreter lock. */
static int
python_read(void *arg, double mono, double wall, const EngineOwn *own, double *prow, double *srow)
{
    PyObject *fn = arg, *result;
    PyGILState_STATE gil;
    int filled;

    if (rt_gate_enter() < 0)
        return -1;
    gil = PyGILState_Ensure();
    if (own->cpu_s >= 0)
        result = PyObject_CallFunction(fn, "dddd", mono, wall, own->cpu_s, own->memory_kib);
    else
        result = PyObject_CallFunction(fn, "ddOd", mono, wall, Py_None, own->memory_kib);
    filled = result ? rows_from_result(result, prow, srow) : -1;
    Py_XDECREF(result);
    if (filled < 0)
        PyErr_Clear(); /* counted by the engine (read_errors): never the thread's end */
    PyGILState_Release(gil);
    rt_gate_leave();
    return filled;
}

/* An EngineSource free(): the reader let go (under the interpreter lock; leaked when the
 * interpreter is going away). */
static void
python_free(void *arg)
{
    PyGILState_STATE gil;

    if (rt_gate_enter() < 0)
        return;
    gil = PyGILState_Ensure();
    Py_DECREF((PyObject *)arg);
    PyGILState_Release(gil);
    rt_gate_leave();
}

/* -- the type --------------------------------------------------------------------------------- */

typedef EngineObject ReaderObject; /* py_core.h: the shared methods find the engine there */

static int
reader_init(ReaderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {
        "read",         "interval", "track_processes", "track_system", "process_cores",
        "system_cores", NULL};
    PyObject *fn;
    EngineConfig cfg = {0, 1, 1, 0, 0};
    EngineSource source = {.read = python_read, .free = python_free};

    if (self->engine) {
        PyErr_SetString(PyExc_RuntimeError, "ReaderSampler is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Od|ppdd", kwlist, &fn, &cfg.interval,
                                     &cfg.track_processes, &cfg.track_system, &cfg.process_cores,
                                     &cfg.system_cores))
        return -1;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "read must be callable, got %R", fn);
        return -1;
    }
    if (!(cfg.interval >= 0.0001 && cfg.interval <= 86400.0)) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "interval must be between 0.0001 and 86400 seconds, got %g; use e.g. 1.0",
                 cfg.interval);
        PyErr_SetString(PyExc_ValueError, msg);
        return -1;
    }
    if (PyInterpreterState_Get() != PyInterpreterState_Main()) { /* PyGILState: main only */
        PyErr_SetString(PyExc_RuntimeError, "ReaderSampler: only in the main interpreter");
        return -1;
    }
    if (rt_gate_ready() < 0)
        return -1;
    Py_INCREF(fn);
    source.arg = fn;
    self->engine = engine_new(&source, &cfg);
    if (self->engine == NULL) {
        Py_DECREF(fn);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void
reader_dealloc(ReaderObject *self)
{
    PyTypeObject *type = Py_TYPE(self);

    if (self->engine) {
        Py_BEGIN_ALLOW_THREADS /* the thread may need the interpreter lock to end */
        engine_free(self->engine);
        Py_END_ALLOW_THREADS
        self->engine = NULL;
    }
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyObject *
reader_stop(ReaderObject *self, PyObject *unused)
{
    Engine *e = rt_engine_of((PyObject *)self);

    (void)unused;
    if (e == NULL)
        return NULL;
    Py_BEGIN_ALLOW_THREADS /* a reading under way needs the interpreter lock to end */
    engine_stop(e);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyGetSetDef reader_getset[] = {
    RT_ENGINE_FIGURES,
    RT_FIGURE("cpu_seconds", RT_FIG_CPU, "CPU time of the engine thread"),
    RT_FIGURE("samples_taken", RT_FIG_SAMPLES, "readings incl. baseline"),
    RT_FIGURE("read_errors", RT_FIG_ERRORS,
              "readings that failed as a whole (the reader raised or returned a bad row)"),
    RT_FIGURE("rows_dropped", RT_FIG_DROPPED,
              "rows lost because memory ran out (each later row tries again)"),
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef reader_methods[] = {
    {"start", rt_engine_start, METH_NOARGS, "Start the engine thread."},
    {"stop", (PyCFunction)reader_stop, METH_NOARGS,
     "Stop the thread after a last reading (returns within STOP_TIMEOUT seconds)."},
    {"sample_now", rt_engine_sample_now, METH_NOARGS,
     "Take one reading in this thread: (process_row, system_row), or None for the baseline "
     "(or a reading that failed: counted in read_errors)."},
    {"wait", rt_engine_wait, METH_VARARGS,
     "wait(n, timeout) -> bool: wait until n rows are stored."},
    {"columns", rt_engine_columns, METH_O,
     "columns('process'|'system') -> list of bytes, one float64 array per column."},
    {"column_views", rt_engine_column_views, METH_O,
     "column_views('process'|'system') -> read-only float64 memoryviews of the stored columns "
     "(no copy; final from then on), or None while not stopped."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot reader_slots[] = {
    {Py_tp_doc, "ReaderSampler(read, interval, track_processes=True, track_system=True, "
                "process_cores=0.0, system_cores=0.0)\n\n"
                "The C sampling engine over a Python reader: read(mono, wall, own_cpu_s, "
                "own_memory_kib) -> (process_row, system_row) or None (the baseline); own_cpu_s "
                "is None outside the engine thread. cores: the CPU-usage caps of a folded row."},
    {Py_tp_init, reader_init},
    {Py_tp_dealloc, reader_dealloc},
    {Py_tp_methods, reader_methods},
    {Py_tp_getset, reader_getset},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL},
};

static PyType_Spec reader_spec = {
    .name = "resource_tracker._core.ReaderSampler",
    .basicsize = sizeof(ReaderObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = reader_slots,
};

static PyObject *
close_readers_py(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    rt_gate_close();
    Py_RETURN_NONE;
}

static PyMethodDef reader_functions[] = {
    {"close_readers", close_readers_py, METH_NOARGS,
     "No ReaderSampler calls Python after this (waits for a reading under way); registered "
     "with atexit by the psutil backend."},
    {NULL, NULL, 0, NULL},
};

int
rt_add_reader(PyObject *module)
{
    PyObject *type = PyType_FromModuleAndSpec(module, &reader_spec, NULL);

    if (type == NULL || PyModule_AddFunctions(module, reader_functions) < 0) {
        Py_XDECREF(type);
        return -1;
    }
    return PyModule_AddObject(module, "ReaderSampler", type) < 0 ? (Py_DECREF(type), -1) : 0;
}
