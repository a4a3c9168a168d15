/* libFuzzer target: the Spare Cores Keeper client of csrc/keeper.c: URL building from outside
 * strings (vendor, server, region names, escaped) and keeper_get() on any answer body.
 *
 * This file replaces csrc/http.c: its http_request() answers with the fuzz input instead of
 * going to the network (nothing is sent anywhere). Input: parts separated by "\n@@\n": vendor,
 * server, a region list (comma-separated), then the answer body; the first byte of the body
 * picks the HTTP status (even: 200, odd: 503) and whether the transport fails ('!'). */
#include <stdio.h>

#include "fuzz_http.h"
#include "keeper.h"

#define SEPARATOR "\n@@\n"
#define MAX_REGIONS 8

static const uint8_t *answer;
static size_t answer_len;

/* 0 with the body as the answer, -1 for a failed request */
int
http_request(const char *method, const char *url, const char *const *headers, const char *body,
             long timeout_ms, HttpResponse *out)
{
    fuzz_http_ignore_request(method, url, headers, body, timeout_ms, out);
    if (answer_len > 0 && answer[0] == '!') {
        snprintf(out->error, sizeof(out->error), "connection reset");
        return -1;
    }
    out->status = answer_len > 0 && (answer[0] & 1) ? 503 : 200;
    out->body = fuzz_text(answer, answer_len);
    out->body_len = answer_len;
    return 0;
}

/* the next part of the input (NUL-terminated, malloc'd) and advances; "" at the end */
static char *
next_part(const uint8_t **data, size_t *size)
{
    const uint8_t *end = memmem(*data, *size, SEPARATOR, strlen(SEPARATOR));
    size_t len = end ? (size_t)(end - *data) : *size;
    char *part = fuzz_text(*data, len);

    *data += end ? len + strlen(SEPARATOR) : len;
    *size -= end ? len + strlen(SEPARATOR) : len;
    return part;
}

/* 0 always */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *vendor = next_part(&data, &size), *server = next_part(&data, &size);
    char *regions_text = next_part(&data, &size);
    const char *regions[MAX_REGIONS + 1] = {NULL};
    const char *vendors[] = {vendor, NULL};
    KeeperQuery q;
    char *url = NULL, *p = NULL, err[512];
    long status = 0;
    size_t n = 0;
    cJSON *json = NULL;

    if (vendor == NULL || server == NULL || regions_text == NULL)
        goto done;
    for (p = strtok(regions_text, ","); p && n < MAX_REGIONS; p = strtok(NULL, ","))
        regions[n++] = p;
    memset(&q, 0, sizeof(q));
    q.vcpus_min = (long)size;
    q.memory_min_mib = (double)size * 1.5;
    q.vendors = vendors;
    q.regions = regions;
    q.order_by = server;
    q.price_max = 0.25;
    url = keeper_servers_url(vendor, &q);
    free(url);
    url = keeper_path_url(vendor, server);
    free(url);
    url = keeper_prices_url("http://127.0.0.1:9", vendor, server);
    answer = data;
    answer_len = size;
    json = keeper_get(url ? url : "x", 1000, &status, err, sizeof(err));
    if (memchr(err, '\0', sizeof(err)) == NULL)
        abort();
    cJSON_Delete(json);
done:
    free(url);
    free(vendor);
    free(server);
    free(regions_text);
    return 0;
}
