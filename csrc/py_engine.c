/* The methods and getters the two engine types share (_core.Sampler, py_sampler.c: the procfs
 * reader; _core.ReaderSampler, py_reader.c: a Python reader). Both objects begin with an
 * EngineObject (py_core.h), so one function serves both. Portable. */
#include "py_core.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "columns.h"
#include "engine.h"

static const char *const state_names[] = {"new", "running", "stopped"};

Engine *
rt_engine_of(PyObject *self)
{
    Engine *engine = ((EngineObject *)self)->engine;
    const char *name = Py_TYPE(self)->tp_name, *dot = strrchr(name, '.');

    if (engine == NULL)
        PyErr_Format(PyExc_RuntimeError, "%s is not initialised", dot ? dot + 1 : name);
    return engine;
}

PyObject *
rt_engine_start(PyObject *self, PyObject *unused)
{
    Engine *e = rt_engine_of(self);
    int rc;

    (void)unused;
    if (e == NULL)
        return NULL;
    rc = engine_start(e);
    if (rc == EBUSY) {
        PyErr_SetString(PyExc_RuntimeError,
                        engine_state(e) == ENGINE_RUNNING
                            ? "the tracker is already running; call stop() first"
                            : "a stopped tracker cannot be restarted; create a new one");
        return NULL;
    }
    if (rc != 0) {
        errno = rc;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

PyObject *
rt_engine_sample_now(PyObject *self, PyObject *unused)
{
    Engine *e = rt_engine_of(self);
    double prow[PC_COUNT], srow[SC_COUNT];
    PyObject *p, *s;
    int filled;

    (void)unused;
    if (e == NULL)
        return NULL;
    Py_BEGIN_ALLOW_THREADS /* a Python reader needs the interpreter lock */
    filled = engine_sample_now(e, prow, srow);
    Py_END_ALLOW_THREADS
    if (filled == -1) {
        PyErr_SetString(PyExc_RuntimeError,
                        "sample_now() needs a sampler without a background thread");
        return NULL;
    }
    if (filled <= 0) /* the baseline, or a reading that failed (counted) */
        Py_RETURN_NONE;
    p = rt_row_list(prow, PC_COUNT);
    s = p ? rt_row_list(srow, SC_COUNT) : NULL;
    if (s == NULL) {
        Py_XDECREF(p);
        return NULL;
    }
    return Py_BuildValue("(NN)", p, s);
}

PyObject *
rt_engine_wait(PyObject *self, PyObject *args)
{
    Engine *e = rt_engine_of(self);
    Py_ssize_t n;
    double timeout, waited = 0;
    int reached = 0;

    if (e == NULL || !PyArg_ParseTuple(args, "nd", &n, &timeout))
        return NULL;
    if (n < 0 || !(timeout >= 0)) {
        PyErr_SetString(PyExc_ValueError, "wait_for_samples needs n >= 0 and timeout >= 0");
        return NULL;
    }
    for (;;) { /* in slices, so that Ctrl-C is seen */
        double slice = timeout - waited < 0.1 ? timeout - waited : 0.1;
        Py_BEGIN_ALLOW_THREADS
        reached = engine_wait_rows(e, (size_t)n, slice);
        Py_END_ALLOW_THREADS
        waited += slice;
        if (reached || waited >= timeout || engine_state(e) != ENGINE_RUNNING)
            break;
        if (PyErr_CheckSignals() < 0)
            return NULL;
    }
    return PyBool_FromLong(reached || engine_rows(e) >= (size_t)n);
}

PyObject *
rt_engine_columns(PyObject *self, PyObject *arg)
{
    Engine *e = rt_engine_of(self);
    PyObject *list;
    int which;

    if (e == NULL || rt_table_from_name(arg, &which) < 0)
        return NULL;
    list = rt_table_bytes(engine_lock_table(e, which == 0 ? ENGINE_PROCESS : ENGINE_SYSTEM));
    engine_unlock(e);
    return list;
}

PyObject *
rt_engine_column_views(PyObject *self, PyObject *arg)
{
    Engine *e = rt_engine_of(self);
    const Table *table;
    CoreState *state;
    int which;

    if (e == NULL || rt_table_from_name(arg, &which) < 0)
        return NULL;
    table = engine_final_table(e, which == 0 ? ENGINE_PROCESS : ENGINE_SYSTEM);
    if (table == NULL)
        Py_RETURN_NONE;
    state = PyType_GetModuleState(Py_TYPE(self));
    return state ? rt_column_views(state, self, table) : NULL;
}

PyObject *
rt_engine_get(PyObject *self, void *closure)
{
    Engine *e = rt_engine_of(self);
    EngineFigures f;

    if (e == NULL)
        return NULL;
    engine_figures(e, &f);
    switch ((intptr_t)closure) {
    case RT_FIG_STATE:
        return PyUnicode_FromString(state_names[f.state]);
    case RT_FIG_ROWS:
        return PyLong_FromSize_t(f.rows);
    case RT_FIG_START:
        return PyFloat_FromDouble(f.start_wall);
    case RT_FIG_STOP:
        return PyFloat_FromDouble(f.stop_wall);
    case RT_FIG_INTERVAL:
        return PyFloat_FromDouble(e->cfg.interval);
    case RT_FIG_CPU:
        return PyFloat_FromDouble(f.cpu_seconds);
    case RT_FIG_SAMPLES:
        return PyFloat_FromDouble((double)f.samples_taken);
    case RT_FIG_ERRORS:
        return PyFloat_FromDouble((double)f.read_errors);
    default:
        return PyFloat_FromDouble((double)f.rows_dropped);
    }
}

PyObject *
rt_row_list(const double *row, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    size_t i;

    for (i = 0; list && i < n; i++) {
        PyObject *v = PyFloat_FromDouble(row[i]);
        if (v == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

int
rt_table_from_name(PyObject *arg, int *which)
{
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;

    if (name != NULL && (strcmp(name, "process") == 0 || strcmp(name, "system") == 0)) {
        *which = name[0] == 'p' ? 0 : 1;
        return 0;
    }
    if (name != NULL || !PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "table must be 'process' or 'system', got %R", arg);
    return -1;
}

PyObject *
rt_table_bytes(const Table *table)
{
    PyObject *list = PyList_New((Py_ssize_t)table->ncols);
    size_t i;

    for (i = 0; list && i < table->ncols; i++) {
        PyObject *col = PyBytes_FromStringAndSize(table->nrows ? (const char *)table->cols[i] : "",
                                                  (Py_ssize_t)(table->nrows * sizeof(double)));
        if (col == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, col);
    }
    return list;
}
