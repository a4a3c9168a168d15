#include "cgroup_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup_parse.h"
#include "procfs_parse.h"

void
cgroup_tree_init(CgroupTree *cg, int proc_fd, pid_t root, pid_t adopter)
{
    int i;
    long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    long pages = sysconf(_SC_PHYS_PAGES);

    memset(cg, 0, sizeof(*cg));
    for (i = 0; i < CG_COLUMNS; i++)
        kept_fd_none(&cg->file[i].kept);
    kept_fd_none(&cg->cpu_split.kept);
    kept_fd_none(&cg->loadavg.kept);
    kept_fd_none(&cg->pids.kept);
    cg->proc_fd = proc_fd;
    cg->root = root;
    cg->adopter = adopter;
    cg->self = getpid();
    cg->ticks_per_s = hz > 0 ? (double)hz : 100.0;
    cg->page_kib = page > 0 ? page / 1024 : 4;
    /* what a cgroup holds is in RAM: the machine's RAM times 4 (2^50 when unknown) */
    cg->memory_cap = pages > 0 && page > 0
                         ? (unsigned long long)pages * (unsigned long long)page * CGROUP_RAM_MARGIN
                         : 1ULL << 50;
    cg->state = CG_OFF;
}

void
cgroup_tree_request(CgroupTree *cg, const CgroupTreeConfig *cfg)
{
    if (cg->state != CG_OFF)
        return;
    cg->cfg = *cfg;
    cg->state = CG_WANTED;
}

/* Closes a kept file (if its descriptor is still ours) and forgets it. */
static void
close_file(CgroupTree *cg, CgroupFile *file)
{
    kept_fd_close(&file->kept, &cg->fds_replaced);
    file->path[0] = '\0';
}

/* Opens dir/name (dir NULL: name under the procfs root) to keep: 0, or -1 (none kept). */
static int
open_file(CgroupTree *cg, CgroupFile *file, const char *dir, const char *name)
{
    if (dir != NULL)
        snprintf(file->path, sizeof(file->path), "%s/%s", dir, name);
    else
        snprintf(file->path, sizeof(file->path), "%s", name);
    /* non-blocking: a FIFO never blocks the thread */
    if (kept_fd_adopt(&file->kept,
                      openat(cg->proc_fd, file->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) >= 0)
        return 0;
    file->path[0] = '\0';
    return -1;
}

/* Ends the source for good, saying why (the walk takes every column from now on). */
static void
end_source(CgroupTree *cg, const char *why)
{
    int i;

    snprintf(cg->note, sizeof(cg->note), "%s", why);
    for (i = 0; i < CG_COLUMNS; i++) {
        close_file(cg, &cg->file[i]);
        cg->cfg.dir[i][0] = '\0';
    }
    close_file(cg, &cg->cpu_split);
    close_file(cg, &cg->loadavg);
    close_file(cg, &cg->pids);
    cg->procs_n = 0;
    cg->state = CG_ENDED;
}

/* Hands one column back to the walk, saying why. */
static void
drop_column(CgroupTree *cg, int column, const char *file)
{
    static const char *const names[] = {"CPU", "memory", "I/O"};

    snprintf(cg->note, sizeof(cg->note), "%s from the processes: %s/%s not read or parsed (%s)",
             names[column], cg->cfg.dir[column], file, strerror(errno));
    close_file(cg, &cg->file[column]);
    if (column == CG_CPU)
        close_file(cg, &cg->cpu_split);
    cg->cfg.dir[column][0] = '\0';
    cg->has_last[column] = 0;
}

/* descriptor of dir/name, or -1 */
static int
open_in(const char *dir, const char *name)
{
    char path[600];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO never blocks the thread */
}

/* Reads the file at path (opened non-blocking: a FIFO fails, never blocks): 0, or -1 with errno */
static int
read_path(CgroupTree *cg, const char *path)
{
    return textbuf_read_path(&cg->buf, AT_FDCWD, path, O_NONBLOCK) < 0 ? -1 : 0;
}

/* non-zero when dir/name can be opened for reading */
static int
readable_in(const char *dir, const char *name)
{
    int fd = open_in(dir, name);

    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/* the file a column reads in the cgroup's version */
static const char *
column_file(const CgroupTree *cg, int column)
{
    static const char *const v2[] = {"cpu.stat", "memory.stat", "io.stat"};
    static const char *const v1[] = {"cpuacct.usage", "memory.stat",
                                     "blkio.throttle.io_service_bytes_recursive"};
    return cg->cfg.version == 1 ? v1[column] : v2[column];
}

/* Adds dir's cgroup.procs and those of the cgroups below it: 0, or -1 when there are too
 * many. */
static int
add_cgroup_tree(CgroupTree *cg, const char *dir, int depth)
{
    KeptFd opened;
    DIR *d;
    struct dirent *e;
    char child[600];
    int rc = 0;

    if (cg->procs_n == CGROUP_MAX_DIRS)
        return -1;
    cg->procs_own[cg->procs_n] = depth == 0;
    snprintf(cg->procs_path[cg->procs_n++], sizeof(cg->procs_path[0]), "%s/cgroup.procs", dir);
    if (depth == CGROUP_MAX_DEPTH || (d = kept_dir_open_at(&opened, AT_FDCWD, dir)) == NULL)
        return 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        if ((size_t)snprintf(child, sizeof(child), "%s/%s", dir, e->d_name) >= sizeof(child) - 16)
            rc = -1;
        else
            rc = add_cgroup_tree(cg, child, depth + 1);
    }
    kept_dir_close(d, &opened);
    return rc;
}

/* Lists the cgroup.procs to read (each distinct column directory and the cgroups below it):
 * 0, or -1 with the source ended. */
static int
scan_cgroups(CgroupTree *cg)
{
    int i, j, same;

    cg->procs_n = cg->first_n = 0;
    for (i = 0; i < CG_COLUMNS; i++) {
        for (j = 0, same = 0; j < i; j++)
            same |= strcmp(cg->cfg.dir[j], cg->cfg.dir[i]) == 0;
        if (!cg->cfg.dir[i][0] || same)
            continue;
        if (add_cgroup_tree(cg, cg->cfg.dir[i], 0) != 0) {
            end_source(cg, "more than 32 cgroups below the tree's (or too deep): processes "
                           "walked");
            return -1;
        }
        if (cg->first_n == 0)
            cg->first_n = cg->procs_n;
    }
    return 0;
}

/* Opens the column files and checks each distinct directory's cgroup.procs. */
static void
open_files(CgroupTree *cg)
{
    int i, j, same;

    for (i = 0; i < CG_COLUMNS; i++) {
        if (!cg->cfg.dir[i][0])
            continue;
        CgroupFile *file = &cg->file[i];
        if (open_file(cg, file, cg->cfg.dir[i], column_file(cg, i)) != 0 && i == CG_IO &&
            cg->cfg.version == 1)
            open_file(cg, file, cg->cfg.dir[i], "blkio.throttle.io_service_bytes");
        if (i == CG_CPU && cg->cfg.version == 1 && file->path[0] &&
            open_file(cg, &cg->cpu_split, cg->cfg.dir[i], "cpuacct.stat") != 0)
            close_file(cg, file);
        if (!file->path[0]) {
            drop_column(cg, i, column_file(cg, i));
            continue;
        }
        for (j = 0, same = 0; j < i; j++)
            same |= cg->cfg.dir[j][0] && strcmp(cg->cfg.dir[j], cg->cfg.dir[i]) == 0;
        if (!same && !readable_in(cg->cfg.dir[i], "cgroup.procs")) {
            end_source(cg, "the cgroup's cgroup.procs cannot be read: processes walked");
            return;
        }
    }
    if (scan_cgroups(cg) != 0)
        return;
    if (cg->procs_n == 0)
        end_source(cg, cg->note[0] ? cg->note : "no cgroup file readable: processes walked");
}

/* Reads a kept file into buf through its descriptor while that is still ours, else (the
 * application closed or replaced it) opened again by its path: 0, or -1 with errno. */
static int
read_open(CgroupTree *cg, CgroupFile *file)
{
    cg->reads++;
    if (!file->path[0]) {
        errno = ENOENT;
        return -1;
    }
    if (kept_fd_check(&file->kept, &cg->fds_replaced) < 0 &&
        kept_fd_adopt(&file->kept,
                      openat(cg->proc_fd, file->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
        return -1;
    if (textbuf_read_fd(&cg->buf, file->kept.fd) >= 0)
        return 0;
    if (errno == EBADF) { /* closed by the application since the check: never closed here */
        kept_fd_none(&file->kept);
        cg->fds_replaced++;
    }
    return -1;
}

/* Reads /proc/<pid>/<name>: 0, or -1. */
static int
read_proc(CgroupTree *cg, pid_t pid, const char *name)
{
    char path[40];

    cg->reads++;
    snprintf(path, sizeof(path), "%d/%s", (int)pid, name);
    return textbuf_read_at(&cg->buf, cg->proc_fd, path) < 0 ? -1 : 0;
}

/* the parent of pid, or -1 when it cannot be read */
static pid_t
parent_of(CgroupTree *cg, pid_t pid)
{
    PidStat st;

    if (read_proc(cg, pid, "stat") != 0 || parse_pid_stat(cg->buf.data, &st) != 0)
        return -1;
    return (pid_t)st.ppid;
}

static void
find_ancestors(CgroupTree *cg)
{
    pid_t p = cg->root;

    cg->n_ancestors = 0;
    while (cg->n_ancestors < (int)(sizeof(cg->ancestors) / sizeof(pid_t))) {
        p = parent_of(cg, p);
        if (p <= 0)
            break;
        cg->ancestors[cg->n_ancestors++] = p;
    }
}

static int
pid_cmp(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

/* non-zero when pid is in the sorted array */
static int
sorted_has(const pid_t *pids, size_t n, pid_t pid)
{
    return n && bsearch(&pid, pids, n, sizeof(pid_t), pid_cmp) != NULL;
}

static int
is_ancestor(const CgroupTree *cg, pid_t pid)
{
    int i;

    for (i = 0; i < cg->n_ancestors; i++)
        if (cg->ancestors[i] == pid)
            return 1;
    return 0;
}

/* Non-zero while the process with the root's pid is the root: the start time it had when
 * first seen (a process that got the pid after the root exited is not, nor any later one).
 * Read once per listing of cgroup.procs; a root gone since is no stranger. */
static int
root_is_there(CgroupTree *cg)
{
    PidStat st;

    if (cg->root_ended || cg->root_checked_at == cg->listings)
        return !cg->root_ended;
    if (read_proc(cg, cg->root, "stat") != 0 || parse_pid_stat(cg->buf.data, &st) != 0)
        return 1;
    cg->root_checked_at = cg->listings;
    if (!cg->root_seen) {
        cg->root_seen = 1;
        cg->root_starttime = st.starttime;
    }
    cg->root_ended = st.starttime != cg->root_starttime;
    return !cg->root_ended;
}

/* non-zero when pid is known to be in the tree (last reading, or this tick's walk) */
static int
known_member(CgroupTree *cg, const ProcTree *walk, pid_t pid)
{
    if (pid == cg->root)
        return root_is_there(cg);
    if (sorted_has(cg->known, cg->known_len, pid))
        return 1;
    return walk != NULL && proc_tree_contains(walk, pid);
}

/* 1: a member (its parents lead to one), 0: an ancestor of the root, -1: neither, 2: gone
 * before its parents were read (not counted) */
static int
classify(CgroupTree *cg, const ProcTree *walk, pid_t pid)
{
    pid_t p = pid;
    int depth;

    if (known_member(cg, walk, pid))
        return 1;
    if (is_ancestor(cg, pid) && pid != cg->adopter)
        return 0;
    for (depth = 0; depth < CGROUP_MAX_ANCESTRY; depth++) {
        p = parent_of(cg, p);
        if (p < 0)
            return 2;
        if (p > 0 && (known_member(cg, walk, p) || (cg->adopter > 0 && p == cg->adopter)))
            return 1;
        if (p <= 1 || is_ancestor(cg, p))
            return -1;
    }
    return -1;
}

/* Non-zero when the tree's tasks cannot have changed since cgroup.procs was last read (its
 * pids cgroup's task count, else the machine's task count and last pid, are those of then),
 * within the age limit. */
static int
membership_unchanged(CgroupTree *cg, double now)
{
    const char *tasks;
    CgroupFile *file = cg->pids.path[0] ? &cg->pids : &cg->loadavg;
    int same;

    if (!file->path[0] || read_open(cg, file) != 0)
        return 0;
    tasks = cg->buf.data;
    if (file == &cg->loadavg) { /* "0.00 0.01 0.05 1/123 4567": from the task count on */
        tasks = strchr(tasks, '/');
        tasks = tasks ? tasks + 1 : cg->buf.data;
    }
    same = strncmp(tasks, cg->tasks_seen, sizeof(cg->tasks_seen) - 1) == 0;
    snprintf(cg->tasks_seen, sizeof(cg->tasks_seen), "%s", tasks);
    return same && cg->procs_at > 0 && now - cg->procs_at < CGROUP_PROCS_MAX_AGE;
}

/* The pids of the first (all: every) cgroup.procs, sorted, without repeats, in cg->scratch:
 * how many, or -1. */
static long
list_pids(CgroupTree *cg, int all)
{
    size_t n = 0;
    long got;
    int i;

    cg->listings++;
    for (i = 0; i < (all ? cg->procs_n : cg->first_n); i++) {
        /* opened anew each time: a v1 cgroup.procs kept open keeps serving the pid list of
         * its first read while re-read within a second (the kernel's pidlist cache) */
        cg->reads++;
        if (read_path(cg, cg->procs_path[i]) != 0) {
            if (!cg->procs_own[i] && errno == ENOENT)
                continue; /* a child cgroup removed since the scan */
            return -1;
        }
        got = parse_cgroup_procs(cg->buf.data, cg->scratch + n, cg->scratch_cap - n);
        if (got < 0)
            return -1;
        if (n + (size_t)got > cg->scratch_cap) {
            size_t cap = (n + (size_t)got) * 2;
            pid_t *grown = realloc(cg->scratch, cap * sizeof(pid_t));
            if (grown == NULL)
                return -1;
            cg->scratch = grown;
            cg->scratch_cap = cap;
            i--; /* the same file again, into the larger array */
            continue;
        }
        n += (size_t)got;
    }
    qsort(cg->scratch, n, sizeof(pid_t), pid_cmp);
    for (got = 0, i = 0; (size_t)i < n; i++)
        if (got == 0 || cg->scratch[got - 1] != cg->scratch[i])
            cg->scratch[got++] = cg->scratch[i];
    return got;
}

/* Adds an ancestor found in the cgroup to the others read each tick: 0, or -1 (too many). */
static int
note_other(CgroupTree *cg, pid_t pid)
{
    int i;

    for (i = 0; i < cg->n_others; i++)
        if (cg->others[i].pid == pid) {
            cg->others[i].alive = 1;
            return 0;
        }
    if (cg->n_others == CGROUP_MAX_OTHERS)
        return -1;
    memset(&cg->others[cg->n_others], 0, sizeof(CgroupOther));
    cg->others[cg->n_others].pid = pid;
    cg->others[cg->n_others++].alive = 1;
    return 0;
}

/* Keeps the members of the listing as the known pids, the ancestors as others; counts the
 * members into out: 0, or -1 with why (a process not of the tree is in the cgroup). */
static int
sort_pids(CgroupTree *cg, const ProcTree *walk, size_t n, CgroupReading *out, char *why,
          size_t why_size)
{
    size_t i, kept = 0;
    pid_t *swap;
    int kind, rc = 0;

    for (i = 0; i < (size_t)cg->n_others; i++)
        cg->others[i].alive = 0;
    for (i = 0; i < n && rc == 0; i++) { /* the first stranger settles it */
        pid_t pid = cg->scratch[i];
        kind = classify(cg, walk, pid);
        if (kind == 1) {
            cg->scratch[kept++] = pid; /* kept <= i: the listing is overwritten in order */
            out->members++;
            out->root_alive |= pid == cg->root;
            out->self_member |= pid == cg->self;
        } else if (kind == 0 && note_other(cg, pid) != 0) {
            snprintf(why, why_size,
                     "more than %d of the root's ancestors are in the cgroup: "
                     "processes walked from then on",
                     CGROUP_MAX_OTHERS);
            rc = -1;
        } else if (kind == -1) {
            snprintf(why, why_size,
                     "process %d, not of the tracked tree, joined the cgroup: "
                     "processes walked from then on",
                     (int)pid);
            rc = -1;
        }
    }
    /* the members become the known pids; the old array takes the next listing */
    swap = cg->known;
    i = cg->known_cap;
    cg->known = cg->scratch;
    cg->known_cap = cg->scratch_cap;
    cg->known_len = kept;
    cg->scratch = swap;
    cg->scratch_cap = i;
    return rc;
}

/* Reads the own CPU and anonymous memory of the ancestors in the cgroup. */
static void
read_others(CgroupTree *cg)
{
    PidStat st;
    unsigned long long size, resident, shared;
    int i;

    for (i = 0; i < cg->n_others; i++) {
        CgroupOther *o = &cg->others[i];
        if (!o->alive || read_proc(cg, o->pid, "stat") != 0 ||
            parse_pid_stat(cg->buf.data, &st) != 0) {
            o->alive = 0;
            o->anon_kib = 0;
            continue;
        }
        o->user_s = (double)st.utime / cg->ticks_per_s;
        o->sys_s = (double)st.stime / cg->ticks_per_s;
        if (read_proc(cg, o->pid, "statm") == 0 &&
            sscanf(cg->buf.data, "%llu %llu %llu", &size, &resident, &shared) == 3)
            o->anon_kib = resident > shared ? (double)((resident - shared) * cg->page_kib) : 0.0;
    }
}

/* Cumulative CPU seconds of the cgroup, split into user and system: 0, or -1. */
static int
read_cpu(CgroupTree *cg, double *user_s, double *sys_s)
{
    unsigned long long usage, user, sys;
    double total, share;

    if (read_open(cg, &cg->file[CG_CPU]) != 0)
        return -1;
    if (cg->cfg.version == 2) {
        if (parse_cgroup_keyed(cg->buf.data, "usage_usec", &usage) != 0 ||
            parse_cgroup_keyed(cg->buf.data, "user_usec", &user) != 0 ||
            parse_cgroup_keyed(cg->buf.data, "system_usec", &sys) != 0)
            return -1;
        total = (double)usage / 1e6;
    } else {
        if (parse_cgroup_number(cg->buf.data, &usage) != 0 || read_open(cg, &cg->cpu_split) != 0 ||
            parse_cgroup_keyed(cg->buf.data, "user", &user) != 0 ||
            parse_cgroup_keyed(cg->buf.data, "system", &sys) != 0)
            return -1;
        total = (double)usage / 1e9; /* nanoseconds; the split comes in clock ticks */
    }
    share = user + sys > 0 ? (double)user / (double)(user + sys) : 1.0;
    *user_s = total * share;
    *sys_s = total - *user_s;
    return 0;
}

/* Resident memory of the cgroup's processes in KiB (anonymous + mapped files): 0, or -1 (also
 * for a figure above the machine's RAM times CGROUP_RAM_MARGIN: damaged, never summed) */
static int
read_memory(CgroupTree *cg, double *kib)
{
    unsigned long long anon, mapped;
    const char *k_anon = cg->cfg.version == 2 ? "anon" : "total_rss";
    const char *k_mapped = cg->cfg.version == 2 ? "file_mapped" : "total_mapped_file";

    if (read_open(cg, &cg->file[CG_MEMORY]) != 0 ||
        parse_cgroup_keyed(cg->buf.data, k_anon, &anon) != 0 ||
        parse_cgroup_keyed(cg->buf.data, k_mapped, &mapped) != 0)
        return -1;
    if (anon > cg->memory_cap || mapped > cg->memory_cap) {
        errno = ERANGE;
        return -1;
    }
    *kib = (double)(anon + mapped) / 1024.0;
    return 0;
}

/* Cumulative storage bytes of the cgroup: 0, or -1. */
static int
read_io(CgroupTree *cg, double *read_b, double *write_b)
{
    unsigned long long r, w;
    int rc;

    if (read_open(cg, &cg->file[CG_IO]) != 0)
        return -1;
    rc = cg->cfg.version == 2 ? parse_cgroup_io_stat(cg->buf.data, &r, &w)
                              : parse_cgroup_blkio(cg->buf.data, &r, &w);
    *read_b = (double)r;
    *write_b = (double)w;
    return rc;
}

/* the rise of a cumulative value over its mark (never negative; the mark follows it up) */
static double
rise_over(double value, double *mark)
{
    double d = value - *mark;
    if (value > *mark)
        *mark = value;
    return d > 0 ? d : 0.0;
}

/* CPU of the tree: the cgroup's minus the ancestors' and the sampler's own */
static void
cpu_column(CgroupTree *cg, const TreeTotals *own_cpu, CgroupReading *out)
{
    double user, sys;
    int i;

    if (read_cpu(cg, &user, &sys) != 0) {
        drop_column(cg, CG_CPU, column_file(cg, CG_CPU));
        return;
    }
    for (i = 0; i < cg->n_others; i++) {
        user -= cg->others[i].user_s;
        sys -= cg->others[i].sys_s;
    }
    if (out->self_member && own_cpu) {
        user -= own_cpu->user_s;
        sys -= own_cpu->sys_s;
    }
    out->have[CG_CPU] = 1;
    if (cg->has_last[CG_CPU]) {
        out->have_interval[CG_CPU] = 1;
        out->interval.user_s = rise_over(user, &cg->last.user_s);
        out->interval.sys_s = rise_over(sys, &cg->last.sys_s);
    } else {
        cg->last.user_s = user;
        cg->last.sys_s = sys;
        cg->has_last[CG_CPU] = 1;
    }
}

static void
memory_column(CgroupTree *cg, CgroupReading *out)
{
    double kib;
    int i;

    if (read_memory(cg, &kib) != 0) {
        drop_column(cg, CG_MEMORY, column_file(cg, CG_MEMORY));
        return;
    }
    for (i = 0; i < cg->n_others; i++)
        kib -= cg->others[i].alive ? cg->others[i].anon_kib : 0.0;
    out->memory_kib = kib > 0 ? kib : 0.0;
    out->have[CG_MEMORY] = out->have_interval[CG_MEMORY] = 1;
    cg->has_last[CG_MEMORY] = 1; /* a level: no previous reading needed */
}

static void
io_column(CgroupTree *cg, CgroupReading *out)
{
    double r, w;

    if (read_io(cg, &r, &w) != 0) {
        drop_column(cg, CG_IO, column_file(cg, CG_IO));
        return;
    }
    out->have[CG_IO] = 1;
    if (cg->has_last[CG_IO]) {
        out->have_interval[CG_IO] = 1;
        out->interval.read_b = rise_over(r, &cg->last.read_b);
        out->interval.write_b = rise_over(w, &cg->last.write_b);
    } else {
        cg->last.read_b = r;
        cg->last.write_b = w;
        cg->has_last[CG_IO] = 1;
    }
}

/* 1 when out was filled from the cgroup */
int
cgroup_tree_sample(CgroupTree *cg, double now, const ProcTree *walk, const TreeTotals *own_cpu,
                   CgroupReading *out)
{
    char why[200];
    long n;
    int intruder;

    memset(out, 0, sizeof(*out));
    if (walk != NULL && walk->root_seen && !cg->root_seen) { /* the root as the walk knew it */
        cg->root_seen = 1;
        cg->root_starttime = walk->root_starttime;
    }
    if (walk != NULL && walk->root_ended)
        cg->root_ended = 1;
    if (cg->state == CG_WANTED) {
        cg->state = CG_ON;
        find_ancestors(cg);
        open_files(cg);
        if (cg->cfg.pids_dir[0])
            open_file(cg, &cg->pids, cg->cfg.pids_dir, "pids.current");
        if (!cg->pids.path[0])
            open_file(cg, &cg->loadavg, NULL, "loadavg");
    }
    if (cg->state != CG_ON)
        return 0;
    intruder = 0;
    if (membership_unchanged(cg, now)) {
        out->members = (int)cg->known_len;
        out->root_alive = !cg->root_ended && sorted_has(cg->known, cg->known_len, cg->root);
        out->self_member = sorted_has(cg->known, cg->known_len, cg->self);
    } else {
        int all = now - cg->all_procs_at >= CGROUP_PROCS_MAX_AGE;
        if (all && cg->all_procs_at > 0 && scan_cgroups(cg) != 0)
            return 0;
        n = list_pids(cg, all);
        if (n < 0) {
            end_source(cg, "the cgroup's cgroup.procs could not be read: processes walked");
            return 0;
        }
        cg->procs_at = now;
        if (all)
            cg->all_procs_at = now;
        /* a process that is not the tree's: this tick's rises still count (it joined during
         * the interval), then the walk takes over */
        intruder = sort_pids(cg, walk, (size_t)n, out, why, sizeof(why));
    }
    read_others(cg);
    if (cg->cfg.dir[CG_CPU][0])
        cpu_column(cg, own_cpu, out);
    if (cg->cfg.dir[CG_MEMORY][0])
        memory_column(cg, out);
    if (cg->cfg.dir[CG_IO][0])
        io_column(cg, out);
    cg->ticks++;
    if (intruder)
        end_source(cg, why);
    return 1;
}

int
cgroup_tree_covers_all(const CgroupTree *cg)
{
    int i;

    if (cg->state != CG_ON)
        return 0;
    for (i = 0; i < CG_COLUMNS; i++)
        if (!cg->cfg.dir[i][0] || !cg->has_last[i])
            return 0;
    return 1;
}

int
cgroup_tree_needs_walk(const CgroupTree *cg)
{
    return cg->state == CG_WANTED;
}

size_t
cgroup_tree_member_pids(const CgroupTree *cg, pid_t *out, size_t cap)
{
    size_t i;

    for (i = 0; i < cg->known_len && i < cap; i++)
        out[i] = cg->known[i];
    return cg->known_len;
}

const char *
cgroup_tree_column_source(const CgroupTree *cg, int column)
{
    return cg->state == CG_ON && cg->cfg.dir[column][0] ? "cgroup" : "procfs";
}

const char *
cgroup_tree_source(const CgroupTree *cg)
{
    int i, n = 0;

    for (i = 0; i < CG_COLUMNS; i++)
        n += strcmp(cgroup_tree_column_source(cg, i), "cgroup") == 0;
    return n == CG_COLUMNS ? "cgroup" : n == 0 ? "procfs" : "mixed";
}

size_t
cgroup_tree_bytes(const CgroupTree *cg)
{
    return (cg->known_cap + cg->scratch_cap) * sizeof(pid_t) + cg->buf.cap;
}

void
cgroup_tree_free(CgroupTree *cg)
{
    int i;

    for (i = 0; i < CG_COLUMNS; i++)
        close_file(cg, &cg->file[i]);
    close_file(cg, &cg->cpu_split);
    close_file(cg, &cg->loadavg);
    close_file(cg, &cg->pids);
    free(cg->known);
    free(cg->scratch);
    cg->known = cg->scratch = NULL;
    cg->known_len = cg->known_cap = cg->scratch_cap = 0;
    textbuf_free(&cg->buf); /* the state stays: it tells where the run's figures came from */
}
