/* pid -> double, open addressing: see pid_map.h */
#include "pid_map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* the first slot to probe for pid (Fibonacci hashing spreads consecutive pids) */
static size_t
home_slot(const PidMap *map, pid_t pid)
{
    return (size_t)(((uint64_t)(uint32_t)pid * 11400714819323198485ull) >> 32) & (map->cap - 1);
}

int
pid_map_reset(PidMap *map, size_t n)
{
    size_t cap = 16, i;

    while (cap < 2 * n && cap < ((size_t)1 << 40))
        cap *= 2;
    if (cap > map->cap || map->cap > 4 * cap) { /* grown, or shrunk: reset stays O(n) */
        pid_t *keys = malloc(cap * sizeof(*keys));
        double *values = malloc(cap * sizeof(*values));
        if (keys == NULL || values == NULL) {
            free(keys);
            free(values);
            pid_map_free(map);
            return -1;
        }
        pid_map_free(map);
        map->keys = keys, map->values = values, map->cap = cap;
    }
    for (i = 0; i < map->cap; i++)
        map->keys[i] = PID_MAP_EMPTY;
    return 0;
}

double *
pid_map_slot(PidMap *map, pid_t pid, int *added)
{
    size_t i, probes;

    *added = 0;
    if (pid < 0 || map->cap == 0)
        return NULL;
    for (i = home_slot(map, pid), probes = 0; probes < map->cap; i = (i + 1) & (map->cap - 1)) {
        if (map->keys[i] == pid)
            return &map->values[i];
        if (map->keys[i] == PID_MAP_EMPTY) {
            map->keys[i] = pid;
            map->values[i] = 0.0;
            *added = 1;
            return &map->values[i];
        }
        probes++;
    }
    return NULL;
}

int
pid_map_has(const PidMap *map, pid_t pid)
{
    size_t i, probes;

    if (pid < 0 || map->cap == 0)
        return 0;
    for (i = home_slot(map, pid), probes = 0; probes < map->cap; i = (i + 1) & (map->cap - 1)) {
        if (map->keys[i] == pid)
            return 1;
        if (map->keys[i] == PID_MAP_EMPTY)
            return 0;
        probes++;
    }
    return 0;
}

void
pid_map_free(PidMap *map)
{
    free(map->keys);
    free(map->values);
    memset(map, 0, sizeof(*map));
}
