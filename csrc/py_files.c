/* Binding: reading a small file for the Python layer without lending its descriptor to the
 * program's other threads (the cgroup's figures at start and stop, read beside the program).
 *
 * Python's own os.open / os.read / os.close let the interpreter lock go around each system
 * call: a program thread may then close every descriptor (os.closerange) and open a file of its
 * own at the number being read, which os.read would consume and os.close would close. Here the
 * file is opened, read and closed with the lock held throughout, so that no Python thread of
 * the program runs in between, and closed only while the number still shows the file opened
 * (a closerange already under way when the read started: csrc/fd_budget.h). */
#include "py_core.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "textbuf.h"

/* read_regular_file(path, limit): the bytes of a regular file, or None */
static PyObject *
core_read_regular_file(PyObject *self, PyObject *args)
{
    PyObject *path = NULL, *out;
    Py_ssize_t limit;
    TextBuf buf = {NULL, 0, 0};
    struct stat opened;
    ssize_t n = -1;
    int fd;

    (void)self;
    if (!PyArg_ParseTuple(args, "O&n", PyUnicode_FSConverter, &path, &limit))
        return NULL; /* a NUL in the path: ValueError, as os.open's */
    if (limit < 0) {
        Py_DECREF(path);
        PyErr_SetString(PyExc_ValueError, "read_regular_file: limit must be 0 or more");
        return NULL;
    }
    /* a FIFO, a device, a directory: never opened (opening a FIFO waits for a writer, a
     * device may act on being opened) */
    if (stat(PyBytes_AS_STRING(path), &opened) != 0 || !S_ISREG(opened.st_mode))
        fd = -1;
    else
        fd = open(PyBytes_AS_STRING(path), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0 && fstat(fd, &opened) == 0) {
        if (S_ISREG(opened.st_mode)) /* replaced by a FIFO or a device since the stat */
            n = textbuf_read_fd_max(&buf, fd, (size_t)limit); /* no further than limit + 1 */
        textbuf_close_if_same(fd, &opened);
    } else if (fd >= 0) {
        close(fd);
    }
    Py_DECREF(path);
    if (n < 0) { /* unreadable, or larger than any real file of its kind (EFBIG) */
        textbuf_free(&buf);
        Py_RETURN_NONE;
    }
    out = PyBytes_FromStringAndSize(buf.data, n);
    textbuf_free(&buf);
    return out;
}

static PyMethodDef file_functions[] = {
    {"read_regular_file", (PyCFunction)core_read_regular_file, METH_VARARGS,
     "read_regular_file(path, limit) -> the bytes of the regular file at path, or None (not "
     "a regular file: never opened; more than limit bytes; unreadable): opened non-blocking, "
     "read and closed without letting the interpreter lock go (no thread of the program can "
     "take the descriptor's number meanwhile)."},
    {NULL, NULL, 0, NULL},
};

/* 0, or -1 with an exception */
int
rt_add_files(PyObject *module)
{
    return PyModule_AddFunctions(module, file_functions);
}
