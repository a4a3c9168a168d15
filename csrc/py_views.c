/* Read-only float64 views of a stopped sampler's columns: the samples cross into Python once,
 * without a copy. Each view keeps its owner (the _core.Sampler) alive; the owner's tables are
 * final (sampler_final_table), so the memory under a view never moves or changes. */
#include "py_core.h"

#include "table.h"

typedef struct {
    PyObject_HEAD PyObject *owner;
    const double *data;
    Py_ssize_t shape[1];
    Py_ssize_t strides[1];
} ColumnView;

static const double empty_column[1] = {0};

static int
column_view_getbuffer(ColumnView *self, Py_buffer *view, int flags)
{
    if (flags & PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError, "sampled columns are read-only");
        view->obj = NULL;
        return -1;
    }
    view->obj = (PyObject *)self;
    Py_INCREF(self);
    view->buf = (void *)self->data;
    view->len = self->shape[0] * (Py_ssize_t)sizeof(double);
    view->readonly = 1;
    view->itemsize = sizeof(double);
    view->format = (flags & PyBUF_FORMAT) ? "d" : NULL;
    view->ndim = 1;
    view->shape = (flags & PyBUF_ND) ? self->shape : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->strides : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static void
column_view_dealloc(ColumnView *self)
{
    PyTypeObject *type = Py_TYPE(self);
    Py_XDECREF(self->owner);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyType_Slot column_view_slots[] = {
    {Py_tp_doc, "A read-only float64 column of a stopped Sampler (use it through memoryview)."},
    {Py_tp_dealloc, column_view_dealloc},
    {Py_bf_getbuffer, column_view_getbuffer},
    {0, NULL},
};

static PyType_Spec column_view_spec = {
    .name = "resource_tracker._core.ColumnView",
    .basicsize = sizeof(ColumnView),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = column_view_slots,
};

/* a memoryview of n values at data, keeping owner alive */
static PyObject *
column_memoryview(PyTypeObject *type, PyObject *owner, const double *data, size_t n)
{
    ColumnView *view;
    PyObject *mv;

    view = PyObject_New(ColumnView, type);
    if (view == NULL)
        return NULL;
    Py_INCREF(type); /* each instance holds its heap type */
    Py_INCREF(owner);
    view->owner = owner;
    view->data = n ? data : empty_column;
    view->shape[0] = (Py_ssize_t)n;
    view->strides[0] = sizeof(double);
    mv = PyMemoryView_FromObject((PyObject *)view);
    Py_DECREF(view);
    return mv;
}

/* A list of memoryviews, one per column of table (final: see sampler_final_table). */
PyObject *
rt_column_views(CoreState *state, PyObject *owner, const Table *table)
{
    PyObject *list = PyList_New((Py_ssize_t)table->ncols);
    size_t i;

    for (i = 0; list && i < table->ncols; i++) {
        PyObject *mv =
            column_memoryview(state->column_view_type, owner, table->cols[i], table->nrows);
        if (mv == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, mv);
    }
    return list;
}

/* 0, or -1 with an exception */
int
rt_add_views(PyObject *module)
{
    CoreState *state = PyModule_GetState(module);
    PyObject *type = PyType_FromModuleAndSpec(module, &column_view_spec, NULL);

    if (type == NULL)
        return -1;
    state->column_view_type = (PyTypeObject *)type; /* the module state's reference */
    return 0;
}
