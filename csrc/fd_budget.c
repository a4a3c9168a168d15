#include "fd_budget.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

long
fd_limit_now(void)
{
    struct rlimit lim;

    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
        return -1;
    return lim.rlim_cur > 0x7fffffff ? 0x7fffffff : (long)lim.rlim_cur;
}

long
fd_margin(long limit)
{
    return limit / 4 > FD_MARGIN_MIN ? limit / 4 : FD_MARGIN_MIN;
}

int
fd_keep_within(int fd, long limit)
{
    if (fd < 0 || limit < 0 || (long)fd + fd_margin(limit) < limit)
        return fd;
    close(fd);
    return -1;
}

void
kept_fd_none(KeptFd *kept)
{
    kept->fd = -1;
    kept->dev = 0;
    kept->ino = 0;
}

/* fd, or -1 */
int
kept_fd_adopt(KeptFd *kept, int fd)
{
    struct stat st;

    kept_fd_none(kept);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    kept->fd = fd;
    kept->dev = st.st_dev;
    kept->ino = st.st_ino;
    return fd;
}

/* the descriptor kept, or -1 */
int
kept_fd_open_at(KeptFd *kept, int dirfd, const char *path, long limit)
{
    return kept_fd_adopt(kept, fd_keep_within(openat(dirfd, path, O_RDONLY | O_CLOEXEC), limit));
}

/* the kept descriptor, or -1 */
int
kept_fd_check(KeptFd *kept, unsigned long *replaced)
{
    struct stat st;

    if (kept->fd < 0)
        return -1;
    if (fstat(kept->fd, &st) == 0 && st.st_dev == kept->dev && st.st_ino == kept->ino)
        return kept->fd;
    kept_fd_none(kept); /* closed by the application, maybe its own file now: never ours again */
    (*replaced)++;
    return -1;
}

/* the directory's descriptor, or -1 */
int
kept_fd_check_dir(KeptFd *kept, const char *path, unsigned long *replaced)
{
    if (kept_fd_check(kept, replaced) >= 0)
        return kept->fd;
    return kept_fd_adopt(kept, open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

/* length, or -1 with errno */
ssize_t
kept_fd_read(KeptFd *kept, TextBuf *buf, int dirfd, const char *path, unsigned long *replaced)
{
    int fd = kept_fd_check(kept, replaced);
    ssize_t n;

    if (fd >= 0) {
        n = textbuf_read_fd(buf, fd);
        if (n >= 0 || errno != EBADF)
            return n;
        kept_fd_none(kept); /* closed by the application since the check */
        (*replaced)++;
    }
    return textbuf_read_at(buf, dirfd, path);
}

/* the stream, or NULL with errno */
DIR *
kept_dir_open_at(KeptFd *opened, int dirfd, const char *path)
{
    DIR *dir;
    int saved;

    if (kept_fd_adopt(opened, openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return NULL;
    dir = fdopendir(opened->fd);
    if (dir == NULL) {
        saved = errno;
        close(opened->fd);
        kept_fd_none(opened);
        errno = saved;
    }
    return dir;
}

void
kept_dir_close(DIR *dir, KeptFd *opened)
{
    unsigned long replaced = 0;

    if (kept_fd_check(opened, &replaced) >= 0)
        closedir(dir);
    kept_fd_none(opened); /* else: a stream's memory lost, only in that race */
}

void
kept_fd_close(KeptFd *kept, unsigned long *replaced)
{
    if (kept_fd_check(kept, replaced) >= 0)
        close(kept->fd);
    kept_fd_none(kept);
}
