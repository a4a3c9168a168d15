#include "cgroup_parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* 0 with *value when s starts with a decimal number (end past it), -1 otherwise */
static int
read_u64(const char *s, const char **end, unsigned long long *value)
{
    char *stop;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    *value = strtoull(s, &stop, 10);
    if (errno != 0)
        return -1;
    *end = stop;
    return 0;
}

const char *
parse_cgroup_next_line(const char *p)
{
    const char *nl = strchr(p, '\n');
    return nl ? nl + 1 : NULL;
}

int
parse_cgroup_keyed_line(const char *p, const char **key, size_t *klen, unsigned long long *value)
{
    const char *end;

    *key = p;
    *klen = strcspn(p, " \t\n");
    if (*klen == 0 || p[*klen] != ' ' || read_u64(p + *klen + 1, &end, value) != 0)
        return -1;
    end += strspn(end, " \t\r");
    return *end == '\0' || *end == '\n' ? 0 : -1;
}

/* 0 with the value of "key value" */
int
parse_cgroup_keyed(const char *text, const char *key, unsigned long long *value)
{
    size_t want = strlen(key), klen;
    const char *p, *found;

    for (p = text; p && *p; p = parse_cgroup_next_line(p))
        if (parse_cgroup_keyed_line(p, &found, &klen, value) == 0 && klen == want &&
            strncmp(found, key, klen) == 0)
            return 0;
    return -1;
}

/* 0 with the number the file holds */
int
parse_cgroup_number(const char *text, unsigned long long *value)
{
    const char *end;

    while (*text == ' ')
        text++;
    return read_u64(text, &end, value);
}

/* adds the value of "name=<n>" tokens of one line to *sum */
static void
add_token(const char *line, const char *line_end, const char *name, unsigned long long *sum)
{
    size_t nlen = strlen(name);
    const char *p = line, *end;
    unsigned long long v;

    while (p < line_end) {
        if ((p == line || p[-1] == ' ') && strncmp(p, name, nlen) == 0 &&
            read_u64(p + nlen, &end, &v) == 0 && end <= line_end) {
            *sum += v;
            return;
        }
        p++;
    }
}

/* 0 with the bytes read and written */
int
parse_cgroup_io_stat(const char *text, unsigned long long *read_b, unsigned long long *write_b)
{
    const char *p, *nl;

    *read_b = *write_b = 0;
    for (p = text; p && *p; p = parse_cgroup_next_line(p)) {
        nl = strchr(p, '\n');
        if (nl == NULL)
            nl = p + strlen(p);
        add_token(p, nl, "rbytes=", read_b);
        add_token(p, nl, "wbytes=", write_b);
    }
    return 0;
}

/* 0 with the bytes read and written */
int
parse_cgroup_blkio(const char *text, unsigned long long *read_b, unsigned long long *write_b)
{
    const char *p, *op, *end;
    unsigned long long v;

    *read_b = *write_b = 0;
    for (p = text; p && *p; p = parse_cgroup_next_line(p)) {
        op = strchr(p, ' ');
        if (op == NULL || (strchr(p, '\n') && op > strchr(p, '\n')))
            continue;
        op++;
        if (strncmp(op, "Read ", 5) == 0 && read_u64(op + 5, &end, &v) == 0)
            *read_b += v;
        else if (strncmp(op, "Write ", 6) == 0 && read_u64(op + 6, &end, &v) == 0)
            *write_b += v;
    }
    return 0;
}

/* how many pids the text holds (at most cap stored), or -1 */
long
parse_cgroup_procs(const char *text, pid_t *out, size_t cap)
{
    const char *p = text, *end;
    unsigned long long v;
    long n = 0;

    while (*p) {
        if (*p == '\n') {
            p++;
            continue;
        }
        if (read_u64(p, &end, &v) != 0 || v == 0 || v > 0x7fffffffULL ||
            (*end != '\n' && *end != '\0'))
            return -1;
        if ((size_t)n < cap)
            out[n] = (pid_t)v;
        n++;
        p = end;
    }
    return n;
}
