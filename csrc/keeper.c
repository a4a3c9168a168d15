/* The Spare Cores Keeper REST API client (keeper.h). */
#include "keeper.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

/* A growing NUL-terminated string. */
typedef struct Buf {
    char *data;
    size_t len;
    size_t cap;
    int failed;
} Buf;

/* 0 when buf has room for extra more bytes, -1 (failed set) when out of memory */
static int
buf_reserve(Buf *buf, size_t extra)
{
    char *grown = NULL;
    size_t cap = buf->cap ? buf->cap : 256;

    if (buf->failed)
        return -1;
    if (buf->len + extra + 1 <= buf->cap)
        return 0;
    while (cap < buf->len + extra + 1)
        cap *= 2;
    grown = realloc(buf->data, cap);
    if (grown == NULL) {
        buf->failed = 1;
        return -1;
    }
    buf->data = grown;
    buf->cap = cap;
    return 0;
}

/* nothing; appends text */
static void
buf_add(Buf *buf, const char *text)
{
    size_t n = strlen(text);

    if (buf_reserve(buf, n) < 0)
        return;
    memcpy(buf->data + buf->len, text, n + 1);
    buf->len += n;
}

/* nothing; appends text percent-encoded (RFC 3986 unreserved characters kept) */
static void
buf_add_escaped(Buf *buf, const char *text)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *p = (const unsigned char *)text;

    for (; *p; p++) {
        if (buf_reserve(buf, 3) < 0)
            return;
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            buf->data[buf->len++] = (char)*p;
        } else {
            buf->data[buf->len++] = '%';
            buf->data[buf->len++] = hex[*p >> 4];
            buf->data[buf->len++] = hex[*p & 15];
        }
        buf->data[buf->len] = '\0';
    }
}

/* nothing; appends "&name=value" (or "?name=value" for the first parameter) */
static void
add_param(Buf *buf, int *first, const char *name, const char *value)
{
    buf_add(buf, *first ? "?" : "&");
    *first = 0;
    buf_add_escaped(buf, name);
    buf_add(buf, "=");
    buf_add_escaped(buf, value);
}

/* nothing; appends name=item for each item of a NULL-terminated list */
static void
add_list(Buf *buf, int *first, const char *name, const char *const *items)
{
    for (; items != NULL && *items != NULL; items++)
        add_param(buf, first, name, *items);
}

/* nothing; appends name=value when value > 0 */
static void
add_long(Buf *buf, int *first, const char *name, long value)
{
    char text[32];

    if (value <= 0)
        return;
    snprintf(text, sizeof(text), "%ld", value);
    add_param(buf, first, name, text);
}

/* nothing; appends name=mib/1024 (GiB) when mib > 0 */
static void
add_gib(Buf *buf, int *first, const char *name, double mib)
{
    char text[48];

    if (!(mib > 0))
        return;
    snprintf(text, sizeof(text), "%.10g", mib / 1024.0);
    add_param(buf, first, name, text);
}

/* nothing; appends base_url without its trailing slashes */
static void
add_base(Buf *buf, const char *base_url)
{
    size_t n = strlen(base_url);

    while (n > 0 && base_url[n - 1] == '/')
        n--;
    if (buf_reserve(buf, n) < 0)
        return;
    memcpy(buf->data + buf->len, base_url, n);
    buf->len += n;
    buf->data[buf->len] = '\0';
}

/* the URL of a /servers query (keeper.h) */
char *
keeper_servers_url(const char *base_url, const KeeperQuery *q)
{
    Buf buf = {NULL, 0, 0, 0};
    int first = 1;
    char text[48];

    add_base(&buf, base_url);
    buf_add(&buf, "/servers");
    add_long(&buf, &first, "vcpus_min", q->vcpus_min);
    add_gib(&buf, &first, "memory_min", q->memory_min_mib);
    add_long(&buf, &first, "gpu_min", q->gpu_min);
    add_gib(&buf, &first, "gpu_memory_min", q->gpu_memory_min_mib);
    add_gib(&buf, &first, "gpu_memory_total", q->gpu_memory_total_mib);
    add_list(&buf, &first, "vendor", q->vendors);
    add_list(&buf, &first, "regions", q->regions);
    add_list(&buf, &first, "countries", q->countries);
    add_list(&buf, &first, "architecture", q->architectures);
    add_list(&buf, &first, "compliance_framework", q->compliance_frameworks);
    if (q->allocation != NULL)
        add_param(&buf, &first, "allocation", q->allocation);
    if (q->green_energy)
        add_param(&buf, &first, "green_energy", "true");
    if (q->price_max > 0) {
        snprintf(text, sizeof(text), "%.10g", q->price_max);
        add_param(&buf, &first, "price_max", text);
    }
    if (q->order_by != NULL)
        add_param(&buf, &first, "order_by", q->order_by);
    if (q->order_dir != NULL)
        add_param(&buf, &first, "order_dir", q->order_dir);
    add_long(&buf, &first, "limit", q->limit);
    if (buf.failed) {
        free(buf.data);
        return NULL;
    }
    return buf.data;
}

/* the URL of a server's price list (keeper.h) */
char *
keeper_prices_url(const char *base_url, const char *vendor, const char *server)
{
    Buf buf = {NULL, 0, 0, 0};

    add_base(&buf, base_url);
    buf_add(&buf, "/server/");
    buf_add_escaped(&buf, vendor);
    buf_add(&buf, "/");
    buf_add_escaped(&buf, server);
    buf_add(&buf, "/prices");
    if (buf.failed) {
        free(buf.data);
        return NULL;
    }
    return buf.data;
}

/* the URL of any path of the API (keeper.h) */
char *
keeper_path_url(const char *base_url, const char *path)
{
    Buf buf = {NULL, 0, 0, 0};
    const unsigned char *p = (const unsigned char *)path;

    for (; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            return NULL;
    add_base(&buf, base_url);
    if (path[0] != '/')
        buf_add(&buf, "/");
    buf_add(&buf, path);
    if (buf.failed) {
        free(buf.data);
        return NULL;
    }
    return buf.data;
}

/* Takes control characters out of text in place: ANSI escape sequences (ESC [ ... final
 * byte) whole, other C0 controls and DEL one by one. A server's answer is printed to users. */
static void
strip_controls(char *text)
{
    const unsigned char *src = (const unsigned char *)text;
    char *dst = text;

    while (*src) {
        if (src[0] == 0x1b && src[1] == '[') {
            src += 2;
            while (*src && (*src < 0x40 || *src > 0x7e))
                src++;
            if (*src)
                src++;
        } else if (*src < 0x20 || *src == 0x7f) {
            src++;
        } else {
            *dst++ = (char)*src++;
        }
    }
    *dst = '\0';
}

/* the parsed answer of GET url, or NULL with err (keeper.h) */
cJSON *
keeper_get(const char *url, long timeout_ms, long *status, char *err, size_t err_size)
{
    static const char *const headers[] = {KEEPER_APP_HEADER, "Accept: application/json", NULL};
    HttpResponse resp;
    cJSON *json = NULL;
    const char *body = NULL;

    memset(&resp, 0, sizeof(resp));
    *status = 0;
    err[0] = '\0';
    if (http_request("GET", url, headers, NULL, timeout_ms, &resp) != 0) {
        snprintf(err, err_size, "%s", resp.error[0] ? resp.error : "request failed");
        goto error;
    }
    *status = resp.status;
    body = resp.body ? resp.body : "";
    if (resp.status != 200) {
        snprintf(err, err_size, "HTTP %ld: %.200s", resp.status, body);
        strip_controls(err);
        goto error;
    }
    json = cJSON_Parse(body);
    if (json == NULL) {
        snprintf(err, err_size, "the answer is not JSON (%zu bytes)", resp.body_len);
        goto error;
    }
    http_response_free(&resp);
    return json;
error:
    http_response_free(&resp);
    return NULL;
}
