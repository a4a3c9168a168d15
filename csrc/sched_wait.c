/* The run-queue wait of the tracked tree (see sched_wait.h). */
#include "sched_wait.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd_budget.h"

void
sched_wait_init(SchedWait *wait)
{
    memset(wait, 0, sizeof(*wait));
}

/* The schedstat at path (under proc_fd) of the task tid: 0, or -1 when gone or unreadable. */
static int
read_schedstat(SchedWait *wait, int proc_fd, const char *path, pid_t tid, TaskWait *task)
{
    if (textbuf_read_at(&wait->buf, proc_fd, path) <= 0)
        return -1;
    task->tid = tid;
    task->member_cpu = ULLONG_MAX;
    if (sscanf(wait->buf.data, "%llu %llu", &task->exec_ns, &task->run_delay_ns) != 2)
        return -1;
    wait->task_reads++;
    return 0;
}

/* The run_delay (second field) of a task's schedstat: 0, or -1 when gone or unreadable. */
static int
read_run_delay(SchedWait *wait, int proc_fd, pid_t pid, pid_t tid, TaskWait *task)
{
    char path[64];

    snprintf(path, sizeof(path), "%d/task/%d/schedstat", (int)pid, (int)tid);
    return read_schedstat(wait, proc_fd, path, tid, task);
}

/* Appends a task to this tick's list: 0, or -1 on ENOMEM. */
static int
push_task(SchedWait *wait, const TaskWait *task)
{
    if (wait->cur_len == wait->cur_cap) {
        size_t cap = wait->cur_cap ? wait->cur_cap * 2 : 64;
        TaskWait *grown = realloc(wait->cur, cap * sizeof(TaskWait));
        if (grown == NULL)
            return -1;
        wait->cur = grown;
        wait->cur_cap = cap;
    }
    wait->cur[wait->cur_len++] = *task;
    return 0;
}

static int
by_tid(const void *a, const void *b)
{
    pid_t x = ((const TaskWait *)a)->tid, y = ((const TaskWait *)b)->tid;

    return (x > y) - (x < y);
}

/* The one task of a one-thread member pid (hint: its CPU) into this tick's list: its previous
 * reading when its CPU has not moved since (it did not run, sched_wait.h), else its
 * /proc/<pid>/schedstat. 1 when it is in the list, 0 when it could not be read. */
static size_t
read_single(SchedWait *wait, int proc_fd, pid_t pid, const WaitHint *hint)
{
    TaskWait task, *was = NULL;
    char path[32];

    task.tid = pid;
    if (wait->has_baseline && wait->prev_len > 0)
        was = bsearch(&task, wait->prev, wait->prev_len, sizeof(TaskWait), by_tid);
    if (was != NULL && was->member_cpu == hint->cpu_ticks) {
        task = *was;
        wait->tasks_carried++;
    } else {
        snprintf(path, sizeof(path), "%d/schedstat", (int)pid);
        if (read_schedstat(wait, proc_fd, path, pid, &task) != 0)
            return 0;
        task.member_cpu = hint->cpu_ticks;
    }
    return push_task(wait, &task) == 0;
}

/* Reads the schedstat of every task of pid into this tick's list: the tasks read. */
static size_t
read_tasks(SchedWait *wait, int proc_fd, pid_t pid, pid_t skip_tid)
{
    char path[32];
    KeptFd opened;
    struct dirent *de;
    DIR *dir;
    size_t read_n = 0;

    kept_fd_none(&opened);
    snprintf(path, sizeof(path), "%d/task", (int)pid);
    dir = kept_dir_open_at(&opened, proc_fd, path);
    if (dir == NULL)
        return 0;
    while ((de = readdir(dir)) != NULL) {
        TaskWait task;
        pid_t tid = (pid_t)atol(de->d_name);

        if (tid <= 0 || tid == skip_tid || read_run_delay(wait, proc_fd, pid, tid, &task) != 0)
            continue;
        read_n++;
        if (push_task(wait, &task) != 0)
            break;
    }
    kept_dir_close(dir, &opened);
    return read_n;
}

/* The wait of this tick's tasks since the previous tick, in nanoseconds (see sched_wait.h). */
static double
rise_since_prev(const SchedWait *wait, double dt)
{
    double total = 0.0, cap_ns = dt > 0 ? dt * 1e9 : 0.0;
    size_t i;

    for (i = 0; i < wait->cur_len; i++) {
        const TaskWait *now = &wait->cur[i];
        const TaskWait *was =
            wait->prev_len > 0 ? bsearch(now, wait->prev, wait->prev_len, sizeof(TaskWait), by_tid)
                               : NULL;
        double rise;

        if (was != NULL)
            rise = now->run_delay_ns > was->run_delay_ns
                       ? (double)(now->run_delay_ns - was->run_delay_ns)
                       : 0.0;
        else if ((double)(now->exec_ns + now->run_delay_ns) <= cap_ns)
            rise = (double)now->run_delay_ns; /* it may have started in the interval */
        else
            rise = 0.0; /* runnable longer than the interval: it joined the tree, its first
                           reading is its baseline */
        total += rise < cap_ns ? rise : cap_ns; /* no task waits longer than the interval */
    }
    return total;
}

/* 1 when this tick reads the tasks: every tick with hints (the walk's); without them every
 * ceil(n / SCHED_WAIT_LISTED_PER_TICK)-th tick, the baseline first. */
static int
reads_this_tick(SchedWait *wait, const WaitHint *hints, size_t n)
{
    size_t every = (n + SCHED_WAIT_LISTED_PER_TICK - 1) / SCHED_WAIT_LISTED_PER_TICK;

    if (hints != NULL || !wait->has_baseline || ++wait->ticks_unread >= every) {
        wait->ticks_unread = 0;
        return 1;
    }
    return 0;
}

double
sched_wait_sample(SchedWait *wait, int proc_fd, const pid_t *pids, const WaitHint *hints, size_t n,
                  double dt, pid_t skip_tid)
{
    TaskWait *swap;
    size_t i, swap_cap, read_n = 0;
    double waited;

    if (wait->unavailable)
        return -1.0;
    wait->window_s += dt > 0.0 ? dt : 0.0;
    if (!reads_this_tick(wait, hints, n))
        return wait->rate * dt; /* the last read window's rate */
    wait->cur_len = 0;
    for (i = 0; i < n; i++)
        read_n += hints != NULL && hints[i].threads == 1 && pids[i] != skip_tid
                      ? read_single(wait, proc_fd, pids[i], &hints[i])
                      : read_tasks(wait, proc_fd, pids[i], skip_tid);
    if (n > 0 && read_n == 0 && !wait->has_baseline &&
        faccessat(proc_fd, "self/schedstat", F_OK, 0) != 0) {
        wait->unavailable = 1; /* a kernel without CONFIG_SCHED_INFO (or a procfs without it) */
        return -1.0;
    }
    if (wait->cur_len > 1) /* qsort of a NULL array (no task read yet) is undefined */
        qsort(wait->cur, wait->cur_len, sizeof(TaskWait), by_tid);
    waited = wait->has_baseline ? rise_since_prev(wait, wait->window_s) / 1e9 : 0.0;
    wait->rate = wait->has_baseline && wait->window_s > 0.0 ? waited / wait->window_s : 0.0;
    wait->window_s = 0.0;
    wait->has_baseline = 1;
    swap = wait->prev, swap_cap = wait->prev_cap;
    wait->prev = wait->cur, wait->prev_cap = wait->cur_cap, wait->prev_len = wait->cur_len;
    wait->cur = swap, wait->cur_cap = swap_cap, wait->cur_len = 0;
    return wait->rate * dt;
}

size_t
sched_wait_bytes(const SchedWait *wait)
{
    return (wait->prev_cap + wait->cur_cap) * sizeof(TaskWait) + wait->buf.cap;
}

void
sched_wait_free(SchedWait *wait)
{
    free(wait->prev);
    free(wait->cur);
    textbuf_free(&wait->buf);
    sched_wait_init(wait);
}
