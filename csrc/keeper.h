/* A client of the Spare Cores Keeper REST API (GET /servers, /server/{v}/{s}/prices) over
 * http.h, answers parsed with cJSON. No Python. Memory amounts are given in MiB and sent in GiB,
 * the unit the Keeper expects. Every request carries X-Application-ID: resource-tracker. */
#ifndef RT_KEEPER_H
#define RT_KEEPER_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define KEEPER_APP_HEADER "X-Application-ID: resource-tracker"

/* The /servers query. Lists are NULL-terminated (NULL: not sent); 0 / NULL: not sent. */
typedef struct KeeperQuery {
    long vcpus_min;
    double memory_min_mib; /* sent as memory_min in GiB */
    long gpu_min;
    double gpu_memory_min_mib;   /* per GPU, sent as gpu_memory_min in GiB */
    double gpu_memory_total_mib; /* sent as gpu_memory_total in GiB */
    const char *const *vendors;
    const char *const *regions;
    const char *const *countries;
    const char *const *architectures;
    const char *const *compliance_frameworks;
    const char *allocation; /* "ondemand", "spot" or NULL (any) */
    int green_energy;       /* 1: green_energy=true */
    double price_max;       /* USD per hour; <= 0: not sent */
    const char *order_by;
    const char *order_dir;
    long limit;
} KeeperQuery;

/* Returns the malloc'd URL base_url/servers?... of the query, or NULL when out of memory. */
char *keeper_servers_url(const char *base_url, const KeeperQuery *query);

/* Returns the malloc'd URL base_url/server/{vendor}/{server}/prices (segments escaped), or NULL. */
char *keeper_prices_url(const char *base_url, const char *vendor, const char *server);

/* Returns the malloc'd URL base_url/path (path sent as given: it may hold a query), or NULL when
 * out of memory or when path holds a byte that a URL cannot carry as is (space, control,
 * non-ASCII). */
char *keeper_path_url(const char *base_url, const char *path);

/* Returns the parsed JSON answer of GET url (free with cJSON_Delete), or NULL with a message in
 * err: transport failure, an HTTP status other than 200, or a body that is not JSON. */
cJSON *keeper_get(const char *url, long timeout_ms, long *status, char *err, size_t err_size);

#endif
