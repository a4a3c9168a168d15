/* _core.discover_cloud and _core.cloud_evidence: the Python face of cloud.h. */
#include "py_core.h"

#include "cloud.h"

/* a str, or None for an empty field */
static PyObject *
str_or_none(const char *text)
{
    if (text[0] == '\0')
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "replace");
}

/* {'vendor', 'instance_type', 'region', 'discovery_time', 'evidence', 'requests', 'error'} */
static PyObject *
info_dict(const CloudInfo *info)
{
    return Py_BuildValue("{s:s,s:N,s:N,s:d,s:N,s:i,s:N}", "vendor", info->vendor, "instance_type",
                         str_or_none(info->instance_type), "region", str_or_none(info->region),
                         "discovery_time", info->discovery_time, "evidence",
                         str_or_none(info->evidence), "requests", info->requests, "error",
                         str_or_none(info->error));
}

/* the discovery's dict (info_dict) */
static PyObject *
core_discover_cloud(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"sysfs_root", "metadata_url", "timeout", NULL};
    const char *sysfs_root = NULL, *metadata_url = NULL;
    double timeout = 2.0;
    CloudConfig cfg;
    CloudInfo info;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zzd", kwlist, &sysfs_root, &metadata_url,
                                     &timeout))
        return NULL;
    if (!(timeout > 0) || timeout > 600) {
        PyErr_Format(PyExc_ValueError, "timeout must be in (0, 600] seconds, got %g", timeout);
        return NULL;
    }
    cfg.sysfs_root = sysfs_root;
    cfg.metadata_url = metadata_url;
    cfg.timeout_ms = (long)(timeout * 1000.0 + 0.5);
    if (cfg.timeout_ms < 1)
        cfg.timeout_ms = 1;
    Py_BEGIN_ALLOW_THREADS
    cloud_discover(&cfg, &info);
    Py_END_ALLOW_THREADS
    return info_dict(&info);
}

/* the vendor id the local evidence points at, or None */
static PyObject *
core_cloud_evidence(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"sysfs_root", NULL};
    const char *sysfs_root = NULL, *vendor = NULL;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|z", kwlist, &sysfs_root))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    vendor = cloud_local_evidence(sysfs_root);
    Py_END_ALLOW_THREADS
    return str_or_none(vendor ? vendor : "");
}

static PyMethodDef cloud_functions[] = {
    {"discover_cloud", (PyCFunction)(void (*)(void))core_discover_cloud,
     METH_VARARGS | METH_KEYWORDS,
     "discover_cloud(sysfs_root=None, metadata_url=None, timeout=2.0) -> dict. Reads DMI/sysfs "
     "evidence and asks only that vendor's metadata service; no request without evidence."},
    {"cloud_evidence", (PyCFunction)(void (*)(void))core_cloud_evidence,
     METH_VARARGS | METH_KEYWORDS,
     "cloud_evidence(sysfs_root=None) -> vendor id named by DMI/sysfs strings, or None."},
    {NULL, NULL, 0, NULL},
};

/* 0, or -1 */
int
rt_add_cloud(PyObject *module)
{
    return PyModule_AddFunctions(module, cloud_functions);
}
