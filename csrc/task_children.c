#include "task_children.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
task_children_available(int proc_fd, pid_t pid)
{
    char path[64];

    if (pid <= 0)
        return 0;
    snprintf(path, sizeof(path), "%d/task/%d/children", (int)pid, (int)pid);
    return faccessat(proc_fd, path, R_OK, 0) == 0;
}

/* 0, or -1 on ENOMEM */
static int
pid_list_push(PidList *list, pid_t pid)
{
    if (list->len == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 64;
        pid_t *grown = realloc(list->items, cap * sizeof(*grown));
        if (grown == NULL) {
            errno = ENOMEM;
            return -1;
        }
        list->items = grown;
        list->cap = cap;
    }
    list->items[list->len++] = pid;
    return 0;
}

/* Appends the pids of one list ("12 345 ", no newline) to out: 0, or -1 on ENOMEM. */
static int
parse_children(const char *text, PidList *out)
{
    const char *s = text;

    while (*s) {
        long pid = 0;
        if (*s < '0' || *s > '9') {
            s++;
            continue;
        }
        while (*s >= '0' && *s <= '9') {
            if (pid <= 0x7fffffff) /* beyond: not a pid, the rest of its digits skipped */
                pid = pid * 10 + (*s - '0');
            s++;
        }
        if (pid > 0 && pid <= 0x7fffffff && pid_list_push(out, (pid_t)pid) != 0)
            return -1;
    }
    return 0;
}

/* Reads one thread's list into out: 0, TASK_CHILDREN_RACED (the thread is gone), -1. */
static int
read_thread(int proc_fd, pid_t pid, long tid, TextBuf *buf, PidList *out)
{
    char path[64];

    snprintf(path, sizeof(path), "%d/task/%ld/children", (int)pid, tid);
    if (textbuf_read_at(buf, proc_fd, path) < 0)
        return errno == ENOENT || errno == ESRCH ? TASK_CHILDREN_RACED : -1;
    return parse_children(buf->data, out);
}

/* The threads of pid (its task directory) into tids: 0, or -1 with errno. */
static int
list_threads(int proc_fd, pid_t pid, PidList *tids)
{
    char path[32];
    struct dirent *de;
    KeptFd opened;
    DIR *dir;
    int rc = 0;

    tids->len = 0;
    snprintf(path, sizeof(path), "%d/task", (int)pid);
    dir = kept_dir_open_at(&opened, proc_fd, path);
    if (dir == NULL)
        return -1;
    while (rc == 0 && (de = readdir(dir)) != NULL) {
        long tid = strtol(de->d_name, NULL, 10);
        if (tid > 0 && tid <= 0x7fffffff)
            rc = pid_list_push(tids, (pid_t)tid);
    }
    kept_dir_close(dir, &opened);
    return rc;
}

/* The threads to read: pid alone (threads == 1), else its task directory's. */
static int
threads_of(int proc_fd, pid_t pid, long threads, PidList *tids)
{
    if (threads != 1)
        return list_threads(proc_fd, pid, tids);
    tids->len = 0;
    return pid_list_push(tids, pid);
}

int
task_children_read(int proc_fd, pid_t pid, long threads, TextBuf *buf, PidList *out)
{
    ListCache none = {NULL, 0, 0, {NULL, 0, 0}};
    unsigned long replaced = 0;
    int rc = task_children_read_kept(proc_fd, pid, threads, &none, 0, -1, &replaced, buf, out);

    list_cache_free(&none, &replaced);
    return rc;
}

static long
cache_find(const ListCache *cache, pid_t pid, pid_t tid)
{
    size_t i;

    for (i = 0; i < cache->len; i++)
        if (cache->items[i].pid == pid && cache->items[i].tid == tid)
            return (long)i;
    return -1;
}

/* Keeps the list of (pid, tid) open when there is room: its index, or -1. */
static long
cache_keep(int proc_fd, pid_t pid, pid_t tid, ListCache *cache, size_t keep_max, long fd_limit)
{
    char path[64];
    KeptFd file;

    if (cache->len >= keep_max)
        return -1;
    if (cache->len == cache->cap) {
        size_t cap = cache->cap ? cache->cap * 2 : 16;
        KeptList *grown = realloc(cache->items, cap * sizeof(*grown));
        if (grown == NULL)
            return -1;
        cache->items = grown;
        cache->cap = cap;
    }
    snprintf(path, sizeof(path), "%d/task/%d/children", (int)pid, (int)tid);
    if (kept_fd_open_at(&file, proc_fd, path, fd_limit) < 0)
        return -1;
    cache->items[cache->len].pid = pid;
    cache->items[cache->len].tid = tid;
    cache->items[cache->len].file = file;
    cache->items[cache->len].seen = 0;
    return (long)cache->len++;
}

/* Forgets the kept list at index k (its number is not ours any more: not closed). */
static void
cache_forget(ListCache *cache, size_t k)
{
    cache->items[k] = cache->items[--cache->len];
}

/* Reads one thread's list, kept or by path: 0, TASK_CHILDREN_RACED (gone), -1. */
static int
read_one(int proc_fd, pid_t pid, pid_t tid, ListCache *cache, size_t keep_max, long fd_limit,
         unsigned long *replaced, TextBuf *buf, PidList *out)
{
    long k = cache_find(cache, pid, tid);

    if (k >= 0 && kept_fd_check(&cache->items[k].file, replaced) < 0) {
        cache_forget(cache, (size_t)k);
        k = -1;
    } else if (k < 0) {
        k = cache_keep(proc_fd, pid, tid, cache, keep_max, fd_limit);
    }
    if (k < 0)
        return read_thread(proc_fd, pid, (long)tid, buf, out);
    cache->items[k].seen = 1;
    if (textbuf_read_fd(buf, cache->items[k].file.fd) < 0)
        return -1;
    return parse_children(buf->data, out);
}

/* Closes the kept lists of pid whose thread was not listed at this read. */
static void
drop_unseen(ListCache *cache, pid_t pid, unsigned long *replaced)
{
    size_t i, kept = 0;

    for (i = 0; i < cache->len; i++) {
        KeptList *l = &cache->items[i];
        if (l->pid == pid && !l->seen) {
            kept_fd_close(&l->file, replaced);
            continue;
        }
        l->seen = 0;
        cache->items[kept++] = *l;
    }
    cache->len = kept;
}

int
task_children_read_kept(int proc_fd, pid_t pid, long threads, ListCache *cache, size_t keep_max,
                        long fd_limit, unsigned long *replaced, TextBuf *buf, PidList *out)
{
    size_t i;
    int rc = 0;

    if (threads_of(proc_fd, pid, threads, &cache->tids) != 0)
        return -1;
    for (i = 0; rc >= 0 && i < cache->tids.len; i++) {
        int got = read_one(proc_fd, pid, cache->tids.items[i], cache, keep_max, fd_limit, replaced,
                           buf, out);
        rc = got < 0 ? -1 : (got > rc ? got : rc);
    }
    drop_unseen(cache, pid, replaced); /* threads gone (one read: the process has no other) */
    if (threads == 1 && rc == TASK_CHILDREN_RACED) { /* the main thread's list is gone */
        errno = ENOENT;
        return -1;
    }
    return rc;
}

void
list_cache_drop(ListCache *cache, pid_t pid, unsigned long *replaced)
{
    size_t i, kept = 0;

    for (i = 0; i < cache->len; i++) {
        if (pid <= 0 || cache->items[i].pid == pid) {
            kept_fd_close(&cache->items[i].file, replaced);
            continue;
        }
        cache->items[kept++] = cache->items[i];
    }
    cache->len = kept;
}

void
list_cache_free(ListCache *cache, unsigned long *replaced)
{
    list_cache_drop(cache, 0, replaced);
    free(cache->items);
    pid_list_free(&cache->tids);
    cache->items = NULL;
    cache->len = cache->cap = 0;
}

void
pid_list_free(PidList *list)
{
    free(list->items);
    list->items = NULL;
    list->len = list->cap = 0;
}
