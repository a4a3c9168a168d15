/* _core's functions for the rules written once in the portable core and shared by every
 * sampler and the exporter: the CPU-usage rate and the fold of rows (row_rules.c), the tick
 * schedule (schedule.c) and the "key value" cgroup files such as cpu.stat (cgroup_parse.c). */
#include "py_core.h"

#include <string.h>

#include "cgroup_parse.h"
#include "columns.h"
#include "row_rules.h"
#include "schedule.h"

static PyObject *
core_cpu_rate(PyObject *self, PyObject *args)
{
    double cpu_s, dt, cores;

    (void)self;
    if (!PyArg_ParseTuple(args, "ddd:cpu_rate", &cpu_s, &dt, &cores))
        return NULL;
    return PyFloat_FromDouble(row_cpu_rate(cpu_s, dt, ROW_CLOCK_TICK_S, cores));
}

/* the columns of the table named `table`: their count in *n, NULL with ValueError if none */
static const ColumnSpec *
table_spec(const char *table, int *n)
{
    if (strcmp(table, "process") == 0) {
        *n = PC_COUNT;
        return process_columns;
    }
    if (strcmp(table, "system") == 0) {
        *n = SC_COUNT;
        return system_columns;
    }
    PyErr_Format(PyExc_ValueError, "no table '%s': the tables are 'process' and 'system'", table);
    return NULL;
}

/* row i of rows as a new C array of n doubles (PyMem): NULL with an exception */
static double *
row_at(PyObject *rows, Py_ssize_t i, int n, const char *table)
{
    double *row;
    Py_ssize_t len;

    if (rt_as_doubles(PySequence_Fast_GET_ITEM(rows, i), "fold_rows: a row", &row, &len) < 0)
        return NULL;
    if (len != n) {
        PyMem_Free(row);
        PyErr_Format(PyExc_ValueError, "fold_rows: a row of the %s table has %d values, got %zd",
                     table, n, len);
        return NULL;
    }
    return row;
}

static PyObject *
list_of(const double *row, int n)
{
    PyObject *list = PyList_New(n);
    int i;

    for (i = 0; list != NULL && i < n; i++) {
        PyObject *v = PyFloat_FromDouble(row[i]);
        if (v == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, v);
    }
    return list;
}

static PyObject *
core_fold_rows(PyObject *self, PyObject *args)
{
    const char *table;
    PyObject *rows_obj, *rows, *out = NULL;
    double dt, cores, *into = NULL, *add;
    const ColumnSpec *spec;
    Py_ssize_t i, nrows;
    int n;

    (void)self;
    if (!PyArg_ParseTuple(args, "sOdd:fold_rows", &table, &rows_obj, &dt, &cores) ||
        (spec = table_spec(table, &n)) == NULL)
        return NULL;
    rows = PySequence_Fast(rows_obj, "fold_rows: rows must be a sequence of rows");
    if (rows == NULL)
        return NULL;
    nrows = PySequence_Fast_GET_SIZE(rows);
    if (nrows == 0)
        PyErr_SetString(PyExc_ValueError, "fold_rows: no rows to fold");
    else if ((into = row_at(rows, 0, n, table)) != NULL) {
        for (i = 1; i < nrows; i++) {
            if ((add = row_at(rows, i, n, table)) == NULL)
                break;
            row_fold(spec, n, into, add, dt, ROW_CLOCK_TICK_S, cores);
            PyMem_Free(add);
        }
        if (i == nrows)
            out = list_of(into, n);
        PyMem_Free(into);
    }
    Py_DECREF(rows);
    return out;
}

static PyObject *
core_next_tick(PyObject *self, PyObject *args)
{
    double start, previous, now, interval;

    (void)self;
    if (!PyArg_ParseTuple(args, "dddd:next_tick", &start, &previous, &now, &interval))
        return NULL;
    if (!(interval > 0)) {
        PyErr_SetString(PyExc_ValueError, "next_tick: the interval must be above 0 seconds");
        return NULL;
    }
    return PyFloat_FromDouble(schedule_next_tick(start, previous, now, interval));
}

static PyObject *
core_folds_into_last(PyObject *self, PyObject *args)
{
    double dt, interval;
    int has_rows, may_fold;

    (void)self;
    if (!PyArg_ParseTuple(args, "ddpp:folds_into_last", &dt, &interval, &has_rows, &may_fold))
        return NULL;
    return PyBool_FromLong(schedule_folds(dt, interval, has_rows, may_fold));
}

static PyObject *
core_takes_final(PyObject *self, PyObject *args)
{
    double since_last;
    int has_rows;

    (void)self;
    if (!PyArg_ParseTuple(args, "dp:takes_final", &since_last, &has_rows))
        return NULL;
    return PyBool_FromLong(schedule_takes_final(since_last, has_rows));
}

static PyObject *
core_capture_period(PyObject *self, PyObject *args)
{
    double elapsed, tick;

    (void)self;
    if (!PyArg_ParseTuple(args, "dd:capture_period", &elapsed, &tick))
        return NULL;
    return PyFloat_FromDouble(schedule_capture_period(elapsed, tick));
}

static PyObject *
core_capture_serves_tick(PyObject *self, PyObject *args)
{
    double elapsed, since, tick;

    (void)self;
    if (!PyArg_ParseTuple(args, "ddd:capture_serves_tick", &elapsed, &since, &tick))
        return NULL;
    return PyBool_FromLong(schedule_serves_tick(elapsed, since, tick));
}

static PyObject *
core_cgroup_keyed(PyObject *self, PyObject *arg)
{
    const char *text, *p, *key;
    unsigned long long value;
    size_t klen;
    PyObject *out;

    (void)self;
    if ((text = PyUnicode_AsUTF8(arg)) == NULL || (out = PyDict_New()) == NULL)
        return NULL;
    for (p = text; p != NULL && *p; p = parse_cgroup_next_line(p)) {
        PyObject *k, *v;
        int failed;
        if (parse_cgroup_keyed_line(p, &key, &klen, &value) != 0)
            continue;
        k = PyUnicode_DecodeUTF8(key, (Py_ssize_t)klen, "replace");
        v = PyLong_FromUnsignedLongLong(value);
        failed = k == NULL || v == NULL || PyDict_SetItem(out, k, v) < 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (failed) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

static PyMethodDef rule_functions[] = {
    {"cgroup_keyed", (PyCFunction)core_cgroup_keyed, METH_O,
     "cgroup_keyed(text) -> {key: value} of the \"key value\" lines of a cgroup file "
     "(cpu.stat, memory.stat, memory.events): the C readers' parser (csrc/cgroup_parse.c)."},
    {"next_tick", (PyCFunction)core_next_tick, METH_VARARGS,
     "next_tick(start, previous, now, interval) -> the next tick of the grid start + k * "
     "interval after previous, or the first after now when it has passed (csrc/schedule.c)."},
    {"folds_into_last", (PyCFunction)core_folds_into_last, METH_VARARGS,
     "folds_into_last(dt, interval, has_rows, may_fold) -> True when a (final) reading dt "
     "seconds after the last row folds into it (csrc/schedule.c)."},
    {"takes_final", (PyCFunction)core_takes_final, METH_VARARGS,
     "takes_final(since_last, has_rows) -> True when stop() takes a last reading "
     "(csrc/schedule.c)."},
    {"capture_period", (PyCFunction)core_capture_period, METH_VARARGS,
     "capture_period(elapsed, tick) -> seconds from a stack capture made elapsed seconds into "
     "the run to the next one of the captures' own schedule, 0 when the ticks (tick seconds "
     "apart) are dense enough (csrc/schedule.c)."},
    {"capture_serves_tick", (PyCFunction)core_capture_serves_tick, METH_VARARGS,
     "capture_serves_tick(elapsed, since, tick) -> False when a long run's thinning skips the "
     "stack capture of a tick elapsed seconds into the run, since seconds after the last "
     "capture (csrc/schedule.c)."},
    {"cpu_rate", (PyCFunction)core_cpu_rate, METH_VARARGS,
     "cpu_rate(cpu_s, dt, cores) -> cores in use: cpu_s over dt (at least one clock tick), at "
     "most cores (none when <= 0), 0 when dt <= 0 (csrc/row_rules.c)."},
    {"fold_rows", (PyCFunction)core_fold_rows, METH_VARARGS,
     "fold_rows(table, rows, dt, cores) -> the rows of a table folded into one by the registry's "
     "rules, the CPU usage over dt (the time they cover; <= 0: the last row's), capped at "
     "cores (csrc/row_rules.c)."},
    {NULL, NULL, 0, NULL},
};

/* 0, or -1 with an exception */
int
rt_add_rules(PyObject *module)
{
    if (rt_add_object(module, "CLOCK_TICK", PyFloat_FromDouble(ROW_CLOCK_TICK_S)))
        return -1;
    return PyModule_AddFunctions(module, rule_functions);
}
