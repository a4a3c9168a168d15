/* The frame table of the code profile (csrc/frame_table.c) without Python.
 *
 * - Interning: the same string, frame and stack give the same id; a string with a NUL is
 *   stored up to it; a stack is its parent's prefix tree node.
 * - A simulated day at 1 s (86,400 ticks, no waiting: the ticks are a loop): a main thread
 *   and three workers, each tick a stack drawn from 5,000 call paths up to 40 deep of a
 *   program of 400 functions (a deterministic generator), every thread running (each sampled
 *   at every tick, the worst case): the table stays within
 *   8 MiB (FT_DEFAULT_MAX_BYTES) with no sample refused. Prints the bytes held ("day_bytes").
 * - The bound: a table bounded to 64 KiB refuses the sample that would pass it, counts it,
 *   and changes nothing (the earlier samples stay).
 * - Thread CPU deltas: a clock that goes back is a new thread with a reused ident.
 * Prints "ok <checks> day_bytes=<n>"; exits non-zero at the first failed check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame_table.h"

#include "check.h"

#define FUNCTIONS 400
#define MAX_DEPTH 40
#define THREADS 4
#define DAY 86400
#define PATHS 5000 /* distinct call paths (x 4 lines each: up to 20,000 stacks) */

static unsigned long long rng = 88172645463325252ULL;

/* xorshift64: a deterministic stream */
static unsigned
next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

static void
check_interning(void)
{
    FrameTable ft;
    int64_t a, b, f1, f2, s1, s2, s3;

    ft_init(&ft, 0);
    a = ft_string(&ft, "train.py", 8);
    b = ft_string(&ft, "load", 4);
    CHECK(a == 0 && b == 1);
    CHECK(ft_string(&ft, "train.py", 8) == a);
    CHECK(ft_string(&ft, "lo\0ad", 5) == ft_string(&ft, "lo", 2)); /* up to the NUL */
    CHECK(strcmp(ft_string_at(&ft, (uint32_t)b), "load") == 0);
    CHECK(strcmp(ft_string_at(&ft, 999), "") == 0);
    f1 = ft_frame(&ft, (uint32_t)a, (uint32_t)b, 88, 80);
    f2 = ft_frame(&ft, (uint32_t)a, (uint32_t)b, 89, 80);
    CHECK(f1 == 0 && f2 == 1 && ft_frame(&ft, (uint32_t)a, (uint32_t)b, 88, 80) == f1);
    CHECK(ft_frame(&ft, 77, (uint32_t)b, 1, 1) == -1); /* unknown string */
    s1 = ft_stack(&ft, FT_NO_STACK, (uint32_t)f1);
    s2 = ft_stack(&ft, s1, (uint32_t)f2);
    s3 = ft_stack(&ft, FT_NO_STACK, (uint32_t)f2);
    CHECK(s1 == 0 && s2 == 1 && s3 == 2);
    CHECK(ft_stack(&ft, s1, (uint32_t)f2) == s2);
    CHECK(ft.stacks[s2].parent == s1);
    CHECK(ft_stack(&ft, 55, (uint32_t)f1) == -1); /* unknown parent */
    CHECK(ft_thread(&ft, 7, 70, 1) == 0 && ft_thread(&ft, 9, 90, 0) == 1 &&
          ft_thread(&ft, 7, 70, 1) == 0);
    CHECK(ft_thread(&ft, 9, 91, 0) == 2); /* ident 9 reused by another kernel thread: a new one */
    CHECK(ft_thread_cpu_delta(&ft, 0, 5000000) == 5000);
    CHECK(ft_thread_cpu_delta(&ft, 0, 8000000) == 3000);
    CHECK(ft_thread_cpu_delta(&ft, 0, 1000000) == 1000); /* went back: a new thread */
    CHECK(ft_sample(&ft, 0, 0, (uint32_t)s2, 10) == 0);
    CHECK(ft_sample(&ft, 0, 5, (uint32_t)s2, 10) == -1); /* unknown thread */
    CHECK(ft.nsamples == 1);
    ft_free(&ft);
}

/* The stack id of call path number path of the simulated program (the same path for the same
 * number: a program has a bounded set of call paths, each seen many times a day). */
static int64_t
program_stack(FrameTable *ft, const int64_t *files, const int64_t *names, unsigned path)
{
    unsigned long long saved = rng;
    int depth, i;
    int64_t stack = FT_NO_STACK;
    unsigned fn;

    rng = 0x9E3779B97F4A7C15ULL * (path + 1);
    depth = 1 + (int)(next_random() % MAX_DEPTH);
    fn = next_random() % 8; /* a few entry points */

    for (i = 0; i < depth && stack >= FT_NO_STACK; i++) {
        int64_t frame = ft_frame(ft, (uint32_t)files[fn % 20], (uint32_t)names[fn],
                                 (int32_t)(10 + next_random() % 4), 5);
        stack = frame < 0 ? -1 : ft_stack(ft, stack, (uint32_t)frame);
        fn = (fn * 7 + 1 + next_random() % 3) % FUNCTIONS;
    }
    rng = saved;
    return stack;
}

static size_t
check_a_day(void)
{
    FrameTable ft;
    int64_t files[20], names[FUNCTIONS], threads[THREADS];
    char text[64];
    int i, t, tick;
    size_t bytes;

    ft_init(&ft, 0);
    for (i = 0; i < 20; i++) {
        int n = snprintf(text, sizeof(text), "/home/user/project/pkg/module_%02d.py", i);
        files[i] = ft_string(&ft, text, (size_t)n);
    }
    for (i = 0; i < FUNCTIONS; i++) {
        int n = snprintf(text, sizeof(text), "Class%d.method_%d", i / 10, i);
        names[i] = ft_string(&ft, text, (size_t)n);
    }
    for (t = 0; t < THREADS; t++)
        threads[t] = ft_thread(&ft, 1000 + (unsigned long)t, 0, t == 0);
    for (tick = 0; tick < DAY; tick++)
        for (t = 0; t < THREADS; t++) {
            int64_t stack = program_stack(&ft, files, names, next_random() % PATHS);
            CHECK(stack >= 0);
            CHECK(ft_sample(&ft, (uint32_t)tick, (uint32_t)threads[t], (uint32_t)stack,
                            ft_thread_cpu_delta(&ft, (uint32_t)threads[t],
                                                (uint64_t)tick * 250000000u)) == 0);
        }
    bytes = ft_bytes(&ft);
    CHECK(ft.nsamples == (size_t)DAY * THREADS);
    CHECK(ft.refused == 0);
    CHECK(bytes <= FT_DEFAULT_MAX_BYTES);
    ft_free(&ft);
    return bytes;
}

static void
check_the_bound(void)
{
    FrameTable ft;
    int64_t file, frame, stack;
    size_t n = 0;

    ft_init(&ft, 64 * 1024);
    file = ft_string(&ft, "a.py", 4);
    frame = ft_frame(&ft, (uint32_t)file, (uint32_t)file, 1, 1);
    stack = ft_stack(&ft, FT_NO_STACK, (uint32_t)frame);
    CHECK(ft_thread(&ft, 1, 0, 1) == 0);
    while (ft_sample(&ft, (uint32_t)n, 0, (uint32_t)stack, 1) == 0)
        n++;
    CHECK(n > 1000 && ft.nsamples == n);
    CHECK(ft.refused == 1);
    CHECK(ft_bytes(&ft) <= 64 * 1024);
    CHECK(ft_sample(&ft, 0, 0, (uint32_t)stack, 1) == -1 && ft.refused == 2);
    CHECK(ft.samples[n - 1].row == n - 1); /* the earlier samples stay */
    ft_free(&ft);
}

int
main(void)
{
    size_t day_bytes;

    check_interning();
    day_bytes = check_a_day();
    check_the_bound();
    printf("ok %d day_bytes=%zu\n", checks, day_bytes);
    return 0;
}
