#include "stacks.h"

#include <frameobject.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "frame_table.h"
#include "schedule.h"
#include "skip_threads.h"
#include "thread_start.h"
#include "thread_state.h"

#define CAPTURE_STACK_BYTES (256 * 1024)

struct StackCapture {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a request, or stop */
    pthread_cond_t idle; /* a capture ended */
    FrameTable table;    /* written with the GIL held and in_python set; read when it is not */
    unsigned long main_ident;
    pid_t pid; /* the process that made it: after fork() the child's is stopped */
    int refs;  /* the owner and the thread */
    int stop, pending, readers, thread_alive;
    int in_python; /* the thread holds or waits for the GIL: a capture, or freeing its state */
    int settled;   /* the thread was joined or detached (or never existed here) */
    pthread_t thread;
    PyThreadState *tstate; /* the thread's, made by stacks_new, adopted for its whole life */
    double thread_cpu_s;   /* the capture thread's CPU time, after its last capture */
    uint32_t pending_row;
    double requested_at;    /* monotonic seconds */
    double started_at;      /* monotonic seconds: the capture made */
    double last_request_at; /* the last tick's request (monotonic seconds; 0: none yet) */
    double tick_s;          /* seconds between the last two ticks' requests (0: not known) */
    double last_capture_at; /* the end of the last capture (monotonic seconds) */
    double others_cpu_at;   /* others_cpu_s() then */
    /* the CPU the requesting thread (the sampler's) used between its requests, in all: its
     * ticks' work is the tracker's, not the application's (others_cpu_s() leaves it out) */
    double requester_cpu_s, requester_last_s;
    pthread_t requester;
    int has_requester;
    int own_idle;       /* the other threads were idle since the capture before: own ones wait */
    uint32_t rows_seen; /* rows the sampler had stored at its last request */
    unsigned long requests, captures, gil_busy, dropped, scheduled, thinned, idle_skipped;
    float hold_us[STACKS_HOLD_RING], wait_us[STACKS_HOLD_RING];
    struct StackCapture *next; /* the registry */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static StackCapture *registry_head = NULL;
static int exiting = 0; /* stacks_shutdown_all ran: no new capture, no GIL asked for (atomic) */

/* 1 once stacks_shutdown_all has run (read by every thread) */
static int
is_exiting(void)
{
    return __atomic_load_n(&exiting, __ATOMIC_ACQUIRE);
}
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* Waits on cond (lock held) for at most seconds (< 1; the wait's clock is the wall's). */
static void
wait_for(pthread_cond_t *cond, pthread_mutex_t *lock, double seconds)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)(seconds * 1e9);
    if (ts.tv_nsec > 999999999L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cond, lock, &ts);
}

/* why not (a sentence), or NULL */
const char *
stacks_unsupported(void)
{
#ifdef Py_GIL_DISABLED
    return "not supported on a free-threaded Python build (no safe way to read other "
           "threads' frames): no stack samples";
#else
    if (PyInterpreterState_Get() != PyInterpreterState_Main())
        return "not supported in a sub-interpreter: no stack samples";
    return NULL;
#endif
}

/* -- fork ------------------------------------------------------------------------------------ */

static void
atfork_prepare(void)
{
    StackCapture *c;

    pthread_mutex_lock(&registry_lock);
    for (c = registry_head; c; c = c->next)
        pthread_mutex_lock(&c->lock);
}

static void
atfork_parent(void)
{
    StackCapture *c;

    for (c = registry_head; c; c = c->next)
        pthread_mutex_unlock(&c->lock);
    pthread_mutex_unlock(&registry_lock);
}

/* In the child: no capture thread exists (nor its reference); every capture is stopped. The
 * locks were taken by this thread in atfork_prepare, so it may release them. The condition
 * variables are made anew: the parent's capture thread may have waited on them at fork(), and
 * glibc then counts a waiter that does not exist here (pthread_cond_destroy would wait for it
 * forever). Nothing waits on them in the child, so nothing refers to the old state. A capture
 * thread that was inside the interpreter does not exist here: nothing of it is waited for. */
static void
atfork_child(void)
{
    StackCapture *c;

    for (c = registry_head; c; c = c->next) {
        if (c->thread_alive && c->refs > 1)
            c->refs--;
        c->thread_alive = c->in_python = c->pending = c->readers = 0;
        c->stop = c->settled = 1; /* no thread to join here */
        pthread_cond_init(&c->wake, NULL);
        pthread_cond_init(&c->idle, NULL);
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&registry_lock);
}

static void
install_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* -- reading one thread's stack (the GIL held) ------------------------------------------------ */

#ifndef Py_GIL_DISABLED

/* The CPU clock of the thread ident (its pthread_t) and its kernel id: 0, or -1 when the clock
 * cannot be had. Only for a thread seen with a Python frame by this thread, which has held the
 * GIL since: such a thread is alive (to end it must leave its frames, which takes the GIL). */
static int
thread_clock(unsigned long ident, clockid_t *cid, uint64_t *native)
{
    if (pthread_getcpuclockid((pthread_t)ident, cid) != 0)
        return -1;
    /* Linux's clock id of a thread's CPU time is ~tid * 8 | 6 (per-thread, scheduler time) */
    *native = (uint64_t)(uint32_t)(~(*cid >> 3));
    return 0;
}

/* The CPU nanoseconds used by the thread of a clock. */
static uint64_t
clock_ns(clockid_t cid)
{
    struct timespec ts;

    if (clock_gettime(cid, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The threads that run Python: {ident: top frame}, a new dict (NULL with an exception). The
 * GIL held.
 *
 * CPython's own walk (the one of sys._current_frames), never the thread-state list read here: a
 * thread that is not Python's (a C thread calling PyGILState_Ensure: this module's job threads,
 * a library's callback threads) makes its thread state WITHOUT the GIL, under the runtime's
 * thread-list lock only; 3.11 links the new state at the head of the list before filling it in
 * (its frame pointer still NULL). A walk holding the GIL but not that lock read it: a NULL
 * dereference in PyThreadState_GetFrame (the worker killed by SIGSEGV of issue 41). Only this
 * call takes the lock for us. It raises the audit event sys._current_frames first (a Python hook
 * runs here, before the walk: no frame is held then). */
static PyObject *
python_threads(void)
{
    return _PyThread_CurrentFrames();
}

/* The id of a str in the table (its UTF-8), or -1. */
static int64_t
intern_str(FrameTable *table, PyObject *str)
{
    Py_ssize_t len = 0;
    const char *utf8 = str && PyUnicode_Check(str) ? PyUnicode_AsUTF8AndSize(str, &len) : NULL;

    if (utf8 == NULL) {
        PyErr_Clear();
        return ft_string(table, "?", 1);
    }
    return ft_string(table, utf8, (size_t)len);
}

/* The frame id of a Python frame (borrowed), or -1. */
static int64_t
intern_frame(FrameTable *table, PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);
    int64_t file, function, id = -1;

#if PY_VERSION_HEX >= 0x030B0000
    PyObject *name = code->co_qualname;
#else
    PyObject *name = code->co_name;
#endif
    file = intern_str(table, code->co_filename);
    function = intern_str(table, name);
    if (file >= 0 && function >= 0)
        id = ft_frame(table, (uint32_t)file, (uint32_t)function, PyFrame_GetLineNumber(frame),
                      code->co_firstlineno);
    Py_DECREF(code);
    return id;
}

/* The frame id of the <truncated> marker, or -1. */
static int64_t
truncated_frame(FrameTable *table)
{
    int64_t name = ft_string(table, STACKS_TRUNCATED, strlen(STACKS_TRUNCATED));
    return name < 0 ? -1 : ft_frame(table, (uint32_t)name, (uint32_t)name, 0, 0);
}

/* The stack id of frame and its callers (frame is a new reference, consumed), keeping the
 * STACKS_MAX_DEPTH frames nearest the top; -1 when the table's bound is reached. */
static int64_t
intern_stack(FrameTable *table, PyFrameObject *frame)
{
    int64_t ids[STACKS_MAX_DEPTH], stack = FT_NO_STACK, id;
    int n = 0, truncated = 0;

    while (frame != NULL) {
        PyFrameObject *back;
        if (n == STACKS_MAX_DEPTH) {
            truncated = 1;
            Py_DECREF(frame);
            break;
        }
        ids[n++] = intern_frame(table, frame);
        back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    if (truncated) {
        id = truncated_frame(table);
        stack = id < 0 ? -1 : ft_stack(table, FT_NO_STACK, (uint32_t)id);
    }
    while (n-- > 0 && stack >= FT_NO_STACK)
        stack = ids[n] < 0 ? -1 : ft_stack(table, stack, (uint32_t)ids[n]);
    return stack;
}

/* The table's entry of the thread ident (added when new) and its CPU clock now (*cpu_ns, 0 when
 * it cannot be read): the entry's index, or -1 when the table's bound is reached. */
static int64_t
thread_entry(StackCapture *capture, unsigned long ident, uint64_t *cpu_ns)
{
    clockid_t cid;
    uint64_t native = 0;

    *cpu_ns = thread_clock(ident, &cid, &native) == 0 ? clock_ns(cid) : 0;
    return ft_thread(&capture->table, ident, native, ident == capture->main_ident);
}

/* Samples the thread ident, frame its top frame (borrowed), for row: 1 sampled, 0 skipped
 * (idle), -1 dropped. */
static int
sample_thread(StackCapture *capture, unsigned long ident, PyObject *frame, uint32_t row)
{
    FrameTable *table = &capture->table;
    uint64_t cpu_ns;
    int64_t thread = thread_entry(capture, ident, &cpu_ns), stack;
    uint32_t cpu_us;

    if (thread < 0)
        return -1;
    cpu_us = ft_thread_cpu_delta(table, (uint32_t)thread, cpu_ns);
    if (cpu_us == 0 && ident != capture->main_ident)
        return 0; /* it did not run: nothing to attribute to it */
    Py_INCREF(frame);
    stack = intern_stack(table, (PyFrameObject *)frame);
    if (stack < 0 || ft_sample(table, row, (uint32_t)thread, (uint32_t)stack, cpu_us) != 0)
        return -1;
    return 1;
}

/* Moves the CPU clock of ident, a thread of the tracker's own (skip_threads.h), on without a
 * sample: a thread skipped for a while (the main thread rendering a live card's first page) is
 * charged at its next sample for what it ran since it was skipped no more, not before. */
static void
pass_thread(StackCapture *capture, unsigned long ident)
{
    uint64_t cpu_ns;
    int64_t thread = thread_entry(capture, ident, &cpu_ns);

    if (thread >= 0)
        (void)ft_thread_cpu_delta(&capture->table, (uint32_t)thread, cpu_ns);
}

/* The thread ident of a key of python_threads() (0 for a key that is not one). */
static unsigned long
ident_of(PyObject *key)
{
    unsigned long ident = PyLong_Check(key) ? PyLong_AsUnsignedLong(key) : 0;

    if (ident == (unsigned long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return ident;
}

/* 1 when frame, a top frame of python_threads(), runs in the interpreter of builtins (each
 * interpreter has builtins of its own): python_threads() lists every interpreter's threads, and
 * the profile is this one's. */
static int
in_interpreter(PyObject *frame, PyObject *builtins)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *own = PyFrame_GetBuiltins((PyFrameObject *)frame);

    Py_DECREF(own); /* compared by identity only */
    return own == builtins;
#else
    return ((PyFrameObject *)frame)->f_builtins == builtins;
#endif
}

/* Reads the stack of every Python thread of this interpreter for row (the GIL held by this
 * thread, which runs no Python frame) but the tracker's own (skip_threads.h): the samples
 * dropped (1 when the threads could not be listed). */
static unsigned long
sample_interpreter(StackCapture *capture, uint32_t row)
{
    PyObject *threads = python_threads(), *key, *frame;
    PyObject *builtins = PyEval_GetBuiltins(); /* the interpreter's: this thread has no frame */
    Py_ssize_t pos = 0;
    unsigned long dropped = 0, ident;

    if (threads == NULL) {
        PyErr_Clear();
        return 1;
    }
    while (PyDict_Next(threads, &pos, &key, &frame)) {
        if (!PyFrame_Check(frame) || !in_interpreter(frame, builtins))
            continue;
        ident = ident_of(key);
        if (ident != 0 && skip_threads_has(ident)) {
            pass_thread(capture, ident);
            continue;
        }
        if (ident == 0 || sample_thread(capture, ident, frame, row) < 0)
            dropped++;
    }
    Py_DECREF(threads);
    PyErr_Clear();
    return dropped;
}

/* Registers the threads that run Python with the CPU each has used so far (the GIL held), so a
 * thread's first sample counts its CPU since the capture began, not since the thread began:
 * a tracker started late in a long-lived process (a notebook kernel, a test runner) must not
 * give the hours before it to the first stack it sees. */
static void
baseline_threads(StackCapture *capture)
{
    PyObject *threads = python_threads(), *key, *frame;
    Py_ssize_t pos = 0;
    unsigned long ident;
    uint64_t cpu_ns;
    int64_t thread;

    if (threads == NULL) {
        PyErr_Clear();
        return;
    }
    while (PyDict_Next(threads, &pos, &key, &frame))
        if ((ident = ident_of(key)) != 0 && (thread = thread_entry(capture, ident, &cpu_ns)) >= 0)
            (void)ft_thread_cpu_delta(&capture->table, (uint32_t)thread, cpu_ns);
    Py_DECREF(threads);
}

#endif /* !Py_GIL_DISABLED */

/* -- no collection while a capture walks ------------------------------------------------------ */

/* In Python 3.11 the cyclic garbage collector runs inside whichever allocation crosses its
 * threshold, in that thread: here, making the frame objects of another thread's frames (3.11
 * makes them on demand). A collection runs finalizers and gc.callbacks, Python code that may let
 * the GIL go (a close(), a switch request); the thread being walked then runs on, pops the
 * frames this walk holds pointers to, may end and free its thread state: a crash. So no
 * collection (and no Python code) runs in this thread: the collector is off for the walk, the
 * GIL held throughout (no other thread sees it off). Before 3.11 every frame has its object
 * (the walk makes none) and 3.9 has no PyGC_Disable; from 3.12 a collection waits for the
 * interpreter loop, which this thread never runs. */
#ifndef Py_GIL_DISABLED
/* Switches the collector off (the GIL held): 1 when it was on. */
static int
gc_pause(void)
{
#if PY_VERSION_HEX >= 0x030A0000
    return PyGC_Disable();
#else
    return 0;
#endif
}

/* Switches the collector back on when gc_pause() found it on (the GIL held). */
static void
gc_resume(int was_on)
{
#if PY_VERSION_HEX >= 0x030A0000
    if (was_on)
        (void)PyGC_Enable();
#else
    (void)was_on;
#endif
}
#endif

/* -- the capture thread ---------------------------------------------------------------------- */

/* One capture for row: takes the GIL with the thread's own state (no allocation without the GIL:
 * thread_state.h), reads (no collection meanwhile), lets it go; records the times and counts. */
static void
capture_once(StackCapture *capture, uint32_t row, double requested_at)
{
#ifndef Py_GIL_DISABLED
    double got, done;
    int gc_was_on;
    unsigned long dropped;
    size_t slot;

    ts_enter(capture->tstate);
    got = engine_clock(CLOCK_MONOTONIC);
    gc_was_on = gc_pause();
    dropped = sample_interpreter(capture, row);
    gc_resume(gc_was_on);
    done = engine_clock(CLOCK_MONOTONIC);
    ts_leave();
    pthread_mutex_lock(&capture->lock);
    slot = capture->captures % STACKS_HOLD_RING;
    capture->hold_us[slot] = (float)((done - got) * 1e6);
    capture->wait_us[slot] = (float)((got - requested_at) * 1e6);
    capture->captures++;
    capture->dropped += dropped;
    capture->thread_cpu_s = engine_clock(CLOCK_THREAD_CPUTIME_ID);
    pthread_mutex_unlock(&capture->lock);
#else
    (void)capture, (void)row, (void)requested_at;
#endif
}

static void
capture_free(StackCapture *capture)
{
    ft_free(&capture->table);
    pthread_mutex_destroy(&capture->lock);
    pthread_cond_destroy(&capture->wake);
    pthread_cond_destroy(&capture->idle);
    free(capture);
}

/* Drops one reference (the lock not held); frees on the last one. */
static void
capture_unref(StackCapture *capture)
{
    int last;

    pthread_mutex_lock(&registry_lock); /* the registry holds no reference: unlink on the last */
    pthread_mutex_lock(&capture->lock);
    last = --capture->refs == 0;
    pthread_mutex_unlock(&capture->lock);
    if (last) {
        StackCapture **link;
        for (link = &registry_head; *link; link = &(*link)->next)
            if (*link == capture) {
                *link = capture->next;
                break;
            }
    }
    pthread_mutex_unlock(&registry_lock);
    if (last)
        capture_free(capture);
}

/* At the thread's end (the lock held): frees its state, unless the interpreter is exiting (its
 * finalization frees every state; the atexit hook waits for this one as for a capture). */
static void
free_thread_state(StackCapture *capture)
{
    if (is_exiting())
        return;
    capture->in_python = 1;
    pthread_mutex_unlock(&capture->lock);
    ts_enter(capture->tstate);
    ts_end(capture->tstate);
    pthread_mutex_lock(&capture->lock);
    capture->in_python = 0;
}

/* The monotonic time of the next capture of the own schedule (schedule_capture_period), or 0
 * when the ticks' requests are dense enough. The lock held. */
static double
next_own_capture(const StackCapture *capture)
{
    double period;

    if (capture->own_idle)
        return 0.0; /* for the next tick's request */
    period =
        schedule_capture_period(capture->last_capture_at - capture->started_at, capture->tick_s);

    return period > 0.0 ? capture->last_capture_at + period : 0.0;
}

/* Waits (the lock held) for a request, a stop, or the next capture of the own schedule: 1 when
 * that capture is due (*due_at: when it was due), 0 otherwise. */
static int
wait_for_work(StackCapture *capture, double *due_at)
{
    while (!capture->stop && (!capture->pending || capture->readers)) {
        double next = capture->readers ? 0.0 : next_own_capture(capture), now;
        if (next <= 0.0) {
            pthread_cond_wait(&capture->wake, &capture->lock);
            continue;
        }
        now = engine_clock(CLOCK_MONOTONIC);
        if (now >= next) {
            *due_at = next;
            return 1;
        }
        wait_for(&capture->wake, &capture->lock, next - now < 0.5 ? next - now : 0.5);
    }
    return 0;
}

/* The CPU seconds the process's threads have used but the capture thread's and the sampler's
 * ticks (run in the capture thread, the lock held; its own clock read first, so that its CPU
 * between the two reads is not taken for another's). */
static double
others_cpu_s(const StackCapture *capture)
{
    double own = engine_clock(CLOCK_THREAD_CPUTIME_ID);

    return engine_clock(CLOCK_PROCESS_CPUTIME_ID) - own - capture->requester_cpu_s;
}

/* Ends a capture made (made 1: own 1 for one of the own schedule) or left out (made 0), the lock
 * held: the schedule moves on from now. The own schedule waits for the ticks while the other
 * threads are idle (a capture left out, or a tick's capture after an idle interval), and starts
 * again at a tick's capture after which they ran: an idle process costs no wake-ups. */
static void
capture_ended(StackCapture *capture, int made, int own)
{
    double now = engine_clock(CLOCK_MONOTONIC), others = others_cpu_s(capture);

    if (!made)
        capture->own_idle = 1;
    else if (!own)
        capture->own_idle =
            schedule_capture_idle(others - capture->others_cpu_at, now - capture->last_capture_at);
    capture->last_capture_at = now;
    capture->others_cpu_at = others;
}

static void *
capture_main(void *arg)
{
    StackCapture *capture = arg;

    ts_adopt(capture->tstate);
    pthread_mutex_lock(&capture->lock);
    capture->others_cpu_at = others_cpu_s(capture);
    for (;;) {
        uint32_t row;
        double requested_at = 0.0;
        int own = wait_for_work(capture, &requested_at);
        if (is_exiting() || (!own && (!capture->pending || capture->readers)))
            break; /* stopped (a request made before the stop is still served) */
        if (own &&
            schedule_capture_idle(others_cpu_s(capture) - capture->others_cpu_at,
                                  engine_clock(CLOCK_MONOTONIC) - capture->last_capture_at)) {
            capture->idle_skipped++; /* nothing ran since the last capture */
            capture_ended(capture, 0, 1);
            continue;
        }
        /* a tick's request for its row; an own capture for the row being measured */
        row = own ? capture->rows_seen : capture->pending_row;
        requested_at = own ? requested_at : capture->requested_at;
        capture->in_python = 1;
        pthread_mutex_unlock(&capture->lock);
        capture_once(capture, row, requested_at);
        pthread_mutex_lock(&capture->lock);
        capture->in_python = 0;
        if (own)
            capture->scheduled++;
        else
            capture->pending = 0;
        capture_ended(capture, 1, own);
        pthread_cond_broadcast(&capture->idle);
    }
    free_thread_state(capture);
    capture->thread_alive = 0;
    pthread_cond_broadcast(&capture->idle);
    pthread_mutex_unlock(&capture->lock);
    capture_unref(capture);
    return NULL;
}

/* 0, or a pthread error number */
static int
start_thread(StackCapture *capture)
{
    return rt_thread_start(&capture->thread, CAPTURE_STACK_BYTES, 0, capture_main, capture);
}

/* -- the interface --------------------------------------------------------------------------- */

/* a new capture, or NULL with an exception */
StackCapture *
stacks_new(unsigned long main_ident, size_t max_bytes, double tick_s)
{
    const char *why = stacks_unsupported();
    StackCapture *capture;
    int rc;

    if (why != NULL || is_exiting()) {
        PyErr_SetString(PyExc_RuntimeError, why ? why : "the interpreter is exiting");
        return NULL;
    }
    pthread_once(&atfork_once, install_atfork);
    capture = calloc(1, sizeof(*capture));
    if (capture == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    pthread_mutex_init(&capture->lock, NULL);
    pthread_cond_init(&capture->wake, NULL);
    pthread_cond_init(&capture->idle, NULL);
    ft_init(&capture->table, max_bytes);
    capture->tstate = ts_new(); /* made here, the GIL held: thread_state.h */
    if (capture->tstate == NULL) {
        capture_free(capture);
        return NULL;
    }
    capture->main_ident = main_ident;
#ifndef Py_GIL_DISABLED
    baseline_threads(capture);
#endif
    capture->pid = getpid();
    capture->started_at = capture->last_capture_at = engine_clock(CLOCK_MONOTONIC);
    capture->tick_s = tick_s > 0.0 ? tick_s : 0.0;
    capture->refs = 2; /* the owner's and the thread's */
    capture->thread_alive = 1;
    pthread_mutex_lock(&registry_lock);
    capture->next = registry_head;
    registry_head = capture;
    rc = start_thread(capture);
    pthread_mutex_unlock(&registry_lock);
    if (rc != 0) {
        ts_discard(capture->tstate, getpid());
        capture->refs = 1;
        capture->thread_alive = 0;
        capture->settled = 1;
        stacks_release(capture);
        errno = rc;
        PyErr_SetFromErrno(PyExc_OSError);
        return NULL;
    }
    return capture;
}

/* Adds the calling thread's CPU since its last request to requester_cpu_s (nothing when another
 * thread made the last one: a reading taken by the application's thread). The lock held. */
static void
count_requester_cpu(StackCapture *capture)
{
    double mine = engine_clock(CLOCK_THREAD_CPUTIME_ID);
    pthread_t self = pthread_self();

    if (capture->has_requester && pthread_equal(capture->requester, self) &&
        mine > capture->requester_last_s)
        capture->requester_cpu_s += mine - capture->requester_last_s;
    capture->requester = self;
    capture->requester_last_s = mine;
    capture->has_requester = 1;
}

double
stacks_request(void *arg, size_t rows)
{
    StackCapture *capture = arg;
    double cpu;

    pthread_mutex_lock(&capture->lock);
    count_requester_cpu(capture);
    cpu = capture->thread_cpu_s;
    if (rows == 0 || rows > UINT32_MAX) {
        pthread_mutex_unlock(&capture->lock);
        return cpu;
    }
    if (!capture->stop) {
        double now = engine_clock(CLOCK_MONOTONIC);
        capture->requests++;
        capture->rows_seen = (uint32_t)rows;
        if (capture->last_request_at > 0.0)
            capture->tick_s = now - capture->last_request_at;
        capture->last_request_at = now;
        if (capture->pending) {
            capture->gil_busy++; /* the last one still waits for the GIL: this tick has none */
        } else if (!schedule_serves_tick(now - capture->started_at, now - capture->last_capture_at,
                                         capture->tick_s)) {
            capture->thinned++; /* a long run's thinning: this tick has none */
        } else {
            capture->pending = 1;
            capture->pending_row = (uint32_t)(rows - 1);
            capture->requested_at = now;
            pthread_cond_signal(&capture->wake);
        }
    }
    pthread_mutex_unlock(&capture->lock);
    return cpu;
}

void
stacks_stop(StackCapture *capture, double wait)
{
    double deadline = engine_clock(CLOCK_MONOTONIC) + wait;
    int join = 0, detach = 0;

    pthread_mutex_lock(&capture->lock);
    capture->stop = 1;
    pthread_cond_broadcast(&capture->wake);
    while (capture->thread_alive && engine_clock(CLOCK_MONOTONIC) < deadline)
        wait_for(&capture->idle, &capture->lock, 0.01);
    if (!capture->settled) {
        capture->settled = 1;
        join = !capture->thread_alive; /* it is at its very end: the join is immediate */
        detach = !join;                /* a capture still waits for the GIL: it ends alone */
    }
    pthread_mutex_unlock(&capture->lock);
    if (join)
        pthread_join(capture->thread, NULL);
    else if (detach)
        pthread_detach(capture->thread);
}

void
stacks_release(void *arg)
{
    StackCapture *capture = arg;

    if (capture == NULL)
        return;
    stacks_stop(capture, STACKS_JOIN_WAIT_S);
    capture_unref(capture);
}

/* Waits (the lock held) until no capture is under way or asked for (while the thread lives)
 * or the monotonic deadline passed. */
static void
wait_idle(StackCapture *capture, double deadline)
{
    while ((capture->in_python || (capture->pending && capture->thread_alive && !is_exiting())) &&
           engine_clock(CLOCK_MONOTONIC) < deadline)
        wait_for(&capture->idle, &capture->lock, 0.01);
}

void
stacks_shutdown_all(void)
{
    StackCapture *c;
    double deadline;
    pid_t pid = getpid();

    Py_BEGIN_ALLOW_THREADS
    deadline = engine_clock(CLOCK_MONOTONIC) + STACKS_SHUTDOWN_WAIT_S;
    pthread_mutex_lock(&registry_lock);
    __atomic_store_n(&exiting, 1, __ATOMIC_RELEASE);
    for (c = registry_head; c; c = c->next) {
        if (c->pid != pid)
            continue; /* a parent's, copied by fork(): no thread here */
        pthread_mutex_lock(&c->lock);
        c->stop = 1;
        pthread_cond_broadcast(&c->wake);
        wait_idle(c, deadline);
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&registry_lock);
    Py_END_ALLOW_THREADS
}

/* -- the record ------------------------------------------------------------------------------ */

static int
cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (0..1) of the first n values of ring (sorted in place), 0 when n is 0. */
static double
quantile(float *ring, size_t n, double q)
{
    if (n == 0)
        return 0.0;
    qsort(ring, n, sizeof(float), cmp_float);
    return ring[(size_t)(q * (double)(n - 1) + 0.5)];
}

/* {"requests", "captures", "gil_busy", "dropped", "gil_hold_us_p50", ...}: new, or NULL */
static PyObject *
record_stats(StackCapture *capture)
{
    size_t n = capture->captures < STACKS_HOLD_RING ? capture->captures : STACKS_HOLD_RING;
    float *holds = malloc(sizeof(float) * STACKS_HOLD_RING * 2), *waits;
    PyObject *stats;

    if (holds == NULL)
        return PyErr_NoMemory();
    waits = holds + STACKS_HOLD_RING;
    memcpy(holds, capture->hold_us, n * sizeof(float));
    memcpy(waits, capture->wait_us, n * sizeof(float));
    stats = Py_BuildValue("{sksksksksksksksnsdsdsdsd}", "requests", capture->requests, "captures",
                          capture->captures, "scheduled", capture->scheduled, "idle_skipped",
                          capture->idle_skipped, "thinned", capture->thinned, "gil_busy",
                          capture->gil_busy, "dropped", capture->dropped + capture->table.refused,
                          "frame_table_bytes", (Py_ssize_t)ft_bytes(&capture->table),
                          "gil_hold_us_p50", quantile(holds, n, 0.5), "gil_hold_us_p99",
                          quantile(holds, n, 0.99), "gil_wait_us_p50", quantile(waits, n, 0.5),
                          "gil_wait_us_p99", quantile(waits, n, 0.99));
    free(holds);
    return stats;
}

/* The list item of entry i of a table: new, or NULL. */
typedef PyObject *(*MakeItem)(const FrameTable *t, size_t i);

/* [make(t, 0), ... make(t, n - 1)]: new, or NULL */
static PyObject *
make_list(const FrameTable *t, size_t n, MakeItem make)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    size_t i;

    for (i = 0; list && i < n; i++) {
        PyObject *item = make(t, i);
        if (item == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *
frame_item(const FrameTable *t, size_t i)
{
    const FtFrame *f = &t->frames[i];
    return Py_BuildValue("[ssii]", ft_string_at(t, f->function), ft_string_at(t, f->file), f->line,
                         f->first_line);
}

static PyObject *
stack_item(const FrameTable *t, size_t i)
{
    return Py_BuildValue("[iI]", t->stacks[i].parent, t->stacks[i].frame);
}

static PyObject *
thread_item(const FrameTable *t, size_t i)
{
    return Py_BuildValue("[ki]", t->threads[i].ident, t->threads[i].is_main);
}

static PyObject *
sample_item(const FrameTable *t, size_t i)
{
    const FtSample *s = &t->samples[i];
    return Py_BuildValue("[IIII]", s->row, s->thread, s->stack, s->cpu_us);
}

/* The dict of the table (no capture runs meanwhile): new, or NULL. compact: the samples as one
 * bytes object (4 uint32 a sample: row, thread, stack, cpu_us) rather than a list of lists. */
static PyObject *
record_dict(StackCapture *capture, int compact)
{
    const FrameTable *t = &capture->table;
    PyObject *frames = make_list(t, t->nframes, frame_item),
             *stacks = make_list(t, t->nstacks, stack_item);
    PyObject *threads = make_list(t, t->nthreads, thread_item);
    PyObject *samples =
        compact ? PyBytes_FromStringAndSize((const char *)t->samples,
                                            (Py_ssize_t)(t->nsamples * sizeof(FtSample)))
                : make_list(t, t->nsamples, sample_item);
    PyObject *stats = record_stats(capture), *dict = NULL;

    if (frames && stacks && threads && samples && stats)
        dict = Py_BuildValue("{sisOsOsOsOsO}", "version", 1, "frames", frames, "stacks", stacks,
                             "threads", threads, "samples", samples, "stats", stats);
    Py_XDECREF(frames);
    Py_XDECREF(stacks);
    Py_XDECREF(threads);
    Py_XDECREF(samples);
    Py_XDECREF(stats);
    return dict;
}

PyObject *
stacks_record(StackCapture *capture, int compact)
{
    PyObject *dict = NULL;
    int busy;

    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&capture->lock);
    wait_idle(capture,
              engine_clock(CLOCK_MONOTONIC) + STACKS_READ_WAIT_S); /* the GIL is free: it ends */
    busy = capture->in_python;
    capture->readers++; /* no capture starts until this one has read */
    pthread_mutex_unlock(&capture->lock);
    Py_END_ALLOW_THREADS
    if (busy)
        PyErr_SetString(PyExc_RuntimeError, "a stack capture under way did not end");
    else
        dict = record_dict(capture, compact);
    pthread_mutex_lock(&capture->lock);
    capture->readers--;
    pthread_cond_broadcast(&capture->wake);
    pthread_mutex_unlock(&capture->lock);
    return dict;
}
