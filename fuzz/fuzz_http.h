/* Shared by the fuzz targets that replace csrc/http.c (fuzz_cloud.c, fuzz_keeper.c): their
 * http_request() answers with parts of the fuzz input, so nothing is ever sent anywhere. Include
 * it from the target's one source file: it defines http_response_free() for the code under
 * test. */
#ifndef RT_FUZZ_HTTP_H
#define RT_FUZZ_HTTP_H

#include "fuzz_common.h"
#include "http.h"

/* Starts a stand-in answer in *out (cleared): the request is never sent, so none of its parts
 * is looked at. */
static void
fuzz_http_ignore_request(const char *method, const char *url, const char *const *headers,
                         const char *body, long timeout_ms, HttpResponse *out)
{
    (void)method;
    (void)url;
    (void)headers;
    (void)body;
    (void)timeout_ms;
    memset(out, 0, sizeof(*out));
}

void
http_response_free(HttpResponse *response)
{
    free(response->body);
    response->body = NULL;
}

#endif
