#include "proc_tree.h"

#include "fd_budget.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CLASSIFY_MAX_DEPTH 256 /* reaper chains of vanished members */

/* CPU seconds of the calling thread: what a read costs, however busy the machine is (its wall
 * time stretches when other processes take the cores, and would drain the PSS budget) */
static double
thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The one growth path of an EntryVec: 0, or -1 on ENOMEM. */
static int
entries_reserve(EntryVec *vec, size_t need)
{
    size_t cap;
    ProcEntry *grown;

    if (need <= vec->cap)
        return 0;
    cap = vec->cap ? vec->cap * 2 : 256;
    while (cap < need)
        cap *= 2;
    grown = realloc(vec->items, cap * sizeof(ProcEntry));
    if (grown == NULL)
        return -1;
    vec->items = grown;
    vec->cap = cap;
    return 0;
}

/* 0, or -1 on ENOMEM */
static int
entries_push(EntryVec *vec, const ProcEntry *entry)
{
    if (entries_reserve(vec, vec->len + 1) != 0)
        return -1;
    vec->items[vec->len++] = *entry;
    return 0;
}

/* index of pid in a pid-sorted vector, or -1 */
static long
entries_find(const EntryVec *vec, pid_t pid)
{
    size_t lo = 0, hi = vec->len;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (vec->items[mid].pid < pid)
            lo = mid + 1;
        else if (vec->items[mid].pid > pid)
            hi = mid;
        else
            return (long)mid;
    }
    return -1;
}

/* Non-zero when the procfs at proc_fd shows this process under its own pid: the pids the
 * kernel hands out to us (/proc/loadavg) are the ones it lists. */
static int
same_pid_namespace(int proc_fd)
{
    char link[32];
    ssize_t n = readlinkat(proc_fd, "self", link, sizeof(link) - 1);

    if (n <= 0)
        return 0;
    link[n] = '\0';
    return strtol(link, NULL, 10) == (long)getpid();
}

/* 0 on success */
/* The root's identity (its start time) is taken when tracking is set up, in the caller: a
 * pid handed to another process before the sampler thread's first reading is not the root.
 * Unreadable now (hidepid, already gone): the first reading that sees the pid decides. */
static void
note_root_start(ProcTree *tree)
{
    char path[32];
    PidStat stat;
    KeptFd opened;
    struct stat st;
    int ok;

    if (tree->root <= 0)
        return;
    snprintf(path, sizeof(path), "%d/stat", (int)tree->root);
    if (kept_fd_adopt(&opened, openat(tree->proc.fd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
        return;
    /* a regular file only: this runs in the caller, which nothing may block */
    ok = fstat(opened.fd, &st) == 0 && S_ISREG(st.st_mode) &&
         textbuf_read_fd(&tree->buf, opened.fd) >= 0 && parse_pid_stat(tree->buf.data, &stat) == 0;
    kept_fd_close(&opened, &tree->fds_replaced);
    if (!ok)
        return;
    tree->root_seen = 1;
    tree->root_starttime = stat.starttime;
}

int
proc_tree_init(ProcTree *tree, const char *proc_root, pid_t root, int follow_children)
{
    memset(tree, 0, sizeof(*tree));
    kept_fd_none(&tree->proc);
    kept_fd_none(&tree->stat_file);
    kept_fd_none(&tree->loadavg_file);
    snprintf(tree->proc_root, sizeof(tree->proc_root), "%s", proc_root);
    if (proc_tree_check_root(tree) < 0)
        return -1;
    tree->root = root;
    tree->follow_children = follow_children;
    tree->self_pid = getpid();
    tree->ticks_per_s = (double)sysconf(_SC_CLK_TCK);
    if (tree->ticks_per_s <= 0)
        tree->ticks_per_s = 100.0;
    tree->page_kib = sysconf(_SC_PAGESIZE) / 1024;
    if (tree->page_kib <= 0)
        tree->page_kib = 4;
    tree->pss_allowance = PSS_BUDGET_START;
    tree->fd_limit = fd_limit_now();
    kept_fd_open_at(&tree->stat_file, tree->proc.fd, "stat", tree->fd_limit);
    tree->probe_pids = same_pid_namespace(tree->proc.fd);
    if (tree->probe_pids)
        kept_fd_open_at(&tree->loadavg_file, tree->proc.fd, "loadavg", tree->fd_limit);
    tree->last_pid = tree->pid_at_listing = tree->tasks = tree->tasks_at_listing = -1;
    tree->children_lists = root > 0 && task_children_available(tree->proc.fd, root);
    note_root_start(tree);
    return 0;
}

/* the procfs root's descriptor, or -1 */
int
proc_tree_check_root(ProcTree *tree)
{
    return kept_fd_check_dir(&tree->proc, tree->proc_root, &tree->fds_replaced);
}

void
proc_tree_adopt_children_of(ProcTree *tree, pid_t adopter)
{
    tree->adopter = adopter;
}

void
proc_tree_use_listing(ProcTree *tree)
{
    tree->children_lists = 0;
}

static int
pid_ino_cmp(const void *a, const void *b)
{
    const struct PidIno *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Lists the numeric entries of the procfs root into tree->listing, ascending: count, or -1. */
static long
list_processes(ProcTree *tree)
{
    KeptFd opened;
    DIR *dir;
    struct dirent *de;
    int sorted = 1;

    tree->listing_len = 0;
    /* opened for each listing: a directory stream kept open could not be let go of without
     * closing its number, which may be the application's by then (fd_budget.h) */
    dir = kept_dir_open_at(&opened, tree->proc.fd, ".");
    if (dir == NULL)
        return -1;
    while ((de = readdir(dir)) != NULL) {
        const char *s = de->d_name;
        long pid = 0;
        if (*s < '1' || *s > '9')
            continue;
        while (*s >= '0' && *s <= '9' && pid < 0x7fffffff)
            pid = pid * 10 + (*s++ - '0');
        if (*s != '\0')
            continue;
        if (tree->listing_len == tree->listing_cap) {
            size_t cap = tree->listing_cap ? tree->listing_cap * 2 : 1024;
            struct PidIno *grown = realloc(tree->listing, cap * sizeof(*grown));
            if (grown == NULL) {
                kept_dir_close(dir, &opened);
                return -1;
            }
            tree->listing = grown;
            tree->listing_cap = cap;
        }
        if (tree->listing_len && tree->listing[tree->listing_len - 1].pid > (pid_t)pid)
            sorted = 0;
        tree->listing[tree->listing_len].pid = (pid_t)pid;
        tree->listing[tree->listing_len].ino = de->d_ino;
        tree->listing_len++;
    }
    kept_dir_close(dir, &opened);
    if (!sorted)
        qsort(tree->listing, tree->listing_len, sizeof(*tree->listing), pid_ino_cmp);
    return (long)tree->listing_len;
}

/* Closes the descriptors a member kept open. */
static void
close_kept(ProcTree *tree, ProcEntry *entry)
{
    if (entry->kept)
        tree->kept_open--;
    entry->kept = 0;
    kept_fd_close(&entry->stat_file, &tree->fds_replaced);
    kept_fd_close(&entry->io_file, &tree->fds_replaced);
    list_cache_drop(&tree->lists, entry->pid, &tree->fds_replaced);
}

/* Reads RLIMIT_NOFILE into tree->fd_limit (-1: none). */
static void
read_fd_limit(ProcTree *tree, double now)
{
    tree->fd_limit = fd_limit_now();
    tree->fd_limit_at = now;
}

/* Gives back every kept descriptor when the application came within half the margin of
 * RLIMIT_NOFILE (its lowest free descriptor number is that high: every number below is in
 * use; ours all sit below the full margin, so only the application's use can get there). The
 * limit is read again every FD_LIMIT_MAX_AGE, and always before giving anything back. */
static void
shed_when_short(ProcTree *tree, double now)
{
    EntryVec *vec = &tree->entries;
    int probe, fresh = tree->fd_limit_at == 0 || now - tree->fd_limit_at >= FD_LIMIT_MAX_AGE;
    size_t i;

    if (fresh)
        read_fd_limit(tree, now);
    if ((tree->kept_open == 0 && tree->stat_file.fd < 0 && tree->loadavg_file.fd < 0) ||
        tree->fd_limit < 0)
        return;
    probe = fcntl(tree->proc.fd, F_DUPFD_CLOEXEC, 0);
    if (probe >= 0)
        close(probe);
    if (probe >= 0 && (long)probe + fd_margin(tree->fd_limit) / 2 < tree->fd_limit)
        return;
    if (!fresh) { /* the application may have raised its limit since it was read */
        read_fd_limit(tree, now);
        if (tree->fd_limit < 0 ||
            (probe >= 0 && (long)probe + fd_margin(tree->fd_limit) / 2 < tree->fd_limit))
            return;
    }
    for (i = 0; i < vec->len; i++)
        close_kept(tree, &vec->items[i]);
    list_cache_drop(&tree->lists, 0, &tree->fds_replaced);
    kept_fd_close(&tree->stat_file, &tree->fds_replaced); /* read by path from now on */
    kept_fd_close(&tree->loadavg_file, &tree->fds_replaced);
    tree->keep_blocked_til = now + KEEP_RETRY_S;
    tree->fd_sheds++;
}

/* Keeps a member's stat and io open for the next ticks, within the fd budget. */
static void
keep_open(ProcTree *tree, ProcEntry *entry)
{
    char path[32];

    if (entry->stat_file.fd >= 0 || tree->keep_blocked_til > tree->now)
        return;
    if (entry->kept) /* its stat was the application's number: both opened again */
        close_kept(tree, entry);
    if (tree->kept_open * 2 + (long)tree->lists.len + 2 > KEPT_FD_BUDGET)
        return;
    snprintf(path, sizeof(path), "%d/stat", (int)entry->pid);
    kept_fd_open_at(&entry->stat_file, tree->proc.fd, path, tree->fd_limit);
    snprintf(path, sizeof(path), "%d/io", (int)entry->pid);
    kept_fd_open_at(&entry->io_file, tree->proc.fd, path, tree->fd_limit);
    entry->kept = entry->stat_file.fd >= 0 || entry->io_file.fd >= 0;
    tree->kept_open += entry->kept;
}

/* Reads a file under the procfs root through its kept descriptor while that is still ours,
 * else by path: length, or -1. */
static ssize_t
read_kept_file(ProcTree *tree, KeptFd *kept, const char *path)
{
    return kept_fd_read(kept, &tree->buf, tree->proc.fd, path, &tree->fds_replaced);
}

/* Reads a per-process file through its kept descriptor, else by path: length, or -1. */
static ssize_t
read_pid_file(ProcTree *tree, KeptFd *kept, pid_t pid, const char *name)
{
    char path[40];

    snprintf(path, sizeof(path), "%d/%s", (int)pid, name);
    return read_kept_file(tree, kept, path);
}

/* Reads /proc/<pid>/stat into the entry: 0, or -1 when the process is gone or unreadable. */
static int
read_stat(ProcTree *tree, ProcEntry *entry)
{
    if (entry->has_stat)
        return 0;
    if (read_pid_file(tree, &entry->stat_file, entry->pid, "stat") < 0 ||
        parse_pid_stat(tree->buf.data, &entry->stat) != 0) {
        if (errno != ENOENT && errno != ESRCH)
            tree->read_errors++;
        return -1;
    }
    entry->has_stat = 1;
    entry->ppid = entry->stat.ppid;
    return 0;
}

/* Non-zero when the entry (its stat read) is the root process: the root's pid, and the start
 * time the root had when first seen (a process that got the pid after the root exited is not
 * the root, nor is any once the root was seen gone). */
static int
is_root(ProcTree *tree, const ProcEntry *entry)
{
    if (entry->pid != tree->root || tree->root_ended)
        return 0;
    if (!tree->root_seen) {
        tree->root_seen = 1;
        tree->root_starttime = entry->stat.starttime;
    }
    if (entry->stat.starttime == tree->root_starttime)
        return 1;
    tree->root_ended = 1;
    return 0;
}

/* Notes a member that left the tree among the vanished (when it is the root, no process is
 * the root again): 0, or -1 on ENOMEM. Not a member: nothing to note. */
static int
push_vanished(ProcTree *tree, const ProcEntry *entry)
{
    if (!entry->member)
        return 0;
    if (entry->pid == tree->root)
        tree->root_ended = 1;
    return entries_push(&tree->vanished, entry);
}

/* Settles an entry's membership by itself when it can (known already, the root, gone, no
 * parent listed): 1 or 0. Else -1, with *parent the index of the parent it follows. */
static int
classify_self(ProcTree *tree, EntryVec *vec, long idx, long *parent)
{
    ProcEntry *entry = &vec->items[idx];
    int member = 0;

    if (entry->classified)
        return entry->member;
    if (tree->follow_children || entry->pid == tree->root) { /* else: no stat needed */
        if (read_stat(tree, entry) != 0) {
            entry->gone = 1;
        } else {
            entry->starttime = entry->stat.starttime;
            if (is_root(tree, entry) || (tree->adopter > 0 && entry->ppid == tree->adopter))
                member = 1; /* the root, or a process the CLI adopted as subreaper */
            else if (tree->follow_children && entry->ppid > 0) {
                *parent = entries_find(vec, entry->ppid);
                if (*parent >= 0 && *parent != idx)
                    return -1;
            }
        }
    }
    entry->classified = 1;
    entry->member = (unsigned char)member;
    if (member)
        tree->generation++;
    return member;
}

/* Decides whether the entry at idx of vec belongs to the tree: walks up the parents (a loop,
 * not recursion: any depth) to the first settled one, then gives the walked entries its
 * answer. A parent cycle (only a fake procfs has one) ends the walk as "not a member". */
static int
classify(ProcTree *tree, EntryVec *vec, long idx)
{
    long cur = idx, parent = -1;
    size_t steps = 0;
    int member;

    while ((member = classify_self(tree, vec, cur, &parent)) < 0) {
        if (++steps > vec->len) {
            member = 0;
            break;
        }
        cur = parent;
    }
    for (cur = idx; !vec->items[cur].classified; cur = entries_find(vec, vec->items[cur].ppid)) {
        vec->items[cur].classified = 1;
        vec->items[cur].member = (unsigned char)member;
        if (member)
            tree->generation++;
    }
    return member;
}

/* Merges the new listing with the known entries into tree->scratch; vanished ones are noted. */
static int
merge_listing(ProcTree *tree)
{
    EntryVec *prev = &tree->entries, *next = &tree->scratch;
    size_t i = 0, j = 0;
    ProcEntry fresh;

    next->len = 0;
    tree->vanished.len = 0;
    while (i < prev->len || j < tree->listing_len) {
        if (j >= tree->listing_len ||
            (i < prev->len && prev->items[i].pid < tree->listing[j].pid)) {
            close_kept(tree, &prev->items[i]);
            if (push_vanished(tree, &prev->items[i]) != 0)
                return -1;
            i++;
        } else if (i >= prev->len || tree->listing[j].pid < prev->items[i].pid) {
            memset(&fresh, 0, sizeof(fresh));
            fresh.pid = tree->listing[j].pid;
            fresh.ino = tree->listing[j].ino;
            kept_fd_none(&fresh.stat_file);
            kept_fd_none(&fresh.io_file);
            if (entries_push(next, &fresh) != 0)
                return -1;
            j++;
        } else {
            ProcEntry carried = prev->items[i];
            carried.has_stat = 0;
            if (carried.ino != tree->listing[j].ino) {
                carried.ino = tree->listing[j].ino;
                carried.verify = 1;
            }
            if (entries_push(next, &carried) != 0)
                return -1;
            i++;
            j++;
        }
    }
    return 0;
}

/* Carries the known entries over unchanged (no listing this tick): they move to scratch
 * (the entries' vector is not read again before scratch becomes the entries). */
static int
carry_entries(ProcTree *tree)
{
    EntryVec swap = tree->scratch;
    size_t i;

    tree->scratch = tree->entries;
    tree->entries = swap;
    tree->entries.len = 0;
    tree->vanished.len = 0;
    for (i = 0; i < tree->scratch.len; i++)
        tree->scratch.items[i].has_stat = 0;
    return 0;
}

/* The last pid the kernel handed out (the 5th field of /proc/loadavg), or -1. */
static long
read_last_pid(ProcTree *tree)
{
    const char *space, *slash;

    tree->tasks = -1;
    if (!tree->probe_pids || read_kept_file(tree, &tree->loadavg_file, "loadavg") < 0)
        return -1;
    slash = strchr(tree->buf.data, '/'); /* "0.00 0.01 0.05 1/134 4242": running/tasks */
    if (slash != NULL)
        tree->tasks = strtol(slash + 1, NULL, 10);
    space = strrchr(tree->buf.data, ' ');
    return space != NULL ? strtol(space + 1, NULL, 10) : -1;
}

/* What moves when a process (or thread) is created: the last pid handed out (/proc/loadavg,
 * one short line), else the fork counter of /proc/stat (which grows with the CPUs and the
 * interrupts). Sets *last_pid (-1: unknown): 0, or -1 when neither can be read. */
static int
read_forks(ProcTree *tree, unsigned long long *forks, long *last_pid)
{
    *last_pid = read_last_pid(tree);
    if (*last_pid >= 0) {
        *forks = (unsigned long long)*last_pid;
        return 0;
    }
    if (read_kept_file(tree, &tree->stat_file, "stat") < 0)
        return -1;
    return parse_proc_stat_forks(tree->buf.data, forks);
}

/* Non-zero when pid (whose stat was just read) is a thread of another process: procfs
 * finds /proc/<tid> though it lists only processes. Only a multi-threaded one can be. */
static int
is_thread(ProcTree *tree, const ProcEntry *entry)
{
    char path[40];
    const char *tgid;

    if (entry->stat.num_threads <= 1)
        return 0;
    snprintf(path, sizeof(path), "%d/status", (int)entry->pid);
    if (textbuf_read_at(&tree->buf, tree->proc.fd, path) < 0)
        return 1; /* gone: nothing to add */
    tgid = strstr(tree->buf.data, "\nTgid:");
    return tgid == NULL || strtol(tgid + 6, NULL, 10) != (long)entry->pid;
}

/* Looks pid up: a new process is added to scratch (stat read, to be classified); a known pid
 * handed out again gets its start time checked. 1 when a process was added, 0, -1: ENOMEM. */
static int
probe_pid(ProcTree *tree, size_t carried, pid_t pid)
{
    EntryVec known_part = {tree->scratch.items, carried, carried};
    long known = entries_find(&known_part, pid);
    ProcEntry fresh;

    if (known >= 0) {
        tree->scratch.items[known].verify = 1;
        return 0;
    }
    memset(&fresh, 0, sizeof(fresh));
    fresh.pid = pid; /* no inode yet: the next listing checks the start time */
    kept_fd_none(&fresh.stat_file);
    kept_fd_none(&fresh.io_file);
    if (read_stat(tree, &fresh) != 0 || is_thread(tree, &fresh))
        return 0; /* exited already, or a thread */
    return entries_push(&tree->scratch, &fresh) == 0 ? 1 : -1;
}

static int
entry_pid_cmp(const void *a, const void *b)
{
    const ProcEntry *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Sorts scratch by pid again when the entries appended after the carried ones (in the order
 * they were found: a child's children come after its siblings) are out of order. */
static void
sort_appended(ProcTree *tree, size_t carried)
{
    size_t i;

    for (i = carried > 0 ? carried : 1; i < tree->scratch.len; i++)
        if (tree->scratch.items[i].pid < tree->scratch.items[i - 1].pid) {
            qsort(tree->scratch.items, tree->scratch.len, sizeof(ProcEntry), entry_pid_cmp);
            return;
        }
}

/* Non-zero when the pids handed out since the last tick are known: a pid range to probe. */
static int
range_known(const ProcTree *tree, long last_pid)
{
    return last_pid >= 0 && tree->last_pid >= 0 && last_pid >= tree->last_pid;
}

/* Adds to the carried entries the processes created since the last tick, by looking up the
 * pids handed out since (scratch sorted again after): 0, or -1 on ENOMEM (the caller's next
 * listing or scan finds the rest). */
static int
probe_range(ProcTree *tree, long last_pid)
{
    size_t carried = tree->scratch.len;
    int added = 0, got = 0;
    long pid;

    for (pid = tree->last_pid + 1; pid <= last_pid; pid++) {
        if ((got = probe_pid(tree, carried, (pid_t)pid)) < 0)
            break;
        added += got;
    }
    sort_appended(tree, carried);
    tree->listed_count += added;
    tree->probes++;
    return got < 0 ? -1 : 0;
}

/* Carries the entries and adds the processes created since the last tick, found by looking
 * up the pids handed out since (no listing of procfs): 0, or -1 when that cannot be done (the
 * range is unknown, wrapped or too large) and a listing is needed. */
static int
probe_new_pids(ProcTree *tree, long last_pid, int *count)
{
    if (!range_known(tree, last_pid) || (last_pid - tree->last_pid) * 2 > tree->listed_count ||
        carry_entries(tree) != 0)
        return -1;
    if (probe_range(tree, last_pid) != 0) {
        tree->read_errors++; /* out of memory: the next listing finds the rest */
        tree->listed_at = 0;
    }
    *count = tree->listed_count;
    return 0;
}

/* Seconds a listing of procfs is good for. */
static double
listing_max_age(const ProcTree *tree)
{
    return tree->probe_pids && !tree->count_processes ? PROBED_LISTING_MAX_AGE : LISTING_MAX_AGE;
}

/* Non-zero when a listing due by age would list what the last one did: since it, no pid was
 * handed out (no process or thread created) and the machine's task count did not move (none
 * reaped). Only /proc/loadavg of this pid namespace tells both. */
static int
listing_unchanged(const ProcTree *tree, long last_pid)
{
    return tree->listed_at > 0 && last_pid >= 0 && tree->tasks >= 0 &&
           last_pid == tree->pid_at_listing && tree->tasks == tree->tasks_at_listing;
}

static int update_from_members(ProcTree *tree, double now, int created, long last_pid, int *count);

/* Non-zero when new members are found from the children lists this tick. */
static int
lists_in_use(const ProcTree *tree, double now)
{
    return tree->children_lists && now >= tree->lists_paused_til;
}

/* Lists procfs and merges, or carries the entries when no process was created since the last
 * tick, or adds the new ones by probing their pids; or, with the children lists, finds them
 * from the members: 0, or -1. Sets *count to the processes on the system (a listing at least
 * every LISTING_MAX_AGE refreshes it, unless it would list the same processes as the last
 * one). */
static int
update_entries(ProcTree *tree, double now, int *count)
{
    unsigned long long forks = 0;
    long last_pid;
    int have_forks = read_forks(tree, &forks, &last_pid) == 0;
    long listed;

    if (lists_in_use(tree, now)) {
        int created = !have_forks || !tree->has_baseline || forks != tree->forks_at_listing;
        tree->forks_at_listing = forks;
        return update_from_members(tree, now, created, last_pid, count);
    }
    if (have_forks && tree->has_baseline) {
        if (now - tree->listed_at >= listing_max_age(tree) && listing_unchanged(tree, last_pid))
            tree->listed_at = now; /* due, but it would list the same processes: not made */
        if (now - tree->listed_at < listing_max_age(tree)) {
            if (forks == tree->forks_at_listing) {
                *count = tree->listed_count;
                return carry_entries(tree);
            }
            if (probe_new_pids(tree, last_pid, count) == 0) {
                tree->forks_at_listing = forks;
                tree->last_pid = last_pid;
                return 0;
            }
        }
    }
    listed = list_processes(tree);
    if (listed < 0 || merge_listing(tree) != 0)
        return -1;
    tree->forks_at_listing = forks;
    tree->last_pid = tree->pid_at_listing = last_pid;
    tree->tasks_at_listing = tree->tasks;
    tree->listed_at = now;
    tree->listed_count = *count = (int)listed;
    tree->listings++;
    return 0;
}

/* A pid whose inode changed is the same process only if its start time is the same. */
static int
verify_reused(ProcTree *tree, ProcEntry *entry)
{
    ProcEntry old = *entry;

    entry->verify = 0;
    if (read_stat(tree, entry) != 0) {
        entry->gone = 1;
        return 0;
    }
    if (entry->stat.starttime == old.starttime)
        return 0;
    close_kept(tree, &old);
    if (push_vanished(tree, &old) != 0)
        return -1;
    {
        ProcEntry fresh;
        memset(&fresh, 0, sizeof(fresh));
        fresh.pid = entry->pid;
        fresh.ino = entry->ino;
        kept_fd_none(&fresh.stat_file);
        kept_fd_none(&fresh.io_file);
        fresh.stat = entry->stat;
        fresh.has_stat = 1;
        fresh.ppid = entry->stat.ppid;
        *entry = fresh;
    }
    return 0;
}

/* Children-list mode: the identity (start time) of every carried member, with its stat read
 * for this tick. A pid handed to another process makes a new entry (classified later; its
 * lists are read at the next tick). 0, or -1 on ENOMEM. */
static int
check_members(ProcTree *tree)
{
    size_t i;

    for (i = 0; i < tree->scratch.len; i++) {
        ProcEntry *e = &tree->scratch.items[i];
        if (!e->classified || !e->member)
            continue; /* not kept (carried over from the listing): dropped this tick */
        if (verify_reused(tree, e) != 0)
            return -1;
        if (!e->classified)
            tree->rescan = 1;
    }
    return 0;
}

/* Non-zero when pid was appended to scratch after the carried entries. */
static int
appended(const ProcTree *tree, size_t carried, pid_t pid)
{
    size_t i;

    for (i = carried; i < tree->scratch.len; i++)
        if (tree->scratch.items[i].pid == pid)
            return 1;
    return 0;
}

/* Reads the children lists of the entry at idx of scratch into tree->found, through lists
 * kept open (CHILDREN_KEPT_MAX, within the fd budget's rules). As task_children_read. */
static int
read_lists(ProcTree *tree, size_t idx)
{
    ProcEntry *e = &tree->scratch.items[idx];
    /* a zombie leader may have live threads: its task directory tells */
    long threads = e->stat.state == 'Z' ? 0 : e->stat.num_threads;
    size_t keep = tree->keep_blocked_til > tree->now ? 0 : CHILDREN_KEPT_MAX;
    PidStat now;
    int rc = task_children_read_kept(tree->proc.fd, e->pid, threads, &tree->lists, keep,
                                     tree->fd_limit, &tree->fds_replaced, &tree->buf, &tree->found);

    /* a thread that ended during the reads may have handed its children to one read before
     * (its own kept list then reads as empty): fewer threads now than listed is a race */
    if (rc == 0 && threads != 1 && keep > 0 &&
        (read_pid_file(tree, &e->stat_file, e->pid, "stat") < 0 ||
         parse_pid_stat(tree->buf.data, &now) != 0 || now.num_threads < (long)tree->lists.tids.len))
        rc = TASK_CHILDREN_RACED;
    return rc;
}

/* Appends to scratch the children in tree->found not known yet, their stat read, their
 * parent noted as the one whose list named them (a descendant, even if reparented since).
 * rc: what reading the lists gave (task_children_read). 0, or -1 when the lists could not
 * be read for another reason than the process being gone. */
static int
add_children_of(ProcTree *tree, size_t carried, pid_t parent, int rc)
{
    size_t k;

    if (rc < 0) {
        tree->found.len = 0;
        return errno == ENOENT || errno == ESRCH ? 0 : -1;
    }
    if (rc == TASK_CHILDREN_RACED)
        tree->rescan = 1;
    for (k = 0; k < tree->found.len; k++) {
        EntryVec known = {tree->scratch.items, carried, carried};
        pid_t pid = tree->found.items[k];
        ProcEntry fresh;
        if (entries_find(&known, pid) >= 0 || appended(tree, carried, pid))
            continue;
        memset(&fresh, 0, sizeof(fresh));
        fresh.pid = pid;
        kept_fd_none(&fresh.stat_file);
        kept_fd_none(&fresh.io_file);
        if (read_stat(tree, &fresh) != 0) {
            tree->rescan = 1; /* reaped since listed: the list may have skipped a sibling */
            continue;
        }
        fresh.ppid = parent;
        if (entries_push(&tree->scratch, &fresh) != 0) {
            tree->found.len = 0;
            return -1;
        }
        tree->listed_count++;
    }
    tree->found.len = 0;
    return 0;
}

/* Reads the children lists of the adopter and of every live member, then of the processes
 * they name (any depth): every process of the tree created since the last tick. 0, or -1. */
static int
scan_members(ProcTree *tree, double now)
{
    size_t carried = tree->scratch.len, i;
    int rc = 0;

    tree->rescan = 0;
    if (tree->adopter > 0)
        rc = add_children_of(
            tree, carried, tree->adopter,
            task_children_read(tree->proc.fd, tree->adopter, 0, &tree->buf, &tree->found));
    for (i = 0; rc == 0 && i < tree->scratch.len; i++) {
        const ProcEntry *e = &tree->scratch.items[i];
        if (e->gone || !e->has_stat || (e->classified && !e->member))
            continue; /* the root and processes added this tick are not classified yet */
        rc = add_children_of(tree, carried, e->pid, read_lists(tree, i));
    }
    sort_appended(tree, carried);
    tree->scanned_at = now;
    tree->scans++;
    return rc;
}

/* Reads (threads) of the lists a scan would read: what it costs against probing new pids. */
static long
scan_cost(const ProcTree *tree)
{
    long cost = tree->adopter > 0 ? 4 : 0;
    size_t i;

    for (i = 0; i < tree->scratch.len; i++) {
        const ProcEntry *e = &tree->scratch.items[i];
        if (e->member && !e->gone)
            cost += e->stat.num_threads > 1 ? e->stat.num_threads + 2 : 1;
    }
    return cost;
}

/* Adds the root when it is not among the entries (the first reading, or not seen yet). */
static int
find_root(ProcTree *tree)
{
    size_t carried = tree->scratch.len;

    if (tree->root <= 0 || tree->root_ended || entries_find(&tree->scratch, tree->root) >= 0)
        return 0;
    if (probe_pid(tree, carried, tree->root) < 0)
        return -1;
    sort_appended(tree, carried);
    return 0;
}

/* Lists procfs for the process count of the system table when it is due (every
 * LISTING_MAX_AGE, unless it would list the same processes as the last one). */
static void
count_when_due(ProcTree *tree, double now, long last_pid)
{
    long listed;

    if (!tree->count_processes || now - tree->listed_at < LISTING_MAX_AGE)
        return;
    tree->listed_at = now;
    if (listing_unchanged(tree, last_pid) || (listed = list_processes(tree)) < 0)
        return;
    tree->listed_count = (int)listed;
    tree->pid_at_listing = last_pid;
    tree->tasks_at_listing = tree->tasks;
    tree->listings++;
}

/* Children-list mode: carries the members (identity checked), adds the root if missing and,
 * when a process was created since the last tick (or the lists are due again), the new
 * members: from the lists, or by probing the new pids when they are fewer than the lists.
 * Lists that cannot be read hand over to the listing of procfs for CHILDREN_RETRY_S. */
static int
update_from_members(ProcTree *tree, double now, int created, long last_pid, int *count)
{
    int rc = 0;

    if (carry_entries(tree) != 0 || check_members(tree) != 0 || find_root(tree) != 0)
        return -1;
    if (tree->follow_children &&
        (created || tree->rescan || now - tree->scanned_at >= CHILDREN_SCAN_MAX_AGE)) {
        if (created && !tree->rescan && tree->probe_pids && range_known(tree, last_pid) &&
            last_pid - tree->last_pid < scan_cost(tree))
            rc = probe_range(tree, last_pid);
        else
            rc = scan_members(tree, now);
    }
    if (rc != 0) {
        if (errno == ENOMEM)
            return -1;
        tree->list_failures++; /* the listing takes over, from the next tick */
        tree->lists_paused_til = now + CHILDREN_RETRY_S;
        tree->listed_at = 0;
        tree->rescan = 1;
    }
    tree->last_pid = last_pid;
    count_when_due(tree, now, last_pid);
    *count = tree->listed_count;
    return 0;
}

/* Non-zero when a member's io may have moved since its last read: it used CPU since, or that
 * read is old, or it exited, or this is the run's last reading. */
static int
io_due(const ProcTree *tree, const ProcEntry *entry, unsigned long long cpu_ticks)
{
    return tree->read_all_io || entry->io_read_at == 0 || cpu_ticks != entry->cpu_at_io ||
           entry->stat.state == 'Z' || tree->now - entry->io_read_at >= IO_MAX_AGE;
}

/* Reads /proc/<pid>/io of a member when due; keeps the last values when it is unreadable. */
static void
read_io(ProcTree *tree, ProcEntry *entry)
{
    const PidStat *st = &entry->stat;
    unsigned long long cpu_ticks = st->utime + st->stime + st->cutime + st->cstime;
    PidIo io;

    if (!io_due(tree, entry, cpu_ticks))
        return;
    entry->cpu_at_io = cpu_ticks;
    entry->io_read_at = tree->now;
    if (read_pid_file(tree, &entry->io_file, entry->pid, "io") < 0 ||
        parse_pid_io(tree->buf.data, &io) != 0) {
        if (errno == EACCES || errno == EPERM)
            tree->io_denied++; /* another user's process: its I/O is not counted */
        if (errno != ENOENT && errno != ESRCH)
            tree->read_errors++;
        return;
    }
    entry->cum.read_b = (double)io.read_bytes;
    entry->cum.write_b = (double)io.write_bytes;
}

/* Keeps the largest resident set of one member: its RSS now, and its kernel high-water mark
 * (VmHWM) when it faulted in pages since the last look (a peak between two ticks). VmHWM
 * covers the process's whole life: a member that was there at the baseline counts only
 * when its mark rose after that (a peak before tracking began is not the workload's). */
static void
note_peak(ProcTree *tree, ProcEntry *entry)
{
    char path[40];
    long long hwm;

    if (entry->rss_kib > tree->hwm_kib)
        tree->hwm_kib = entry->rss_kib;
    if (entry->stat.state == 'Z' ||
        (entry->hwm_read && entry->stat.minflt < entry->minflt_at_hwm + HWM_READ_FAULTS))
        return;
    entry->hwm_read = 1;
    entry->minflt_at_hwm = entry->stat.minflt;
    snprintf(path, sizeof(path), "%d/status", (int)entry->pid);
    if (textbuf_read_at(&tree->buf, tree->proc.fd, path) < 0 ||
        parse_status_hwm(tree->buf.data, &hwm) != 0)
        return;
    tree->hwm_reads++;
    if (tree->has_baseline && hwm > entry->hwm_seen && hwm > tree->hwm_kib)
        tree->hwm_kib = hwm;
    entry->hwm_seen = hwm;
}

/* Updates a member's cumulative counters and RSS from this tick's stat and io. */
static void
account_member(ProcTree *tree, ProcEntry *entry)
{
    const PidStat *st = &entry->stat;
    double hz = tree->ticks_per_s;

    entry->cum.user_s = (double)(st->utime + st->cutime) / hz;
    entry->cum.sys_s = (double)(st->stime + st->cstime) / hz;
    if (entry->pid == tree->self_pid) {
        entry->cum.user_s -= tree->self_offset.user_s;
        entry->cum.sys_s -= tree->self_offset.sys_s;
    }
    entry->rss_kib = st->state == 'Z' ? 0 : st->rss_pages * tree->page_kib;
    note_peak(tree, entry);
    read_io(tree, entry);
    if (st->state == 'Z')
        close_kept(tree, entry);
    else
        keep_open(tree, entry);
}

/* Non-zero when a vanished member's counters went to a live member (its reaper). */
static int
reaped_by_member(const ProcTree *tree, const ProcEntry *gone)
{
    pid_t ppid = gone->ppid;
    int depth;

    for (depth = 0; depth < CLASSIFY_MAX_DEPTH && ppid > 0; depth++) {
        long idx = entries_find(&tree->scratch, ppid);
        size_t k;
        if (idx >= 0)
            return tree->scratch.items[idx].member && !tree->scratch.items[idx].gone;
        for (k = 0; k < tree->vanished.len; k++)
            if (tree->vanished.items[k].pid == ppid)
                break;
        if (k == tree->vanished.len)
            return 0;
        ppid = tree->vanished.items[k].ppid;
    }
    return 0;
}

static void
totals_add(TreeTotals *sum, const TreeTotals *add)
{
    sum->user_s += add->user_s;
    sum->sys_s += add->sys_s;
    sum->read_b += add->read_b;
    sum->write_b += add->write_b;
}

/* The rise of one total over its high-water mark (never negative). */
static double
rise(double total, double *high_water)
{
    double delta = total - *high_water;
    if (delta <= 0)
        return 0;
    *high_water = total;
    return delta;
}

/* The CPU rise of the workload over one high-water mark on user + system (separate marks
 * would let the kernel's user/system split noise ratchet up), split by how user and system
 * time each moved since the previous tick. */
static void
split_cpu_rise(ProcTree *tree, const TreeTotals *total, ProcTreeReading *out)
{
    double cpu = rise(total->user_s + total->sys_s, &tree->high_water.user_s);
    double du = total->user_s - tree->last_total.user_s;
    double ds = total->sys_s - tree->last_total.sys_s;

    du = du > 0 ? du : 0;
    ds = ds > 0 ? ds : 0;
    out->interval.user_s = du + ds > 0 ? cpu * du / (du + ds) : cpu;
    /* cpu * du / (du + ds) can round above cpu: never a negative system time */
    out->interval.sys_s = cpu > out->interval.user_s ? cpu - out->interval.user_s : 0;
}

/* Reads smaps_rollup of one member for the round under way: how much of its RSS is shared
 * (-1 when unreadable). */
static void
read_pss(ProcTree *tree, ProcEntry *entry)
{
    char path[40];
    long long rss, pss;
    double started = thread_cpu_now(), cost;

    snprintf(path, sizeof(path), "%d/smaps_rollup", (int)entry->pid);
    entry->round_excess = -1;
    if (textbuf_read_at(&tree->buf, tree->proc.fd, path) >= 0 &&
        parse_smaps_rollup(tree->buf.data, &rss, &pss) == 0)
        entry->round_excess = rss > pss ? rss - pss : 0;
    else if (errno == EACCES || errno == EPERM)
        tree->pss_denied++; /* another user's process: shared pages count in full */
    entry->round_read = 1;
    cost = thread_cpu_now() - started;
    tree->pss_allowance -= cost;
    tree->pss_seconds += cost;
    tree->pss_reads++;
}

/* The round is complete: every member's figure from it takes effect at once. */
static void
commit_round(ProcTree *tree, double now)
{
    EntryVec *vec = &tree->entries;
    size_t i;

    for (i = 0; i < vec->len; i++) {
        ProcEntry *e = &vec->items[i];
        if (!e->member || !e->round_read || e->round_excess < 0)
            continue;
        e->excess_kib = e->round_excess;
        e->checked_at = now;
        e->rss_at_check = e->rss_kib;
        e->minflt_at_check = e->stat.minflt;
    }
    tree->round_open = 0;
    tree->round_generation = tree->generation;
    tree->pss_round_at = now;
    tree->pss_rounds++;
}

/* Opens a round (again, when the membership changed while one was under way). */
static void
open_round(ProcTree *tree)
{
    size_t i;

    for (i = 0; i < tree->entries.len; i++)
        tree->entries.items[i].round_read = 0;
    tree->round_open = 1;
    tree->round_open_generation = tree->generation;
}

/* KiB of pages a member faulted in since its PSS read without growing its RSS: copy-on-write
 * breaks (a page once shared is now its own), which only a new PSS read can see. */
static double
unseen_fault_kib(const ProcTree *tree, const ProcEntry *e)
{
    double faults, grown;

    if (e->checked_at == 0 || e->stat.minflt < e->minflt_at_check)
        return 0;
    faults = (double)(e->stat.minflt - e->minflt_at_check) * (double)tree->page_kib;
    grown = e->rss_kib > e->rss_at_check ? (double)(e->rss_kib - e->rss_at_check) : 0;
    return faults > grown ? faults - grown : 0;
}

/* Non-zero when no member faulted a page in or changed its RSS since the last round. */
static int
tree_idle_since_round(const ProcTree *tree)
{
    const EntryVec *vec = &tree->entries;
    size_t i;

    for (i = 0; i < vec->len; i++) {
        const ProcEntry *e = &vec->items[i];
        if (e->member && (e->rss_kib != e->rss_at_check || e->stat.minflt != e->minflt_at_check))
            return 0;
    }
    return 1;
}

/* Non-zero when the tree's sharing may have changed since the last round of PSS reads: a
 * member came or went, members faulted pages in without growing (copy-on-write), or the
 * figures are old (PSS_MAX_AGE; PSS_IDLE_MAX_AGE for an idle tree). */
static int
pss_round_due(const ProcTree *tree, double now, double estimate_kib)
{
    const EntryVec *vec = &tree->entries;
    double faults = 0, age = now - tree->pss_round_at;
    size_t i;

    if (tree->pss_round_at == 0 || tree->round_generation != tree->generation)
        return 1;
    if (age >= PSS_IDLE_MAX_AGE || (age >= PSS_MAX_AGE && !tree_idle_since_round(tree)))
        return 1;
    for (i = 0; i < vec->len; i++)
        if (vec->items[i].member && vec->items[i].rss_kib > 0)
            faults += unseen_fault_kib(tree, &vec->items[i]);
    return faults > PSS_FAULT_KIB && faults > estimate_kib * PSS_FAULT_SHARE;
}

/* Reads smaps_rollup of every member for one round, whose figures take effect together when
 * it is complete (figures of a subset would mix before and after a change of the sharing).
 * Reads run while the CPU budget has something left, at most PSS_ROUND_SLICE of CPU per tick:
 * a large tree's round spans several ticks, and starts over if members come or go. */
static void
pss_round(ProcTree *tree, double now)
{
    EntryVec *vec = &tree->entries;
    double started;
    size_t i;

    if (tree->pss_refilled_at > 0)
        tree->pss_allowance += (now - tree->pss_refilled_at) * PSS_BUDGET_SHARE;
    if (tree->pss_allowance > PSS_BUDGET_BURST)
        tree->pss_allowance = PSS_BUDGET_BURST;
    tree->pss_refilled_at = now;
    if (tree->pss_allowance <= 0)
        return;
    if (!tree->round_open || tree->round_open_generation != tree->generation)
        open_round(tree);
    started = thread_cpu_now();
    for (i = 0; i < vec->len; i++) {
        ProcEntry *e = &vec->items[i];
        if (!e->member || e->rss_kib == 0 || e->round_read)
            continue;
        if (thread_cpu_now() - started >= PSS_ROUND_SLICE || tree->pss_allowance <= 0)
            return; /* the rest of the round at the next ticks */
        read_pss(tree, e);
    }
    commit_round(tree, now);
}

/* The parent of a member that is its forked copy (a member too, and no exec since):
 * they share their memory layout, and their pages copy-on-write. */
static const ProcEntry *
forked_from(const ProcTree *tree, const ProcEntry *e)
{
    long idx = entries_find(&tree->entries, e->ppid);
    const ProcEntry *parent;

    if (idx < 0)
        return NULL;
    parent = &tree->entries.items[idx];
    if (!parent->member || parent->stat.state == 'Z' || e->stat.startstack == 0 ||
        e->stat.startstack != parent->stat.startstack ||
        e->stat.arg_start != parent->stat.arg_start)
        return NULL;
    return parent;
}

/* A member's own memory in KiB. Measured: RSS less the pages it shared at its last PSS read.
 * Not measured yet: a forked copy of a member counts what it holds beyond its parent (right
 * after fork() nothing: the two share every page, and the PSS sum over the tree does not
 * change with a fork), any other process its RSS. */
static double
member_memory(const ProcTree *tree, const ProcEntry *e)
{
    const ProcEntry *parent;

    if (e->checked_at > 0)
        return e->rss_kib > e->excess_kib ? (double)(e->rss_kib - e->excess_kib) : 0;
    parent = forked_from(tree, e);
    if (parent != NULL)
        return e->rss_kib > parent->rss_kib ? (double)(e->rss_kib - parent->rss_kib) : 0;
    return (double)e->rss_kib;
}

/* Sum of the members' own memory, and at least the largest RSS (which is all real). */
static double
estimate_memory(const ProcTree *tree)
{
    const EntryVec *vec = &tree->entries;
    double total = 0, largest = 0;
    size_t i;

    for (i = 0; i < vec->len; i++) {
        const ProcEntry *e = &vec->items[i];
        if (!e->member)
            continue;
        total += member_memory(tree, e);
        if ((double)e->rss_kib > largest)
            largest = (double)e->rss_kib;
    }
    return total > largest ? total : largest;
}

/* Memory of the tree in KiB: RSS, less pages shared inside the tree (estimated with PSS). */
static double
tree_memory(ProcTree *tree, double now, int members)
{
    const EntryVec *vec = &tree->entries;
    double estimate;
    size_t i;

    if (members <= 1) {
        for (i = 0; i < vec->len; i++)
            if (vec->items[i].member && vec->items[i].stat.state != 'Z')
                return (double)vec->items[i].rss_kib;
        return 0;
    }
    estimate = estimate_memory(tree);
    if (tree->round_open || pss_round_due(tree, now, estimate)) {
        pss_round(tree, now);
        estimate = estimate_memory(tree);
    }
    return estimate;
}

/* Classifies new entries, re-checks changed ones, reads members; drops the gone ones. */
static int
refresh_entries(ProcTree *tree)
{
    EntryVec *vec = &tree->scratch;
    size_t i, kept = 0;
    int lists = lists_in_use(tree, tree->now);

    for (i = 0; i < vec->len; i++)
        if (vec->items[i].verify && vec->items[i].classified && verify_reused(tree, &vec->items[i]))
            return -1;
    for (i = 0; i < vec->len; i++)
        if (!vec->items[i].classified && !vec->items[i].gone)
            classify(tree, vec, (long)i);
    for (i = 0; i < vec->len; i++) {
        ProcEntry *e = &vec->items[i];
        if (e->member && !e->gone && (read_stat(tree, e) != 0 || e->stat.starttime != e->starttime))
            e->gone = 1; /* exited, or its pid went to another process since it was listed */
        if (e->gone) {
            close_kept(tree, e);
            if (push_vanished(tree, e) != 0)
                return -1;
            continue;
        }
        if (e->member)
            account_member(tree, e);
        else if (lists)
            continue; /* only the members are kept: the lists find the others' */
        vec->items[kept++] = *e;
    }
    vec->len = kept;
    if (tree->vanished.len) {
        tree->generation++;
        tree->rescan = 1; /* a reaped member may have made a list skip, or handed its children */
    }
    return 0;
}

void
proc_tree_sample(ProcTree *tree, double now, ProcTreeReading *out)
{
    TreeTotals total = {0, 0, 0, 0};
    EntryVec swap;
    size_t i, listed_vanished;

    memset(out, 0, sizeof(*out));
    tree->now = now;
    shed_when_short(tree, now);
    if (update_entries(tree, now, &out->processes) != 0) {
        tree->read_errors++;
        return;
    }
    listed_vanished = tree->vanished.len;
    if (refresh_entries(tree) != 0) {
        tree->read_errors++;
        return;
    }
    /* members found gone while reading them are gone from the count too */
    out->processes -= (int)(tree->vanished.len - listed_vanished);
    if (out->processes < 0)
        out->processes = 0; /* members gone that the count (not listed yet) never had */
    tree->listed_count = out->processes;
    for (i = 0; i < tree->vanished.len; i++)
        if (!reaped_by_member(tree, &tree->vanished.items[i]))
            totals_add(&tree->dead, &tree->vanished.items[i].cum);
    swap = tree->entries;
    tree->entries = tree->scratch;
    tree->scratch = swap;

    total = tree->dead;
    for (i = 0; i < tree->entries.len; i++) {
        const ProcEntry *e = &tree->entries.items[i];
        if (!e->member)
            continue;
        totals_add(&total, &e->cum);
        if (e->stat.state != 'Z') {
            out->members++;
            if (e->pid == tree->root)
                out->root_alive = 1;
        }
    }
    if (!tree->has_baseline) {
        tree->high_water = total;
        tree->high_water.user_s = total.user_s + total.sys_s;
        tree->has_baseline = 1;
    } else {
        split_cpu_rise(tree, &total, out);
        out->interval.read_b = rise(total.read_b, &tree->high_water.read_b);
        out->interval.write_b = rise(total.write_b, &tree->high_water.write_b);
    }
    tree->last_total = total;
    tree->read_all_io = 0;
    out->memory_kib = tree_memory(tree, now, out->members);
}

void
proc_tree_read_everything(ProcTree *tree)
{
    tree->read_all_io = 1;
}

/* non-zero when pid is a live member */
int
proc_tree_contains(const ProcTree *tree, pid_t pid)
{
    long idx = entries_find(&tree->entries, pid);
    return idx >= 0 && tree->entries.items[idx].member;
}

/* number of member pids (copies at most cap) */
size_t
proc_tree_member_pids(const ProcTree *tree, pid_t *out, size_t cap)
{
    size_t i, n = 0;

    for (i = 0; i < tree->entries.len; i++) {
        if (!tree->entries.items[i].member)
            continue;
        if (n < cap)
            out[n] = tree->entries.items[i].pid;
        n++;
    }
    return n;
}

size_t
proc_tree_member_hints(const ProcTree *tree, pid_t *out, WaitHint *hints, size_t cap)
{
    size_t i, n = 0;

    for (i = 0; i < tree->entries.len; i++) {
        const ProcEntry *e = &tree->entries.items[i];
        if (!e->member)
            continue;
        if (n < cap) {
            out[n] = e->pid;
            hints[n].threads = e->has_stat ? e->stat.num_threads : 0;
            hints[n].cpu_ticks = e->stat.utime + e->stat.stime;
        }
        n++;
    }
    return n;
}

/* heap bytes of the bookkeeping */
size_t
proc_tree_bytes(const ProcTree *tree)
{
    return (tree->entries.cap + tree->scratch.cap + tree->vanished.cap) * sizeof(ProcEntry) +
           tree->listing_cap * sizeof(*tree->listing) + tree->found.cap * sizeof(pid_t) +
           tree->lists.cap * sizeof(KeptList) + tree->lists.tids.cap * sizeof(pid_t) +
           tree->buf.cap;
}

void
proc_tree_free(ProcTree *tree)
{
    size_t i;

    for (i = 0; i < tree->entries.len; i++)
        close_kept(tree, &tree->entries.items[i]);
    kept_fd_close(&tree->stat_file, &tree->fds_replaced);
    kept_fd_close(&tree->loadavg_file, &tree->fds_replaced);
    kept_fd_close(&tree->proc, &tree->fds_replaced);
    free(tree->entries.items);
    free(tree->scratch.items);
    free(tree->vanished.items);
    free(tree->listing);
    pid_list_free(&tree->found);
    list_cache_free(&tree->lists, &tree->fds_replaced);
    textbuf_free(&tree->buf);
    memset(tree, 0, sizeof(*tree));
    kept_fd_none(&tree->proc);
    kept_fd_none(&tree->stat_file);
    kept_fd_none(&tree->loadavg_file);
}
