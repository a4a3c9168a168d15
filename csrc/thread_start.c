/* Starting the C core's own threads: the signal mask and the alternate signal stack
 * (thread_start.h says why). */
#if !defined(_XOPEN_SOURCE) || _XOPEN_SOURCE < 500
#undef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* sigaltstack (XSI), also in the portable build's strict POSIX */
#endif

#include "thread_start.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#define ALT_STACK_BYTES (64 * 1024) /* a fault handler's room (faulthandler needs a few KiB) */

static const int fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT};

typedef struct ThreadStart {
    void *(*main)(void *);
    void *arg;
} ThreadStart;

/* The new thread: its alternate signal stack around main(arg). None is made when the thread
 * has one already (a sanitizer's runtime gives each thread its own) or when it cannot be had:
 * the thread runs all the same. */
static void *
thread_trampoline(void *p)
{
    ThreadStart start = *(ThreadStart *)p;
    stack_t alt = {0}, off = {0}, current = {0};
    void *result;

    free(p);
    if (sigaltstack(NULL, &current) != 0 || (current.ss_flags & SS_DISABLE))
        alt.ss_sp = malloc(ALT_STACK_BYTES); /* none yet (one there already is kept) */
    alt.ss_size = ALT_STACK_BYTES;
    if (alt.ss_sp != NULL && sigaltstack(&alt, NULL) != 0) {
        free(alt.ss_sp);
        alt.ss_sp = NULL;
    }
    result = start.main(start.arg);
    if (alt.ss_sp != NULL) {
        off.ss_flags = SS_DISABLE; /* never free a stack a signal could still run on */
        (void)sigaltstack(&off, NULL);
        free(alt.ss_sp);
    }
    return result;
}

int
rt_thread_start(pthread_t *thread, size_t stack_bytes, int detached, void *(*main)(void *),
                void *arg)
{
    ThreadStart *start = malloc(sizeof(*start));
    pthread_attr_t attr;
    sigset_t blocked, saved;
    size_t i;
    int rc;

    if (start == NULL)
        return ENOMEM;
    start->main = main;
    start->arg = arg;
    pthread_attr_init(&attr);
    if (stack_bytes > 0)
        pthread_attr_setstacksize(&attr, stack_bytes);
    if (detached)
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&blocked); /* the new thread inherits the mask it is made with */
    for (i = 0; i < sizeof(fault_signals) / sizeof(fault_signals[0]); i++)
        sigdelset(&blocked, fault_signals[i]);
    pthread_sigmask(SIG_SETMASK, &blocked, &saved);
    rc = pthread_create(thread, &attr, thread_trampoline, start);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        free(start);
    return rc;
}
