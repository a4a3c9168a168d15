/* CPU package and DRAM energy from the kernel's powercap (RAPL) zones. No Python here.
 *
 * Reads <sys_root>/class/powercap/intel-rapl:N (name "package-N") and its subzones
 * intel-rapl:N:M named "dram": energy_uj, a counter in microjoules that wraps at
 * max_energy_range_uj. AMD processors expose their RAPL zones under the same names. The
 * figures are the machine's (all processes). Zones are listed again when the directory
 * changes and every POWERCAP_RESCAN_SECONDS; with no powercap directory at the start, it
 * is looked for again only every POWERCAP_RESCAN_SECONDS (nothing read in between). */
#ifndef RT_POWERCAP_H
#define RT_POWERCAP_H

#include <time.h>

#include "textbuf.h"

#define POWERCAP_MAX_ZONES 32
#define POWERCAP_RESCAN_SECONDS 60.0

enum PowercapKind { POWERCAP_PACKAGE, POWERCAP_DRAM };

typedef struct PowercapZone {
    char dir[48]; /* "intel-rapl:0", "intel-rapl:0:1" */
    enum PowercapKind kind;
    unsigned long long max_uj; /* max_energy_range_uj: where energy_uj wraps (0: unknown) */
    unsigned long long last_uj;
    int has_last;
} PowercapZone;

typedef struct PowercapReading {
    double package_j, dram_j; /* in the interval, all zones of the kind */
} PowercapReading;

typedef struct Powercap {
    char root[560]; /* <sys_root>/class/powercap */
    PowercapZone zones[POWERCAP_MAX_ZONES];
    int nzones;
    int root_seen; /* the directory existed at the last look */
    struct timespec root_mtime;
    double scanned_at;        /* monotonic time of the last listing (< 0: never) */
    unsigned long readings;   /* zone readings that gave a value */
    unsigned long unreadable; /* zone readings that failed (energy_uj unreadable, e.g. root-only) */
    unsigned long wraps;      /* counters found wrapped (and counted through max_energy_range_uj) */
    TextBuf buf;
} Powercap;

/* Remembers where to read (sys_root NULL: /sys); reads nothing yet. */
void powercap_init(Powercap *pc, const char *sys_root);

/* The energy of the interval since the previous call (zeros at the first reading of a zone,
 * and when nothing is readable) at monotonic time now. */
void powercap_sample(Powercap *pc, double now, PowercapReading *out);

/* Zones being read (package and DRAM). */
int powercap_zone_count(const Powercap *pc);

void powercap_free(Powercap *pc);

#endif
