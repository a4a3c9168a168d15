/* A map from pid to one double, for counting each process once in linear time (open
 * addressing, linear probing). Reused between readings: reset keeps the memory. */
#ifndef RT_PID_MAP_H
#define RT_PID_MAP_H

#include <stddef.h>
#include <sys/types.h>

typedef struct PidMap {
    pid_t *keys;    /* PID_MAP_EMPTY where free */
    double *values; /* the value of keys[i] */
    size_t cap;     /* a power of two, at least twice the keys it was reset for */
} PidMap;

#define PID_MAP_EMPTY ((pid_t)-1)

/* Empties the map and makes room for n keys: 0, or -1 when out of memory (map left empty
 * and usable for 0 keys). */
int pid_map_reset(PidMap *map, size_t n);

/* The value of pid, added with *value 0 when absent (*added set then); NULL for a pid that
 * cannot be a key (negative) or when the map is full (more keys than it was reset for). */
double *pid_map_slot(PidMap *map, pid_t pid, int *added);

/* Nonzero when pid is a key. */
int pid_map_has(const PidMap *map, pid_t pid);

void pid_map_free(PidMap *map);

#endif
