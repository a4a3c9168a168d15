/* The tracked tree read from its own cgroup: CPU, memory, I/O and the member count in a
 * constant number of file reads per tick, whatever the tree's size. No Python here.
 *
 * Python decides once, beside start(), which directories hold the tree's cgroup (one per
 * column: "" leaves the column to the process walk) and hands them over; the sampler thread
 * opens the files at its next tick (descriptors stay open, pread from 0 each tick; only
 * cgroup.procs is opened anew each time: v1 caches its pid list per open file).
 *
 * The cgroup must hold only the tree: every pid in its cgroup.procs is a member (the root, a
 * descendant of a member, a child of the adopter) or an ancestor of the root (whose own CPU
 * and anonymous memory are read from its stat / statm and taken off: a constant number of
 * processes, at most CGROUP_MAX_OTHERS). A pid found for the first time has its ancestry
 * read once (see CGROUP_PROCS_MAX_AGE for when cgroup.procs is read). Any other process in
 * the cgroup, or a cgroup.procs that cannot be read, ends the cgroup source for good (the
 * walk takes over; note says why); a column whose file cannot be read goes back to the walk
 * alone. */
#ifndef RT_CGROUP_TREE_H
#define RT_CGROUP_TREE_H

#include <sys/types.h>

#include "proc_tree.h"
#include "textbuf.h"

#define CGROUP_MAX_OTHERS 16    /* ancestors of the root allowed in the cgroup */
#define CGROUP_RAM_MARGIN 4ULL  /* a memory.stat figure above RAM times this is damaged */
#define CGROUP_MAX_ANCESTRY 256 /* parents followed to classify a new pid */
/* cgroup.procs costs the kernel ~0.3 ms per 1,000 processes (v1 builds a sorted pid list):
 * it is read only when the tree's tasks may have changed since the last read, and at least
 * this often; the first directory's only, every directory's at least this often too. "May
 * have changed": the cgroup's own task count moved (pids.current, when the tree has its own
 * pids cgroup), else a task was created or ended anywhere on the machine (the task count and
 * the last pid of /proc/loadavg moved). */
#define CGROUP_PROCS_MAX_AGE 5.0
/* The cgroup's counters include its child cgroups' (hierarchical): their cgroup.procs are
 * read too (found again at each read of every directory), at most this many directories in
 * all and this deep; more ends the cgroup source. */
#define CGROUP_MAX_DIRS 32
#define CGROUP_MAX_DEPTH 4

enum CgroupColumn { CG_CPU, CG_MEMORY, CG_IO, CG_COLUMNS };
enum CgroupState { CG_OFF, CG_WANTED, CG_ON, CG_ENDED };

typedef struct CgroupTreeConfig {
    int version;               /* 1 or 2 */
    char dir[CG_COLUMNS][512]; /* the cgroup directory of each column, "" : the walk */
    char pids_dir[512];        /* the tree's own pids cgroup (pids.current), "" : none */
} CgroupTreeConfig;

typedef struct CgroupReading {
    int have[CG_COLUMNS];          /* the column came from the cgroup at this tick */
    int have_interval[CG_COLUMNS]; /* ... with a previous reading to take the rise from */
    TreeTotals interval;           /* CPU and I/O of the tree during the interval */
    double memory_kib;             /* resident anonymous + mapped file memory of the tree */
    int members, root_alive, self_member;
} CgroupReading;

typedef struct CgroupOther {
    pid_t pid;
    double user_s, sys_s; /* own CPU at the last read (kept once it exited) */
    double anon_kib;      /* resident minus shared, at the last read (0 once it exited) */
    int alive;
} CgroupOther;

/* A file read every tick, kept open (fd_budget.h: checked to be still ours before each read,
 * opened again by its path when the application closed or replaced its number). */
typedef struct CgroupFile {
    KeptFd kept;
    char path[640]; /* absolute, or under the procfs root; "": none */
} CgroupFile;

typedef struct CgroupTree {
    CgroupTreeConfig cfg;
    int state;                   /* enum CgroupState */
    CgroupFile file[CG_COLUMNS]; /* cpu.stat / cpuacct.usage, memory.stat, io.stat / blkio */
    CgroupFile cpu_split;        /* v1 cpuacct.stat (user and system ticks), none in v2 */
    /* cgroup.procs of each distinct directory and of the cgroups below it; the first
     * first_n belong to the first directory (read each time, the rest with every one) */
    char procs_path[CGROUP_MAX_DIRS][600];
    unsigned char procs_own[CGROUP_MAX_DIRS]; /* a column's own directory (not a child) */
    int procs_n, first_n;
    int proc_fd;                   /* the procfs root, for the ancestry of new pids */
    CgroupFile loadavg;            /* <proc_root>/loadavg: tasks and the last pid */
    CgroupFile pids;               /* pids.current of the tree's pids cgroup */
    unsigned long fds_replaced;    /* kept descriptors the application closed or replaced */
    char tasks_seen[64];           /* what they said at the last cgroup.procs read */
    double procs_at, all_procs_at; /* when cgroup.procs was read (the first / every one) */
    pid_t root, adopter, self;
    /* the root's identity (proc_tree.h): its start time, from the walk or the first check;
     * checked once per listing of cgroup.procs (listings / root_checked_at) */
    unsigned long long root_starttime;
    int root_seen, root_ended;
    unsigned long listings, root_checked_at;
    pid_t ancestors[32]; /* the root's ancestors, found at the first reading */
    int n_ancestors;
    CgroupOther others[CGROUP_MAX_OTHERS];
    int n_others;
    pid_t *known, *scratch; /* sorted pids of the last cgroup.procs (members only) */
    size_t known_len, known_cap, scratch_cap;
    TreeTotals last; /* cumulative CPU and I/O at the previous reading */
    int has_last[CG_COLUMNS];
    double ticks_per_s;
    long long page_kib;
    unsigned long long memory_cap; /* bytes: a larger memory.stat figure is damaged (not read) */
    unsigned long reads;           /* cgroup and procfs files read by this source */
    unsigned long ticks;           /* readings taken from the cgroup */
    char note[256];                /* why the cgroup source ended, or a column fell back */
    TextBuf buf;
} CgroupTree;

/* An inactive source (no descriptor). */
void cgroup_tree_init(CgroupTree *cg, int proc_fd, pid_t root, pid_t adopter);

/* Asks for the cgroup source from the next reading (any thread holding the collector). */
void cgroup_tree_request(CgroupTree *cg, const CgroupTreeConfig *cfg);

/* Reads the cgroup at this tick: 1 when the source is on (out filled), 0 when it is not.
 * now: monotonic seconds. walk: the process walk of this tick, when one ran (its members seed the
 * first reading), or NULL. own_cpu: the sampler thread's CPU (taken off when this process is a
 * member). */
int cgroup_tree_sample(CgroupTree *cg, double now, const ProcTree *walk, const TreeTotals *own_cpu,
                       CgroupReading *out);

/* Non-zero while the source is on and a previous reading exists for every column. */
int cgroup_tree_covers_all(const CgroupTree *cg);

/* Non-zero when the next reading needs the walk's membership (the first reading). */
int cgroup_tree_needs_walk(const CgroupTree *cg);

/* The member pids of the last reading (ascending): how many (copies at most cap). */
size_t cgroup_tree_member_pids(const CgroupTree *cg, pid_t *out, size_t cap);

/* "cgroup", "procfs" or "mixed" for where the tree's columns come from now. */
const char *cgroup_tree_source(const CgroupTree *cg);

/* The source of one column now: "cgroup" or "procfs". */
const char *cgroup_tree_column_source(const CgroupTree *cg, int column);

size_t cgroup_tree_bytes(const CgroupTree *cg);

/* Closes every descriptor and frees the buffers (idempotent). */
void cgroup_tree_free(CgroupTree *cg);

#endif
