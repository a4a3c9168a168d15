/* _core.float64_text(): text made of ASCII pieces and base64 float64 columns, built in one
 * allocation (the streaming encoder of snapshot() and dumps(): no bytes, no float lists). */
#include "py_core.h"

#include <string.h>

#include "float64_text.h"

/* The characters piece adds: 0, or -1 with an exception. */
static int
piece_length(PyObject *piece, Py_ssize_t *len)
{
    Py_buffer view;

    if (PyUnicode_Check(piece)) {
        if (!PyUnicode_IS_ASCII(piece)) {
            PyErr_SetString(PyExc_ValueError, "float64_text: text pieces must be ASCII");
            return -1;
        }
        *len = PyUnicode_GET_LENGTH(piece);
        return 0;
    }
    if (PyObject_GetBuffer(piece, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (!view.format || strcmp(view.format, "d") != 0 || view.itemsize != sizeof(double)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "float64_text: pieces are str or float64 ('d') buffers");
        return -1;
    }
    *len = (Py_ssize_t)float64_b64_length((size_t)view.len / sizeof(double));
    PyBuffer_Release(&view);
    return 0;
}

/* Writes piece at out: the characters written, or -1 with an exception. */
static Py_ssize_t
write_piece(PyObject *piece, char *out)
{
    Py_buffer view;
    size_t n;

    if (PyUnicode_Check(piece)) {
        Py_ssize_t len = PyUnicode_GET_LENGTH(piece);
        memcpy(out, PyUnicode_DATA(piece), (size_t)len);
        return len;
    }
    if (PyObject_GetBuffer(piece, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    n = float64_b64_encode(view.buf, (size_t)view.len / sizeof(double), out);
    PyBuffer_Release(&view);
    return (Py_ssize_t)n;
}

static PyObject *
core_float64_text(PyObject *module, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "float64_text() takes a list of str and buffers");
    PyObject *text = NULL;
    Py_ssize_t i, n, total = 0, len, at = 0;

    (void)module;
    if (seq == NULL)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    for (i = 0; i < n; i++) {
        if (piece_length(PySequence_Fast_GET_ITEM(seq, i), &len) < 0)
            goto done;
        total += len;
    }
    text = PyUnicode_New(total, 127);
    for (i = 0; text && i < n; i++) {
        len = write_piece(PySequence_Fast_GET_ITEM(seq, i), (char *)PyUnicode_DATA(text) + at);
        if (len < 0)
            Py_CLEAR(text);
        at += len;
    }
done:
    Py_DECREF(seq);
    return text;
}

static PyMethodDef encode_functions[] = {
    {"float64_text", (PyCFunction)core_float64_text, METH_O,
     "float64_text([str | float64 buffer, ...]) -> str: the str pieces as they are, each "
     "buffer as the base64 of its values as little-endian float64, in one allocation."},
    {NULL, NULL, 0, NULL},
};

/* 0, or -1 */
int
rt_add_encode(PyObject *module)
{
    return PyModule_AddFunctions(module, encode_functions);
}
