/* _core.stats(), _core.summarize(), _core.recommend(): statistics and the resource rules. */
#include "py_core.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#include "columns.h"
#include "stats.h"

/* 0, or -1 with TypeError */
int
rt_as_doubles(PyObject *obj, const char *what, double **out, Py_ssize_t *n)
{
    PyObject *seq;
    Py_ssize_t i;

    *out = NULL;
    *n = 0;
    if (PyObject_CheckBuffer(obj) && !PyBytes_Check(obj)) {
        Py_buffer view;
        int ok;
        if (PyObject_GetBuffer(obj, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
            return -1;
        ok = view.format && strcmp(view.format, "d") == 0 && view.itemsize == sizeof(double);
        if (ok) {
            *n = view.len / (Py_ssize_t)sizeof(double);
            *out = PyMem_Malloc(view.len ? (size_t)view.len : 1);
            if (*out)
                memcpy(*out, view.buf, (size_t)view.len);
        }
        PyBuffer_Release(&view);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s: a buffer must hold float64 ('d') values", what);
            return -1;
        }
        return *out ? 0 : (PyErr_NoMemory(), -1);
    }
    seq = PySequence_Fast(obj, what);
    if (seq == NULL)
        return -1;
    *n = PySequence_Fast_GET_SIZE(seq);
    *out = PyMem_Malloc(*n ? (size_t)*n * sizeof(double) : 1);
    if (*out == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < *n; i++) {
        (*out)[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        if ((*out)[i] == -1.0 && PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "%s: item %zd is not a number", what, i);
            PyMem_Free(*out);
            *out = NULL;
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* Sets key to a float in dict: 0, or -1. */
static int
set_float(PyObject *dict, const char *key, double value)
{
    PyObject *v = PyFloat_FromDouble(value);
    int rc;

    if (v == NULL)
        return -1;
    rc = PyDict_SetItemString(dict, key, v);
    Py_DECREF(v);
    return rc;
}

/* A dict of the aggregates of a summary. */
static PyObject *
summary_dict(const Summary *s, enum ColumnAggregate agg)
{
    PyObject *d = PyDict_New();

    if (d == NULL)
        return NULL;
    if ((agg == AGG_DIST && (set_float(d, "mean", s->mean) || set_float(d, "max", s->max) ||
                             set_float(d, "p50", s->p50) || set_float(d, "p90", s->p90) ||
                             set_float(d, "p99", s->p99))) ||
        (agg == AGG_SUM && set_float(d, "sum", s->sum)) ||
        (agg == AGG_MAX && set_float(d, "max", s->max))) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

/* Seconds each row covers: from the previous timestamp (the first from start when known). */
static double *
row_weights(const double *ts, Py_ssize_t n, double start)
{
    double *w = PyMem_Malloc(n ? (size_t)n * sizeof(double) : 1);
    Py_ssize_t i;

    if (w == NULL)
        return NULL;
    for (i = 0; i < n; i++)
        w[i] = i ? ts[i] - ts[i - 1] : (start > 0 && start < ts[0] ? ts[0] - start : 0);
    if (n > 1 && w[0] <= 0)
        w[0] = w[1];
    if (n == 1 && w[0] <= 0)
        w[0] = 1;
    return w;
}

/* Adds the summaries of one table to result: 0, or -1. Returns the row count in *rows. */
static int
add_table_stats(PyObject *result, const char *table, PyObject *columns, double start,
                Py_ssize_t *rows, double *first_ts, double *last_ts)
{
    int is_process = strcmp(table, "process") == 0;
    const ColumnSpec *specs = is_process ? process_columns : system_columns;
    size_t n_specs = is_process ? PC_COUNT : SC_COUNT;
    PyObject *ts_obj;
    double *ts = NULL, *w = NULL;
    Py_ssize_t n = 0;
    size_t k;
    int rc = -1;

    *rows = 0;
    if (columns == Py_None || (ts_obj = PyMapping_GetItemString(columns, "timestamp")) == NULL) {
        PyErr_Clear();
        return 0; /* no such table */
    }
    if (rt_as_doubles(ts_obj, "timestamp", &ts, &n) < 0 || (w = row_weights(ts, n, start)) == NULL)
        goto done;
    *rows = n;
    if (n > 0) {
        *first_ts = ts[0];
        *last_ts = ts[n - 1];
    }
    for (k = 0; n > 0 && k < n_specs; k++) {
        const ColumnSpec *spec = &specs[k];
        PyObject *col, *d;
        double *values = NULL;
        Py_ssize_t m;
        Summary s;
        char key[96];
        if (spec->aggregate == AGG_NONE)
            continue;
        col = PyMapping_GetItemString(columns, spec->name);
        if (col == NULL) {
            PyErr_Clear();
            continue;
        }
        m = 0;
        if (rt_as_doubles(col, spec->name, &values, &m) < 0) {
            Py_DECREF(col);
            goto done;
        }
        Py_DECREF(col);
        if (summarize(values, m == n ? w : NULL, (size_t)m, &s) < 0) {
            PyMem_Free(values);
            PyErr_NoMemory();
            goto done;
        }
        PyMem_Free(values);
        snprintf(key, sizeof(key), "%s_%s", table, spec->name);
        d = summary_dict(&s, spec->aggregate);
        if (d == NULL || PyDict_SetItemString(result, key, d) < 0) {
            Py_XDECREF(d);
            goto done;
        }
        Py_DECREF(d);
    }
    rc = 0;
done:
    Py_DECREF(ts_obj);
    PyMem_Free(ts);
    PyMem_Free(w);
    return rc;
}

static PyObject *
core_stats(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"process", "system", "start_time", "end_time", NULL};
    PyObject *process, *system, *result, *timestamp;
    double start = 0, end = 0, first = 0, last = 0, duration;
    Py_ssize_t prows = 0, srows = 0;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|dd", kwlist, &process, &system, &start,
                                     &end))
        return NULL;
    result = PyDict_New();
    if (result == NULL ||
        add_table_stats(result, "process", process, start, &prows, &first, &last) < 0 ||
        add_table_stats(result, "system", system, start, &srows, &first, &last) < 0) {
        Py_XDECREF(result);
        return NULL;
    }
    if (end <= 0)
        end = last;
    duration = start > 0 && end >= start ? end - start : last - first;
    timestamp =
        Py_BuildValue("{s:d,s:n}", "duration", duration, "samples", prows > srows ? prows : srows);
    if (timestamp == NULL || PyDict_SetItemString(result, "timestamp", timestamp) < 0) {
        Py_XDECREF(timestamp);
        Py_DECREF(result);
        return NULL;
    }
    Py_DECREF(timestamp);
    return result;
}

static PyObject *
core_summarize(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"values", "weights", NULL};
    PyObject *values_obj, *weights_obj = Py_None;
    double *values = NULL, *weights = NULL;
    Py_ssize_t n = 0, nw = 0;
    Summary s;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O", kwlist, &values_obj, &weights_obj) ||
        rt_as_doubles(values_obj, "values", &values, &n) < 0)
        return NULL;
    if (weights_obj != Py_None && rt_as_doubles(weights_obj, "weights", &weights, &nw) < 0) {
        PyMem_Free(values);
        return NULL;
    }
    if (weights && nw != n) {
        PyMem_Free(values);
        PyMem_Free(weights);
        return PyErr_Format(PyExc_ValueError, "weights has %zd items, values has %zd", nw, n);
    }
    summarize(values, weights, (size_t)n, &s);
    PyMem_Free(values);
    PyMem_Free(weights);
    return Py_BuildValue("{s:n,s:d,s:d,s:d,s:d,s:d,s:d,s:d}", "n", (Py_ssize_t)s.n, "mean", s.mean,
                         "min", s.min, "max", s.max, "sum", s.sum, "p50", s.p50, "p90", s.p90,
                         "p99", s.p99);
}

/* v as an int in 0..INT_MAX: a value beyond saturates (a cast would wrap to negative) */
static int
saturate_int(double v)
{
    if (!(v > 0))
        return 0;
    return v >= (double)INT_MAX ? INT_MAX : (int)v;
}

/* stats[key][field] as a double: 1 found, 0 absent, -1 error */
static int
stat_value(PyObject *stats, const char *key, const char *field, double *out)
{
    PyObject *group, *value;

    if (!PyDict_Check(stats))
        return 0;
    group = PyDict_GetItemString(stats, key);
    if (group == NULL || !PyDict_Check(group))
        return 0;
    value = PyDict_GetItemString(group, field);
    if (value == NULL)
        return 0;
    *out = PyFloat_AsDouble(value);
    if (*out == -1.0 && PyErr_Occurred())
        return -1;
    return isfinite(*out) ? 1 : 0;
}

static PyObject *
core_recommend(PyObject *module, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "recommend() takes a list of stats() dicts");
    double cpu_sum = 0, memory_kib = 0, gpus = 0, vram = 0, v;
    Py_ssize_t i, n, cpu_runs = 0, memory_runs = 0;

    (void)module;
    if (seq == NULL)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    for (i = 0; i < n; i++) {
        PyObject *s = PySequence_Fast_GET_ITEM(seq, i);
        int rc;
        if ((rc = stat_value(s, "process_cpu_usage", "mean", &v)) > 0)
            cpu_sum += v, cpu_runs++;
        if (rc >= 0 && (rc = stat_value(s, "process_memory", "max", &v)) > 0)
            memory_kib = fmax(memory_kib, v), memory_runs++;
        if (rc >= 0 && (rc = stat_value(s, "process_gpu_utilized", "max", &v)) > 0)
            gpus = fmax(gpus, v);
        if (rc >= 0 && (rc = stat_value(s, "process_gpu_vram", "max", &v)) > 0)
            vram = fmax(vram, v);
        if (rc < 0) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    if (cpu_runs == 0 || memory_runs == 0) {
        PyErr_SetString(PyExc_ValueError,
                        "not enough data to recommend resources: no process CPU and memory "
                        "samples yet (track for at least one interval, or pass historical_stats)");
        return NULL;
    }
    return Py_BuildValue("{s:i,s:i,s:i,s:i}", "cpu", recommend_cpu(cpu_sum / (double)cpu_runs),
                         "memory", saturate_int(recommend_memory_mib(memory_kib / 1024.0, 0)),
                         "gpu", saturate_int(ceil(gpus - 1e-9)), "vram",
                         saturate_int(recommend_memory_mib(vram, 1)));
}

static PyObject *
core_round_memory(PyObject *module, PyObject *arg)
{
    double mib = PyFloat_AsDouble(arg);

    (void)module;
    if (mib == -1.0 && PyErr_Occurred())
        return NULL;
    return PyLong_FromDouble(round_memory_mib(mib));
}

static PyMethodDef stats_functions[] = {
    {"stats", (PyCFunction)(void (*)(void))core_stats, METH_VARARGS | METH_KEYWORDS,
     "stats(process, system, start_time=0, end_time=0) -> dict of summaries by column."},
    {"summarize", (PyCFunction)(void (*)(void))core_summarize, METH_VARARGS | METH_KEYWORDS,
     "summarize(values, weights=None) -> {n, mean, min, max, sum, p50, p90, p99}."},
    {"recommend", (PyCFunction)core_recommend, METH_O,
     "recommend([stats, ...]) -> {'cpu', 'memory', 'gpu', 'vram'} (memory and vram in MiB)."},
    {"round_memory_mib", (PyCFunction)core_round_memory, METH_O,
     "round_memory_mib(mib) -> 128, 256, 512, 1024, or whole GiB in MiB."},
    {NULL, NULL, 0, NULL},
};

/* 0, or -1 */
int
rt_add_stats(PyObject *module)
{
    return PyModule_AddFunctions(module, stats_functions);
}
