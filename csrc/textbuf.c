#include "textbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* 0 when buf can hold at least need bytes, -1 (errno set) otherwise; never more than
 * max + 2 (max bytes of text, one more to see that a file is longer, the NUL) */
static int
textbuf_reserve(TextBuf *buf, size_t need, size_t max)
{
    size_t cap;
    char *grown;

    if (need <= buf->cap)
        return 0;
    if (need > max + 2) {
        errno = EFBIG;
        return -1;
    }
    cap = buf->cap ? buf->cap : 4096;
    while (cap < need)
        cap *= 2;
    if (cap > max + 2)
        cap = max + 2;
    grown = realloc(buf->data, cap);
    if (grown == NULL) {
        errno = ENOMEM;
        return -1;
    }
    buf->data = grown;
    buf->cap = cap;
    return 0;
}

/* length read, or -1 with errno */
ssize_t
textbuf_read_fd(TextBuf *buf, int fd)
{
    return textbuf_read_fd_max(buf, fd, TEXTBUF_MAX_BYTES);
}

/* length read, or -1 with errno (EFBIG: more than max bytes) */
ssize_t
textbuf_read_fd_max(TextBuf *buf, int fd, size_t max)
{
    ssize_t n;

    buf->len = 0;
    if (max > TEXTBUF_MAX_BYTES)
        max = TEXTBUF_MAX_BYTES;
    if (textbuf_reserve(buf, 4096 < max + 2 ? 4096 : max + 2, max) != 0)
        return -1;
    for (;;) {
        size_t room;
        if (buf->len + 1 >= buf->cap && textbuf_reserve(buf, buf->cap + 1, max) != 0)
            return -1;
        room = buf->cap - buf->len - 1;
        n = pread(fd, buf->data + buf->len, room, (off_t)buf->len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf->len += (size_t)n;
        if (buf->len > max) {
            errno = EFBIG;
            return -1;
        }
        /* a short read of a procfs (seq_file) or sysfs file is its end: no second call */
        if (n == 0 || (size_t)n < room)
            break;
    }
    buf->data[buf->len] = '\0';
    return (ssize_t)buf->len;
}

/* length read, or -1 with errno */
ssize_t
textbuf_read_path(TextBuf *buf, int dirfd, const char *path, int flags)
{
    struct stat opened;
    int fd, saved;
    ssize_t n;

    fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | flags);
    if (fd < 0)
        return -1;
    if (fstat(fd, &opened) != 0) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    n = textbuf_read_fd(buf, fd);
    saved = errno;
    textbuf_close_if_same(fd, &opened);
    errno = saved;
    return n;
}

void
textbuf_close_if_same(int fd, const struct stat *opened)
{
    struct stat now;

    if (fstat(fd, &now) == 0 && now.st_dev == opened->st_dev && now.st_ino == opened->st_ino)
        close(fd);
}

/* length read, or -1 with errno */
ssize_t
textbuf_read_at(TextBuf *buf, int dirfd, const char *path)
{
    return textbuf_read_path(buf, dirfd, path, 0);
}

void
textbuf_free(TextBuf *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}
