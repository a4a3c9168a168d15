/* Parsers of procfs text. Pure C, no I/O, no Python: each takes a NUL-terminated buffer and
 * returns 0 on success or -1 when the text is malformed (outputs are then unspecified). */
#ifndef RT_PROCFS_PARSE_H
#define RT_PROCFS_PARSE_H

#include <stddef.h>

/* /proc/<pid>/stat: the fields the tracker uses (times in clock ticks). */
typedef struct PidStat {
    char state;
    int ppid;
    unsigned long long utime, stime, cutime, cstime;
    unsigned long long starttime;
    long long num_threads;
    long long rss_pages;
    unsigned long long minflt; /* page faults without I/O (copy-on-write breaks among them) */
    /* Where the stack and the program's arguments are (0 when not shown to us): equal in a
     * forked child and its parent until one of them calls exec (which lays memory out anew). */
    unsigned long long startstack, arg_start;
} PidStat;

int parse_pid_stat(const char *text, PidStat *out);

/* /proc/<pid>/io: bytes that went to or came from storage. */
typedef struct PidIo {
    unsigned long long read_bytes, write_bytes;
} PidIo;

int parse_pid_io(const char *text, PidIo *out);

/* /proc/<pid>/status: VmHWM (the process's peak resident set) in KiB: 0, or -1 if absent. */
int parse_status_hwm(const char *text, long long *hwm_kib);

/* /proc/<pid>/smaps_rollup: Rss and Pss in KiB. */
int parse_smaps_rollup(const char *text, long long *rss_kib, long long *pss_kib);

/* The first ("cpu ") line of /proc/stat, in clock ticks. */
typedef struct CpuTimes {
    unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
} CpuTimes;

int parse_proc_stat_cpu(const char *text, CpuTimes *out);

/* The "processes" line of /proc/stat: processes created since boot. */
int parse_proc_stat_forks(const char *text, unsigned long long *forks);

/* The largest meminfo value taken as real (1 EiB in KiB); larger ones make the file damaged. */
#define MEMINFO_MAX_KIB (1LL << 50)

/* /proc/meminfo, in KiB (missing lines read 0; MemTotal and MemFree are required). */
typedef struct MemInfo {
    long long total, free, available, buffers, cached, sreclaimable, active, inactive;
} MemInfo;

int parse_meminfo(const char *text, MemInfo *out);

/* /proc/net/dev: bytes received and sent, summed over every interface but loopback. */
int parse_net_dev(const char *text, unsigned long long *recv, unsigned long long *sent);

/* /proc/diskstats: sectors (always 512 bytes) read and written, summed over the devices for
 * which keep(name, ctx) returns non-zero. */
typedef int (*DeviceFilter)(const char *name, void *ctx);

int parse_diskstats(const char *text, DeviceFilter keep, void *ctx,
                    unsigned long long *read_sectors, unsigned long long *written_sectors);

/* One line of /proc/<pid>/mountinfo (without its newline): device numbers, mount point (octal
 * escapes undone), filesystem type and source. */
typedef struct MountInfo {
    unsigned major, minor;
    char mount_point[512];
    char fstype[64];
    char source[256];
} MountInfo;

int parse_mountinfo_line(const char *line, size_t len, MountInfo *out);

#endif
