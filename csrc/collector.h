/* One sampling pass: the workload tree, the system and the GPUs, turned into one row of each
 * table. No threads and no Python here (the sampler and PidTracker both drive it). */
#ifndef RT_COLLECTOR_H
#define RT_COLLECTOR_H

#include <sys/types.h>

#include "cgroup_tree.h"
#include "gpu.h"
#include "powercap.h"
#include "proc_tree.h"
#include "sched_wait.h"
#include "system_stats.h"

typedef struct CollectorConfig {
    pid_t pid;
    pid_t adopter; /* > 0: its children belong to the workload too */
    int follow_children;
    int track_processes;
    int track_system;
    int gpu_from_first_row; /* the GPU library loaded at the first row, not at the baseline */
    int child_listing;      /* new members found by listing procfs, not from children lists */
    char proc_root[512];
    char sys_root[512];
    char nvml_library[512]; /* empty: the default library name */
    char amd_library[512];  /* amdsmi or ROCm SMI; empty: the default library names */
} CollectorConfig;

typedef struct Collector {
    CollectorConfig cfg;
    ProcTree tree;
    CgroupTree cgroup;         /* the tree from its own cgroup, when Python asked for it */
    int walked_last;           /* the process walk ran at the previous tick (its rises go on) */
    unsigned long walks;       /* ticks that walked the processes */
    unsigned long tree_seen;   /* readings that found a live process of the tree (0: never seen) */
    unsigned long tree_missed; /* readings that did not, while the root lived (not a zombie) */
    int processes;             /* processes on the system, while the walk does not run */
    double processes_at;       /* when they were counted (monotonic) */
    SchedWait wait;            /* the tree's run-queue wait (cores waiting for a CPU) */
    double wait_s;             /* seconds the tree waited at the last tick (-1: unknown) */
    SystemStats system;
    Powercap powercap; /* CPU package and DRAM energy (read with the system's columns) */
    GpuMonitor *gpu;
    int gpu_tried;
    GpuReading gpu_last; /* the GPUs' reading of the last collector_sample() (machine-wide) */
    unsigned long gpu_energy_integrated; /* GPU readings whose energy was power x interval */
    unsigned long gpu_machine_wide;      /* GPU readings of the tree that are the GPU's (gpu.h) */
    pid_t *member_pids;
    WaitHint *member_hints; /* beside member_pids (as many): what the walk knows of each */
    size_t member_pids_cap;
    double last_mono;
    int has_baseline;
    int released;         /* collector_release() ran: nothing is held any more */
    double process_cores; /* CPUs the tracked process may run on: its CPU usage cap */
    double system_cores;  /* CPUs of the machine: the system's CPU usage cap */
    double tick_s;        /* resolution of the CPU time counters (one clock tick) */
} Collector;

/* The tracker's own cost, taken off the workload when its process is in the tree. */
typedef struct OwnUsage {
    TreeTotals cpu;    /* cumulative CPU of the sampling thread */
    double memory_kib; /* memory held for the samples */
} OwnUsage;

/* 0 on success; -1 with errno when procfs cannot be opened. */
int collector_init(Collector *collector, const CollectorConfig *cfg);

/* Reads everything at (mono, wall). Returns 0 for the first (baseline) call, 1 when prow and
 * srow were filled with one row of the process and system tables. */
int collector_sample(Collector *collector, double mono, double wall, const OwnUsage *own,
                     double *prow, double *srow);

/* Takes the tree's columns from its cgroup from the next reading on (cgroup_tree.h). */
void collector_use_cgroup(Collector *collector, const CgroupTreeConfig *cfg);

/* The next collector_sample() is the run's last: nothing is left for a later reading. */
void collector_last_reading(Collector *collector);

/* Adds a short row (partial interval of part_dt seconds) into the previous rows (prev_dt). */
void collector_fold_rows(const Collector *collector, double *prev_prow, double *prev_srow,
                         const double *prow, const double *srow, double prev_dt, double part_dt);

size_t collector_bytes(const Collector *collector);

/* Closes every descriptor and frees every buffer (idempotent); no reading may follow. */
void collector_release(Collector *collector);

/* The same as collector_release(). */
void collector_free(Collector *collector);

#endif
