#include "powercap.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fd_budget.h"

void
powercap_init(Powercap *pc, const char *sys_root)
{
    memset(pc, 0, sizeof(*pc));
    snprintf(pc->root, sizeof(pc->root), "%s/class/powercap", sys_root ? sys_root : "/sys");
    pc->scanned_at = -1.0;
}

/* the unsigned number in <root>/<dir>/<file>: 0, or -1 when unreadable or not a number */
static int
read_number(Powercap *pc, const char *dir, const char *file, unsigned long long *out)
{
    char path[sizeof(pc->root) + 96];
    char *end;

    snprintf(path, sizeof(path), "%s/%s/%s", pc->root, dir, file);
    if (textbuf_read_path(&pc->buf, AT_FDCWD, path, O_NONBLOCK) <= 0)
        return -1;
    if (pc->buf.data[0] < '0' || pc->buf.data[0] > '9')
        return -1;
    *out = strtoull(pc->buf.data, &end, 10);
    return end == pc->buf.data ? -1 : 0;
}

/* 1 with *kind for an entry read here: a RAPL zone "intel-rapl:N" named package-N, or a zone
 * "intel-rapl:N[:M]" named dram (core, uncore, psys and the MMIO copies are left out: they
 * overlap the package, or are the package counted twice) */
static int
zone_kind(Powercap *pc, const char *entry, enum PowercapKind *kind)
{
    char path[sizeof(pc->root) + 96];
    unsigned int n, m;
    char tail;
    int top, sub;

    top = sscanf(entry, "intel-rapl:%u%c", &n, &tail) == 1;
    sub = sscanf(entry, "intel-rapl:%u:%u%c", &n, &m, &tail) == 2;
    if ((!top && !sub) || strlen(entry) >= sizeof(pc->zones[0].dir))
        return 0;
    snprintf(path, sizeof(path), "%s/%s/name", pc->root, entry);
    if (textbuf_read_path(&pc->buf, AT_FDCWD, path, O_NONBLOCK) <= 0)
        return 0;
    if (top && strncmp(pc->buf.data, "package", 7) == 0) {
        *kind = POWERCAP_PACKAGE;
        return 1;
    }
    if (strncmp(pc->buf.data, "dram", 4) == 0 && (pc->buf.data[4] == '\n' || !pc->buf.data[4])) {
        *kind = POWERCAP_DRAM;
        return 1;
    }
    return 0;
}

/* the zone reading entry before the listing, or NULL */
static const PowercapZone *
known_zone(const PowercapZone *zones, int n, const char *entry)
{
    int i;

    for (i = 0; i < n; i++)
        if (strcmp(zones[i].dir, entry) == 0)
            return &zones[i];
    return NULL;
}

/* lists the zones again, keeping the counters of those already read */
static void
scan_zones(Powercap *pc, double now)
{
    PowercapZone before[POWERCAP_MAX_ZONES];
    int nbefore = pc->nzones;
    KeptFd opened;
    DIR *dir;
    struct dirent *d;

    pc->scanned_at = now;
    memcpy(before, pc->zones, sizeof(before));
    pc->nzones = 0;
    dir = kept_dir_open_at(&opened, AT_FDCWD, pc->root);
    pc->root_seen = dir != NULL;
    if (dir == NULL)
        return;
    while ((d = readdir(dir)) != NULL && pc->nzones < POWERCAP_MAX_ZONES) {
        PowercapZone *z = &pc->zones[pc->nzones];
        const PowercapZone *old;
        enum PowercapKind kind;
        if (!zone_kind(pc, d->d_name, &kind))
            continue;
        old = known_zone(before, nbefore, d->d_name);
        memset(z, 0, sizeof(*z));
        if (old)
            *z = *old;
        snprintf(z->dir, sizeof(z->dir), "%s", d->d_name);
        z->kind = kind;
        if (read_number(pc, z->dir, "max_energy_range_uj", &z->max_uj) != 0)
            z->max_uj = 0;
        pc->nzones++;
    }
    kept_dir_close(dir, &opened);
}

/* 1 when the zones should be listed again: never listed, the directory changed (a zone came
 * or went), or the last listing is POWERCAP_RESCAN_SECONDS old */
static int
should_scan(Powercap *pc, double now)
{
    struct stat st;

    if (pc->scanned_at < 0 || now - pc->scanned_at >= POWERCAP_RESCAN_SECONDS)
        goto changed;
    if (!pc->root_seen || stat(pc->root, &st) != 0)
        return 0;
    if (st.st_mtim.tv_sec == pc->root_mtime.tv_sec && st.st_mtim.tv_nsec == pc->root_mtime.tv_nsec)
        return 0;
changed:
    if (stat(pc->root, &st) == 0)
        pc->root_mtime = st.st_mtim;
    return 1;
}

/* joules since the zone's previous reading (0 at its first, or when it cannot be told) */
static double
zone_delta_j(Powercap *pc, PowercapZone *z)
{
    unsigned long long now_uj, delta;
    int had = z->has_last;

    if (read_number(pc, z->dir, "energy_uj", &now_uj) != 0 || (z->max_uj && now_uj > z->max_uj)) {
        pc->unreadable++; /* above its range: no real reading either */
        return 0.0;
    }
    pc->readings++;
    delta = now_uj - z->last_uj;
    if (now_uj < z->last_uj) {
        /* wrapped at max_energy_range_uj; a counter above it was reset: nothing to tell */
        delta = z->max_uj >= z->last_uj ? z->max_uj - z->last_uj + now_uj : 0;
        pc->wraps += delta > 0;
    }
    z->last_uj = now_uj;
    z->has_last = 1;
    return had ? (double)delta * 1e-6 : 0.0;
}

void
powercap_sample(Powercap *pc, double now, PowercapReading *out)
{
    int i;

    memset(out, 0, sizeof(*out));
    if (should_scan(pc, now))
        scan_zones(pc, now);
    for (i = 0; i < pc->nzones; i++) {
        double joules = zone_delta_j(pc, &pc->zones[i]);
        if (pc->zones[i].kind == POWERCAP_PACKAGE)
            out->package_j += joules;
        else
            out->dram_j += joules;
    }
}

int
powercap_zone_count(const Powercap *pc)
{
    return pc->nzones;
}

void
powercap_free(Powercap *pc)
{
    textbuf_free(&pc->buf);
    pc->nzones = 0;
}
