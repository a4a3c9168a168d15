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
 *
 * A member known to have one thread (WaitHint) is read from /proc/<pid>/schedstat, its one
 * task's, without listing its tasks; when its CPU (stat's utime + stime) has not moved since
 * that read, not read at all: the kernel adds to run_delay when a task is scheduled in, so a
 * task that did not run has the same. A sleeping tree of single-threaded members costs no read
 * a tick. (A task that ran less than a clock tick's CPU since has its wait counted once its CPU
 * moves.)
 *
 * Without hints (the tree read from its own cgroup: no member's stat is read) every member's
 * tasks are listed, so they are read every ceil(members / SCHED_WAIT_LISTED_PER_TICK)-th tick
 * only (every tick up to 32 members; every 32nd for 1,000): the wait over that window, divided
 * by its length, is the rate each tick gives until the next read (run_delay is cumulative: the
 * run's total is kept; the per-row figure lags by one window, and a run's last window is not
 * given).
 */
#ifndef RT_SCHED_WAIT_H
#define RT_SCHED_WAIT_H

#include <stddef.h>
#include <sys/types.h>

#include "textbuf.h"

typedef struct TaskWait {
    pid_t tid;
    unsigned long long exec_ns, run_delay_ns; /* schedstat's first two fields */
    unsigned long long member_cpu; /* its member's WaitHint cpu_ticks then (one-thread members) */
} TaskWait;

/* What the tree walk knows of a member this tick: its thread count (0: not known) and its own
 * CPU in clock ticks (utime + stime of its stat). */
typedef struct WaitHint {
    long long threads;
    unsigned long long cpu_ticks;
} WaitHint;

/* members whose tasks are listed at a tick without hints, on average (see above) */
#define SCHED_WAIT_LISTED_PER_TICK 32

typedef struct SchedWait {
    TaskWait *prev, *cur; /* the tasks of the previous and of this tick, sorted by tid */
    size_t prev_len, cur_len, prev_cap, cur_cap;
    int has_baseline;
    size_t ticks_unread;         /* ticks since the tasks were last read */
    double window_s;             /* seconds since then */
    double rate;                 /* cores the tasks waited over the last read window */
    int unavailable;             /* the kernel shows no schedstat (no CONFIG_SCHED_INFO) */
    unsigned long task_reads;    /* schedstat files read */
    unsigned long tasks_carried; /* one-thread members' tasks taken on unread (they did not run) */
    TextBuf buf;
} SchedWait;

void sched_wait_init(SchedWait *wait);

/* Seconds the tasks of the pids (members of the tree) waited for a CPU since the last call,
 * over an interval of dt seconds, read under the procfs root proc_fd; hints: what is known of
 * each pid (NULL: nothing); skip_tid: a task left out (the sampler's own). The first call is
 * the baseline: 0. -1 when the kernel shows no run-queue wait (then always -1). */
double sched_wait_sample(SchedWait *wait, int proc_fd, const pid_t *pids, const WaitHint *hints,
                         size_t n, double dt, pid_t skip_tid);

/* Heap bytes held. */
size_t sched_wait_bytes(const SchedWait *wait);

void sched_wait_free(SchedWait *wait);

#endif
