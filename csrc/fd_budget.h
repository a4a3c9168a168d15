/* The descriptors the sampler keeps open between ticks (procfs files re-read from offset 0):
 * a saving, never worth the application's last descriptors. One rule for every kept file
 * (the machine's stat, meminfo, diskstats, net/dev; the tree's stat and loadavg; members'
 * stat and io): a descriptor is kept only at a number that leaves max(FD_MARGIN_MIN,
 * RLIMIT_NOFILE / 4) numbers free above it (the lowest free number is given out first, so a
 * high one means few are left); else the file is read by path each time (open, read, close).
 * Only the procfs root (for the tree and for the machine) and the listing of it stay open
 * whatever the limit. No Python here. */
#ifndef RT_FD_BUDGET_H
#define RT_FD_BUDGET_H

#define FD_MARGIN_MIN 16

/* RLIMIT_NOFILE now (-1: none). */
long fd_limit_now(void);

/* The margin of descriptor numbers left free above every kept descriptor at that limit. */
long fd_margin(long limit);

/* fd when it may be kept at that limit (or it is -1, or there is no limit); else closes it
 * and gives -1. */
int fd_keep_within(int fd, long limit);

#endif
