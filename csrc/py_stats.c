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

/* 0, or -1 with TypeError naming what (py_core.h) */
int
rt_hold_column(PyObject *obj, const char *what, ColumnHold *hold, const double **data, size_t *len)
{
    Py_ssize_t n = 0;

    memset(hold, 0, sizeof(*hold));
    if (PyObject_CheckBuffer(obj) && !PyBytes_Check(obj)) {
        if (PyObject_GetBuffer(obj, &hold->view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
            return -1;
        if (hold->view.format && strcmp(hold->view.format, "d") == 0 &&
            hold->view.itemsize == sizeof(double)) {
            *data = hold->view.buf;
            *len = (size_t)hold->view.len / sizeof(double);
            return 0;
        }
        PyBuffer_Release(&hold->view);
        PyErr_Format(PyExc_TypeError, "%s: a buffer must hold float64 ('d') values", what);
        return -1;
    }
    if (rt_as_doubles(obj, what, &hold->owned, &n) < 0)
        return -1;
    *data = hold->owned;
    *len = (size_t)n;
    return 0;
}

/* Gives back what rt_hold_column holds. */
void
rt_release_column(ColumnHold *hold)
{
    if (hold->view.obj)
        PyBuffer_Release(&hold->view);
    PyMem_Free(hold->owned);
    memset(hold, 0, sizeof(*hold));
}

/* A table's mapping {name: column} as TableColumns (absent columns stay NULL): 0, or -1. */
static int
hold_table(PyObject *columns, TableColumns *t, ColumnHold *holds)
{
    size_t k;

    for (k = 0; columns != Py_None && k < t->ncols; k++) {
        const ColumnSpec *spec = &t->specs[k];
        PyObject *col;
        int rc;
        if (k > 0 && spec->aggregate == AGG_NONE)
            continue;
        col = PyMapping_GetItemString(columns, spec->name);
        if (col == NULL) {
            PyErr_Clear();
            if (k == 0)
                return 0; /* no timestamps: no table */
            continue;
        }
        rc = rt_hold_column(col, spec->name, &holds[k], &t->data[k], &t->len[k]);
        Py_DECREF(col);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static void
release_table(ColumnHold *holds, size_t n)
{
    size_t k;

    for (k = 0; k < n; k++)
        rt_release_column(&holds[k]);
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

/* Adds "<table>_<column>" entries for the summaries in st: 0, or -1. */
static int
add_summaries(PyObject *result, const char *table, const TableColumns *t, const TableStats *st)
{
    size_t k;

    for (k = 0; k < t->ncols; k++) {
        char key[96];
        PyObject *d;
        if (!st->has[k])
            continue;
        snprintf(key, sizeof(key), "%s_%s", table, t->specs[k].name);
        d = summary_dict(&st->col[k], t->specs[k].aggregate);
        if (d == NULL || PyDict_SetItemString(result, key, d) < 0) {
            Py_XDECREF(d);
            return -1;
        }
        Py_DECREF(d);
    }
    return 0;
}

/* The stats() dict of two summarised tables. */
static PyObject *
stats_dict(const TableColumns *pt, const TableStats *ps, const TableColumns *st,
           const TableStats *ss, double start, double end)
{
    PyObject *result = PyDict_New(), *timestamp;
    double first = ss->rows ? ss->first_ts : ps->first_ts;
    double last = ss->rows ? ss->last_ts : ps->last_ts;

    if (result == NULL || add_summaries(result, "process", pt, ps) < 0 ||
        add_summaries(result, "system", st, ss) < 0) {
        Py_XDECREF(result);
        return NULL;
    }
    timestamp = Py_BuildValue("{s:d,s:n}", "duration", run_duration(start, end, first, last),
                              "samples", (Py_ssize_t)(ps->rows > ss->rows ? ps->rows : ss->rows));
    if (timestamp == NULL || PyDict_SetItemString(result, "timestamp", timestamp) < 0) {
        Py_XDECREF(timestamp);
        Py_DECREF(result);
        return NULL;
    }
    Py_DECREF(timestamp);
    return result;
}

static PyObject *
core_stats(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"process", "system", "start_time", "end_time", NULL};
    PyObject *process, *system, *result = NULL;
    double start = 0, end = 0;
    ColumnHold pholds[STATS_MAX_COLUMNS], sholds[STATS_MAX_COLUMNS];
    TableColumns pt, st;
    TableStats ps, ss;
    int rc;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|dd", kwlist, &process, &system, &start,
                                     &end))
        return NULL;
    memset(pholds, 0, sizeof(pholds));
    memset(sholds, 0, sizeof(sholds));
    table_columns_init(&pt, process_columns, PC_COUNT);
    table_columns_init(&st, system_columns, SC_COUNT);
    if (hold_table(process, &pt, pholds) == 0 && hold_table(system, &st, sholds) == 0) {
        Py_BEGIN_ALLOW_THREADS
        rc = table_stats(&pt, start, &ps) || table_stats(&st, start, &ss);
        Py_END_ALLOW_THREADS
        if (rc)
            PyErr_NoMemory();
        else
            result = stats_dict(&pt, &ps, &st, &ss, start, end);
    }
    release_table(pholds, STATS_MAX_COLUMNS);
    release_table(sholds, STATS_MAX_COLUMNS);
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
    /* values is our own copy: the percentiles may reorder it in place */
    if (summarize(values, weights, (size_t)n, NULL, &s) < 0) {
        PyMem_Free(values);
        PyMem_Free(weights);
        return PyErr_NoMemory();
    }
    PyMem_Free(values);
    PyMem_Free(weights);
    return Py_BuildValue("{s:n,s:d,s:d,s:d,s:d,s:d,s:d,s:d}", "n", (Py_ssize_t)s.n, "mean", s.mean,
                         "min", s.min, "max", s.max, "sum", s.sum, "p50", s.p50, "p90", s.p90,
                         "p99", s.p99);
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
    return 1;
}

/* One stats() dict as RunFigures: the registry says which column feeds which resource. */
static int
run_figures_from_dict(PyObject *stats, RunFigures *run)
{
    double v;
    size_t k;
    int rc;

    memset(run, 0, sizeof(*run));
    for (k = 0; k < PC_COUNT; k++) {
        const ColumnSpec *spec = &process_columns[k];
        char key[96];
        if (spec->resource == RES_NONE)
            continue;
        snprintf(key, sizeof(key), "process_%s", spec->name);
        if ((rc = stat_value(stats, key, resource_stat_field(spec->resource), &v)) < 0)
            return -1;
        if (rc > 0)
            run_figures_set(run, spec, v);
    }
    if ((rc = stat_value(stats, "timestamp", "duration", &v)) < 0)
        return -1;
    run->duration = rc > 0 && isfinite(v) ? v : 0;
    return 0;
}

static PyObject *
core_recommend(PyObject *module, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "recommend() takes a list of stats() dicts");
    RunFigures *runs;
    Recommendation rec;
    Py_ssize_t i, n;
    int rc = 0;

    (void)module;
    if (seq == NULL)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    runs = PyMem_Malloc(n ? (size_t)n * sizeof(*runs) : 1);
    if (runs == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (i = 0; i < n && rc == 0; i++)
        rc = run_figures_from_dict(PySequence_Fast_GET_ITEM(seq, i), &runs[i]);
    Py_DECREF(seq);
    if (rc == 0 && recommend_runs(runs, (size_t)n, &rec) < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "not enough data to recommend resources: no process CPU and memory "
                        "samples yet (track for at least one interval, or pass historical_stats)");
        rc = -1;
    }
    PyMem_Free(runs);
    if (rc < 0)
        return NULL;
    return Py_BuildValue("{s:i,s:i,s:i,s:i}", "cpu", rec.cpu, "memory", rec.memory_mib, "gpu",
                         rec.gpu, "vram", rec.vram_mib);
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

/* combine_runs(values, peaks): the rule over runs for one figure, on a sequence of numbers */
static PyObject *
core_combine_runs(PyObject *module, PyObject *args)
{
    PyObject *values, *seq;
    RunCombiner c = {0, 0, 0};
    Py_ssize_t i;
    int peaks;
    double v;

    (void)module;
    if (!PyArg_ParseTuple(args, "Op:combine_runs", &values, &peaks))
        return NULL;
    if ((seq = PySequence_Fast(values, "combine_runs() takes a sequence of numbers")) == NULL)
        return NULL;
    for (i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (item == Py_None || PyBool_Check(item))
            continue; /* unknown: left out, like a value that is not finite */
        if ((v = PyFloat_AsDouble(item)) == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
        run_combiner_add(&c, v);
    }
    Py_DECREF(seq);
    v = run_combiner_value(&c, peaks);
    if (!isfinite(v))
        Py_RETURN_NONE;
    return PyFloat_FromDouble(v);
}

static PyMethodDef stats_functions[] = {
    {"combine_runs", (PyCFunction)core_combine_runs, METH_VARARGS,
     "combine_runs(values, peaks) -> the highest of the values (peaks) or their mean; None when "
     "none is a finite number."},
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
    PyObject *short_run = PyFloat_FromDouble(RECOMMEND_SHORT_RUN_S);

    if (short_run == NULL || PyModule_AddObject(module, "SHORT_RUN_S", short_run) < 0) {
        Py_XDECREF(short_run);
        return -1;
    }
    return PyModule_AddFunctions(module, stats_functions);
}
