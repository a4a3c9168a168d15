#include "thread_state.h"

#include <pythread.h>
#include <unistd.h>

/* The CPython call that makes a state the calling thread's PyGILState one (its own threads' start
 * calls it). From 3.12 the first PyEval_RestoreThread does it (tstate_activate). */
#if PY_VERSION_HEX < 0x030B0000
PyAPI_FUNC(void) _PyThreadState_Init(PyThreadState *tstate);
#define bind_gilstate(ts) _PyThreadState_Init(ts)
#elif PY_VERSION_HEX < 0x030C0000
PyAPI_FUNC(void) _PyThreadState_SetCurrent(PyThreadState *tstate);
#define bind_gilstate(ts) _PyThreadState_SetCurrent(ts)
#else
#define bind_gilstate(ts) ((void)(ts))
#endif

#if PY_VERSION_HEX >= 0x030D0000
#define is_finalizing() Py_IsFinalizing()
#else
#define is_finalizing() _Py_IsFinalizing()
#endif

PyThreadState *
ts_new(void)
{
    PyThreadState *ts = PyThreadState_New(PyInterpreterState_Get());

    if (ts == NULL)
        PyErr_NoMemory();
    else
        ts->thread_id = 0; /* not the maker's: PyThreadState_SetAsyncExc would count it too */
    return ts;
}

void
ts_discard(PyThreadState *ts, pid_t maker)
{
    if (maker != getpid() || is_finalizing())
        return;
    PyThreadState_Clear(ts);
    PyThreadState_Delete(ts);
}

void
ts_adopt(PyThreadState *ts)
{
    ts->thread_id = PyThread_get_thread_ident();
#if PY_VERSION_HEX >= 0x030B0000 && defined(PY_HAVE_THREAD_NATIVE_ID)
    ts->native_thread_id = PyThread_get_thread_native_id();
#endif
    bind_gilstate(ts);
}

void
ts_enter(PyThreadState *ts)
{
    PyEval_RestoreThread(ts);
}

void
ts_leave(void)
{
    (void)PyEval_SaveThread();
}

void
ts_end(PyThreadState *ts)
{
    PyThreadState_Clear(ts);
    PyThreadState_DeleteCurrent();
}
