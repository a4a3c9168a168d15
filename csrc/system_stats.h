/* System-wide readings: CPU, memory, disk I/O, disk space and network. No Python here.
 * The procfs files that are read every tick stay open and are re-read from offset 0, within
 * the descriptor budget of fd_budget.h (else they are read by path), each checked to be still
 * the file opened before it is read (the application may have closed or replaced its number). */
#ifndef RT_SYSTEM_STATS_H
#define RT_SYSTEM_STATS_H

#include "fd_budget.h"
#include "procfs_parse.h"
#include "textbuf.h"

#define SYSTEM_MAX_DISKS 64
#define SYSTEM_MAX_MOUNTS 64
#define SYSTEM_REFRESH_SECONDS 60.0

typedef struct SystemReading {
    double user_s, sys_s; /* CPU seconds in the interval, all cores */
    /* /proc/meminfo in KiB: MemFree, used (total - free - buffers - cached), Buffers, Cached +
     * SReclaimable, Active, Inactive */
    double free_kib, used_kib, buffers_kib, cached_kib, active_kib, inactive_kib;
    double disk_read_b, disk_write_b; /* in the interval */
    double space_total_gb, space_used_gb, space_free_gb;
    double net_recv_b, net_sent_b; /* in the interval */
} SystemReading;

typedef struct SystemCounters {
    unsigned long long cpu_user, cpu_sys;
    unsigned long long read_sectors, written_sectors;
    unsigned long long net_recv, net_sent;
} SystemCounters;

typedef struct SystemStats {
    KeptFd proc;                             /* the procfs root (opened again if replaced) */
    char proc_root[512];                     /* its path */
    KeptFd stat, meminfo, diskstats, netdev; /* fd -1: read by path */
    unsigned long fds_replaced;              /* kept descriptors found replaced */
    int kept_given_back; /* the application ran short of descriptors: none is kept again */
    char sys_root[512];
    char disks[SYSTEM_MAX_DISKS][32];
    int ndisks;
    char mounts[SYSTEM_MAX_MOUNTS][512];
    char mount_keys[SYSTEM_MAX_MOUNTS][96];
    int nmounts;
    double refreshed_at;
    double ticks_per_s;
    SystemCounters prev;
    int has_baseline;
    unsigned long read_errors;
    TextBuf buf;
} SystemStats;

/* 0 on success; -1 with errno when the procfs root cannot be opened. */
int system_stats_init(SystemStats *stats, const char *proc_root, const char *sys_root);

/* Closes the files kept open (fd_budget.h) for good: read by path from now on. */
void system_stats_give_back(SystemStats *stats);

/* Reads everything at monotonic time now; the first call sets the baseline (interval zeros). */
void system_stats_sample(SystemStats *stats, double now, SystemReading *out);

void system_stats_free(SystemStats *stats);

#endif
