#include "skip_threads.h"

#include <sys/types.h>
#include <unistd.h>

static unsigned long skipped[SKIP_THREADS_MAX];
static int skipped_count = 0;
static pid_t skipped_pid = 0; /* the process that registered them */

/* The registry of this process: emptied in a forked child (its idents are the parent's). */
static void
own_registry(void)
{
    pid_t pid = getpid();

    if (pid != skipped_pid) {
        skipped_count = 0;
        skipped_pid = pid;
    }
}

/* ident's slot, or -1 */
static int
slot_of(unsigned long ident)
{
    int i;

    for (i = 0; i < skipped_count; i++)
        if (skipped[i] == ident)
            return i;
    return -1;
}

int
skip_threads_set(unsigned long ident, int skip)
{
    int slot;

    own_registry();
    slot = slot_of(ident);
    if (!skip) {
        if (slot >= 0)
            skipped[slot] = skipped[--skipped_count];
        return 1;
    }
    if (slot >= 0)
        return 1;
    if (skipped_count == SKIP_THREADS_MAX)
        return 0;
    skipped[skipped_count++] = ident;
    return 1;
}

int
skip_threads_has(unsigned long ident)
{
    if (skipped_count == 0)
        return 0;
    own_registry();
    return slot_of(ident) >= 0;
}
