/* What the tests' stand-in GPU libraries (nvml_stub.c, amdsmi_stub.c) share: their clock and
 * the pace at which they read their control file again. Included by them, not a library. */
#ifndef STUB_CONTROL_H
#define STUB_CONTROL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* monotonic seconds */
static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The control file at the path in env var, opened when it is due (at most every 5 ms, the
 * last time in *read_at): *due tells whether it was, the file NULL when due but absent. */
static FILE *
open_control(const char *env_var, double *read_at, int *due)
{
    const char *path = getenv(env_var);
    double t = now();

    *due = !(*read_at >= 0 && t - *read_at < 0.005);
    if (!*due)
        return NULL;
    *read_at = t;
    return path ? fopen(path, "r") : NULL;
}

/* 1 when line is key=N, with N into *value */
static int
control_uint(const char *line, const char *key, unsigned int *value)
{
    size_t n = strlen(key);

    if (strncmp(line, key, n) != 0 || line[n] != '=')
        return 0;
    *value = (unsigned int)strtoul(line + n + 1, NULL, 10);
    return 1;
}

#endif
