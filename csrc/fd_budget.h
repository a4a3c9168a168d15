/* The descriptors the sampler keeps open between ticks (procfs files re-read from offset 0).
 *
 * The budget: a saving, never worth the application's last descriptors. One rule for every
 * kept file (the machine's stat, meminfo, diskstats, net/dev; the tree's stat and loadavg;
 * members' stat and io): a descriptor is kept only at a number that leaves
 * max(FD_MARGIN_MIN, RLIMIT_NOFILE / 4) numbers free above it (the lowest free number is given
 * out first, so a high one means few are left); else the file is read by path each time (open,
 * read, close). Only the procfs root (for the tree and for the machine) stays open whatever the
 * limit.
 *
 * The identity: a kept number is only borrowed from the application's table. A program that
 * closes every descriptor (os.closerange(3, ...) in a daemon or before exec) closes ours too,
 * and its next open() gets the same numbers back; dup2() onto one of ours replaces it. Reading
 * such a number would read (and for a pipe consume) the application's data, closing it would
 * lose its writes. So a KeptFd holds the device and inode of the file it was opened on, and
 * every use starts with one fstat() of the number (kept_fd_check): a number that no longer
 * shows that file is forgotten, never read nor closed (the file is opened again by path, and
 * fds_replaced counts it: stats()["data_quality"] says so). fstat() is the check because it
 * neither reads nor moves the application's file offset, costs little beside the pread() it
 * guards (0.35 us against 2.9 us for a stat file; bench/bench_descriptors.py for a whole
 * sample), and the device and inode of an open procfs or cgroup file stay the same for as
 * long as it is open (also after its process exited). What it cannot
 * see: the application replacing the number between the check and the read or close (a few
 * microseconds, a race only a thread closing numbers it does not own can start), or opening
 * the very same procfs file at the very same number. No Python here. */
#ifndef RT_FD_BUDGET_H
#define RT_FD_BUDGET_H

#include <dirent.h>
#include <sys/types.h>

#include "textbuf.h"

#define FD_MARGIN_MIN 16

/* A descriptor kept open between ticks, with the identity of the file it was opened on. */
typedef struct KeptFd {
    int fd; /* -1: none kept */
    dev_t dev;
    ino_t ino;
} KeptFd;

/* RLIMIT_NOFILE now (-1: none). */
long fd_limit_now(void);

/* The margin of descriptor numbers left free above every kept descriptor at that limit. */
long fd_margin(long limit);

/* fd when it may be kept at that limit (or it is -1, or there is no limit); else closes it
 * and gives -1. */
int fd_keep_within(int fd, long limit);

/* A KeptFd holding nothing. */
void kept_fd_none(KeptFd *kept);

/* Keeps fd (just opened by us, or -1) with the identity of its file: fd, or -1 (fd closed)
 * when that cannot be read. */
int kept_fd_adopt(KeptFd *kept, int fd);

/* Opens path under dirfd for reading and keeps it when the budget allows at that limit
 * (fd_keep_within): the descriptor, or -1 (not kept: read it by path). */
int kept_fd_open_at(KeptFd *kept, int dirfd, const char *path, long limit);

/* The kept descriptor when it still shows the file it was opened on (one fstat, nothing read);
 * else -1: none was kept, or the number is the application's now and is forgotten without
 * being closed (*replaced counts it). Called right before every read through it. */
int kept_fd_check(KeptFd *kept, unsigned long *replaced);

/* A kept directory (a procfs root) checked as kept_fd_check, else opened again at path: its
 * descriptor, or -1 (it cannot be opened now: the next call tries again). */
int kept_fd_check_dir(KeptFd *kept, const char *path, unsigned long *replaced);

/* Reads a file whole into buf through its kept descriptor when that is still ours
 * (kept_fd_check), else by path under dirfd (open, read, close): length, or -1 with errno. A
 * kept descriptor that fails with EBADF is forgotten (not closed) and the file read by path. */
ssize_t kept_fd_read(KeptFd *kept, TextBuf *buf, int dirfd, const char *path,
                     unsigned long *replaced);

/* Opens the directory path under dirfd as a stream (its descriptor's identity in *opened, as a
 * kept one's): the stream, or NULL with errno. Close it with kept_dir_close. */
DIR *kept_dir_open_at(KeptFd *opened, int dirfd, const char *path);

/* Closes a stream of kept_dir_open_at when its descriptor still shows the directory opened;
 * else (the program closed the number and opened a file of its own at it meanwhile) the
 * stream's memory is let go of rather than the program's file closed. */
void kept_dir_close(DIR *dir, KeptFd *opened);

/* Closes the kept descriptor when it is still ours (kept_fd_check); forgets it either way. */
void kept_fd_close(KeptFd *kept, unsigned long *replaced);

#endif
