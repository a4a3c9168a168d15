#include "system_stats.h"

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
open_proc_file(SystemStats *stats, KeptFd *kept, const char *name)
{
    return kept_fd_open_at(kept, stats->proc.fd, name, fd_limit_now());
}

/* 0 on success */
int
system_stats_init(SystemStats *stats, const char *proc_root, const char *sys_root)
{
    memset(stats, 0, sizeof(*stats));
    kept_fd_none(&stats->proc);
    kept_fd_none(&stats->stat);
    kept_fd_none(&stats->meminfo);
    kept_fd_none(&stats->diskstats);
    kept_fd_none(&stats->netdev);
    snprintf(stats->proc_root, sizeof(stats->proc_root), "%s", proc_root);
    if (kept_fd_check_dir(&stats->proc, stats->proc_root, &stats->fds_replaced) < 0)
        return -1;
    open_proc_file(stats, &stats->stat, "stat");
    open_proc_file(stats, &stats->meminfo, "meminfo");
    open_proc_file(stats, &stats->diskstats, "diskstats");
    open_proc_file(stats, &stats->netdev, "net/dev");
    snprintf(stats->sys_root, sizeof(stats->sys_root), "%s", sys_root ? sys_root : "/sys");
    stats->ticks_per_s = (double)sysconf(_SC_CLK_TCK);
    if (stats->ticks_per_s <= 0)
        stats->ticks_per_s = 100.0;
    return 0;
}

/* Reads a kept-open file while it is still ours (fd_budget.h), else by path, keeping it
 * again when it was not kept any more (the application closed or replaced it, a read failed):
 * 0, or -1. */
static int
read_kept(SystemStats *stats, KeptFd *kept, const char *name)
{
    if (kept_fd_check(kept, &stats->fds_replaced) >= 0 &&
        textbuf_read_fd(&stats->buf, kept->fd) >= 0)
        return 0;
    if (errno == EBADF) /* closed by the application since the check: never closed here */
        kept_fd_none(kept);
    kept_fd_close(kept, &stats->fds_replaced);
    if (!stats->kept_given_back)
        open_proc_file(stats, kept, name);
    if (kept_fd_read(kept, &stats->buf, stats->proc.fd, name, &stats->fds_replaced) >= 0)
        return 0;
    stats->read_errors++;
    return -1;
}

void
system_stats_give_back(SystemStats *stats)
{
    KeptFd *kept[] = {&stats->stat, &stats->meminfo, &stats->diskstats, &stats->netdev};
    size_t i;

    for (i = 0; i < sizeof(kept) / sizeof(*kept); i++)
        kept_fd_close(kept[i], &stats->fds_replaced);
    stats->kept_given_back = 1;
}

/* non-zero when a directory has an entry other than . and .. */
static int
dir_has_entries(const char *path)
{
    KeptFd opened;
    DIR *dir = kept_dir_open_at(&opened, AT_FDCWD, path);
    struct dirent *de;
    int found = 0;

    if (dir == NULL)
        return 0;
    while (!found && (de = readdir(dir)) != NULL)
        found = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    kept_dir_close(dir, &opened);
    return found;
}

/* Whole physical disks: /sys/block entries that are not loop/ram devices and do not sit on
 * other devices (dm, md: their I/O is already counted on the disks below them). */
static void
refresh_disks(SystemStats *stats)
{
    char path[1024];
    KeptFd opened;
    DIR *dir;
    struct dirent *de;
    size_t k;

    stats->ndisks = 0;
    snprintf(path, sizeof(path), "%s/block", stats->sys_root);
    dir = kept_dir_open_at(&opened, AT_FDCWD, path);
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
    kept_dir_close(dir, &opened);
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
    if (textbuf_read_at(&stats->buf, stats->proc.fd, "self/mountinfo") >= 0) {
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
    if (read_kept(stats, &stats->stat, "stat") == 0) {
        if (parse_proc_stat_cpu(stats->buf.data, &cpu) == 0) {
            c->cpu_user = cpu.user + cpu.nice;
            c->cpu_sys = cpu.system + cpu.irq + cpu.softirq;
        } else {
            stats->read_errors++;
        }
    }
    if (read_kept(stats, &stats->diskstats, "diskstats") == 0)
        parse_diskstats(stats->buf.data, is_counted_disk, stats, &c->read_sectors,
                        &c->written_sectors);
    if (read_kept(stats, &stats->netdev, "net/dev") == 0 &&
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

    if (read_kept(stats, &stats->meminfo, "meminfo") != 0)
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
    kept_fd_check_dir(&stats->proc, stats->proc_root, &stats->fds_replaced);
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
    kept_fd_close(&stats->proc, &stats->fds_replaced);
    textbuf_free(&stats->buf);
}
