/* SIGTERM answered from a thread of its own (term_hook.h). */
#include "term_hook.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "thread_start.h"
#include "thread_state.h"

#define TERM_STACK_BYTES (256 * 1024)

#if PY_VERSION_HEX >= 0x030D0000
#define rt_is_finalizing() Py_IsFinalizing()
#else
#define rt_is_finalizing() _Py_IsFinalizing()
#endif

static sem_t term_wake;
static int installed;           /* in this process (0 again in a forked child) */
static PyObject *term_callable; /* a strong reference, kept for the process's life */
static PyThreadState *term_state;
static pthread_once_t term_once = PTHREAD_ONCE_INIT;

static void
on_term(int signum)
{
    int saved = errno;

    (void)signum;
    sem_post(&term_wake); /* async-signal safe */
    errno = saved;
}

/* SIGTERM's default action, then SIGTERM: the process ends as without the hook. */
static void
die_of_term(void)
{
    signal(SIGTERM, SIG_DFL);
    kill(getpid(), SIGTERM);
}

static void *
term_main(void *arg)
{
    int die = 1;

    (void)arg;
    ts_adopt(term_state);
    while (sem_wait(&term_wake) != 0 && errno == EINTR)
        ;
    if (!rt_is_finalizing()) {
        PyObject *result;
        ts_enter(term_state);
        result = PyObject_CallNoArgs(term_callable);
        die = result == NULL || result != Py_False;
        Py_XDECREF(result);
        PyErr_Clear();
        ts_leave();
    }
    if (die)
        die_of_term();
    return NULL;
}

/* In a forked child: no thread waits there, so SIGTERM gets its default action back. */
static void
term_atfork_child(void)
{
    if (installed) {
        signal(SIGTERM, SIG_DFL);
        installed = 0;
    }
}

static void
register_atfork(void)
{
    pthread_atfork(NULL, NULL, term_atfork_child);
}

int
term_hook_install(PyObject *callable)
{
    struct sigaction now, action;
    pthread_t thread;

    if (installed || sigaction(SIGTERM, NULL, &now) != 0 || now.sa_handler != SIG_DFL ||
        (now.sa_flags & SA_SIGINFO))
        return 0;
    pthread_once(&term_once, register_atfork);
    if (sem_init(&term_wake, 0, 0) != 0)
        return 0;
    term_state = ts_new();
    if (term_state == NULL)
        return -1;
    Py_INCREF(callable);
    Py_XSETREF(term_callable, callable);
    if (rt_thread_start(&thread, TERM_STACK_BYTES, 1, term_main, NULL) != 0) {
        ts_discard(term_state, getpid());
        return 0;
    }
    memset(&action, 0, sizeof(action));
    action.sa_handler = on_term;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    installed = 1;
    return 1;
}
