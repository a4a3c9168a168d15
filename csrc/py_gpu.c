/* _core.gpu_inventory: the GPUs NVML and AMD's library see, for server_info (gpu.h). */
#include "py_core.h"

#include <string.h>

#include "gpu.h"

#define INVENTORY_MAX 64

/* number of GPUs described in infos (at most INVENTORY_MAX); runs without the GIL */
static size_t
read_inventory(const char *path, const char *amd_path, GpuInfo *infos)
{
    GpuMonitor *monitor = gpu_monitor_open(path, amd_path);
    size_t n = gpu_monitor_inventory(monitor, infos, INVENTORY_MAX);

    gpu_monitor_close(monitor);
    return n > INVENTORY_MAX ? INVENTORY_MAX : n;
}

/* a list of {'name', 'memory_mb'} dicts (NVIDIA's GPUs, then AMD's), empty without GPU */
static PyObject *
core_gpu_inventory(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"library_path", "amd_library", NULL};
    const char *path = NULL, *amd_path = NULL;
    GpuInfo *infos = NULL;
    PyObject *result = NULL, *item = NULL;
    size_t n = 0, i;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zz", kwlist, &path, &amd_path))
        return NULL;
    infos = PyMem_Calloc(INVENTORY_MAX, sizeof(GpuInfo));
    if (infos == NULL)
        return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    n = read_inventory(path && path[0] ? path : NULL, amd_path && amd_path[0] ? amd_path : NULL,
                       infos);
    Py_END_ALLOW_THREADS
    result = PyList_New(0);
    if (result == NULL)
        goto error;
    for (i = 0; i < n; i++) {
        PyObject *name =
            PyUnicode_DecodeUTF8(infos[i].name, (Py_ssize_t)strlen(infos[i].name), "replace");
        if (name == NULL)
            goto error;
        item = Py_BuildValue("{s:N,s:d}", "name", name, "memory_mb", infos[i].memory_mib);
        if (item == NULL || PyList_Append(result, item) < 0)
            goto error;
        Py_CLEAR(item);
    }
    PyMem_Free(infos);
    return result;

error:
    Py_XDECREF(item);
    Py_XDECREF(result);
    PyMem_Free(infos);
    return NULL;
}

static PyMethodDef gpu_functions[] = {
    {"gpu_inventory", (PyCFunction)(void (*)(void))core_gpu_inventory, METH_VARARGS | METH_KEYWORDS,
     "gpu_inventory(library_path=None, amd_library=None) -> [{'name': str, 'memory_mb': "
     "float}, ...] (NVML, then amdsmi or ROCm SMI)."},
    {NULL, NULL, 0, NULL},
};

/* 0, or -1 */
int
rt_add_gpu(PyObject *module)
{
    return PyModule_AddFunctions(module, gpu_functions);
}
