/* The re-read age of the cgroup tree source (csrc/cgroup_tree.c) with the clock injected
 * (cgroup_tree_sample takes the tick's monotonic time): no test waits CGROUP_PROCS_MAX_AGE.
 *
 * A real tree (a root and its child, both asleep) in a v2 cgroup laid out in a temporary
 * directory: the root in the cgroup's cgroup.procs, the child in a child cgroup's ("sub"),
 * cpu.stat, memory.stat and io.stat. A stranger (a process of this check, not of the tree)
 * is then written into a child cgroup's cgroup.procs; the first tick that reads it ends the
 * cgroup source, naming it (that tick still comes from the cgroup). Ticks on the injected
 * clock from t0, the first reading:
 *   - with the tree's own pids cgroup (pids.current, unchanged): cgroup.procs is not read
 *     again before CGROUP_PROCS_MAX_AGE: the stranger is not seen at t0 + 1 ... t0 + 4.9,
 *     and is at t0 + 5.1;
 *   - without (the machine's /proc/loadavg, moved by a fork before each tick): the cgroup
 *     directories below are found again only every CGROUP_PROCS_MAX_AGE: a stranger in a
 *     child cgroup made after the first reading is not seen at t0 + 4.9 (though the known
 *     cgroup.procs are read again then), and is at t0 + 5.1.
 * Prints "ok <checks>"; exits non-zero at the first failed check. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_tree.h"

static void stop_all(void);
#define CHECK_CLEANUP() stop_all()
#include "check.h"
static pid_t root, stranger;

static void
stop_all(void)
{
    if (root > 0) {
        kill(-root, SIGKILL);
        waitpid(root, NULL, 0);
    }
    if (stranger > 0) {
        kill(stranger, SIGKILL);
        waitpid(stranger, NULL, 0);
    }
}

static void
write_file(const char *dir, const char *name, const char *text)
{
    char path[4200];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    CHECK(f != NULL && fputs(text, f) >= 0 && fclose(f) == 0);
}

static void
make_dir(const char *dir, const char *name)
{
    char path[4200];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    CHECK(mkdir(path, 0700) == 0);
}

/* the root (its own process group) and its child, both asleep; the child's pid in *child */
static void
start_tree(pid_t *child)
{
    int ready[2];

    CHECK(pipe(ready) == 0);
    root = fork();
    CHECK(root >= 0);
    if (root == 0) {
        pid_t kid;
        setpgid(0, 0);
        kid = fork();
        if (kid == 0)
            for (;;)
                pause();
        if (kid < 0 || write(ready[1], &kid, sizeof(kid)) != sizeof(kid))
            _exit(2);
        for (;;)
            pause();
    }
    CHECK(read(ready[0], child, sizeof(*child)) == sizeof(*child));
    close(ready[0]);
    close(ready[1]);
    stranger = fork();
    CHECK(stranger >= 0);
    if (stranger == 0)
        for (;;)
            pause();
}

/* the cgroup's files: the root in it, the child in "sub" */
static void
lay_out(const char *d, pid_t child)
{
    char line[32];

    snprintf(line, sizeof(line), "%d\n", (int)root);
    write_file(d, "cgroup.procs", line);
    write_file(d, "cpu.stat", "usage_usec 5000000\nuser_usec 3750000\nsystem_usec 1250000\n");
    write_file(d, "memory.stat", "anon 104857600\nfile 0\nfile_mapped 0\nshmem 0\n");
    write_file(d, "io.stat", "8:0 rbytes=1000 wbytes=0 rios=1 wios=0\n");
    make_dir(d, "sub");
    snprintf(line, sizeof(line), "%d\n", (int)child);
    write_file(d, "sub/cgroup.procs", line);
}

/* a task created and reaped: /proc/loadavg's last pid moves */
static void
move_loadavg(void)
{
    pid_t p = fork();

    if (p == 0)
        _exit(0);
    CHECK(p > 0 && waitpid(p, NULL, 0) == p);
}

static void
start_source(CgroupTree *cg, int proc_fd, const char *d, int own_pids)
{
    CgroupTreeConfig cfg;
    int i;

    memset(&cfg, 0, sizeof(cfg));
    cfg.version = 2;
    for (i = 0; i < CG_COLUMNS; i++)
        snprintf(cfg.dir[i], sizeof(cfg.dir[i]), "%s", d);
    if (own_pids)
        snprintf(cfg.pids_dir, sizeof(cfg.pids_dir), "%s", d);
    cgroup_tree_init(cg, proc_fd, root, 0);
    cgroup_tree_request(cg, &cfg);
}

/* the tick that reads the stranger: still from the cgroup, then the walk takes over */
static void
check_stranger_seen(CgroupTree *cg, double now)
{
    CgroupReading out;
    char named[64];

    snprintf(named, sizeof(named), "process %d,", (int)stranger);
    CHECK(cgroup_tree_sample(cg, now, NULL, NULL, &out) == 1);
    CHECK(cg->state == CG_ENDED && strcmp(cgroup_tree_source(cg), "procfs") == 0);
    CHECK(strstr(cg->note, named) != NULL);
    CHECK(cgroup_tree_sample(cg, now + 1.0, NULL, NULL, &out) == 0);
}

/* pids.current unchanged: cgroup.procs read again only once CGROUP_PROCS_MAX_AGE old */
static void
check_with_own_pids(int proc_fd, const char *d, pid_t child, double t0)
{
    static const double ticks[] = {1.0, 2.0, 3.0, 4.0, 4.9};
    CgroupTree cg;
    CgroupReading out;
    char line[64];
    size_t i;

    lay_out(d, child);
    write_file(d, "pids.current", "2\n");
    start_source(&cg, proc_fd, d, 1);
    CHECK(cgroup_tree_sample(&cg, t0, NULL, NULL, &out) == 1 && out.members == 2);
    CHECK(strcmp(cgroup_tree_source(&cg), "cgroup") == 0);
    snprintf(line, sizeof(line), "%d\n%d\n", (int)child, (int)stranger);
    write_file(d, "sub/cgroup.procs", line);
    for (i = 0; i < sizeof(ticks) / sizeof(ticks[0]); i++) {
        CHECK(cgroup_tree_sample(&cg, t0 + ticks[i], NULL, NULL, &out) == 1);
        CHECK(out.members == 2 && strcmp(cgroup_tree_source(&cg), "cgroup") == 0);
        CHECK(cg.listings == 1); /* not read again */
    }
    check_stranger_seen(&cg, t0 + CGROUP_PROCS_MAX_AGE + 0.1);
    cgroup_tree_free(&cg);
}

/* the machine's task count moved: the known cgroup.procs are read each tick, the cgroups
 * below found again only once CGROUP_PROCS_MAX_AGE after the last time */
static void
check_new_child_cgroup(int proc_fd, const char *d, pid_t child, double t0)
{
    CgroupTree cg;
    CgroupReading out;
    char line[32];

    lay_out(d, child);
    start_source(&cg, proc_fd, d, 0);
    CHECK(cgroup_tree_sample(&cg, t0, NULL, NULL, &out) == 1 && out.members == 2);
    make_dir(d, "sub/deeper");
    snprintf(line, sizeof(line), "%d\n", (int)stranger);
    write_file(d, "sub/deeper/cgroup.procs", line);
    move_loadavg();
    CHECK(cgroup_tree_sample(&cg, t0 + 4.9, NULL, NULL, &out) == 1);
    CHECK(cg.listings == 2); /* read again, without the new cgroup */
    CHECK(out.members == 2 && strcmp(cgroup_tree_source(&cg), "cgroup") == 0);
    move_loadavg();
    check_stranger_seen(&cg, t0 + CGROUP_PROCS_MAX_AGE + 0.1);
    cgroup_tree_free(&cg);
}

int
main(void)
{
    char base[] = "/tmp/rt-cgroup-check-XXXXXX", cmd[4200];
    pid_t child;
    int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    CHECK(proc_fd >= 0 && mkdtemp(base) != NULL);
    start_tree(&child);
    make_dir(base, "own");
    make_dir(base, "machine");
    {
        char d[4200];
        snprintf(d, sizeof(d), "%s/own", base);
        check_with_own_pids(proc_fd, d, child, 1000.0);
        snprintf(d, sizeof(d), "%s/machine", base);
        check_new_child_cgroup(proc_fd, d, child, 2000.0);
    }
    stop_all();
    close(proc_fd);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    CHECK(system(cmd) == 0);
    printf("ok %d\n", checks);
    return 0;
}
