/* Stack samples of the tracked interpreter for the code profile (docs/code_profile.md).
 *
 * A capture owns a small thread of its own. At each tick the sampler thread hands it the row
 * just stored (stacks_request: never waits; a request while the last one is still waiting for
 * the GIL is counted as gil_busy and dropped, so the resource readings are never delayed). The
 * capture thread takes the GIL (with a thread state of its own, made by stacks_new:
 * thread_state.h), reads the Python stack of every thread of the interpreter that runs Python and
 * used CPU since its last sample (the main thread always), interns the frames in a FrameTable, and
 * lets the GIL go.
 *
 * Stop ordering: stacks_shutdown_all() (registered with atexit by the Python layer, so it runs
 * before the interpreter tears down) stops every capture and waits, the GIL released, for a
 * capture under way to end; after it no capture thread asks for the GIL again. After fork() the
 * child has no capture thread: its captures read as stopped, with their data.
 *
 * Free-threaded builds and sub-interpreters get no capture (stacks_unsupported says why). */
#ifndef RT_STACKS_H
#define RT_STACKS_H

#include "py_core.h"

#include <stddef.h>

#define STACKS_MAX_DEPTH 128       /* frames kept a stack (those nearest the running code) */
#define STACKS_HOLD_RING 4096      /* GIL hold times kept for the percentiles */
#define STACKS_SHUTDOWN_WAIT_S 1.0 /* atexit waits at most this for a capture under way */
#define STACKS_JOIN_WAIT_S 1.0     /* stop() waits at most this for the capture thread's end */
#define STACKS_READ_WAIT_S 10.0    /* stacks_record waits at most this for a capture */
#define STACKS_TRUNCATED "<truncated>"

typedef struct StackCapture StackCapture;

/* Why no capture can run in this interpreter (a sentence), or NULL when it can. GIL held. */
const char *stacks_unsupported(void);

/* A new capture (its thread started), main_ident the interpreter's main thread
 * (threading.main_thread().ident), its table bounded to max_bytes (0: the default), tick_s the
 * sampler's interval (seconds; its own schedule adds captures only where that is sparser than
 * the ticks, schedule_capture_period): NULL with an exception. GIL held. */
StackCapture *stacks_new(unsigned long main_ident, size_t max_bytes, double tick_s);

/* A SamplerRowHook: asks for one capture for the row rows - 1 (no GIL needed, never waits);
 * returns the CPU seconds the capture thread has used so far. */
double stacks_request(void *capture, size_t rows);

/* No capture after a request under way (served first); waits up to wait seconds for the
 * thread to end, then joins it (or lets it end on its own). Call without the GIL. */
void stacks_stop(StackCapture *capture, double wait);

/* Stops (waiting up to STACKS_JOIN_WAIT_S, no GIL needed) and drops the owner's reference
 * (the thread holds its own): a sampler's free hook. */
void stacks_release(void *capture);

/* The record (docs/code_profile.md, the snapshot's "code_profile" without its status): a
 * new dict, or NULL with an exception. GIL held; waits for a capture under way. compact: its
 * "samples" as one bytes object of 4 uint32 a sample (row, thread, stack, cpu_us), which the
 * attribution reads (_core.code_segments) without a Python object a sample. */
PyObject *stacks_record(StackCapture *capture, int compact);

/* Stops every capture of this process and waits for those under way (GIL held by the caller,
 * released while waiting). For atexit. */
void stacks_shutdown_all(void);

#endif
