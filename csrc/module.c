/* The _core module: registers the binding files' types and functions, nothing else. */
#include "py_core.h"

#include "platform.h"

#ifndef RT_VERSION
#define RT_VERSION "0.0.0"
#endif

/* The Linux readers (platform.h): the procfs sampler, NVML, cloud discovery, the Keeper API.
 * HAVE_PROCFS tells Python whether they are here; without them it samples with psutil. */
static int
add_platform_parts(PyObject *module)
{
    if (rt_add_object(module, "HAVE_PROCFS", PyBool_FromLong(RT_HAVE_PROCFS)) ||
        rt_add_views(module) || rt_add_reader(module))
        return -1;
#if RT_HAVE_PROCFS
    if (rt_add_sampler(module) || rt_add_jobs(module) || rt_add_gpu(module) ||
        rt_add_cloud(module) || rt_add_catalog(module))
        return -1;
#endif
    return 0;
}

static int
core_exec(PyObject *module)
{
    if (rt_add_object(module, "__version__", PyUnicode_FromString(RT_VERSION)) ||
        rt_add_columns(module) || rt_add_rules(module) || rt_add_files(module) ||
        rt_add_stats(module) || rt_add_encode(module) || rt_add_series(module) ||
        rt_add_attribution(module) || add_platform_parts(module))
        return -1;
    return 0;
}

static int
core_traverse(PyObject *module, visitproc visit, void *arg)
{
    CoreState *state = PyModule_GetState(module);
    Py_VISIT(state->column_view_type);
    return 0;
}

static int
core_clear(PyObject *module)
{
    CoreState *state = PyModule_GetState(module);
    Py_CLEAR(state->column_view_type);
    return 0;
}

static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, core_exec},
#ifdef Py_mod_gil
    /* The GIL stays on under a free-threaded build: the bindings were not audited for it
     * (module-level caches, borrowed references in the stats and catalog parsers). */
    {Py_mod_gil, Py_MOD_GIL_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "resource_tracker._core",
    .m_doc = "C core of resource_tracker: the sampler thread, procfs readers, statistics.",
    .m_size = sizeof(CoreState),
    .m_slots = core_slots,
    .m_traverse = core_traverse,
    .m_clear = core_clear,
};

PyMODINIT_FUNC
PyInit__core(void)
{
    return PyModuleDef_Init(&core_module);
}
