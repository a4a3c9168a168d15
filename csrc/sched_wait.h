/* The run-queue wait of the tracked tree: how long its tasks were runnable but not running
 * (waiting for a CPU, whatever held them: other processes on a busy machine, or the quota of
 * a throttled cgroup). The kernel keeps it per task as the second field of
 * /proc/<pid>/task/<tid>/schedstat (run_delay, nanoseconds, since the task started). No Python
 * here.
 *
 * Each tick reads every member's task list and each task's schedstat (one directory and one
 * small file per thread); the tick's wait is the rise of each task's run_delay since the
 * previous tick. A task not seen at the previous tick counts its run_delay when it was
 * runnable (ran or waited) no longer than the interval in all (a thread born during it), else
 * nothing (a task that joined the tree, or was not seen at the tracker's first reading: its
 * wait before is not the interval's); no task counts more than the interval. A task that ended
 * between two ticks takes its last interval's wait with it (nothing in procfs keeps it). The
 * sampler's own thread is left out.
 */
#ifndef RT_SCHED_WAIT_H
#define RT_SCHED_WAIT_H

#include <stddef.h>
#include <sys/types.h>

#include "textbuf.h"

typedef struct TaskWait {
    pid_t tid;
    unsigned long long exec_ns, run_delay_ns; /* schedstat's first two fields */
} TaskWait;

typedef struct SchedWait {
    TaskWait *prev, *cur; /* the tasks of the previous and of this tick, sorted by tid */
    size_t prev_len, cur_len, prev_cap, cur_cap;
    int has_baseline;
    int unavailable;          /* the kernel shows no schedstat (no CONFIG_SCHED_INFO) */
    unsigned long task_reads; /* schedstat files read */
    TextBuf buf;
} SchedWait;

void sched_wait_init(SchedWait *wait);

/* Seconds the tasks of the pids (members of the tree) waited for a CPU since the last call,
 * over an interval of dt seconds, read under the procfs root proc_fd; skip_tid: a task left
 * out (the sampler's own). The first call is the baseline: 0. -1 when the kernel shows no
 * run-queue wait (then always -1). */
double sched_wait_sample(SchedWait *wait, int proc_fd, const pid_t *pids, size_t n, double dt,
                         pid_t skip_tid);

/* Heap bytes held. */
size_t sched_wait_bytes(const SchedWait *wait);

void sched_wait_free(SchedWait *wait);

#endif
