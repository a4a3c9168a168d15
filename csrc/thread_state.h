/* A Python thread state for one of the C core's own threads, kept for the thread's whole life.
 *
 * PyGILState_Ensure in a thread without a state allocates one (PyMem_RawCalloc) before it holds
 * the GIL. While tracemalloc traces, that allocation runs tracemalloc's hook, which waits for the
 * GIL; the thread that has it may meanwhile call tracemalloc.stop(), which frees the hook's
 * traceback buffer: the hook then writes through NULL (SIGSEGV in traceback_new). A state made and
 * freed per call (PyGILState_Ensure/Release) opens that window at each call. So the state is made
 * once, by a thread holding the GIL (the allocation is then traced in one piece), and the C thread
 * adopts it: no allocation of Python's allocator is made by the C thread without the GIL until it
 * frees the state at its end. */
#ifndef RT_THREAD_STATE_H
#define RT_THREAD_STATE_H

#include <Python.h>

#include <sys/types.h>

/* A new state of this interpreter for a C thread to adopt: the GIL held; NULL with an
 * exception. */
PyThreadState *ts_new(void);

/* Frees a state no thread adopted, made in the process maker (the GIL held). Not in a forked
 * child, nor once the interpreter is finalizing: CPython freed every other thread's state then. */
void ts_discard(PyThreadState *ts, pid_t maker);

/* Makes ts the state of the calling thread (the GIL not held; once, before its first ts_enter):
 * its thread id and PyGILState_GetThisThreadState(). */
void ts_adopt(PyThreadState *ts);

/* Takes the GIL with the adopted state (PyEval_RestoreThread). */
void ts_enter(PyThreadState *ts);

/* Lets the GIL go (PyEval_SaveThread). */
void ts_leave(void);

/* Frees the adopted state at the thread's end, the GIL held with it (let go). Never once the
 * interpreter is finalizing: it then frees every thread's state itself. */
void ts_end(PyThreadState *ts);

#endif
