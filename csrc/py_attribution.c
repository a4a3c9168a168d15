/* _core.code_segments(), _core.code_busiest(), _core.code_totals(): the code profile's
 * attribution (attribution.h) over a run's stack samples in C, so that a day of samples is
 * attributed in milliseconds (resource_tracker/code_profile.py states the rule and calls these).
 * Segments, entries and totals cross as bytes of float64 values (ids are exact as doubles). */
#include "py_core.h"

#include <stdint.h>
#include <string.h>

#include "attribution.h"

/* A number of a sample row as an index: 0, or -1 when it is not an integer >= 0 (no error). */
static int
sample_index(PyObject *row, Py_ssize_t i, size_t *out)
{
    Py_ssize_t v = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(row, i));

    if (v < 0) {
        PyErr_Clear();
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

/* A sample from its four numbers into x (the *ns-th kept, counted) when it names a stack of
 * n_stacks: 1, else 0. */
static int
take_sample(size_t row, size_t thread, size_t stack, double cpu_us, const double *main_threads,
            size_t n_threads, size_t n_stacks, AttrSample *x, size_t *ns)
{
    if (stack >= n_stacks || !(cpu_us >= 0))
        return 0;
    x->order = (*ns)++;
    x->row = row;
    x->stack = stack;
    x->cpu = cpu_us / 1e6;
    x->is_main = thread < n_threads && main_threads[thread] != 0;
    x->thread = thread;
    return 1;
}

/* The samples of a compact record (Sampler.stacks(True): 4 uint32 a sample) as AttrSamples. */
static int
read_compact(PyObject *samples, const double *main_threads, size_t n_threads, size_t n_stacks,
             AttrSample **out, size_t *ns)
{
    const uint32_t *q = (const uint32_t *)PyBytes_AS_STRING(samples);
    size_t i, n = (size_t)PyBytes_GET_SIZE(samples) / (4 * sizeof(uint32_t));
    AttrSample *s = PyMem_Malloc((n ? n : 1) * sizeof(*s));

    *out = s;
    *ns = 0;
    if (s == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < n; i++, q += 4)
        take_sample(q[0], q[1], q[2], q[3], main_threads, n_threads, n_stacks, s + *ns, ns);
    return 0;
}

/* The samples [[row, thread, stack, cpu_us], ...] (or a compact record's bytes) as AttrSamples
 * (PyMem; those naming no stack of n_stacks or a bad row are left out): 0, or -1 with an
 * exception. */
static int
read_samples(PyObject *samples, const double *main_threads, size_t n_threads, size_t n_stacks,
             AttrSample **out, size_t *ns)
{
    PyObject *seq;
    Py_ssize_t i, n;
    AttrSample *s;

    if (PyBytes_Check(samples))
        return read_compact(samples, main_threads, n_threads, n_stacks, out, ns);
    seq = PySequence_Fast(samples, "code_segments: samples must be a list");
    if (seq == NULL)
        return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    s = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(*s));
    *ns = 0;
    for (i = 0; s && i < n; i++) {
        PyObject *row = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, i), "a sample is a list");
        size_t r, thread, stack;
        if (row == NULL || PySequence_Fast_GET_SIZE(row) != 4) {
            Py_XDECREF(row);
            PyErr_Clear();
            continue;
        }
        if (sample_index(row, 0, &r) == 0 && sample_index(row, 1, &thread) == 0 &&
            sample_index(row, 2, &stack) == 0)
            take_sample(r, thread, stack, PyFloat_AsDouble(PySequence_Fast_GET_ITEM(row, 3)),
                        main_threads, n_threads, n_stacks, s + *ns, ns);
        PyErr_Clear();
        Py_DECREF(row);
    }
    Py_DECREF(seq);
    if (s == NULL)
        PyErr_NoMemory();
    *out = s;
    return s ? 0 : -1;
}

/* Bytes of n float64 values (resized to used) or NULL with MemoryError. */
static PyObject *
doubles(size_t n)
{
    return PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n ? n : 1) * sizeof(double)));
}

static int
shrink(PyObject **bytes, size_t n)
{
    return _PyBytes_Resize(bytes, (Py_ssize_t)(n * sizeof(double)));
}

enum { COL_TIME, COL_CPU, COL_MEMORY, COL_GPU, COL_MAIN, COL_OTHER_T, COL_OTHER_C, N_COLS };

static PyObject *
segments_of(PyObject *samples, const double **c, const size_t *len, size_t n_stacks,
            AttrColumns *cols)
{
    AttrSample *s = NULL;
    size_t ns = 0, nseg = 0, nent = 0;
    PyObject *segs = NULL, *ents = NULL, *out = NULL;
    int rc = -1;

    if (read_samples(samples, c[COL_MAIN], len[COL_MAIN], n_stacks, &s, &ns) < 0)
        return NULL;
    segs = doubles(ns * SEG_FIELDS);
    ents = doubles(ns * ENTRY_FIELDS);
    if (segs && ents) {
        double *sp = (double *)PyBytes_AS_STRING(segs), *ep = (double *)PyBytes_AS_STRING(ents);
        Py_BEGIN_ALLOW_THREADS;
        rc = attr_segments(s, ns, cols, sp, &nseg, ep, &nent);
        Py_END_ALLOW_THREADS;
        if (rc < 0)
            PyErr_NoMemory();
    }
    if (rc == 0 && shrink(&segs, nseg * SEG_FIELDS) == 0 && shrink(&ents, nent * ENTRY_FIELDS) == 0)
        out = PyTuple_Pack(2, segs, ents);
    PyMem_Free(s);
    Py_XDECREF(segs);
    Py_XDECREF(ents);
    return out;
}

static PyObject *
core_code_segments(PyObject *module, PyObject *args)
{
    PyObject *samples, *obj[N_COLS];
    ColumnHold hold[N_COLS];
    const double *c[N_COLS];
    size_t len[N_COLS];
    Py_ssize_t n_stacks, k;
    AttrColumns cols;
    PyObject *out = NULL;
    int agent, held = 0;
    static const char *what[N_COLS] = {"timestamp",    "cpu",         "memory",          "gpu",
                                       "main_threads", "other_times", "other_cumulative"};

    (void)module;
    memset(&cols, 0, sizeof(cols));
    if (!PyArg_ParseTuple(args, "OOnOOOOdpOO:code_segments", &samples, &obj[COL_MAIN], &n_stacks,
                          &obj[COL_TIME], &obj[COL_CPU], &obj[COL_MEMORY], &obj[COL_GPU],
                          &cols.start_time, &agent, &obj[COL_OTHER_T], &obj[COL_OTHER_C]))
        return NULL;
    for (; held < N_COLS; held++)
        if (rt_hold_column(obj[held], what[held], &hold[held], &c[held], &len[held]) < 0)
            goto done;
    if (n_stacks < 0 || len[COL_CPU] != len[COL_TIME] || len[COL_MEMORY] != len[COL_TIME] ||
        len[COL_GPU] != len[COL_TIME] || len[COL_OTHER_C] != len[COL_OTHER_T] + 1) {
        PyErr_SetString(PyExc_ValueError, "code_segments: the columns must be of one length "
                                          "(other_cumulative one longer than other_times)");
        goto done;
    }
    cols.timestamp = c[COL_TIME];
    cols.cpu = c[COL_CPU];
    cols.memory = c[COL_MEMORY];
    cols.gpu = c[COL_GPU];
    cols.n = len[COL_TIME];
    cols.agent = agent;
    cols.other_times = c[COL_OTHER_T];
    cols.other_cumulative = c[COL_OTHER_C];
    cols.n_other = len[COL_OTHER_T];
    out = segments_of(samples, c, len, (size_t)n_stacks, &cols);
done:
    for (k = 0; k < held; k++)
        rt_release_column(&hold[k]);
    return out;
}

/* The segments and entries (bytes from code_segments) as C arrays: 0, or -1 with an error. */
static int
hold_segments(PyObject *segs, PyObject *ents, ColumnHold *hold, const double **s, size_t *ns,
              const double **e, size_t *ne)
{
    if (rt_hold_column(segs, "segments", &hold[0], s, ns) < 0)
        return -1;
    if (rt_hold_column(ents, "entries", &hold[1], e, ne) < 0) {
        rt_release_column(&hold[0]);
        return -1;
    }
    *ns /= SEG_FIELDS;
    *ne /= ENTRY_FIELDS;
    return 0;
}

static PyObject *
core_code_busiest(PyObject *module, PyObject *args)
{
    PyObject *segs, *ents, *pref, *out = NULL;
    ColumnHold hold[3];
    const double *s, *e, *p;
    size_t ns, ne, np;

    (void)module;
    if (!PyArg_ParseTuple(args, "OOO:code_busiest", &segs, &ents, &pref) ||
        hold_segments(segs, ents, hold, &s, &ns, &e, &ne) < 0)
        return NULL;
    if (rt_hold_column(pref, "preferred", &hold[2], &p, &np) == 0) {
        out = doubles(ns);
        if (out && shrink(&out, ns) == 0)
            attr_busiest(s, ns, e, ne, p, np, (double *)PyBytes_AS_STRING(out));
        rt_release_column(&hold[2]);
    }
    rt_release_column(&hold[0]);
    rt_release_column(&hold[1]);
    return out;
}

/* key_first holds n_stacks + 1 rising offsets into n_keys keys */
static int
offsets_fit(const double *first, size_t len, size_t n_stacks, size_t n_keys)
{
    size_t i;

    if (len != n_stacks + 1 || first[0] < 0)
        return 0;
    for (i = 1; i < len; i++)
        if (!(first[i] >= first[i - 1] && first[i] <= (double)n_keys))
            return 0;
    return 1;
}

static PyObject *
core_code_totals(PyObject *module, PyObject *args)
{
    PyObject *segs, *ents, *obj[3], *out = NULL;
    ColumnHold hold[5];
    const double *s, *e, *k[3];
    size_t ns, ne, len[3], *seen = NULL;
    double start, end;
    Py_ssize_t n_keys;
    AttrKeys keys;
    int held = 0;

    (void)module;
    if (!PyArg_ParseTuple(args, "OOOOOndd:code_totals", &segs, &ents, &obj[0], &obj[1], &obj[2],
                          &n_keys, &start, &end) ||
        hold_segments(segs, ents, hold, &s, &ns, &e, &ne) < 0)
        return NULL;
    for (; held < 3; held++)
        if (rt_hold_column(obj[held], "keys", &hold[2 + held], &k[held], &len[held]) < 0)
            goto done;
    keys.key_first = k[0];
    keys.keys = k[1];
    keys.self_key = k[2];
    keys.n_stacks = len[2];
    keys.n_keys = n_keys > 0 ? (size_t)n_keys : 0;
    if (!offsets_fit(k[0], len[0], len[2], len[1])) {
        PyErr_SetString(PyExc_ValueError, "code_totals: key_first must have one offset a stack "
                                          "and one more, rising, within keys");
        goto done;
    }
    seen = PyMem_Calloc(keys.n_keys ? keys.n_keys : 1, sizeof(*seen));
    out = seen ? doubles(keys.n_keys * TOTAL_FIELDS) : PyErr_NoMemory();
    if (out && shrink(&out, keys.n_keys * TOTAL_FIELDS) == 0)
        attr_totals(s, ns, e, ne, &keys, start, end, (double *)PyBytes_AS_STRING(out), seen);
done:
    PyMem_Free(seen);
    while (held-- > 0)
        rt_release_column(&hold[2 + held]);
    rt_release_column(&hold[0]);
    rt_release_column(&hold[1]);
    return out;
}

static PyObject *
core_code_groups(PyObject *module, PyObject *args)
{
    PyObject *obj[4], *out = NULL;
    ColumnHold hold[4];
    const double *c[4];
    size_t len[4];
    Py_ssize_t n_groups;
    double interval, start, end;
    int held = 0;

    (void)module;
    if (!PyArg_ParseTuple(args, "OOOOnddd:code_groups", &obj[0], &obj[1], &obj[2], &obj[3],
                          &n_groups, &interval, &start, &end))
        return NULL;
    for (; held < 4; held++)
        if (rt_hold_column(obj[held], "code_groups", &hold[held], &c[held], &len[held]) < 0)
            goto done;
    if (n_groups < 0 || len[1] != len[0] || len[2] != len[0]) {
        PyErr_SetString(PyExc_ValueError, "code_groups: codes, times and memory of one length");
        goto done;
    }
    out = doubles((size_t)n_groups * GROUP_FIELDS);
    if (out && shrink(&out, (size_t)n_groups * GROUP_FIELDS) == 0)
        attr_groups(c[0], c[1], c[2], len[0], c[3], len[3], (size_t)n_groups, interval, start, end,
                    (double *)PyBytes_AS_STRING(out));
done:
    while (held-- > 0)
        rt_release_column(&hold[held]);
    return out;
}

static PyMethodDef attribution_functions[] = {
    {"code_segments", (PyCFunction)core_code_segments, METH_VARARGS,
     "code_segments(samples, main_threads, n_stacks, timestamp, cpu, memory, gpu, start_time, "
     "agent, other_times, other_cumulative) -> (segments, entries): the attributed segments of "
     "a process's stack samples, as bytes of float64 (6 values a segment, 4 an entry)."},
    {"code_busiest", (PyCFunction)core_code_busiest, METH_VARARGS,
     "code_busiest(segments, entries, preferred) -> bytes: each segment's busiest stack among "
     "those with preferred[stack] != 0, else among all (float64 each)."},
    {"code_totals", (PyCFunction)core_code_totals, METH_VARARGS,
     "code_totals(segments, entries, key_first, keys, self_key, n_keys, start, end) -> bytes: the "
     "figures of each code location over the segments ending in (start, end] (8 float64 a "
     "location)."},
    {"code_groups", (PyCFunction)core_code_groups, METH_VARARGS,
     "code_groups(codes, times, memory, group_of, n_groups, interval, start, end) -> bytes: "
     "the intervals ending in (start, end] whose code has a group, summed by group (6 float64 "
     "a group: count, first, seconds, peak, peak_at, growth)."},
    {NULL, NULL, 0, NULL},
};

/* 0, or -1 */
int
rt_add_attribution(PyObject *module)
{
    return PyModule_AddFunctions(module, attribution_functions);
}
