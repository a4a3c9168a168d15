/* The frame table of the code profile: code locations, stacks and stack samples, interned and
 * stored once, in a bounded number of bytes. No Python here (tests/core/c/frames_check.c drives
 * it alone, on a simulated day).
 *
 * Strings (file and function names) are stored once; a frame is (file, function, line, first
 * line); a stack is a node of a prefix tree (its parent stack and its top frame), so that a
 * stack seen again costs nothing but its sample. A sample is (row, thread, stack, CPU-us): the
 * row of the process table whose interval it ends, the thread (an index in the thread list),
 * the thread's stack then, and the CPU time the thread used since its previous sample.
 *
 * Every buffer grows through one helper that keeps the sum of the capacities within max_bytes;
 * an addition that would pass it fails (-1) and changes nothing. */
#ifndef RT_FRAME_TABLE_H
#define RT_FRAME_TABLE_H

#include <stddef.h>
#include <stdint.h>

#define FT_DEFAULT_MAX_BYTES (8u * 1024u * 1024u) /* the whole table: 8 MiB */
#define FT_MAX_THREADS 4096                       /* thread entries (idents are reused) */
#define FT_NO_STACK (-1)                          /* the parent of a root frame */

typedef struct FtFrame {
    uint32_t file, function; /* string ids */
    int32_t line, first_line;
} FtFrame;

typedef struct FtStack {
    int32_t parent; /* FT_NO_STACK for a root frame */
    uint32_t frame;
} FtStack;

typedef struct FtThread {
    unsigned long ident; /* threading.get_ident() */
    uint64_t native;     /* the kernel's thread id (0 where Python does not keep it) */
    uint64_t last_cpu_ns;
    int is_main;
} FtThread;

typedef struct FtSample {
    uint32_t row, thread, stack, cpu_us;
} FtSample;

/* An open-addressing index of ids (slot = id + 1; 0 is empty). */
typedef struct FtIndex {
    uint32_t *slots;
    size_t mask; /* slots - 1 (a power of two), 0 before the first insert */
    size_t used;
} FtIndex;

typedef struct FrameTable {
    size_t max_bytes, bytes; /* the bound, and the capacities held */
    char *chars;             /* the strings, each ended by a NUL */
    size_t nchars, chars_cap;
    uint32_t *string_at; /* offset of string i in chars */
    size_t nstrings, strings_cap;
    FtFrame *frames;
    size_t nframes, frames_cap;
    FtStack *stacks;
    size_t nstacks, stacks_cap;
    FtThread *threads;
    size_t nthreads, threads_cap;
    FtSample *samples;
    size_t nsamples, samples_cap;
    FtIndex string_index, frame_index, stack_index;
    unsigned long refused; /* additions refused by the bound */
} FrameTable;

/* An empty table bounded to max_bytes (0: FT_DEFAULT_MAX_BYTES). Allocates nothing yet. */
void ft_init(FrameTable *ft, size_t max_bytes);

void ft_free(FrameTable *ft);

/* The id of the string s[0..len) (added when new), or -1 when the bound is reached. */
int64_t ft_string(FrameTable *ft, const char *s, size_t len);

/* The string of an id (NUL-ended), or "" for an id out of range. */
const char *ft_string_at(const FrameTable *ft, uint32_t id);

/* The id of a frame (added when new), or -1 when the bound is reached or a string id is
 * unknown. */
int64_t ft_frame(FrameTable *ft, uint32_t file, uint32_t function, int32_t line,
                 int32_t first_line);

/* The id of the stack made of parent (FT_NO_STACK: none) with frame on top, or -1. */
int64_t ft_stack(FrameTable *ft, int64_t parent, uint32_t frame);

/* The index of the thread ident (added when new), or -1 when the bound is reached. */
int64_t ft_thread(FrameTable *ft, unsigned long ident, uint64_t native, int is_main);

/* The CPU microseconds thread used since its last reading, given its CPU clock now (a smaller
 * clock than the last reading is a new thread with a reused ident: all of it counts). */
uint32_t ft_thread_cpu_delta(FrameTable *ft, uint32_t thread, uint64_t cpu_ns);

/* Appends a sample: 0, or -1 when the bound is reached or an id is out of range. */
int ft_sample(FrameTable *ft, uint32_t row, uint32_t thread, uint32_t stack, uint32_t cpu_us);

/* Bytes held (the capacities of every buffer). */
size_t ft_bytes(const FrameTable *ft);

#endif
