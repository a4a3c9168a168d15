#include "frame_table.h"

#include <stdlib.h>
#include <string.h>

#define FT_INDEX_MIN_SLOTS 64

typedef int (*FtEqual)(const FrameTable *ft, uint32_t id, const void *key);
typedef uint64_t (*FtHashOf)(const FrameTable *ft, uint32_t id);

void
ft_init(FrameTable *ft, size_t max_bytes)
{
    memset(ft, 0, sizeof(*ft));
    ft->max_bytes = max_bytes ? max_bytes : FT_DEFAULT_MAX_BYTES;
}

void
ft_free(FrameTable *ft)
{
    free(ft->chars);
    free(ft->string_at);
    free(ft->frames);
    free(ft->stacks);
    free(ft->threads);
    free(ft->samples);
    free(ft->string_index.slots);
    free(ft->frame_index.slots);
    free(ft->stack_index.slots);
    ft_init(ft, ft->max_bytes);
}

size_t
ft_bytes(const FrameTable *ft)
{
    return ft->bytes;
}

/* The one growth path: room for need elements of elem bytes in *buf (capacity *cap), doubling
 * while the bound allows, else as much as fits. 0, or -1 (nothing changed) when need does not
 * fit in the bound or memory runs out. */
static int
ft_reserve(FrameTable *ft, void **buf, size_t *cap, size_t need, size_t elem)
{
    size_t room, cap_new;
    void *grown;

    if (__builtin_expect(need <= *cap, 1))
        return 0;
    room = (ft->max_bytes - ft->bytes) / elem + *cap; /* the most this buffer may hold */
    if (need > room) {
        ft->refused++;
        return -1;
    }
    cap_new = *cap ? *cap * 2 : 16;
    if (cap_new < need)
        cap_new = need;
    if (cap_new > room)
        cap_new = room;
    grown = realloc(*buf, cap_new * elem);
    if (grown == NULL) {
        ft->refused++;
        return -1;
    }
    ft->bytes += (cap_new - *cap) * elem;
    *buf = grown;
    *cap = cap_new;
    return 0;
}

/* FNV-1a over n bytes, from seed */
static uint64_t
ft_hash(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = seed ? seed : 1469598103934665603ULL;
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The id stored for key, or -1. */
static int64_t
index_find(const FrameTable *ft, const FtIndex *ix, uint64_t hash, FtEqual eq, const void *key)
{
    size_t i;

    if (ix->mask == 0)
        return -1;
    for (i = hash & ix->mask; ix->slots[i]; i = (i + 1) & ix->mask)
        if (eq(ft, ix->slots[i] - 1, key))
            return (int64_t)ix->slots[i] - 1;
    return -1;
}

static void
index_place(FtIndex *ix, uint64_t hash, uint32_t id)
{
    size_t i = hash & ix->mask;

    while (ix->slots[i])
        i = (i + 1) & ix->mask;
    ix->slots[i] = id + 1;
    ix->used++;
}

/* Adds id (of hash) to the index, doubling it at half full: 0, or -1 (bound or memory). */
static int
index_put(FrameTable *ft, FtIndex *ix, uint64_t hash, uint32_t id, FtHashOf hash_of)
{
    if ((ix->used + 1) * 2 > ix->mask + 1 || ix->mask == 0) {
        size_t old_slots = ix->mask ? ix->mask + 1 : 0;
        size_t slots = old_slots ? old_slots * 2 : FT_INDEX_MIN_SLOTS;
        uint32_t *old = ix->slots, *fresh;
        size_t i;

        if (ft->bytes + (slots - old_slots) * sizeof(uint32_t) > ft->max_bytes) {
            ft->refused++;
            return -1;
        }
        fresh = calloc(slots, sizeof(uint32_t));
        if (fresh == NULL) {
            ft->refused++;
            return -1;
        }
        ft->bytes += (slots - old_slots) * sizeof(uint32_t);
        ix->slots = fresh;
        ix->mask = slots - 1;
        ix->used = 0;
        for (i = 0; i < old_slots; i++)
            if (old[i])
                index_place(ix, hash_of(ft, old[i] - 1), old[i] - 1);
        free(old);
    }
    index_place(ix, hash, id);
    return 0;
}

/* -- strings ------------------------------------------------------------------------------ */

typedef struct StringKey {
    const char *s;
    size_t len;
} StringKey;

static int
string_equal(const FrameTable *ft, uint32_t id, const void *key)
{
    const StringKey *k = key;
    const char *s = ft->chars + ft->string_at[id];
    return strncmp(s, k->s, k->len) == 0 && s[k->len] == '\0';
}

static uint64_t
string_hash_of(const FrameTable *ft, uint32_t id)
{
    const char *s = ft->chars + ft->string_at[id];
    return ft_hash(s, strlen(s), 0);
}

/* a string id, or -1 */
int64_t
ft_string(FrameTable *ft, const char *s, size_t len)
{
    StringKey key = {s, len};
    uint64_t hash;
    int64_t id;

    if (memchr(s, '\0', len) != NULL)
        len = strlen(s); /* a name with a NUL is stored up to it */
    key.len = len;
    hash = ft_hash(s, len, 0);
    id = index_find(ft, &ft->string_index, hash, string_equal, &key);
    if (id >= 0)
        return id;
    if (ft->nstrings >= UINT32_MAX - 1 || ft->nchars + len + 1 > UINT32_MAX ||
        ft_reserve(ft, (void **)&ft->chars, &ft->chars_cap, ft->nchars + len + 1, 1) ||
        ft_reserve(ft, (void **)&ft->string_at, &ft->strings_cap, ft->nstrings + 1,
                   sizeof(uint32_t)) ||
        index_put(ft, &ft->string_index, hash, (uint32_t)ft->nstrings, string_hash_of))
        return -1;
    memcpy(ft->chars + ft->nchars, s, len);
    ft->chars[ft->nchars + len] = '\0';
    ft->string_at[ft->nstrings] = (uint32_t)ft->nchars;
    ft->nchars += len + 1;
    return (int64_t)ft->nstrings++;
}

const char *
ft_string_at(const FrameTable *ft, uint32_t id)
{
    return id < ft->nstrings ? ft->chars + ft->string_at[id] : "";
}

/* -- frames and stacks -------------------------------------------------------------------- */

static int
frame_equal(const FrameTable *ft, uint32_t id, const void *key)
{
    return memcmp(&ft->frames[id], key, sizeof(FtFrame)) == 0;
}

static uint64_t
frame_hash_of(const FrameTable *ft, uint32_t id)
{
    return ft_hash(&ft->frames[id], sizeof(FtFrame), 0);
}

static int
stack_equal(const FrameTable *ft, uint32_t id, const void *key)
{
    return memcmp(&ft->stacks[id], key, sizeof(FtStack)) == 0;
}

static uint64_t
stack_hash_of(const FrameTable *ft, uint32_t id)
{
    return ft_hash(&ft->stacks[id], sizeof(FtStack), 0);
}

/* One interned kind of fixed-size entry: its array, count, capacity and index. */
typedef struct FtEntries {
    void **buf;
    size_t *n, *cap, size;
    FtIndex *index;
    FtEqual equal;
    FtHashOf hash_of;
} FtEntries;

/* The id of the entry equal to key (size bytes, padding zeroed), added when new; or -1. */
static int64_t
intern_entry(FrameTable *ft, const FtEntries *e, const void *key)
{
    uint64_t hash = ft_hash(key, e->size, 0);
    int64_t id = index_find(ft, e->index, hash, e->equal, key);

    if (id >= 0)
        return id;
    if (*e->n >= INT32_MAX || ft_reserve(ft, e->buf, e->cap, *e->n + 1, e->size) ||
        index_put(ft, e->index, hash, (uint32_t)*e->n, e->hash_of))
        return -1;
    memcpy((char *)*e->buf + *e->n * e->size, key, e->size);
    return (int64_t)(*e->n)++;
}

/* a frame id, or -1 */
int64_t
ft_frame(FrameTable *ft, uint32_t file, uint32_t function, int32_t line, int32_t first_line)
{
    FtEntries frames = {(void **)&ft->frames, &ft->nframes, &ft->frames_cap, sizeof(FtFrame),
                        &ft->frame_index,     frame_equal,  frame_hash_of};
    FtFrame key;

    if (file >= ft->nstrings || function >= ft->nstrings)
        return -1;
    memset(&key, 0, sizeof(key));
    key.file = file;
    key.function = function;
    key.line = line;
    key.first_line = first_line;
    return intern_entry(ft, &frames, &key);
}

/* a stack id, or -1 */
int64_t
ft_stack(FrameTable *ft, int64_t parent, uint32_t frame)
{
    FtEntries stacks = {(void **)&ft->stacks, &ft->nstacks, &ft->stacks_cap, sizeof(FtStack),
                        &ft->stack_index,     stack_equal,  stack_hash_of};
    FtStack key;

    if (frame >= ft->nframes || parent < FT_NO_STACK || parent >= (int64_t)ft->nstacks)
        return -1;
    memset(&key, 0, sizeof(key));
    key.parent = (int32_t)parent;
    key.frame = frame;
    return intern_entry(ft, &stacks, &key);
}

/* -- threads and samples ------------------------------------------------------------------ */

/* a thread index, or -1; a thread is its ident and its kernel id (an ident is reused by the
 * next thread as soon as one ends) */
int64_t
ft_thread(FrameTable *ft, unsigned long ident, uint64_t native, int is_main)
{
    size_t i;

    for (i = ft->nthreads; i-- > 0;) /* the newest first: an ident reused is the newest */
        if (ft->threads[i].ident == ident && ft->threads[i].native == native)
            return (int64_t)i;
    if (ft->nthreads >= FT_MAX_THREADS ||
        ft_reserve(ft, (void **)&ft->threads, &ft->threads_cap, ft->nthreads + 1, sizeof(FtThread)))
        return -1;
    ft->threads[ft->nthreads].ident = ident;
    ft->threads[ft->nthreads].native = native;
    ft->threads[ft->nthreads].last_cpu_ns = 0;
    ft->threads[ft->nthreads].is_main = is_main != 0;
    return (int64_t)ft->nthreads++;
}

uint32_t
ft_thread_cpu_delta(FrameTable *ft, uint32_t thread, uint64_t cpu_ns)
{
    uint64_t last, delta_us;

    if (thread >= ft->nthreads)
        return 0;
    last = ft->threads[thread].last_cpu_ns;
    delta_us = (cpu_ns >= last ? cpu_ns - last : cpu_ns) / 1000u;
    ft->threads[thread].last_cpu_ns = cpu_ns;
    return delta_us > UINT32_MAX ? UINT32_MAX : (uint32_t)delta_us;
}

int
ft_sample(FrameTable *ft, uint32_t row, uint32_t thread, uint32_t stack, uint32_t cpu_us)
{
    FtSample *s;

    if (thread >= ft->nthreads || stack >= ft->nstacks ||
        ft_reserve(ft, (void **)&ft->samples, &ft->samples_cap, ft->nsamples + 1, sizeof(FtSample)))
        return -1;
    s = &ft->samples[ft->nsamples++];
    s->row = row;
    s->thread = thread;
    s->stack = stack;
    s->cpu_us = cpu_us;
    return 0;
}
