/* The children of a process as the kernel lists them per thread (/proc/<pid>/task/<tid>/children,
 * CONFIG_PROC_CHILDREN): what the tracked tree's new members are found from, at a cost of the
 * tree's size instead of the machine's. No Python here.
 *
 * The kernel walks a thread's list a child at a time, dropping its lock between children: a
 * child listed and then reaped during the read can make it skip the one after it, and a
 * thread that exits hands its children to another thread of the process, maybe one read
 * already. Both leave a trace the caller sees (a listed child gone when looked up, a thread
 * gone when read: TASK_CHILDREN_RACED), so it can read the lists again at the next tick. */
#ifndef RT_TASK_CHILDREN_H
#define RT_TASK_CHILDREN_H

#include <stddef.h>
#include <sys/types.h>

#include "fd_budget.h"
#include "textbuf.h"

typedef struct PidList {
    pid_t *items;
    size_t len, cap;
} PidList;

/* task_children_read: a thread of the process vanished while the lists were read */
#define TASK_CHILDREN_RACED 1

/* Non-zero when the procfs at proc_fd has the children lists: pid's main thread has one. 0
 * when it does not (a kernel without CONFIG_PROC_CHILDREN, a fake procfs) or pid is not
 * there to tell. */
int task_children_available(int proc_fd, pid_t pid);

/* Appends the children of every thread of pid to out (threads == 1: the main thread's list
 * only, one read; else the task directory is listed). 0, TASK_CHILDREN_RACED, or -1 with
 * errno (ENOENT: the process is gone; ENOMEM). */
int task_children_read(int proc_fd, pid_t pid, long threads, TextBuf *buf, PidList *out);

/* Lists kept open between reads, one per thread: (pid, tid) -> descriptor. A kept list reads
 * as empty once its thread is gone (no error), so the threads of a multi-threaded process are
 * listed at every read and the lists of threads no longer listed are closed. */
typedef struct KeptList {
    pid_t pid, tid;
    KeptFd file; /* checked before each use (fd_budget.h): the number may be the program's */
    int seen;    /* its thread was listed at the current read of its process */
} KeptList;

typedef struct ListCache {
    KeptList *items;
    size_t len, cap;
    PidList tids; /* scratch: the threads of the process being read */
} ListCache;

/* As task_children_read, through lists kept open in cache: a list not kept yet is kept while
 * the cache holds fewer than keep_max (0: none kept), at a descriptor number the budget
 * allows at fd_limit (kept_fd_open_at). A kept number that is no longer ours is forgotten
 * (*replaced counts it) and the list read by path. */
int task_children_read_kept(int proc_fd, pid_t pid, long threads, ListCache *cache, size_t keep_max,
                            long fd_limit, unsigned long *replaced, TextBuf *buf, PidList *out);

/* Closes the lists kept for pid (every pid: pid <= 0), those still ours (kept_fd_close). */
void list_cache_drop(ListCache *cache, pid_t pid, unsigned long *replaced);

void list_cache_free(ListCache *cache, unsigned long *replaced);

void pid_list_free(PidList *list);

#endif
