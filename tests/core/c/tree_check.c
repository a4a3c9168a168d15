/* The PSS round schedule of csrc/proc_tree.c on real processes, with the clock injected
 * (proc_tree_sample takes the tick's monotonic time): no test waits for a 30 s age.
 *
 * Two real trees, each its own process group: an idle one (a parent and two children that
 * sleep) and a touching one (a parent that writes to a few new pages whenever asked, and a
 * sleeping child). Ticks 1 s apart on the injected clock:
 *   - the first tick reads every member's PSS (one round: a read per member);
 *   - a tree whose members faulted pages in or changed their RSS has its next round when the
 *     last is PSS_MAX_AGE old, not before;
 *   - an idle tree waits PSS_IDLE_MAX_AGE.
 * And the listing of procfs (the machine's process count), on a fake procfs root whose
 * /proc/loadavg the check writes: a listing due by age (LISTING_MAX_AGE) is not made while
 * the last pid and the task count did not move; once they move, the next listing is made and
 * the count follows. Nothing on a real machine keeps its task count still that long. And the
 * children lists' schedule on a fake root with lists (check_children_schedule).
 * Prints "ok <checks>"; exits non-zero at the first failed check. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "proc_tree.h"

static void stop_trees(void);
#define CHECK_CLEANUP() stop_trees()
#include "check.h"

static pid_t trees[2];

static void
stop_trees(void)
{
    int i;

    for (i = 0; i < 2; i++)
        if (trees[i] > 0) {
            kill(-trees[i], SIGKILL);
            waitpid(trees[i], NULL, 0);
        }
}

/* a process that sleeps until killed */
static void
sleeper(void)
{
    if (fork() == 0) {
        for (;;)
            pause();
    }
}

/* The idle tree: a parent and two children, all asleep once "ready" is written to ready_fd. */
static pid_t
idle_tree(void)
{
    int ready[2];
    pid_t pid;
    char c;

    if (pipe(ready) != 0)
        exit(2);
    pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        sleeper();
        sleeper();
        if (write(ready[1], "r", 1) != 1)
            _exit(2);
        for (;;)
            pause();
    }
    setpgid(pid, pid);
    if (read(ready[0], &c, 1) != 1)
        exit(2);
    close(ready[0]);
    close(ready[1]);
    return pid;
}

/* The minor faults of the processes of group pgid, or -1 while one of them is not asleep. */
static long
group_faults(pid_t pgid)
{
    DIR *proc = opendir("/proc");
    struct dirent *d;
    long total = 0;

    if (proc == NULL)
        exit(2);
    while ((d = readdir(proc)) != NULL) {
        char path[300], buf[512], *p, state;
        long group, minflt;
        FILE *f;

        if (d->d_name[0] < '1' || d->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", d->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        p = fgets(buf, sizeof buf, f) ? strrchr(buf, ')') : NULL;
        fclose(f);
        /* ") state ppid pgrp session tty tpgid flags minflt" */
        if (p && sscanf(p, ") %c %*d %ld %*d %*d %*d %*u %ld", &state, &group, &minflt) == 3 &&
            group == pgid) {
            if (state != 'S')
                total = -1;
            if (total >= 0)
                total += minflt;
        }
    }
    closedir(proc);
    return total;
}

/* Waits (at most 10 s) until the processes of group pgid are asleep and fault no more pages
 * across 20 ms: a forked sleeper may still be on its way to pause() when it is first read. */
static void
settle(pid_t pgid)
{
    struct timespec pause_20ms = {0, 20000000};
    long before = -1, now;
    int i;

    for (i = 0; i < 500; i++) {
        now = group_faults(pgid);
        if (now >= 0 && now == before)
            return;
        before = now;
        nanosleep(&pause_20ms, NULL);
    }
}

/* The touching tree: a parent with a sleeping child; each byte on *poke makes the parent
 * write to 64 KiB of new pages, then answer on *done. */
static pid_t
touching_tree(int *poke, int *done)
{
    int in[2], out[2];
    pid_t pid;
    char c;

    if (pipe(in) != 0 || pipe(out) != 0)
        exit(2);
    pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        sleeper();
        if (write(out[1], "r", 1) != 1)
            _exit(2);
        while (read(in[0], &c, 1) == 1) {
            char *pages = malloc(64 * 1024);
            if (pages != NULL)
                memset(pages, 1, 64 * 1024); /* kept: the resident set grows */
            if (write(out[1], "d", 1) != 1)
                _exit(2);
        }
        _exit(0);
    }
    setpgid(pid, pid);
    if (read(out[0], &c, 1) != 1)
        exit(2);
    *poke = in[1];
    *done = out[0];
    return pid;
}

static void
touch(int poke, int done)
{
    char c = 't';

    if (write(poke, &c, 1) != 1 || read(done, &c, 1) != 1)
        exit(2);
}

static void
write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
        exit(2);
}

/* <root>/<pid>/stat: this process's own stat line with the pid, name and parent replaced */
static void
fake_process(const char *root, int pid, int ppid)
{
    char line[4096], dir[4096], text[4200], state[8];
    const char *rest;
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n;

    if (f == NULL || (n = fread(line, 1, sizeof(line) - 1, f)) == 0)
        exit(2);
    fclose(f);
    line[n] = '\0';
    rest = strrchr(line, ')') + 2; /* "S 1234 ..." */
    if (sscanf(rest, "%7s", state) != 1)
        exit(2);
    rest = strchr(strchr(rest, ' ') + 1, ' '); /* after the state and the parent */
    snprintf(dir, sizeof(dir), "%s/%d", root, pid);
    mkdir(dir, 0755);
    snprintf(text, sizeof(text), "%d (fake) %s %d%s", pid, state, ppid, rest);
    write_file(dir, "stat", text);
}

/* The listing's schedule on a fake procfs root (a two-process tree, 4242 and its child). */
static void
check_listing_schedule(void)
{
    char root[] = "/tmp/rt-tree-check-XXXXXX", self[32], stat[1 << 16];
    ProcTree tree;
    ProcTreeReading r;
    const double t0 = 500.0;
    double t;
    FILE *f = fopen("/proc/stat", "r");
    size_t n;

    if (f == NULL || mkdtemp(root) == NULL)
        exit(2);
    n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    write_file(root, "stat", stat); /* a still fork counter */
    write_file(root, "loadavg", "0.00 0.00 0.00 1/100 5000\n");
    snprintf(self, sizeof(self), "%d", (int)getpid());
    {
        char link[4200];
        snprintf(link, sizeof(link), "%s/self", root);
        if (symlink(self, link) != 0) /* this pid namespace's loadavg: trusted */
            exit(2);
    }
    fake_process(root, 4242, 1);
    fake_process(root, 4243, 4242);
    CHECK(proc_tree_init(&tree, root, 4242, 1) == 0);
    tree.count_processes = 1;
    for (t = 0; t <= LISTING_MAX_AGE + 1.5; t += 0.5) { /* due by age, but nothing moved */
        proc_tree_sample(&tree, t0 + t, &r);
        CHECK(tree.listings == 1 && r.processes == 2);
    }
    fake_process(root, 4300, 4242); /* a new task, no new last pid (a fake can) */
    write_file(root, "loadavg", "0.00 0.00 0.00 1/101 5000\n");
    for (; t <= 3 * LISTING_MAX_AGE; t += 0.5)
        proc_tree_sample(&tree, t0 + t, &r);
    CHECK(tree.listings == 2 && r.processes == 3);
    proc_tree_free(&tree);
    {
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        CHECK(system(cmd) == 0);
    }
}

/* <root>/<pid>/task/<pid>/<name> holding text (the folders made where missing) */
static void
fake_task_file(const char *root, int pid, const char *name, const char *text)
{
    char dir[4096];

    snprintf(dir, sizeof(dir), "%s/%d", root, pid);
    mkdir(dir, 0755);
    snprintf(dir, sizeof(dir), "%s/%d/task", root, pid);
    mkdir(dir, 0755);
    snprintf(dir, sizeof(dir), "%s/%d/task/%d", root, pid, pid);
    mkdir(dir, 0755);
    write_file(dir, name, text);
}

/* <root>/<pid>/task/<pid>/children holding text */
static void
fake_children(const char *root, int pid, const char *text)
{
    fake_task_file(root, pid, "children", text);
}

/* The children lists' schedule on a fake procfs root (4242 and its child 4243, with lists):
 * read at the first reading; not again while the last pid handed out does not move (a child
 * the lists name meanwhile is not seen), until CHILDREN_SCAN_MAX_AGE; a new pid that is the
 * only one handed out is looked up (cheaper than reading the lists), a larger burst reads
 * the lists. No listing of procfs at all. */
static void
check_children_schedule(void)
{
    char root[] = "/tmp/rt-tree-check-XXXXXX", self[32], link[4200];
    ProcTree tree;
    ProcTreeReading r;
    const double t0 = 700.0;
    double t;

    if (mkdtemp(root) == NULL)
        exit(2);
    write_file(root, "loadavg", "0.00 0.00 0.00 1/100 5000\n");
    snprintf(self, sizeof(self), "%d", (int)getpid());
    snprintf(link, sizeof(link), "%s/self", root);
    if (symlink(self, link) != 0) /* this pid namespace's loadavg: trusted */
        exit(2);
    fake_process(root, 4242, 1);
    fake_process(root, 4243, 4242);
    fake_children(root, 4242, "4243 ");
    fake_children(root, 4243, "");
    CHECK(proc_tree_init(&tree, root, 4242, 1) == 0);
    CHECK(tree.children_lists == 1);
    proc_tree_sample(&tree, t0, &r);
    CHECK(tree.scans == 1 && r.members == 2);
    fake_process(root, 4300, 4242); /* named by the list, but no pid was handed out */
    fake_children(root, 4300, "");
    fake_children(root, 4242, "4243 4300 ");
    for (t = 1; t < CHILDREN_SCAN_MAX_AGE; t += 1) {
        proc_tree_sample(&tree, t0 + t, &r);
        CHECK(tree.scans == 1 && r.members == 2);
    }
    proc_tree_sample(&tree, t0 + CHILDREN_SCAN_MAX_AGE, &r); /* the safety net */
    CHECK(tree.scans == 2 && r.members == 3);
    fake_process(root, 5001, 4242); /* the one pid handed out: looked up */
    fake_children(root, 5001, "");
    fake_children(root, 4242, "4243 4300 5001 ");
    write_file(root, "loadavg", "0.00 0.00 0.00 1/101 5001\n");
    proc_tree_sample(&tree, t0 + CHILDREN_SCAN_MAX_AGE + 1, &r);
    CHECK(tree.scans == 2 && tree.probes == 1 && r.members == 4);
    fake_process(root, 5100, 4243); /* a burst of 99 pids: the lists are read */
    fake_children(root, 5100, "");
    fake_children(root, 4243, "5100 ");
    write_file(root, "loadavg", "0.00 0.00 0.00 1/102 5100\n");
    proc_tree_sample(&tree, t0 + CHILDREN_SCAN_MAX_AGE + 2, &r);
    CHECK(tree.scans == 3 && tree.probes == 1 && r.members == 5);
    CHECK(tree.listings == 0);
    proc_tree_free(&tree);
    snprintf(link, sizeof(link), "rm -rf '%s'", root);
    CHECK(system(link) == 0);
}

/* Children the lists name out of pid order (as a child's children come after its siblings):
 * the tree's entries are still in pid order (every member found by a lookup), and the
 * members' pids come out ascending. */
static void
check_children_order(void)
{
    char root[] = "/tmp/rt-tree-check-XXXXXX", link[4200];
    static const int kids[] = {4250, 4243, 4244};
    pid_t pids[8];
    ProcTree tree;
    ProcTreeReading r;
    size_t i, n;

    if (mkdtemp(root) == NULL)
        exit(2);
    write_file(root, "loadavg", "0.00 0.00 0.00 1/100 5000\n");
    fake_process(root, 4242, 1);
    fake_children(root, 4242, "4250 4243 4244 ");
    for (i = 0; i < 3; i++) {
        fake_process(root, kids[i], 4242);
        fake_children(root, kids[i], "");
    }
    CHECK(proc_tree_init(&tree, root, 4242, 1) == 0);
    proc_tree_sample(&tree, 900.0, &r);
    CHECK(r.members == 4);
    for (i = 0; i < 3; i++)
        CHECK(proc_tree_contains(&tree, kids[i]));
    n = proc_tree_member_pids(&tree, pids, 8);
    CHECK(n == 4);
    for (i = 1; i < n; i++)
        CHECK(pids[i - 1] < pids[i]);
    proc_tree_free(&tree);
    snprintf(link, sizeof(link), "rm -rf '%s'", root);
    CHECK(system(link) == 0);
}

/* <root>/<pid>/task/<pid>/schedstat and <root>/<pid>/schedstat of a one-thread fake process:
 * exec_ns run_delay_ns */
static void
fake_schedstat(const char *root, int pid, unsigned long long exec_ns, unsigned long long delay_ns)
{
    char dir[4096], text[64];

    snprintf(text, sizeof(text), "%llu %llu 1\n", exec_ns, delay_ns);
    fake_task_file(root, pid, "schedstat", text);
    snprintf(dir, sizeof(dir), "%s/%d", root, pid);
    write_file(dir, "schedstat", text);
}

/* The run-queue wait's reads (csrc/sched_wait.c) on a fake procfs root of 64 one-thread
 * processes, each waiting 0.1 s a tick of 1 s: with the walk's hints, a member is read from
 * its own schedstat, and not at all while its CPU has not moved (its old reading taken on);
 * without hints (a cgroup's tree) the 64 are listed every 2nd tick (SCHED_WAIT_LISTED_PER_TICK
 * 32), each tick giving the last window's rate, the run's total kept. */
static void
check_wait_reads(void)
{
    char root[] = "/tmp/rt-wait-check-XXXXXX";
    enum { N = 64 };
    pid_t pids[N];
    WaitHint hints[N];
    SchedWait hinted, listed;
    int fd, i, tick;
    double got_hinted = 0.0, got_listed = 0.0, w;

    if (mkdtemp(root) == NULL || (fd = open(root, O_RDONLY | O_DIRECTORY)) < 0)
        exit(2);
    sched_wait_init(&hinted);
    sched_wait_init(&listed);
    for (tick = 0; tick <= 6; tick++) {
        for (i = 0; i < N; i++) {
            pids[i] = 5000 + i;
            hints[i].threads = 1;
            hints[i].cpu_ticks = i < N / 2 ? (unsigned long long)tick : 0; /* half never run */
            fake_schedstat(root, pids[i], (unsigned long long)tick * 100000000ull,
                           i < N / 2 ? (unsigned long long)tick * 100000000ull : 0);
        }
        w = sched_wait_sample(&hinted, fd, pids, hints, N, 1.0, 0);
        CHECK(tick == 0 ? w == 0.0 : w > 3.2 - 1e-9 && w < 3.2 + 1e-9); /* 32 tasks x 0.1 s */
        got_hinted += w;
        w = sched_wait_sample(&listed, fd, pids, NULL, N, 1.0, 0);
        got_listed += w;
    }
    /* hinted: the baseline read all 64; then the 32 that ran, each tick; the rest taken on */
    CHECK(hinted.task_reads == 64 + 6 * 32 && hinted.tasks_carried == 6 * 32);
    /* listed: the baseline, then every 2nd tick (2, 4, 6): 4 reads of 64 */
    CHECK(listed.task_reads == 4 * 64 && listed.tasks_carried == 0);
    /* ticks 1-2 give 0 (no window read yet at 1, the first window's rate from 2 on) */
    CHECK(got_hinted > 6 * 3.2 - 1e-9 && got_hinted < 6 * 3.2 + 1e-9);
    CHECK(got_listed > 5 * 3.2 - 1e-9 && got_listed < 5 * 3.2 + 1e-9);
    sched_wait_free(&hinted);
    sched_wait_free(&listed);
    close(fd);
    {
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        CHECK(system(cmd) == 0);
    }
}

int
main(void)
{
    ProcTree idle, busy;
    ProcTreeReading r;
    int poke, done, t;
    const double t0 = 1000.0; /* the injected monotonic clock */

    check_wait_reads();
    trees[0] = idle_tree();
    settle(trees[0]);
    trees[1] = touching_tree(&poke, &done);
    CHECK(proc_tree_init(&idle, "/proc", trees[0], 1) == 0);
    CHECK(proc_tree_init(&busy, "/proc", trees[1], 1) == 0);

    /* the first tick: one round each, a read per member */
    proc_tree_sample(&idle, t0, &r);
    proc_tree_sample(&busy, t0, &r);
    CHECK(idle.pss_rounds == 1 && idle.pss_reads == 3);
    CHECK(busy.pss_rounds == 1 && busy.pss_reads == 2);

    /* the touching tree: no round until the last is PSS_MAX_AGE old, then one */
    for (t = 1; t < (int)PSS_MAX_AGE; t++) {
        touch(poke, done);
        proc_tree_sample(&busy, t0 + t, &r);
        proc_tree_sample(&idle, t0 + t, &r);
        CHECK(busy.pss_rounds == 1);
    }
    touch(poke, done);
    proc_tree_sample(&busy, t0 + PSS_MAX_AGE, &r);
    CHECK(busy.pss_rounds == 2 && busy.pss_reads == 4);

    /* the idle tree: nothing at PSS_MAX_AGE, nothing until PSS_IDLE_MAX_AGE, then a round */
    for (t = (int)PSS_MAX_AGE; t < (int)PSS_IDLE_MAX_AGE; t++) {
        proc_tree_sample(&idle, t0 + t, &r);
        CHECK(idle.pss_rounds == 1 && idle.pss_reads == 3);
    }
    proc_tree_sample(&idle, t0 + PSS_IDLE_MAX_AGE, &r);
    CHECK(idle.pss_rounds == 2 && idle.pss_reads == 6);

    proc_tree_free(&idle);
    proc_tree_free(&busy);
    stop_trees();
    check_listing_schedule();
    check_children_schedule();
    check_children_order();
    printf("ok %d\n", checks);
    return 0;
}
