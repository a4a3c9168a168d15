/* _core.change_points(), _core.chart_series(), _core.chart_times(): the report's per-row work
 * over a long run (the phases' detector, the charts' downsampling and their JSON numbers) in C,
 * over the stored columns without copying them. */
#include "py_core.h"

#include <math.h>
#include <string.h>

#include "chart.h"
#include "phases.h"

static PyObject *
core_change_points(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"values", "floor", "max_points", "min_len", NULL};
    PyObject *obj, *list = NULL;
    double floor, *scratch = NULL;
    Py_ssize_t max_points, min_len;
    size_t n, found = 0, i, points[PHASES_MAX_POINTS];
    const double *values;
    ColumnHold hold;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Odnn:change_points", kwlist, &obj, &floor,
                                     &max_points, &min_len))
        return NULL;
    if (max_points < 0 || min_len < 1) {
        PyErr_SetString(PyExc_ValueError, "change_points: max_points >= 0 and min_len >= 1");
        return NULL;
    }
    if (rt_hold_column(obj, "change_points values", &hold, &values, &n) < 0)
        return NULL;
    scratch = PyMem_RawMalloc(2 * (n + 1) * sizeof(double));
    if (scratch == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS;
    found = change_points(values, n, floor, (size_t)min_len, (size_t)max_points, scratch, points);
    Py_END_ALLOW_THREADS;
    list = PyList_New((Py_ssize_t)found);
    for (i = 0; list && i < found; i++) {
        PyObject *k = PyLong_FromSize_t(points[i]);
        if (k == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, k);
    }
done:
    PyMem_RawFree(scratch);
    rt_release_column(&hold);
    return list;
}

/* ---- JSON arrays of numbers -------------------------------------------------------------- */

/* Text grown in one buffer. */
typedef struct Json {
    char *data;
    size_t len, cap;
} Json;

/* 0, or -1 with MemoryError */
static int
json_put(Json *j, const char *text, size_t len)
{
    if (j->len + len > j->cap) {
        size_t cap = j->cap ? j->cap : 256;
        char *grown;
        while (cap < j->len + len)
            cap *= 2;
        grown = PyMem_Realloc(j->data, cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        j->data = grown;
        j->cap = cap;
    }
    memcpy(j->data + j->len, text, len);
    j->len += len;
    return 0;
}

/* 0, or -1: v as Python's format(v, spec) writes it ('g' or 'f' with precision digits). */
static int
json_format(Json *j, double v, char spec, int precision)
{
    char *text = PyOS_double_to_string(v, spec, precision, 0, NULL);
    int rc;

    if (text == NULL)
        return -1;
    rc = json_put(j, text, strlen(text));
    PyMem_Free(text);
    return rc;
}

/* The array "[v, ...]" of n values as str: a value (5 significant digits) or null for NaN and
 * infinities (as the report's Python did: 0 as "0"). times: t0 taken off and 3 decimals. */
static PyObject *
json_array(const double *values, size_t n, int times, double t0)
{
    Json j = {NULL, 0, 0};
    PyObject *text = NULL;
    size_t i;
    int rc = json_put(&j, "[", 1);

    for (i = 0; rc == 0 && i < n; i++) {
        double v = values[i];
        if (i > 0)
            rc = json_put(&j, ",", 1);
        if (rc < 0)
            break;
        if (times)
            rc = json_format(&j, v - t0, 'f', 3);
        else if (!isfinite(v))
            rc = json_put(&j, "null", 4);
        else if (v == 0)
            rc = json_put(&j, "0", 1);
        else
            rc = json_format(&j, v, 'g', 5);
    }
    if (rc == 0 && json_put(&j, "]", 1) == 0)
        text = PyUnicode_DecodeASCII(j.data, (Py_ssize_t)j.len, "strict");
    PyMem_Free(j.data);
    return text;
}

/* ---- the charts -------------------------------------------------------------------------- */

static const char *const DRAWING_NAMES[] = {"as_is", "kib_as_mib", "per_second", "at_most"};

/* 0, or -1 with ValueError */
static int
drawing_of(const char *name, ChartDrawing *out)
{
    size_t i;

    for (i = 0; i < sizeof(DRAWING_NAMES) / sizeof(DRAWING_NAMES[0]); i++) {
        if (strcmp(name, DRAWING_NAMES[i]) == 0) {
            *out = (ChartDrawing)i;
            return 0;
        }
    }
    PyErr_Format(PyExc_ValueError,
                 "chart_series: drawing '%s' is not one of as_is, kib_as_mib, per_second, at_most",
                 name);
    return -1;
}

/* The downsampled points of col as a JSON array (times: as times from t0). */
static PyObject *
chart_json(const ChartColumn *col, Py_ssize_t max_points, int times, double t0)
{
    size_t points = chart_points(col->n, (size_t)max_points);
    double *out = PyMem_Malloc((points ? points : 1) * sizeof(double));
    PyObject *text;

    if (out == NULL)
        return PyErr_NoMemory();
    if (times)
        chart_times(col->values, col->n, (size_t)max_points, out);
    else
        chart_downsample(col, (size_t)max_points, out);
    text = json_array(out, points, times, t0);
    PyMem_Free(out);
    return text;
}

static PyObject *
core_chart_series(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"values",   "drawing", "max_points", "timestamps",
                             "interval", "limit",   NULL};
    PyObject *obj, *stamps = Py_None, *text = NULL;
    const char *drawing;
    Py_ssize_t max_points;
    ChartColumn col = {NULL, NULL, 0, CHART_AS_IS, 1.0, 0.0};
    ColumnHold vhold, thold;
    size_t nt = 0;

    (void)module;
    memset(&thold, 0, sizeof(thold));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Osn|Odd:chart_series", kwlist, &obj, &drawing,
                                     &max_points, &stamps, &col.interval, &col.limit))
        return NULL;
    if (max_points < 0) {
        PyErr_SetString(PyExc_ValueError, "chart_series: max_points must be >= 0");
        return NULL;
    }
    if (drawing_of(drawing, &col.drawing) < 0)
        return NULL;
    if (rt_hold_column(obj, "chart_series values", &vhold, &col.values, &col.n) < 0)
        return NULL;
    if (col.drawing == CHART_PER_SECOND) {
        if (stamps == Py_None) {
            PyErr_SetString(PyExc_ValueError, "chart_series: per_second needs the timestamps");
            goto done;
        }
        if (rt_hold_column(stamps, "chart_series timestamps", &thold, &col.timestamps, &nt) < 0)
            goto done;
        if (nt != col.n) {
            PyErr_SetString(PyExc_ValueError,
                            "chart_series: per_second needs as many timestamps as values");
            goto done;
        }
    }
    text = chart_json(&col, max_points, 0, 0.0);
done:
    rt_release_column(&thold);
    rt_release_column(&vhold);
    return text;
}

static PyObject *
core_chart_times(PyObject *module, PyObject *args)
{
    PyObject *obj, *text;
    double t0;
    Py_ssize_t max_points;
    ChartColumn col = {NULL, NULL, 0, CHART_AS_IS, 1.0, 0.0};
    ColumnHold hold;

    (void)module;
    if (!PyArg_ParseTuple(args, "Odn:chart_times", &obj, &t0, &max_points))
        return NULL;
    if (max_points < 0) {
        PyErr_SetString(PyExc_ValueError, "chart_times: max_points must be >= 0");
        return NULL;
    }
    if (rt_hold_column(obj, "chart_times timestamps", &hold, &col.values, &col.n) < 0)
        return NULL;
    text = chart_json(&col, max_points, 1, t0);
    rt_release_column(&hold);
    return text;
}

static PyMethodDef series_functions[] = {
    {"change_points", (PyCFunction)(void (*)(void))core_change_points, METH_VARARGS | METH_KEYWORDS,
     "change_points(values, floor, max_points, min_len) -> [index, ...]: where the mean of "
     "values steps by more than floor (binary segmentation, parts of at least min_len)."},
    {"chart_series", (PyCFunction)(void (*)(void))core_chart_series, METH_VARARGS | METH_KEYWORDS,
     "chart_series(values, drawing, max_points, timestamps=None, interval=1.0, limit=0.0) -> "
     "str: the JSON array of the column as drawn ('as_is', 'kib_as_mib', 'per_second', "
     "'at_most'), at most max_points points (each bucket's lowest and highest)."},
    {"chart_times", (PyCFunction)core_chart_times, METH_VARARGS,
     "chart_times(timestamps, t0, max_points) -> str: the JSON array of the same points' "
     "times, t0 taken off, 3 decimals."},
    {NULL, NULL, 0, NULL},
};

/* 0, or -1 */
int
rt_add_series(PyObject *module)
{
    return PyModule_AddFunctions(module, series_functions);
}
