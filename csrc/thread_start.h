/* Starting the C core's own threads (the engine's sampling thread, the stack capture's, the
 * after-baseline jobs'). Portable core (POSIX threads and signals only).
 *
 * Signals sent to the process are for the application's threads, so ours block every
 * asynchronous one (SIGINT, SIGTERM, SIGCHLD, ...: the kernel then delivers them elsewhere).
 * The synchronous ones (a fault of the thread itself: SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
 * SIGSYS, and SIGABRT) stay open: the kernel kills the process at once, ignoring every handler,
 * when a fault signal is blocked in the faulting thread, so a crash in one of our threads (in a
 * GPU driver's library, a finalizer a job ran, our own code) would leave no trace; open, it
 * reaches the application's handler (Python's faulthandler, a crash reporter, a core dump).
 * Each thread also has its own alternate signal stack, so such a handler can run even when the
 * fault is the thread's stack running out (faulthandler installs its handler to run on one). */
#ifndef RT_THREAD_START_H
#define RT_THREAD_START_H

#include <pthread.h>
#include <stddef.h>

/* Starts main(arg) in a new thread with stack_bytes of stack (0: the default), detached or to
 * be joined (*thread set). 0, or a pthread error number (the thread was not made). */
int rt_thread_start(pthread_t *thread, size_t stack_bytes, int detached, void *(*main)(void *),
                    void *arg);

#endif
