/* A small blocking HTTP client over libcurl, for cloud metadata and the catalog API. No Python.
 * Every call has a hard total timeout; nothing is retried here. */
#ifndef RT_HTTP_H
#define RT_HTTP_H

#include <stddef.h>

#define HTTP_MAX_BODY (8u * 1024u * 1024u)
/* a server that does not accept the connection within this is not there (offline machine) */
#define HTTP_CONNECT_TIMEOUT_MS 3000L

typedef struct HttpResponse {
    long status; /* HTTP status, 0 when no answer came */
    char *body;  /* NUL-terminated, malloc'd (NULL when empty) */
    size_t body_len;
    char error[256]; /* what failed, when the request did not complete */
} HttpResponse;

/* Performs one request. method: "GET", "PUT", ...; headers: NULL-terminated list of
 * "Name: value" strings (may be NULL); body may be NULL. Returns 0 when an HTTP answer came
 * (any status), -1 otherwise (error filled). Free the response with http_response_free(). */
int http_request(const char *method, const char *url, const char *const *headers, const char *body,
                 long timeout_ms, HttpResponse *out);

void http_response_free(HttpResponse *response);

#endif
