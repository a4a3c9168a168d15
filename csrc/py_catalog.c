/* _core.keeper_servers, _core.keeper_prices and _core.keeper_path: the Python face of keeper.h. */
#include "py_core.h"

#include "keeper.h"

#define NO_ANSWER_ERROR "KeeperNoAnswerError"

#define JSON_MAX_DEPTH 64
#define LIST_MAX 64

/* a new Python object for a cJSON value (dict, list, str, int/float, bool, None), or NULL */
static PyObject *
from_json(const cJSON *item, int depth)
{
    PyObject *out = NULL, *value = NULL;
    const cJSON *child = NULL;
    double number;

    if (depth > JSON_MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "Keeper answer nested too deeply");
        return NULL;
    }
    if (cJSON_IsObject(item)) {
        out = PyDict_New();
        if (out == NULL)
            goto error;
        cJSON_ArrayForEach(child, item)
        {
            value = from_json(child, depth + 1);
            if (value == NULL ||
                PyDict_SetItemString(out, child->string ? child->string : "", value) < 0)
                goto error;
            Py_CLEAR(value);
        }
        return out;
    }
    if (cJSON_IsArray(item)) {
        out = PyList_New(0);
        if (out == NULL)
            goto error;
        cJSON_ArrayForEach(child, item)
        {
            value = from_json(child, depth + 1);
            if (value == NULL || PyList_Append(out, value) < 0)
                goto error;
            Py_CLEAR(value);
        }
        return out;
    }
    if (cJSON_IsString(item))
        return PyUnicode_DecodeUTF8(item->valuestring, (Py_ssize_t)strlen(item->valuestring),
                                    "replace");
    if (cJSON_IsNumber(item)) {
        number = item->valuedouble;
        if (number == (double)(long long)number && number > -9007199254740992.0 &&
            number < 9007199254740992.0)
            return PyLong_FromLongLong((long long)number);
        return PyFloat_FromDouble(number);
    }
    if (cJSON_IsBool(item))
        return PyBool_FromLong(cJSON_IsTrue(item));
    Py_RETURN_NONE;
error:
    Py_XDECREF(value);
    Py_XDECREF(out);
    return NULL;
}

/* 0 with a NULL-terminated array of UTF-8 pointers into the items of seq (a list/tuple of str
 * or None) in out, or -1 with an exception; *keep holds the references until the call ends */
static int
str_list(PyObject *seq, const char *name, const char **out, PyObject **keep)
{
    Py_ssize_t i, n;
    PyObject *fast = NULL;

    out[0] = NULL;
    *keep = NULL;
    if (seq == NULL || seq == Py_None)
        return 0;
    fast = PySequence_Fast(seq, name);
    if (fast == NULL)
        return -1;
    n = PySequence_Fast_GET_SIZE(fast);
    if (n >= LIST_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: at most %d values", name, LIST_MAX - 1);
        goto error;
    }
    for (i = 0; i < n; i++) {
        out[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(fast, i));
        if (out[i] == NULL)
            goto error;
    }
    out[n] = NULL;
    *keep = fast;
    return 0;
error:
    out[0] = NULL;
    Py_XDECREF(fast);
    return -1;
}

/* 0 when timeout is in (0, 600] seconds, else -1 with ValueError */
static int
check_timeout(double timeout)
{
    if (timeout > 0 && timeout <= 600)
        return 0;
    PyErr_Format(PyExc_ValueError, "timeout must be in (0, 600] seconds, got %g", timeout);
    return -1;
}

/* (url, parsed answer) of GET url (malloc'd, freed here; NULL: out of memory), or NULL with
 * KeeperNoAnswerError (no answer came) or RuntimeError (a bad answer) naming the url */
static PyObject *
fetch(PyObject *module, char *url, double timeout)
{
    cJSON *json = NULL;
    PyObject *answer = NULL, *result = NULL;
    PyThreadState *released = NULL;
    char err[512];
    long status = 0;
    long timeout_ms = (long)(timeout * 1000.0 + 0.5);

    if (url == NULL)
        return PyErr_NoMemory();
    if (timeout_ms < 1)
        timeout_ms = 1;
    released = PyEval_SaveThread();
    json = keeper_get(url, timeout_ms, &status, err, sizeof(err));
    PyEval_RestoreThread(released);
    if (json == NULL) {
        PyObject *kind = status == 0 ? PyObject_GetAttrString(module, NO_ANSWER_ERROR) : NULL;
        PyErr_Format(kind ? kind : PyExc_RuntimeError, "Keeper API request %s failed: %s", url,
                     err);
        Py_XDECREF(kind);
        goto error;
    }
    answer = from_json(json, 0);
    if (answer != NULL)
        result = Py_BuildValue("(sN)", url, answer);
error:
    cJSON_Delete(json);
    free(url);
    return result;
}

/* (url, parsed answer) of GET /servers with the query */
static PyObject *
core_keeper_servers(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"base_url",
                             "timeout",
                             "vcpus_min",
                             "memory_min_mib",
                             "gpu_min",
                             "gpu_memory_min_mib",
                             "gpu_memory_total_mib",
                             "vendors",
                             "regions",
                             "countries",
                             "architectures",
                             "compliance_frameworks",
                             "allocation",
                             "green_energy",
                             "price_max",
                             "order_by",
                             "order_dir",
                             "limit",
                             NULL};
    const char *base_url = NULL;
    double timeout = 10.0;
    KeeperQuery q;
    PyObject *lists[5] = {NULL, NULL, NULL, NULL, NULL};
    PyObject *keep[5] = {NULL, NULL, NULL, NULL, NULL};
    const char *items[5][LIST_MAX];
    static const char *const list_names[5] = {"vendors", "regions", "countries", "architectures",
                                              "compliance_frameworks"};
    PyObject *result = NULL;
    int i;

    memset(&q, 0, sizeof(q));
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "s|dldlddOOOOOzpdzzl", kwlist, &base_url, &timeout, &q.vcpus_min,
            &q.memory_min_mib, &q.gpu_min, &q.gpu_memory_min_mib, &q.gpu_memory_total_mib,
            &lists[0], &lists[1], &lists[2], &lists[3], &lists[4], &q.allocation, &q.green_energy,
            &q.price_max, &q.order_by, &q.order_dir, &q.limit))
        return NULL;
    if (check_timeout(timeout) < 0)
        return NULL;
    for (i = 0; i < 5; i++)
        if (str_list(lists[i], list_names[i], items[i], &keep[i]) < 0)
            goto error;
    q.vendors = items[0];
    q.regions = items[1];
    q.countries = items[2];
    q.architectures = items[3];
    q.compliance_frameworks = items[4];
    result = fetch(module, keeper_servers_url(base_url, &q), timeout);
error:
    for (i = 0; i < 5; i++)
        Py_XDECREF(keep[i]);
    return result;
}

/* (url, parsed answer) of GET /server/{vendor}/{server}/prices */
static PyObject *
core_keeper_prices(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"base_url", "vendor", "server", "timeout", NULL};
    const char *base_url = NULL, *vendor = NULL, *server = NULL;
    double timeout = 10.0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sss|d", kwlist, &base_url, &vendor, &server,
                                     &timeout))
        return NULL;
    if (check_timeout(timeout) < 0)
        return NULL;
    return fetch(module, keeper_prices_url(base_url, vendor, server), timeout);
}

/* (url, parsed answer) of GET base_url/path, or NULL with ValueError for a path a URL cannot
 * carry as is */
static PyObject *
core_keeper_path(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"base_url", "path", "timeout", NULL};
    const char *base_url = NULL, *path = NULL;
    const unsigned char *p = NULL;
    double timeout = 10.0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ss|d", kwlist, &base_url, &path, &timeout))
        return NULL;
    if (check_timeout(timeout) < 0)
        return NULL;
    for (p = (const unsigned char *)path; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f) {
            PyErr_SetString(PyExc_ValueError,
                            "Keeper path: spaces, control characters and non-ASCII characters "
                            "must be percent-encoded");
            return NULL;
        }
    return fetch(module, keeper_path_url(base_url, path), timeout);
}

static PyMethodDef catalog_functions[] = {
    {"keeper_servers", (PyCFunction)(void (*)(void))core_keeper_servers,
     METH_VARARGS | METH_KEYWORDS,
     "keeper_servers(base_url, timeout=10.0, vcpus_min=0, memory_min_mib=0, gpu_min=0, "
     "gpu_memory_min_mib=0, gpu_memory_total_mib=0, vendors=None, regions=None, countries=None, "
     "architectures=None, compliance_frameworks=None, allocation=None, green_energy=False, "
     "price_max=0, order_by=None, order_dir=None, limit=0) -> (url, answer). GET /servers of "
     "the Spare Cores Keeper; memory sent in GiB. KeeperNoAnswerError (a RuntimeError) when "
     "no answer came, RuntimeError for a bad answer."},
    {"keeper_prices", (PyCFunction)(void (*)(void))core_keeper_prices, METH_VARARGS | METH_KEYWORDS,
     "keeper_prices(base_url, vendor, server, timeout=10.0) -> (url, answer). GET "
     "/server/{vendor}/{server}/prices of the Keeper. KeeperNoAnswerError (a RuntimeError) when "
     "no answer came, RuntimeError for a bad answer."},
    {"keeper_path", (PyCFunction)(void (*)(void))core_keeper_path, METH_VARARGS | METH_KEYWORDS,
     "keeper_path(base_url, path, timeout=10.0) -> (url, answer). GET base_url/path (a query "
     "included) of the Keeper. ValueError for a path with a space, control or non-ASCII byte; "
     "KeeperNoAnswerError (a RuntimeError) when no answer came, RuntimeError for a bad answer."},
    {NULL, NULL, 0, NULL},
};

/* 0, or -1 */
int
rt_add_catalog(PyObject *module)
{
    PyObject *no_answer = PyErr_NewExceptionWithDoc(
        "resource_tracker._core.KeeperNoAnswerError",
        "The Keeper API gave no answer (unreachable, refused, timed out).", PyExc_RuntimeError,
        NULL);

    if (no_answer == NULL || PyModule_AddObject(module, NO_ANSWER_ERROR, no_answer) < 0) {
        Py_XDECREF(no_answer);
        return -1;
    }
    return PyModule_AddFunctions(module, catalog_functions);
}
