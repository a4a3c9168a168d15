#include "system_stats.h"

#include "fd_budget.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

static const char *const skipped_disk_prefixes[] = {"loop", "ram", "zram", "fd"};

/* opens a file under the procfs root to keep (fd_budget.h); -1 when absent or not kept */
static int
open_proc_file(const SystemStats *stats, const char *name)
{
    return fd_keep_within(openat(stats->proc_fd, name, O_RDONLY | O_CLOEXEC), fd_limit_now());
}

/* 0 on success */
int
system_stats_init(SystemStats *stats, const char *proc_root, const char *sys_root)
{
    memset(stats, 0, sizeof(*stats));
    stats->proc_fd = open(proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (stats->proc_fd < 0)
        return -1;
    stats->stat_fd = open_proc_file(stats, "stat");
    stats->meminfo_fd = open_proc_file(stats, "meminfo");
    stats->diskstats_fd = open_proc_file(stats, "diskstats");
    stats->netdev_fd = open_proc_file(stats, "net/dev");
    snprintf(stats->sys_root, sizeof(stats->sys_root), "%s", sys_root ? sys_root : "/sys");
    stats->ticks_per_s = (double)sysconf(_SC_CLK_TCK);
    if (stats->ticks_per_s <= 0)
        stats->ticks_per_s = 100.0;
    return 0;
}

/* Reads a kept-open file (reopening it once if the read fails; by path when it is not kept,
 * see fd_budget.h): 0, or -1. */
static int
read_kept(SystemStats *stats, int *fd, const char *name)
{
    if (*fd >= 0 && textbuf_read_fd(&stats->buf, *fd) >= 0)
        return 0;
    if (*fd >= 0)
        close(*fd);
    *fd = stats->kept_given_back ? -1 : open_proc_file(stats, name);
    if (*fd >= 0 ? textbuf_read_fd(&stats->buf, *fd) >= 0
                 : textbuf_read_at(&stats->buf, stats->proc_fd, name) >= 0)
        return 0;
    stats->read_errors++;
    return -1;
}

void
system_stats_give_back(SystemStats *stats)
{
    int *fds[] = {&stats->stat_fd, &stats->meminfo_fd, &stats->diskstats_fd, &stats->netdev_fd};
    size_t i;

    for (i = 0; i < sizeof(fds) / sizeof(*fds); i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
    stats->kept_given_back = 1;
}

/* non-zero when a directory has an entry other than . and .. */
static int
dir_has_entries(const char *path)
{
    DIR *dir = opendir(path);
    struct dirent *de;
    int found = 0;

    if (dir == NULL)
        return 0;
    while (!found && (de = readdir(dir)) != NULL)
        found = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(dir);
    return found;
}

/* Whole physical disks: /sys/block entries that are not loop/ram devices and do not sit on
 * other devices (dm, md: their I/O is already counted on the disks below them). */
static void
refresh_disks(SystemStats *stats)
{
    char path[1024];
    DIR *dir;
    struct dirent *de;
    size_t k;

    stats->ndisks = 0;
    snprintf(path, sizeof(path), "%s/block", stats->sys_root);
    dir = opendir(path);
    if (dir == NULL)
        return;
    while ((de = readdir(dir)) != NULL && stats->ndisks < SYSTEM_MAX_DISKS) {
        int skip = de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(stats->disks[0]);
        for (k = 0; !skip && k < sizeof(skipped_disk_prefixes) / sizeof(*skipped_disk_prefixes);
             k++)
            skip = strncmp(de->d_name, skipped_disk_prefixes[k],
                           strlen(skipped_disk_prefixes[k])) == 0;
        if (skip)
            continue;
        snprintf(path, sizeof(path), "%s/block/%s/slaves", stats->sys_root, de->d_name);
        if (dir_has_entries(path))
            continue;
        snprintf(stats->disks[stats->ndisks++], sizeof(stats->disks[0]), "%s", de->d_name);
    }
    closedir(dir);
}

/* DeviceFilter: non-zero for the disks found in sysfs */
static int
is_counted_disk(const char *name, void *ctx)
{
    const SystemStats *stats = ctx;
    int i;

    for (i = 0; i < stats->ndisks; i++)
        if (strcmp(stats->disks[i], name) == 0)
            return 1;
    return 0;
}

/* Filesystem identity for de-duplication: the pool for zfs, else the device numbers. */
static void
mount_key(const MountInfo *mount, char *key, size_t size)
{
    if (strcmp(mount->fstype, "zfs") == 0)
        snprintf(key, size, "zfs:%.*s", (int)strcspn(mount->source, "/"), mount->source);
    else
        snprintf(key, size, "%u:%u", mount->major, mount->minor);
}

/* non-zero for a filesystem on real storage */
static int
is_storage_mount(const MountInfo *mount)
{
    if (strncmp(mount->source, "/dev/loop", 9) == 0)
        return 0;
    if (strcmp(mount->fstype, "zfs") == 0 || strcmp(mount->fstype, "btrfs") == 0)
        return 1;
    return mount->major != 0 && strncmp(mount->source, "/dev/", 5) == 0;
}

/* Mount points of real filesystems, one per filesystem (the shortest path). */
static void
refresh_mounts(SystemStats *stats)
{
    char(*keys)[96] = stats->mount_keys;
    char *line, *eol;
    MountInfo mount;
    int i;

    stats->nmounts = 0;
    if (textbuf_read_at(&stats->buf, stats->proc_fd, "self/mountinfo") >= 0) {
        for (line = stats->buf.data; line && *line; line = eol ? eol + 1 : NULL) {
            char key[96];
            eol = strchr(line, '\n');
            if (parse_mountinfo_line(line, eol ? (size_t)(eol - line) : strlen(line), &mount) ||
                !is_storage_mount(&mount))
                continue;
            mount_key(&mount, key, sizeof(key));
            for (i = 0; i < stats->nmounts && strcmp(keys[i], key) != 0; i++)
                ;
            if (i < stats->nmounts) {
                if (strlen(mount.mount_point) < strlen(stats->mounts[i]))
                    snprintf(stats->mounts[i], sizeof(stats->mounts[0]), "%s", mount.mount_point);
            } else if (stats->nmounts < SYSTEM_MAX_MOUNTS) {
                snprintf(keys[i], sizeof(keys[0]), "%s", key);
                snprintf(stats->mounts[i], sizeof(stats->mounts[0]), "%s", mount.mount_point);
                stats->nmounts++;
            }
        }
    }
    if (stats->nmounts == 0) {
        snprintf(stats->mounts[0], sizeof(stats->mounts[0]), "/");
        stats->nmounts = 1;
    }
}

/* a counter's rise since the previous reading (0 after a reset) */
static double
counter_delta(unsigned long long now, unsigned long long before)
{
    return now >= before ? (double)(now - before) : 0.0;
}

/* Reads the cumulative counters; fields that cannot be read keep their previous value. */
static void
read_counters(SystemStats *stats, SystemCounters *c)
{
    CpuTimes cpu;

    *c = stats->prev;
    if (read_kept(stats, &stats->stat_fd, "stat") == 0) {
        if (parse_proc_stat_cpu(stats->buf.data, &cpu) == 0) {
            c->cpu_user = cpu.user + cpu.nice;
            c->cpu_sys = cpu.system + cpu.irq + cpu.softirq;
        } else {
            stats->read_errors++;
        }
    }
    if (read_kept(stats, &stats->diskstats_fd, "diskstats") == 0)
        parse_diskstats(stats->buf.data, is_counted_disk, stats, &c->read_sectors,
                        &c->written_sectors);
    if (read_kept(stats, &stats->netdev_fd, "net/dev") == 0 &&
        parse_net_dev(stats->buf.data, &c->net_recv, &c->net_sent) != 0) {
        c->net_recv = stats->prev.net_recv;
        c->net_sent = stats->prev.net_sent;
        stats->read_errors++;
    }
}

static void
read_memory(SystemStats *stats, SystemReading *out)
{
    MemInfo mem;
    long long used;

    if (read_kept(stats, &stats->meminfo_fd, "meminfo") != 0)
        return;
    if (parse_meminfo(stats->buf.data, &mem) != 0) {
        stats->read_errors++;
        return;
    }
    used = mem.total - mem.free - mem.buffers - mem.cached - mem.sreclaimable;
    out->free_kib = (double)mem.free;
    out->used_kib = used > 0 ? (double)used : 0.0;
    out->buffers_kib = (double)mem.buffers;
    out->cached_kib = (double)(mem.cached + mem.sreclaimable);
    out->active_kib = (double)mem.active;
    out->inactive_kib = (double)mem.inactive;
}

static void
read_disk_space(SystemStats *stats, SystemReading *out)
{
    struct statvfs vfs;
    int i;

    for (i = 0; i < stats->nmounts; i++) {
        if (statvfs(stats->mounts[i], &vfs) != 0)
            continue;
        out->space_total_gb += (double)vfs.f_blocks * (double)vfs.f_frsize / 1e9;
        out->space_free_gb += (double)vfs.f_bavail * (double)vfs.f_frsize / 1e9;
        out->space_used_gb += (double)(vfs.f_blocks - vfs.f_bfree) * (double)vfs.f_frsize / 1e9;
    }
}

void
system_stats_sample(SystemStats *stats, double now, SystemReading *out)
{
    SystemCounters c;

    memset(out, 0, sizeof(*out));
    if (stats->refreshed_at == 0 || now - stats->refreshed_at >= SYSTEM_REFRESH_SECONDS) {
        refresh_disks(stats);
        refresh_mounts(stats);
        stats->refreshed_at = now;
    }
    read_counters(stats, &c);
    if (stats->has_baseline) {
        out->user_s = counter_delta(c.cpu_user, stats->prev.cpu_user) / stats->ticks_per_s;
        out->sys_s = counter_delta(c.cpu_sys, stats->prev.cpu_sys) / stats->ticks_per_s;
        out->disk_read_b = counter_delta(c.read_sectors, stats->prev.read_sectors) * 512.0;
        out->disk_write_b = counter_delta(c.written_sectors, stats->prev.written_sectors) * 512.0;
        out->net_recv_b = counter_delta(c.net_recv, stats->prev.net_recv);
        out->net_sent_b = counter_delta(c.net_sent, stats->prev.net_sent);
    }
    stats->prev = c;
    stats->has_baseline = 1;
    read_memory(stats, out);
    read_disk_space(stats, out);
}

void
system_stats_free(SystemStats *stats)
{
    system_stats_give_back(stats);
    if (stats->proc_fd >= 0)
        close(stats->proc_fd);
    stats->proc_fd = -1;
    textbuf_free(&stats->buf);
}
