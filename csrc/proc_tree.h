/* The tracked workload: a root process and its live descendants. No Python here.
 *
 * New members are found from the members themselves where procfs has the kernel's per-thread
 * children lists (/proc/<pid>/task/<tid>/children, task_children.h): when a process was
 * created anywhere since the last tick, the lists of the members' threads are read (or the
 * new pids looked up one by one, when they are fewer), and only the members are kept, so a
 * tick costs what the tree costs, not what the machine does. Where the lists are missing (a
 * kernel without CONFIG_PROC_CHILDREN, a fake procfs), could not be read, or the listing is
 * asked for (RESOURCE_TRACKER_CHILD_DISCOVERY=listing), the tree is found by a parent-id scan
 * of procfs instead: each tick lists the procfs root (names and inode numbers only) and merges
 * the list with the previous one; only new processes (or a reused pid, seen as a new inode)
 * get their stat read to learn the parent. Members have stat and io read every tick, and their
 * start time checked (a pid handed to another process is not the member it was).
 *
 * CPU time and I/O bytes are conserved: the workload total is the sum over live members of
 * their own plus reaped children's counters (cutime/cstime, io of reaped children), plus what
 * was seen of members that vanished without a tracked parent to inherit their counters. The
 * interval value is the rise of that total over its high-water mark.
 *
 * Memory is RSS from stat every tick, corrected for pages shared inside the tree with PSS from
 * smaps_rollup. Reading smaps_rollup costs time that grows with the process's memory, so those
 * reads run only when the tree has several processes, in rounds over every member at once (a
 * round when members came or went, copy-on-write faults, or age), within a CPU budget (the
 * reads' own CPU time may be a share of the elapsed time), so the cost of a sample does not
 * grow with the workload's memory size. Between rounds a forked copy not read yet counts what
 * it holds beyond its parent (a fork does not change the tree's PSS sum), and the tree counts
 * at least its largest RSS. The largest resident set of one member (VmHWM) is kept too. */
#ifndef RT_PROC_TREE_H
#define RT_PROC_TREE_H

#include <sys/types.h>

#include "fd_budget.h"
#include "procfs_parse.h"
#include "sched_wait.h"
#include "task_children.h"
#include "textbuf.h"

/* CPU seconds of smaps_rollup reads allowed per elapsed second, and the budget's burst and
 * start (seconds of CPU). */
#define PSS_BUDGET_SHARE 0.005
#define PSS_BUDGET_BURST 0.100
#define PSS_BUDGET_START 0.050

/* A round of PSS reads is due after this many seconds, or when members faulted in more than
 * PSS_FAULT_KIB and PSS_FAULT_SHARE of the tree's memory without growing (copy-on-write). */
#define PSS_MAX_AGE 30.0
/* ... or this many seconds when no member faulted a page in or changed its RSS since the last
 * round (an idle tree: only processes outside it mapping or unmapping pages it shares move its
 * PSS, and slowly). */
#define PSS_IDLE_MAX_AGE 120.0
/* CPU seconds of smaps_rollup reads per tick: a larger tree's round spans several ticks. */
#define PSS_ROUND_SLICE 0.020
#define PSS_FAULT_KIB 16384.0
#define PSS_FAULT_SHARE 0.02

/* The /proc listing is skipped while no process was created (the last pid handed out, in
 * /proc/loadavg, or the fork counter of /proc/stat did not move), but made at least this
 * often (it refreshes the process count), unless nothing was created or reaped on the machine
 * since the last one: the same last pid and the same number of tasks (/proc/loadavg) mean the
 * same list of processes. */
#define LISTING_MAX_AGE 5.0
/* ... and, when new pids are found by probing (below) and nobody reads the process count (no
 * system table), only this often: a safety net, not a cost that grows with the machine. */
#define PROBED_LISTING_MAX_AGE 60.0

/* When processes were created since the last tick, the new pids (the range since the last
 * pid the kernel handed out, /proc/loadavg) are looked up one by one instead of listing all of
 * procfs, while the range holds at most half as many pids as the listing had processes (a
 * lookup of a gone pid costs about two listed entries); else, or after a pid wrap, a listing. */

/* Children lists: read again at least this often though no process was created (a safety
 * net; a list read while a child was reaped or a thread exited is read again at the next
 * tick anyway). */
#define CHILDREN_SCAN_MAX_AGE 60.0
/* Lists that could not be read (other than a process gone: descriptors exhausted, say) hand
 * over to the listing of procfs for this many seconds. */
#define CHILDREN_RETRY_S 60.0
/* Children lists kept open (a descriptor each, one per thread of a member). A kept list of
 * a thread that exits reads as empty, not as an error, so the threads of a multi-threaded
 * member are listed at each read, and its thread count is read again after: fewer threads
 * than listed means one may have handed its children to a thread read before, and the lists
 * are read again at the next tick. */
#define CHILDREN_KEPT_MAX 64

/* A member's io is re-read when its CPU time moved since the last read (I/O takes CPU), or
 * that read is this many seconds old (a process doing I/O with less than a clock tick of CPU
 * shows it at most this late), and at the last reading of a run. */
#define IO_MAX_AGE 2.0

/* A member's VmHWM is read when it faulted in this many pages since the last read (a peak
 * between two ticks needs page faults; a quiet process costs no read). */
#define HWM_READ_FAULTS 256

/* Members whose stat and io files stay open between ticks (two descriptors each): the fd
 * budget is at most KEPT_FD_BUDGET descriptors, and only numbers that leave a margin of
 * max(FD_MARGIN_MIN, RLIMIT_NOFILE / 4) free above them (fd_budget.h; the tree's own stat and
 * loadavg likewise). When the application itself comes within half that margin of the limit,
 * every kept descriptor is closed (the tree's stat and loadavg for good, fd_sheds counts it)
 * and no member's is kept again for KEEP_RETRY_S (files are read by path meanwhile). */
#define KEPT_FD_BUDGET 4096
#define KEEP_RETRY_S 60.0
/* RLIMIT_NOFILE is read again after this many seconds (the application may change it), and
 * before any descriptor is given back. */
#define FD_LIMIT_MAX_AGE 5.0

typedef struct TreeTotals {
    double user_s, sys_s;   /* CPU seconds */
    double read_b, write_b; /* storage bytes */
} TreeTotals;

typedef struct ProcEntry {
    pid_t pid;
    pid_t ppid;
    ino_t ino;
    unsigned long long starttime;
    PidStat stat;
    unsigned char classified;  /* membership is known */
    unsigned char member;      /* in the tracked tree */
    unsigned char has_stat;    /* stat was read this tick */
    unsigned char verify;      /* inode changed: check the start time */
    unsigned char gone;        /* vanished while being read */
    unsigned char kept;        /* stat and io were opened to be kept (counted in kept_open) */
    KeptFd stat_file, io_file; /* kept open for members (pread from 0 each tick), fd -1 if not */
    TreeTotals cum;            /* cumulative counters (own + reaped children) */
    long long rss_kib;
    long long excess_kib;   /* RSS - PSS at the last smaps_rollup read */
    double checked_at;      /* monotonic time of that read; 0 = never */
    long long rss_at_check; /* RSS and fault count at that read */
    unsigned long long minflt_at_check;
    unsigned long long minflt_at_hwm; /* fault count at the last VmHWM read */
    long long hwm_seen;               /* VmHWM at that read (KiB) */
    long long round_excess;           /* RSS - PSS read in the round under way (-1: none) */
    unsigned char round_read;         /* read in the round under way */
    unsigned char hwm_read;           /* VmHWM was read once */
    unsigned long long cpu_at_io;     /* CPU clock ticks (own + children) at the io read */
    double io_read_at;                /* monotonic time of that read; 0 = never */
} ProcEntry;

typedef struct EntryVec {
    ProcEntry *items;
    size_t len, cap;
} EntryVec;

typedef struct ProcTreeReading {
    TreeTotals interval; /* workload CPU and I/O during the interval */
    double memory_kib;
    int members;   /* live (non-zombie) processes in the tree */
    int processes; /* processes on the system */
    int root_alive;
} ProcTreeReading;

typedef struct ProcTree {
    KeptFd proc;         /* the procfs root (checked each tick, opened again when replaced) */
    char proc_root[512]; /* its path */
    pid_t root;
    /* the root's identity: its start time (field 22 of stat), known once it was first seen;
     * a process with the root's pid and another start time is not the root (a reused pid),
     * and once the root was seen gone no process is taken for it again */
    unsigned long long root_starttime;
    int root_seen, root_ended;
    pid_t adopter; /* > 0: its children are members too (a subreaper running the root) */
    int follow_children;
    int count_processes; /* the processes on the system are wanted (the system table) */
    int read_all_io;     /* the next reading re-reads every member's io (the run's last) */
    pid_t self_pid;
    TreeTotals self_offset; /* the sampler's own CPU, taken off its own process */
    double ticks_per_s;
    long long page_kib;
    EntryVec entries, scratch, vanished;
    struct PidIno {
        pid_t pid;
        ino_t ino;
    } * listing;
    size_t listing_len, listing_cap;
    TreeTotals dead, high_water; /* high_water.user_s holds user + system (one mark) */
    TreeTotals last_total;       /* the totals at the previous tick, to split CPU rises */
    int has_baseline;
    unsigned generation;
    double pss_allowance, pss_refilled_at;
    double pss_round_at;       /* when every member's PSS was last read; 0 = never */
    unsigned round_generation; /* the membership generation at that round */
    int round_open;            /* a round is under way (over several ticks) */
    unsigned round_open_generation;
    unsigned long pss_reads, pss_rounds;
    long long hwm_kib; /* the largest resident set one member had (VmHWM, or RSS read) */
    unsigned long hwm_reads;
    double pss_seconds;
    unsigned long read_errors;
    /* io / smaps_rollup reads refused (EACCES, EPERM): another user's processes */
    unsigned long io_denied, pss_denied;
    int kept_open;                       /* members with open descriptors */
    long fd_limit;                       /* RLIMIT_NOFILE (-1: none) */
    double fd_limit_at;                  /* monotonic time it was read; 0 = never */
    double now;                          /* monotonic time of the tick under way */
    double keep_blocked_til;             /* no descriptor kept before this time (after a shed) */
    unsigned long fd_sheds;              /* times every kept descriptor was given back */
    unsigned long fds_replaced;          /* kept descriptors the application closed or replaced */
    KeptFd stat_file;                    /* <proc_root>/stat, for the fork counter (-1: by path) */
    unsigned long long forks_at_listing; /* the fork counter when new pids were last found */
    int probe_pids;                      /* new pids are probed: loadavg tells the last pid */
    KeptFd loadavg_file;                 /* <proc_root>/loadavg (-1: read by path) */
    long last_pid;                       /* the last pid handed out at that time (-1: unknown) */
    long tasks;                          /* tasks on the machine this tick (loadavg; -1: unknown) */
    long pid_at_listing, tasks_at_listing; /* the last pid and the tasks at the last listing */
    unsigned long probes;                  /* ticks that found new pids by probing */
    /* new members found from the members' children lists (else: the listing of procfs) */
    int children_lists;
    int rescan;                  /* the lists are read at the next tick, created pids or not */
    double scanned_at;           /* when they were last read; 0 = never */
    double lists_paused_til;     /* the listing is used until then (the lists failed) */
    unsigned long scans;         /* ticks that read them */
    unsigned long list_failures; /* times they could not be read: the listing took over */
    PidList found;               /* pids of one member's lists */
    ListCache lists;             /* children lists kept open (CHILDREN_KEPT_MAX) */
    double listed_at;
    int listed_count;
    unsigned long listings;
    TextBuf buf;
} ProcTree;

/* 0 on success; -1 with errno when the procfs root cannot be opened. */
int proc_tree_init(ProcTree *tree, const char *proc_root, pid_t root, int follow_children);

/* Checks that the procfs root is still the directory opened (fd_budget.h), opening it again by
 * path when the application closed or replaced its number: its descriptor, or -1. Called at
 * the start of each tick, before anything is read under it. */
int proc_tree_check_root(ProcTree *tree);

/* Makes the children of adopter members too (with their descendants): the processes a
 * subreaper that started the root inherits when the root's descendants double-fork. */
void proc_tree_adopt_children_of(ProcTree *tree, pid_t adopter);

/* Finds new members by listing procfs, never from the children lists. */
void proc_tree_use_listing(ProcTree *tree);

/* Reads the tree at monotonic time now. The first call sets the baseline (interval zeros). */
void proc_tree_sample(ProcTree *tree, double now, ProcTreeReading *out);

/* Non-zero when pid is a live member of the tree (as of the last sample). */
int proc_tree_contains(const ProcTree *tree, pid_t pid);

/* Copies up to cap member pids (ascending) into out: how many there are. */
size_t proc_tree_member_pids(const ProcTree *tree, pid_t *out, size_t cap);

/* The same pids in out and, in hints, what this tick's stat said of each (sched_wait.h: its
 * thread count, 0 when its stat was not read this tick, and its own CPU ticks). */
size_t proc_tree_member_hints(const ProcTree *tree, pid_t *out, WaitHint *hints, size_t cap);

/* The next reading is the run's last: every member's io is read (none is left for later). */
void proc_tree_read_everything(ProcTree *tree);

/* Heap bytes the tree's own bookkeeping holds. */
size_t proc_tree_bytes(const ProcTree *tree);

void proc_tree_free(ProcTree *tree);

#endif
