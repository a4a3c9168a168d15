/* Reading whole procfs/sysfs files into one growable buffer. No Python here. */
#ifndef RT_TEXTBUF_H
#define RT_TEXTBUF_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Files larger than this are refused (a sane procfs file is far smaller). */
#define TEXTBUF_MAX_BYTES (16u * 1024u * 1024u)

typedef struct TextBuf {
    char *data;
    size_t len;
    size_t cap;
} TextBuf;

/* Reads all of an open file from offset 0 into buf (NUL-terminated): length, or -1 with errno.
 * A short read is taken as the end of the file (true of procfs, sysfs and regular files). */
ssize_t textbuf_read_fd(TextBuf *buf, int fd);

/* textbuf_read_fd refusing (EFBIG) a file of more than max bytes, read no further than one
 * byte past max (max is capped at TEXTBUF_MAX_BYTES). */
ssize_t textbuf_read_fd_max(TextBuf *buf, int fd, size_t max);

/* Opens path relative to dirfd (O_RDONLY | O_CLOEXEC | flags), reads it whole and closes it:
 * length, or -1 with errno. The number is closed only while it still shows the file opened
 * (its device and inode): a program closing every descriptor and opening its own files in
 * another thread meanwhile (os.closerange) may own it by then (csrc/fd_budget.h). */
ssize_t textbuf_read_path(TextBuf *buf, int dirfd, const char *path, int flags);

/* Closes fd when it still shows the file it showed at open (opened: its fstat then); else
 * leaves the number alone (the program's now: see textbuf_read_path). */
void textbuf_close_if_same(int fd, const struct stat *opened);

/* textbuf_read_path without extra flags. */
ssize_t textbuf_read_at(TextBuf *buf, int dirfd, const char *path);

void textbuf_free(TextBuf *buf);

#endif
