/* The tracker's own Python threads (a Metaflow live card's renderer, its record writer, an
 * exporter's sender, the slow-reads worker), which the code profile leaves out: what they run is
 * the tracker's work, not the tracked program's, and a profile of the program must not show it.
 *
 * A thread is registered by its ident (threading.get_ident()) for as long as it runs, and removed
 * before it ends (an ident is reused by a later thread, which may be the program's). The
 * registry is one per process, shared by every capture (a tracker's threads are no other
 * tracker's program either) and guarded by the GIL: every call is made with it held (the Python
 * binding; stacks.c's sample_interpreter). After fork() the child's registry is empty: none of the
 * parent's other threads exists there. Free-threaded builds record no stacks (stacks.h). */
#ifndef RT_SKIP_THREADS_H
#define RT_SKIP_THREADS_H

#define SKIP_THREADS_MAX 32 /* threads at once; past it a thread is profiled as before */

/* Registers (skip != 0) or removes ident: 1 done, 0 when the registry is full. GIL held. */
int skip_threads_set(unsigned long ident, int skip);

/* 1 when ident is registered in this process. GIL held. */
int skip_threads_has(unsigned long ident);

#endif
