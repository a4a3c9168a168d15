/* SIGTERM answered by a Python callable from a thread of its own (the run --code agent of a
 * multiprocessing worker: write the record, then die of the signal).
 *
 * A Python signal handler runs only when the main thread runs bytecode: a SIGTERM that comes
 * just before that thread blocks in a call that does not return for it (a Pool worker about to
 * wait for its next task) is never answered, and Pool.terminate() waits for that worker for ever.
 * Here the C handler only wakes a thread (sem_post, async-signal safe); that thread takes the GIL
 * with a state of its own (thread_state.h), calls the callable, and unless it returns False gives
 * SIGTERM its default action back and raises it. */
#ifndef RT_TERM_HOOK_H
#define RT_TERM_HOOK_H

#include <Python.h>

/* Installs the hook with callable (the GIL held): 1 installed, 0 not (SIGTERM's action is not
 * the default, or a hook is installed already), -1 with an exception. In a forked child the
 * hook is gone (SIGTERM's action is the default again there). */
int term_hook_install(PyObject *callable);

#endif
