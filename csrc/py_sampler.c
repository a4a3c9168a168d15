/* _core.Sampler: the Python face of the C sampler (sampler.h). */
#include "py_core.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "columns.h"
#include "sampler.h"
#include "skip_threads.h"
#include "stacks.h"
#include "term_hook.h"

typedef struct {
    EngineObject head; /* the sampler's engine (py_core.h), for the shared methods */
    Sampler *sampler;
    long pid;
    StackCapture *stacks; /* the code profile's captures: owned by the sampler (its row hook) */
} SamplerObject;

/* Copies an optional str argument into a fixed buffer: 0, or -1 with ValueError. */
static int
copy_path(const char *arg, const char *fallback, char *dst, size_t size, const char *what)
{
    const char *src = arg ? arg : fallback;
    if (strlen(src) >= size) {
        PyErr_Format(PyExc_ValueError, "%s is too long (at most %zu characters)", what, size - 1);
        return -1;
    }
    snprintf(dst, size, "%s", src);
    return 0;
}

static int
sampler_init_py(SamplerObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"pid",
                             "interval",
                             "children",
                             "track_processes",
                             "track_system",
                             "proc_root",
                             "sys_root",
                             "nvml_library",
                             "adopted_by",
                             "gpu_from_first_row",
                             "discovery",
                             "amd_library",
                             NULL};
    PyObject *pid_obj;
    long pid, adopted_by = 0;
    int overflow = 0;
    double interval;
    int children = 1, track_processes = 1, track_system = 1, gpu_from_first_row = 0;
    const char *proc_root = NULL, *sys_root = NULL, *nvml = NULL, *discovery = NULL, *amd = NULL;
    CollectorConfig cfg;

    if (self->sampler) {
        PyErr_SetString(PyExc_RuntimeError, "Sampler is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Od|pppzzzlpzz", kwlist, &pid_obj, &interval,
                                     &children, &track_processes, &track_system, &proc_root,
                                     &sys_root, &nvml, &adopted_by, &gpu_from_first_row, &discovery,
                                     &amd))
        return -1;
    if (discovery != NULL && strcmp(discovery, "auto") != 0 && strcmp(discovery, "listing") != 0) {
        PyObject *given = PyUnicode_DecodeUTF8(discovery, (Py_ssize_t)strlen(discovery), "replace");
        if (given != NULL)
            PyErr_Format(PyExc_ValueError,
                         "discovery must be 'auto' (the children lists where procfs has them) "
                         "or 'listing' (list procfs), got %R",
                         given);
        Py_XDECREF(given);
        return -1;
    }
    if (!(interval >= SAMPLER_MIN_INTERVAL && interval <= SAMPLER_MAX_INTERVAL)) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "interval must be between %g and %g seconds, got %g; use e.g. 1.0",
                 SAMPLER_MIN_INTERVAL, SAMPLER_MAX_INTERVAL, interval);
        PyErr_SetString(PyExc_ValueError, msg);
        return -1;
    }
    pid = PyLong_Check(pid_obj) ? PyLong_AsLongAndOverflow(pid_obj, &overflow) : -1;
    if (pid == -1 && PyErr_Occurred())
        return -1;
    if (!PyLong_Check(pid_obj) || PyBool_Check(pid_obj) || overflow || pid <= 0 ||
        pid > 0x7fffffffL) {
        PyErr_Format(PyExc_ValueError,
                     "pid must be a positive process id (at most 2147483647), "
                     "got %R",
                     pid_obj);
        return -1;
    }
    if (adopted_by < 0 || adopted_by > 0x7fffffffL) {
        PyErr_Format(PyExc_ValueError, "adopted_by must be a process id, got %ld", adopted_by);
        return -1;
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.pid = (pid_t)pid;
    cfg.adopter = (pid_t)adopted_by;
    cfg.follow_children = children;
    cfg.track_processes = track_processes;
    cfg.track_system = track_system;
    cfg.gpu_from_first_row = gpu_from_first_row;
    cfg.child_listing = discovery != NULL && strcmp(discovery, "listing") == 0;
    if (copy_path(proc_root, "/proc", cfg.proc_root, sizeof(cfg.proc_root), "proc_root") ||
        copy_path(sys_root, "", cfg.sys_root, sizeof(cfg.sys_root), "sys_root") ||
        copy_path(nvml, "", cfg.nvml_library, sizeof(cfg.nvml_library), "nvml_library") ||
        copy_path(amd, "", cfg.amd_library, sizeof(cfg.amd_library), "amd_library"))
        return -1;
    self->sampler = sampler_new(&cfg, interval);
    if (self->sampler == NULL) {
        PyErr_SetFromErrnoWithFilename(PyExc_OSError, cfg.proc_root);
        return -1;
    }
    self->head.engine = self->sampler->engine;
    self->pid = pid;
    return 0;
}

static void
sampler_dealloc(SamplerObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    if (self->sampler) {
        rt_job_discard(sampler_take_after_baseline(self->sampler));
        Py_BEGIN_ALLOW_THREADS
        sampler_free(self->sampler);
        Py_END_ALLOW_THREADS
        self->sampler = NULL;
        self->head.engine = NULL;
    }
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

/* the sampler, or NULL with an exception when __init__ did not run */
static Sampler *
get_sampler(SamplerObject *self)
{
    return rt_engine_of((PyObject *)self) ? self->sampler : NULL;
}

static PyObject *
sampler_stop_py(SamplerObject *self, PyObject *unused)
{
    Sampler *s = get_sampler(self);

    (void)unused;
    if (s == NULL)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    engine_stop(s->engine);
    if (self->stacks) /* its last request served, its thread joined (the GIL is free here) */
        stacks_stop(self->stacks, STACKS_JOIN_WAIT_S);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *
sampler_record_stacks_py(SamplerObject *self, PyObject *args)
{
    Sampler *s = get_sampler(self);
    unsigned long main_ident;
    Py_ssize_t max_bytes = 0;

    if (s == NULL || !PyArg_ParseTuple(args, "k|n", &main_ident, &max_bytes))
        return NULL;
    if (max_bytes < 0) {
        PyErr_Format(PyExc_ValueError, "max_bytes must be >= 0, got %zd", max_bytes);
        return NULL;
    }
    if (self->stacks || engine_state(s->engine) != ENGINE_NEW) {
        PyErr_SetString(PyExc_RuntimeError, "record_stacks() is called once, before start()");
        return NULL;
    }
    self->stacks = stacks_new(main_ident, (size_t)max_bytes, s->engine->cfg.interval);
    if (self->stacks == NULL)
        return NULL;
    sampler_set_row_hook(s, stacks_request, stacks_release, self->stacks);
    Py_RETURN_NONE;
}

static PyObject *
sampler_stacks_py(SamplerObject *self, PyObject *args)
{
    int compact = 0;

    if (!PyArg_ParseTuple(args, "|p:stacks", &compact) || get_sampler(self) == NULL)
        return NULL;
    if (self->stacks == NULL)
        Py_RETURN_NONE;
    return stacks_record(self->stacks, compact);
}

/* A read-only float field of the Sampler, read under its lock. */
#define SAMPLER_FLOAT_GETTER(name, expr)                                                           \
    static PyObject *sampler_get_##name(SamplerObject *self, void *closure)                        \
    {                                                                                              \
        Sampler *s = get_sampler(self);                                                            \
        double v;                                                                                  \
        (void)closure;                                                                             \
        if (s == NULL)                                                                             \
            return NULL;                                                                           \
        engine_lock(s->engine);                                                                    \
        v = (expr);                                                                                \
        engine_unlock(s->engine);                                                                  \
        return PyFloat_FromDouble(v);                                                              \
    }

SAMPLER_FLOAT_GETTER(pss_seconds, s->pss_seconds)
SAMPLER_FLOAT_GETTER(pss_reads, (double)s->pss_reads)
SAMPLER_FLOAT_GETTER(memory_hwm, s->memory_hwm_kib)
SAMPLER_FLOAT_GETTER(read_errors, (double)s->read_errors)
SAMPLER_FLOAT_GETTER(io_denied, (double)s->io_denied)
SAMPLER_FLOAT_GETTER(tree_seen, (double)s->tree_seen)
SAMPLER_FLOAT_GETTER(tree_missed, (double)s->tree_missed)
SAMPLER_FLOAT_GETTER(pss_denied, (double)s->pss_denied)
SAMPLER_FLOAT_GETTER(listings, (double)s->listings)
SAMPLER_FLOAT_GETTER(probes, (double)s->probes)
SAMPLER_FLOAT_GETTER(children_scans, (double)s->children_scans)
SAMPLER_FLOAT_GETTER(wait_reads, (double)s->wait_reads)
SAMPLER_FLOAT_GETTER(wait_carried, (double)s->wait_carried)
SAMPLER_FLOAT_GETTER(list_failures, (double)s->list_failures)
SAMPLER_FLOAT_GETTER(children_lists, (double)s->children_lists)
SAMPLER_FLOAT_GETTER(fd_sheds, (double)s->fd_sheds)
SAMPLER_FLOAT_GETTER(kept_open, (double)s->kept_open)
SAMPLER_FLOAT_GETTER(fds_replaced, (double)s->fds_replaced)
SAMPLER_FLOAT_GETTER(powercap_zones, (double)s->powercap_zones)
SAMPLER_FLOAT_GETTER(powercap_unreadable, (double)s->powercap_unreadable)
SAMPLER_FLOAT_GETTER(powercap_wraps, (double)s->powercap_wraps)
SAMPLER_FLOAT_GETTER(gpu_energy_integrated, (double)s->gpu_energy_integrated)
SAMPLER_FLOAT_GETTER(gpu_machine_wide, (double)s->gpu_machine_wide)

/* use_cgroup(version, cpu_dir, memory_dir, io_dir, pids_dir=""): the tree's columns from
 * its cgroup */
static PyObject *
sampler_use_cgroup_py(SamplerObject *self, PyObject *args)
{
    Sampler *s = get_sampler(self);
    const char *dirs[CG_COLUMNS], *pids = "";
    CgroupTreeConfig cfg;
    int version, i;

    if (s == NULL || !PyArg_ParseTuple(args, "isss|s", &version, &dirs[CG_CPU], &dirs[CG_MEMORY],
                                       &dirs[CG_IO], &pids))
        return NULL;
    if (version != 1 && version != 2) {
        PyErr_Format(PyExc_ValueError, "cgroup version must be 1 or 2, got %d", version);
        return NULL;
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.version = version;
    for (i = 0; i < CG_COLUMNS; i++)
        if (copy_path(dirs[i], "", cfg.dir[i], sizeof(cfg.dir[i]), "cgroup directory"))
            return NULL;
    if (copy_path(pids, "", cfg.pids_dir, sizeof(cfg.pids_dir), "cgroup directory"))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    sampler_use_cgroup(s, &cfg);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* column col of table as a float64 memoryview over a copy */
static PyObject *
float64_column(const Table *table, size_t col)
{
    PyObject *raw = PyBytes_FromStringAndSize(table->nrows ? (const char *)table->cols[col] : "",
                                              (Py_ssize_t)(table->nrows * sizeof(double)));
    PyObject *view, *cast;

    if (raw == NULL)
        return NULL;
    view = PyMemoryView_FromObject(raw);
    Py_DECREF(raw);
    if (view == NULL)
        return NULL;
    cast = PyObject_CallMethod(view, "cast", "s", "d");
    Py_DECREF(view);
    return cast;
}

/* GPU i of the per-GPU series (the caller holds the sampler's lock) */
static PyObject *
gpu_device_dict(const Sampler *s, const Table *series, size_t i)
{
    const GpuInfo *info = &s->gpu_info[i];
    PyObject *name = PyUnicode_DecodeUTF8(info->name, (Py_ssize_t)strlen(info->name), "replace");
    PyObject *util = float64_column(series, 2 * i), *used = float64_column(series, 2 * i + 1);
    PyObject *dict = NULL;

    if (name && util && used)
        dict = Py_BuildValue("{s:n,s:O,s:d,s:O,s:O}", "index", (Py_ssize_t)i, "name", name,
                             "memory_total_mib", info->memory_mib, "utilization", util,
                             "memory_used_mib", used);
    Py_XDECREF(name);
    Py_XDECREF(util);
    Py_XDECREF(used);
    return dict;
}

/* [{"index", "name", "memory_total_mib", "utilization", "memory_used_mib"}]: one per GPU */
static PyObject *
sampler_gpu_devices_py(SamplerObject *self, PyObject *unused)
{
    Sampler *s = get_sampler(self);
    const Table *series;
    PyObject *list;
    size_t i;

    (void)unused;
    if (s == NULL)
        return NULL;
    series = engine_lock_table(s->engine, SAMPLER_GPUS);
    list = PyList_New((Py_ssize_t)(series->ncols / 2));
    for (i = 0; list && i < series->ncols / 2; i++) {
        PyObject *dict = gpu_device_dict(s, series, i);
        if (dict == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, dict);
    }
    engine_unlock(s->engine);
    return list;
}

/* {"tried", "nvidia", "amd", "amd_library"}: the GPU libraries read */
static PyObject *
sampler_gpu_sources_py(SamplerObject *self, PyObject *unused)
{
    Sampler *s = get_sampler(self);
    GpuSources sources;
    int tried;
    const char *amd_library;

    (void)unused;
    if (s == NULL)
        return NULL;
    engine_lock(s->engine);
    tried = s->gpu_tried;
    sources = s->gpu_sources;
    engine_unlock(s->engine);
    amd_library = sources.amd_library == GPU_SOURCE_AMDSMI     ? "amdsmi"
                  : sources.amd_library == GPU_SOURCE_ROCM_SMI ? "rocm_smi"
                                                               : NULL;
    return Py_BuildValue("{s:O,s:n,s:n,s:z}", "tried", tried ? Py_True : Py_False, "nvidia",
                         (Py_ssize_t)sources.nvidia, "amd", (Py_ssize_t)sources.amd, "amd_library",
                         amd_library);
}

/* {"source", "columns", "note", "cgroup_readings", "cgroup_reads", "walks"} */
static PyObject *
sampler_tree_source_py(SamplerObject *self, PyObject *unused)
{
    Sampler *s = get_sampler(self);
    char source[8], columns[CG_COLUMNS][8], note[256];
    unsigned long readings, reads, walks;

    (void)unused;
    if (s == NULL)
        return NULL;
    engine_lock(s->engine);
    memcpy(source, s->tree_source, sizeof(source));
    memcpy(columns, s->column_source, sizeof(columns));
    memcpy(note, s->tree_note, sizeof(note));
    readings = s->cgroup_readings;
    reads = s->cgroup_reads;
    walks = s->walks;
    engine_unlock(s->engine);
    return Py_BuildValue("{s:s,s:{s:s,s:s,s:s},s:z,s:k,s:k,s:k}", "source", source, "columns",
                         "cpu", columns[CG_CPU], "memory", columns[CG_MEMORY], "io", columns[CG_IO],
                         "note", note[0] ? note : NULL, "cgroup_readings", readings, "cgroup_reads",
                         reads, "walks", walks);
}

static PyGetSetDef sampler_getset[] = {
    RT_ENGINE_FIGURES,
    RT_FIGURE("cpu_seconds", RT_FIG_CPU,
              "CPU time of the tracker's threads (the sampler's, the stack captures')"),
    {"pss_seconds", (getter)sampler_get_pss_seconds, NULL, "time spent in smaps_rollup reads",
     NULL},
    {"pss_reads", (getter)sampler_get_pss_reads, NULL, "smaps_rollup reads", NULL},
    {"memory_hwm", (getter)sampler_get_memory_hwm, NULL,
     "KiB: the largest resident set one process of the workload had (kernel VmHWM)", NULL},
    RT_FIGURE("samples_taken", RT_FIG_SAMPLES, "readings incl. baseline"),
    {"read_errors", (getter)sampler_get_read_errors, NULL, "procfs reads that failed", NULL},
    RT_FIGURE("rows_dropped", RT_FIG_DROPPED,
              "rows lost because memory ran out (each later row tries again)"),
    {"tree_seen", (getter)sampler_get_tree_seen, NULL,
     "readings that found a live process of the tracked tree", NULL},
    {"tree_missed", (getter)sampler_get_tree_missed, NULL,
     "readings that found no process of the tree while its root lived (hidden from /proc)", NULL},
    {"io_denied", (getter)sampler_get_io_denied, NULL,
     "io reads refused (another user's processes: I/O bytes incomplete)", NULL},
    {"pss_denied", (getter)sampler_get_pss_denied, NULL,
     "smaps_rollup reads refused (another user's processes: shared memory counted in full)", NULL},
    {"listings", (getter)sampler_get_listings, NULL, "ticks that listed all of procfs", NULL},
    {"probes", (getter)sampler_get_probes, NULL,
     "ticks that found new processes by looking up the new pids only", NULL},
    {"children_scans", (getter)sampler_get_children_scans, NULL,
     "ticks that read the members' children lists (/proc/<pid>/task/<tid>/children)", NULL},
    {"wait_reads", (getter)sampler_get_wait_reads, NULL,
     "schedstat files read for the run-queue wait (cpu_wait)", NULL},
    {"wait_carried", (getter)sampler_get_wait_carried, NULL,
     "one-thread members' run-queue waits taken on unread (their CPU had not moved)", NULL},
    {"list_failures", (getter)sampler_get_list_failures, NULL,
     "times the children lists could not be read (the listing of procfs took over for 60 s)", NULL},
    {"children_lists", (getter)sampler_get_children_lists, NULL,
     "1 when new members are found from the members' children lists, 0 when by listing procfs",
     NULL},
    {"fd_sheds", (getter)sampler_get_fd_sheds, NULL,
     "times the kept-open descriptors were given back (the application neared RLIMIT_NOFILE)",
     NULL},
    {"kept_open", (getter)sampler_get_kept_open, NULL,
     "members whose stat and io stay open between readings", NULL},
    {"fds_replaced", (getter)sampler_get_fds_replaced, NULL,
     "kept-open descriptors found closed or replaced by the application (never read nor "
     "closed: the files were opened again by path)",
     NULL},
    {"powercap_zones", (getter)sampler_get_powercap_zones, NULL,
     "powercap (RAPL) zones read: CPU packages and DRAM", NULL},
    {"powercap_unreadable", (getter)sampler_get_powercap_unreadable, NULL,
     "powercap zone readings that failed (energy_uj unreadable: root-only on most kernels)", NULL},
    {"powercap_wraps", (getter)sampler_get_powercap_wraps, NULL,
     "powercap counters found wrapped (counted on through max_energy_range_uj)", NULL},
    {"gpu_energy_integrated", (getter)sampler_get_gpu_energy_integrated, NULL,
     "GPU readings whose energy was integrated from the power (no energy counter)", NULL},
    {"gpu_machine_wide", (getter)sampler_get_gpu_machine_wide, NULL,
     "readings of a GPU whose process figures are the GPU's (the library cannot attribute them)",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *
sampler_run_after_baseline_py(SamplerObject *self, PyObject *fn)
{
    Sampler *s = get_sampler(self);
    PyJob *job;

    if (s == NULL)
        return NULL;
    if (!PyCallable_Check(fn))
        return PyErr_Format(PyExc_TypeError, "run_after_baseline: fn must be callable, got %R", fn);
    if (engine_state(s->engine) != ENGINE_NEW) {
        PyErr_SetString(PyExc_RuntimeError, "run_after_baseline: call it before start()");
        return NULL;
    }
    if (PyInterpreterState_Get() != PyInterpreterState_Main()) { /* PyGILState: main only */
        PyErr_SetString(PyExc_RuntimeError,
                        "run_after_baseline: only in the main interpreter (run fn yourself)");
        return NULL;
    }
    job = rt_job_new(fn);
    if (job == NULL)
        return NULL;
    rt_job_discard(sampler_take_after_baseline(s)); /* a second call replaces the first */
    sampler_set_after_baseline(s, rt_job_spawn, job);
    Py_RETURN_NONE;
}

static PyObject *
sampler_take_after_baseline_py(SamplerObject *self, PyObject *unused)
{
    Sampler *s = get_sampler(self);
    PyJob *job;

    (void)unused;
    if (s == NULL)
        return NULL;
    job = sampler_take_after_baseline(s);
    if (job == NULL)
        Py_RETURN_NONE;
    return rt_job_take_fn(job);
}

static PyMethodDef sampler_methods[] = {
    {"start", rt_engine_start, METH_NOARGS, "Start the sampler thread."},
    {"run_after_baseline", (PyCFunction)sampler_run_after_baseline_py, METH_O,
     "run_after_baseline(fn): before start(): the sampler thread starts a thread that calls "
     "fn() right after its baseline reading (not in the caller of start())."},
    {"take_after_baseline", (PyCFunction)sampler_take_after_baseline_py, METH_NOARGS,
     "The fn of run_after_baseline() when no thread was started for it (the sampler stopped "
     "or never started before its baseline), now the caller's to run; else None."},
    {"use_cgroup", (PyCFunction)sampler_use_cgroup_py, METH_VARARGS,
     "use_cgroup(version, cpu_dir, memory_dir, io_dir, pids_dir=''): the tree's columns from "
     "its cgroup from the next reading on ('' leaves a column to the process walk; pids_dir: "
     "its own pids cgroup, whose task count says when cgroup.procs needs a read)."},
    {"tree_source", (PyCFunction)sampler_tree_source_py, METH_NOARGS,
     "Where the tree's columns come from: a dict (source, columns, note, counters)."},
    {"record_stacks", (PyCFunction)sampler_record_stacks_py, METH_VARARGS,
     "record_stacks(main_ident, max_bytes=0): before start(): also record the Python stacks of "
     "this interpreter at each tick (docs/code_profile.md); RuntimeError when it cannot."},
    {"stacks", (PyCFunction)sampler_stacks_py, METH_VARARGS,
     "stacks(compact=False): the stack record (frames, stacks, threads, samples, stats) as a "
     "dict, None when record_stacks() was not called; compact: the samples as bytes (4 uint32 a "
     "sample: row, thread, stack, cpu_us)."},
    {"stop", (PyCFunction)sampler_stop_py, METH_NOARGS,
     "Stop the thread (returns within STOP_TIMEOUT seconds) and release descriptors."},
    {"sample_now", rt_engine_sample_now, METH_NOARGS,
     "Take one reading in this thread: (process_row, system_row), or None for the baseline."},
    {"wait", rt_engine_wait, METH_VARARGS,
     "wait(n, timeout) -> bool: wait until n rows are stored."},
    {"columns", rt_engine_columns, METH_O,
     "columns('process'|'system') -> list of bytes, one float64 array per column."},
    {"gpu_sources", (PyCFunction)sampler_gpu_sources_py, METH_NOARGS,
     "gpu_sources() -> {'tried': bool, 'nvidia': int, 'amd': int, 'amd_library': 'amdsmi' | "
     "'rocm_smi' | None}: the GPU libraries read and their GPUs."},
    {"gpu_devices", (PyCFunction)sampler_gpu_devices_py, METH_NOARGS,
     "One dict per GPU (up to 16): index, name, memory_total_mib, and per row of the system "
     "table its utilization (%) and memory_used_mib (float64 memoryviews)."},
    {"column_views", rt_engine_column_views, METH_O,
     "column_views('process'|'system') -> list of read-only float64 memoryviews of the stored "
     "columns (no copy; the rows are final from then on), or None while not stopped."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot sampler_slots[] = {
    {Py_tp_doc,
     "Sampler(pid, interval, children=True, track_processes=True, track_system=True,"
     " proc_root=None, sys_root=None, nvml_library=None, adopted_by=0, gpu_from_first_row=False,"
     " discovery='auto', amd_library=None)\n\n"
     "adopted_by: a process id whose children also belong to the workload (a "
     "subreaper that started pid). discovery: 'auto' finds new members from their "
     "children lists where procfs has them, 'listing' by listing procfs."},
    {Py_tp_init, sampler_init_py},
    {Py_tp_dealloc, sampler_dealloc},
    {Py_tp_methods, sampler_methods},
    {Py_tp_getset, sampler_getset},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL},
};

static PyType_Spec sampler_spec = {
    .name = "resource_tracker._core.Sampler",
    .basicsize = sizeof(SamplerObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = sampler_slots,
};

/* 0, or -1 with an exception */
static int
add_float(PyObject *module, const char *name, double value)
{
    PyObject *obj = PyFloat_FromDouble(value);

    if (obj == NULL || PyModule_AddObject(module, name, obj) < 0) {
        Py_XDECREF(obj);
        return -1;
    }
    return 0;
}

static PyObject *
stop_stacks_py(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    stacks_shutdown_all();
    Py_RETURN_NONE;
}

static PyObject *
stacks_unsupported_py(PyObject *module, PyObject *unused)
{
    const char *why = stacks_unsupported();

    (void)module, (void)unused;
    if (why == NULL)
        Py_RETURN_NONE;
    return PyUnicode_FromString(why);
}

static PyObject *
skip_thread_stacks_py(PyObject *module, PyObject *args)
{
    unsigned long ident;
    int skip = 1;

    (void)module;
    if (!PyArg_ParseTuple(args, "k|p:skip_thread_stacks", &ident, &skip))
        return NULL;
    return PyBool_FromLong(skip_threads_set(ident, skip));
}

static PyObject *
term_hook_py(PyObject *module, PyObject *callable)
{
    int rc;

    (void)module;
    if (!PyCallable_Check(callable)) {
        PyErr_SetString(PyExc_TypeError, "term_hook(callable): callable must be callable");
        return NULL;
    }
    rc = term_hook_install(callable);
    return rc < 0 ? NULL : PyBool_FromLong(rc);
}

static PyMethodDef stacks_functions[] = {
    {"stop_stacks", stop_stacks_py, METH_NOARGS,
     "Stop every stack capture of this process and wait for one under way (for atexit)."},
    {"stacks_unsupported", stacks_unsupported_py, METH_NOARGS,
     "Why no stack can be recorded in this interpreter (a sentence), or None."},
    {"skip_thread_stacks", skip_thread_stacks_py, METH_VARARGS,
     "skip_thread_stacks(ident, skip=True) -> True when the Python thread ident (one of the "
     "tracker's own) is left out of every code profile of this process from now on (skip=False: "
     "sampled again, before it ends); False when too many are already (csrc/skip_threads.h)."},
    {"term_hook", term_hook_py, METH_O,
     "term_hook(callable) -> True when SIGTERM is answered from a thread of its own from now on "
     "(callable() called with the GIL, then SIGTERM's default action unless it returned False); "
     "False when SIGTERM's action is not the default or a hook is installed already "
     "(csrc/term_hook.h)."},
    {NULL, NULL, 0, NULL},
};

/* 0, or -1 with an exception */
int
rt_add_sampler(PyObject *module)
{
    PyObject *type = PyType_FromModuleAndSpec(module, &sampler_spec, NULL);

    if (type == NULL || PyModule_AddFunctions(module, stacks_functions) < 0) {
        Py_XDECREF(type);
        return -1;
    }
    if (add_float(module, "MIN_INTERVAL", SAMPLER_MIN_INTERVAL) < 0 ||
        add_float(module, "MAX_INTERVAL", SAMPLER_MAX_INTERVAL) < 0 ||
        add_float(module, "STOP_TIMEOUT", ENGINE_STOP_TIMEOUT) < 0 ||
        PyModule_AddIntConstant(module, "GPU_SERIES_MAX", GPU_SERIES_MAX) < 0 ||
        PyModule_AddIntConstant(module, "STACKS_MAX_DEPTH", STACKS_MAX_DEPTH) < 0) {
        Py_DECREF(type);
        return -1;
    }
    Py_INCREF(type);
    if (PyModule_AddObject(module, "Sampler", type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}
