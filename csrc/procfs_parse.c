#include "procfs_parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Parses one unsigned decimal at *p (after blanks) and moves *p past it: 0, or -1 if none. */
static int
next_ull(const char **p, unsigned long long *out)
{
    const char *s = *p;
    char *end = NULL;

    while (*s == ' ' || *s == '\t')
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    *out = strtoull(s, &end, 10);
    if (errno != 0 || end == s)
        return -1;
    *p = end;
    return 0;
}

/* Parses one signed decimal at *p (after blanks): an optional minus sign, then what next_ull()
 * reads, within the range of long long. 0, or -1 if none or out of range. */
static int
next_ll(const char **p, long long *out)
{
    const char *s = *p;
    unsigned long long magnitude = 0;
    int negative;

    while (*s == ' ' || *s == '\t')
        s++;
    negative = *s == '-';
    s += negative;
    if (!isdigit((unsigned char)*s) || next_ull(&s, &magnitude) != 0)
        return -1;
    if (magnitude > (unsigned long long)LLONG_MAX + (unsigned long long)negative)
        return -1;
    /* -(magnitude - 1) - 1: LLONG_MIN too, with no overflow on the way */
    *out = negative && magnitude > 0 ? -(long long)(magnitude - 1) - 1 : (long long)magnitude;
    *p = s;
    return 0;
}

/* Skips n blank-separated fields: 0, or -1 when the text ends first. */
static int
skip_fields(const char **p, int n)
{
    const char *s = *p;

    while (n-- > 0) {
        while (*s == ' ')
            s++;
        if (*s == '\0' || *s == '\n')
            return -1;
        while (*s != ' ' && *s != '\0' && *s != '\n')
            s++;
    }
    *p = s;
    return 0;
}

/* The optional layout fields after rss (startstack, arg_start); zeros when absent. */
static void
parse_memory_layout(const char *p, PidStat *out)
{
    out->startstack = out->arg_start = 0;
    /* rsslim startcode endcode, startstack */
    if (skip_fields(&p, 3) != 0 || next_ull(&p, &out->startstack) != 0)
        return;
    /* kstkesp ... end_data (fields 29 to 46), start_brk, arg_start */
    if (skip_fields(&p, 19) != 0 || next_ull(&p, &out->arg_start) != 0)
        out->arg_start = 0;
}

/* 0 on success */
int
parse_pid_stat(const char *text, PidStat *out)
{
    const char *p = strrchr(text, ')'); /* comm may hold spaces and parentheses */
    long long ppid;

    if (p == NULL || p[1] != ' ' || p[2] == '\0')
        return -1;
    p += 2;
    out->state = *p++;
    if (next_ll(&p, &ppid) != 0 || ppid < 0 || ppid > 0x7fffffff)
        return -1;
    out->ppid = (int)ppid;
    /* pgrp session tty_nr tpgid flags, minflt, cminflt majflt cmajflt */
    if (skip_fields(&p, 5) != 0 || next_ull(&p, &out->minflt) != 0 || skip_fields(&p, 3) != 0)
        return -1;
    if (next_ull(&p, &out->utime) || next_ull(&p, &out->stime))
        return -1;
    /* cutime and cstime are signed in the kernel's format but never negative in practice */
    {
        long long cu, cs;
        if (next_ll(&p, &cu) || next_ll(&p, &cs))
            return -1;
        out->cutime = cu > 0 ? (unsigned long long)cu : 0;
        out->cstime = cs > 0 ? (unsigned long long)cs : 0;
    }
    /* priority nice num_threads itrealvalue */
    if (skip_fields(&p, 2) != 0 || next_ll(&p, &out->num_threads) != 0 || skip_fields(&p, 1) != 0)
        return -1;
    if (next_ull(&p, &out->starttime))
        return -1;
    /* vsize */
    if (skip_fields(&p, 1) != 0)
        return -1;
    if (next_ll(&p, &out->rss_pages))
        return -1;
    if (out->rss_pages < 0)
        out->rss_pages = 0;
    parse_memory_layout(p, out);
    return 0;
}

/* Finds "key" at the start of a line and parses the number after it: 0, or -1 if absent. */
static int
keyed_value(const char *text, const char *key, long long *out)
{
    size_t klen = strlen(key);
    const char *line = text;

    while (line && *line) {
        if (strncmp(line, key, klen) == 0) {
            const char *p = line + klen;
            return next_ll(&p, out);
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return -1;
}

/* 0 on success */
int
parse_pid_io(const char *text, PidIo *out)
{
    long long r, w;

    if (keyed_value(text, "read_bytes:", &r) || keyed_value(text, "write_bytes:", &w))
        return -1;
    if (r < 0 || w < 0)
        return -1;
    out->read_bytes = (unsigned long long)r;
    out->write_bytes = (unsigned long long)w;
    return 0;
}

/* 0 on success */
int
parse_smaps_rollup(const char *text, long long *rss_kib, long long *pss_kib)
{
    if (keyed_value(text, "Rss:", rss_kib) || keyed_value(text, "Pss:", pss_kib))
        return -1;
    if (*rss_kib < 0 || *pss_kib < 0)
        return -1;
    return 0;
}

/* 0 on success */
int
parse_status_hwm(const char *text, long long *hwm_kib)
{
    if (keyed_value(text, "VmHWM:", hwm_kib) || *hwm_kib < 0)
        return -1;
    return 0;
}

/* 0 on success */
int
parse_proc_stat_cpu(const char *text, CpuTimes *out)
{
    const char *p = text;
    unsigned long long *fields[8] = {&out->user,   &out->nice, &out->system,  &out->idle,
                                     &out->iowait, &out->irq,  &out->softirq, &out->steal};
    int i;

    if (strncmp(p, "cpu ", 4) != 0)
        return -1;
    p += 4;
    for (i = 0; i < 8; i++) {
        if (next_ull(&p, fields[i]) != 0) {
            if (i < 4)
                return -1;
            *fields[i] = 0; /* old kernels have fewer fields */
        }
    }
    return 0;
}

/* 0 on success */
int
parse_proc_stat_forks(const char *text, unsigned long long *forks)
{
    long long n;

    if (keyed_value(text, "processes ", &n) != 0 || n < 0)
        return -1;
    *forks = (unsigned long long)n;
    return 0;
}

/* 0 on success */
int
parse_meminfo(const char *text, MemInfo *out)
{
    struct {
        const char *key;
        long long *dst;
        int required;
    } keys[] = {
        {"MemTotal:", &out->total, 1},         {"MemFree:", &out->free, 1},
        {"MemAvailable:", &out->available, 0}, {"Buffers:", &out->buffers, 0},
        {"Cached:", &out->cached, 0},          {"SReclaimable:", &out->sreclaimable, 0},
        {"Active:", &out->active, 0},          {"Inactive:", &out->inactive, 0},
    };
    size_t i;

    for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (keyed_value(text, keys[i].key, keys[i].dst) != 0) {
            if (keys[i].required)
                return -1;
            *keys[i].dst = 0;
        }
        if (*keys[i].dst < 0 || *keys[i].dst > MEMINFO_MAX_KIB)
            return -1; /* no machine has that: a damaged file (and sums could overflow) */
    }
    return 0;
}

/* 0 on success */
int
parse_net_dev(const char *text, unsigned long long *recv, unsigned long long *sent)
{
    const char *line = text;
    int seen = 0;

    *recv = *sent = 0;
    while (line && *line) {
        const char *colon = strchr(line, ':');
        const char *eol = strchr(line, '\n');
        if (colon && (eol == NULL || colon < eol)) {
            const char *name = line, *p = colon + 1;
            unsigned long long rx, tx;
            while (*name == ' ')
                name++;
            if (!(colon - name == 2 && strncmp(name, "lo", 2) == 0)) {
                /* rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes */
                if (next_ull(&p, &rx) || skip_fields(&p, 7) || next_ull(&p, &tx))
                    return -1;
                *recv += rx;
                *sent += tx;
            }
            seen++;
        }
        line = eol ? eol + 1 : NULL;
    }
    return seen ? 0 : -1;
}

/* 0 on success */
int
parse_diskstats(const char *text, DeviceFilter keep, void *ctx, unsigned long long *read_sectors,
                unsigned long long *written_sectors)
{
    const char *line = text;
    char name[64];

    *read_sectors = *written_sectors = 0;
    while (line && *line) {
        const char *p = line, *eol = strchr(line, '\n');
        unsigned long long major, minor, rd_ios, rd_merges, rd_sec, rd_ticks, wr_ios, wr_merges,
            wr_sec;
        size_t n = 0;

        if (next_ull(&p, &major) == 0 && next_ull(&p, &minor) == 0) {
            while (*p == ' ')
                p++;
            while (*p && *p != ' ' && *p != '\n' && n < sizeof(name) - 1)
                name[n++] = *p++;
            name[n] = '\0';
            if (n > 0 && next_ull(&p, &rd_ios) == 0 && next_ull(&p, &rd_merges) == 0 &&
                next_ull(&p, &rd_sec) == 0 && next_ull(&p, &rd_ticks) == 0 &&
                next_ull(&p, &wr_ios) == 0 && next_ull(&p, &wr_merges) == 0 &&
                next_ull(&p, &wr_sec) == 0 && keep(name, ctx)) {
                *read_sectors += rd_sec;
                *written_sectors += wr_sec;
            }
        }
        line = eol ? eol + 1 : NULL;
    }
    return 0;
}

/* Copies one blank-delimited mountinfo field, undoing \ooo escapes: 0, or -1 if it is too long. */
static int
copy_field(const char *s, size_t len, char *dst, size_t cap)
{
    size_t i = 0, o = 0;

    while (i < len) {
        char c = s[i];
        if (c == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
            s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            c = (char)(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
            i += 4;
        } else {
            i++;
        }
        if (o + 1 >= cap)
            return -1;
        dst[o++] = c;
    }
    dst[o] = '\0';
    return 0;
}

/* 0 on success */
int
parse_mountinfo_line(const char *line, size_t len, MountInfo *out)
{
    const char *fields[16];
    size_t lens[16];
    size_t nf = 0, i = 0, dash = 0;
    unsigned long major, minor;
    char *end;

    while (i < len && nf < 16) {
        while (i < len && line[i] == ' ')
            i++;
        if (i >= len)
            break;
        fields[nf] = line + i;
        while (i < len && line[i] != ' ')
            i++;
        lens[nf] = (size_t)(line + i - fields[nf]);
        if (lens[nf] == 1 && fields[nf][0] == '-' && nf >= 6 && dash == 0)
            dash = nf;
        nf++;
    }
    if (dash == 0 || nf < dash + 3)
        return -1;
    /* fields[2] is major:minor */
    errno = 0;
    major = strtoul(fields[2], &end, 10);
    if (errno || end == fields[2] || *end != ':')
        return -1;
    minor = strtoul(end + 1, &end, 10);
    if (errno || (size_t)(end - fields[2]) != lens[2])
        return -1;
    out->major = (unsigned)major;
    out->minor = (unsigned)minor;
    if (copy_field(fields[4], lens[4], out->mount_point, sizeof(out->mount_point)) ||
        copy_field(fields[dash + 1], lens[dash + 1], out->fstype, sizeof(out->fstype)) ||
        copy_field(fields[dash + 2], lens[dash + 2], out->source, sizeof(out->source)))
        return -1;
    return 0;
}
