#include "http.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void
init_curl(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* libcurl write callback: appends to the response body, refusing more than HTTP_MAX_BODY */
static size_t
collect_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    HttpResponse *out = userdata;
    size_t n = size * nmemb;
    char *grown;

    if (out->body_len + n > HTTP_MAX_BODY)
        return 0;
    grown = realloc(out->body, out->body_len + n + 1);
    if (grown == NULL)
        return 0;
    memcpy(grown + out->body_len, data, n);
    out->body = grown;
    out->body_len += n;
    out->body[out->body_len] = '\0';
    return n;
}

/* 0 when an HTTP answer came */
int
http_request(const char *method, const char *url, const char *const *headers,
             const char *body, long timeout_ms, HttpResponse *out)
{
    CURL *curl;
    struct curl_slist *list = NULL;
    CURLcode rc;
    size_t i;

    memset(out, 0, sizeof(*out));
    pthread_once(&curl_once, init_curl);
    curl = curl_easy_init();
    if (curl == NULL) {
        snprintf(out->error, sizeof(out->error), "libcurl could not start a request");
        return -1;
    }
    for (i = 0; headers && headers[i]; i++)
        list = curl_slist_append(list, headers[i]);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_PROXY, ""); /* never through a proxy: metadata is link-local */
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, out);
    if (body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else if (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, 0L);
    }
    rc = curl_easy_perform(curl);
    if (rc == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out->status);
    else
        snprintf(out->error, sizeof(out->error), "%s %s: %s", method, url,
                 curl_easy_strerror(rc));
    curl_slist_free_all(list);
    curl_easy_cleanup(curl);
    return rc == CURLE_OK ? 0 : -1;
}

void
http_response_free(HttpResponse *response)
{
    free(response->body);
    response->body = NULL;
    response->body_len = 0;
}
