/* _core.PROCESS_COLUMNS, SYSTEM_COLUMNS and COLUMN_REGISTRY: the registry (columns.h) for Python.
 */
#include "py_core.h"

#include "columns.h"
#include "schedule.h"

/* a tuple of the names of n columns */
static PyObject *
names_tuple(const ColumnSpec *columns, Py_ssize_t n)
{
    PyObject *tuple = PyTuple_New(n);
    Py_ssize_t i;

    if (tuple == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *name = PyUnicode_FromString(columns[i].name);
        if (name == NULL) {
            Py_DECREF(tuple);
            return NULL;
        }
        PyTuple_SET_ITEM(tuple, i, name);
    }
    return tuple;
}

/* (table, name, label, unit, fold, aggregate, resource, digits, role, chart) */
static PyObject *
entry_tuple(const char *table, const ColumnSpec *c)
{
    return Py_BuildValue("(sssssssiss)", table, c->name, c->label, c->unit,
                         column_fold_name(c->fold), column_aggregate_name(c->aggregate),
                         column_resource_name(c->resource), c->digits, c->role, c->chart);
}

/* Every column of both tables, process table first, as entry tuples. */
static PyObject *
registry_tuple(void)
{
    PyObject *tuple = PyTuple_New(PC_COUNT + SC_COUNT);
    Py_ssize_t i;

    if (tuple == NULL)
        return NULL;
    for (i = 0; i < PC_COUNT + SC_COUNT; i++) {
        PyObject *entry = i < PC_COUNT ? entry_tuple("process", &process_columns[i])
                                       : entry_tuple("system", &system_columns[i - PC_COUNT]);
        if (entry == NULL) {
            Py_DECREF(tuple);
            return NULL;
        }
        PyTuple_SET_ITEM(tuple, i, entry);
    }
    return tuple;
}

int
rt_add_columns(PyObject *module)
{
    if (rt_add_object(module, "FOLD_SHARE", PyFloat_FromDouble(FOLD_SHARE)) ||
        rt_add_object(module, "FOLD_MIN_SECONDS", PyFloat_FromDouble(FOLD_MIN_SECONDS)) ||
        rt_add_object(module, "FINAL_MIN_SECONDS", PyFloat_FromDouble(FINAL_MIN_SECONDS)))
        return -1;
    return rt_add_object(module, "PROCESS_COLUMNS", names_tuple(process_columns, PC_COUNT)) ||
                   rt_add_object(module, "SYSTEM_COLUMNS", names_tuple(system_columns, SC_COUNT)) ||
                   rt_add_object(module, "COLUMN_REGISTRY", registry_tuple())
               ? -1
               : 0;
}
