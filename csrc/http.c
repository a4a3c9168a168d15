#include "http.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* libcurl is loaded on the first request, not at import: it pulls in dozens of libraries
 * that a tracker which never talks to the network should not pay for. */
static struct Curl {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    int loaded;
} curl_api;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

/* Option numbers from curl.h, spelled out: the build's header may predate the _STR options
 * (libcurl 7.85) or mark the bitmask ones deprecated, and the library loaded at run time may be
 * older or newer than that header. */
#define RT_CURLOPT_PROTOCOLS 181L
#define RT_CURLOPT_REDIR_PROTOCOLS 182L
#define RT_CURLOPT_PROTOCOLS_STR 10318L
#define RT_CURLOPT_REDIR_PROTOCOLS_STR 10319L
#define RT_CURLPROTO_HTTP_HTTPS 3L /* CURLPROTO_HTTP | CURLPROTO_HTTPS */

#define CURL_SYMBOL(field, name) (*(void **)&curl_api.field = dlsym(lib, name)) != NULL

static void
load_curl(void)
{
    void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

    if (lib == NULL)
        lib = dlopen("libcurl.so", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return;
    if (CURL_SYMBOL(global_init, "curl_global_init") && CURL_SYMBOL(easy_init, "curl_easy_init") &&
        CURL_SYMBOL(easy_setopt, "curl_easy_setopt") &&
        CURL_SYMBOL(easy_perform, "curl_easy_perform") &&
        CURL_SYMBOL(easy_getinfo, "curl_easy_getinfo") &&
        CURL_SYMBOL(easy_cleanup, "curl_easy_cleanup") &&
        CURL_SYMBOL(easy_strerror, "curl_easy_strerror") &&
        CURL_SYMBOL(slist_append, "curl_slist_append") &&
        CURL_SYMBOL(slist_free_all, "curl_slist_free_all") &&
        curl_api.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK)
        curl_api.loaded = 1;
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

/* 0 when the URL's scheme is http or https (the only ones this client speaks) */
static int
scheme_allowed(const char *url)
{
    return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

/* Restricts the transfer and any redirect to http and https: the _STR options of libcurl >=
 * 7.85, else the bitmask ones of older versions. 0, or -1 when neither is accepted. */
static int
restrict_protocols(CURL *curl)
{
    if (curl_api.easy_setopt(curl, (CURLoption)RT_CURLOPT_PROTOCOLS_STR, "http,https") ==
            CURLE_OK &&
        curl_api.easy_setopt(curl, (CURLoption)RT_CURLOPT_REDIR_PROTOCOLS_STR, "http,https") ==
            CURLE_OK)
        return 0;
    if (curl_api.easy_setopt(curl, (CURLoption)RT_CURLOPT_PROTOCOLS, RT_CURLPROTO_HTTP_HTTPS) ==
            CURLE_OK &&
        curl_api.easy_setopt(curl, (CURLoption)RT_CURLOPT_REDIR_PROTOCOLS,
                             RT_CURLPROTO_HTTP_HTTPS) == CURLE_OK)
        return 0;
    return -1;
}

/* 0 when an HTTP answer came */
int
http_request(const char *method, const char *url, const char *const *headers, const char *body,
             long timeout_ms, HttpResponse *out)
{
    CURL *curl;
    struct curl_slist *list = NULL;
    CURLcode rc;
    size_t i;

    memset(out, 0, sizeof(*out));
    pthread_once(&curl_once, load_curl);
    if (!curl_api.loaded) {
        snprintf(out->error, sizeof(out->error),
                 "libcurl is not available (install libcurl4 / libcurl4-openssl-dev)");
        return -1;
    }
    if (!scheme_allowed(url)) {
        snprintf(out->error, sizeof(out->error),
                 "only http:// and https:// URLs are requested (got another scheme)");
        return -1;
    }
    curl = curl_api.easy_init();
    if (curl == NULL) {
        snprintf(out->error, sizeof(out->error), "libcurl could not start a request");
        return -1;
    }
    if (restrict_protocols(curl) != 0) {
        curl_api.easy_cleanup(curl);
        snprintf(out->error, sizeof(out->error),
                 "libcurl cannot be restricted to http and https: request refused");
        return -1;
    }
    for (i = 0; headers && headers[i]; i++)
        list = curl_api.slist_append(list, headers[i]);
    curl_api.easy_setopt(curl, CURLOPT_URL, url);
    curl_api.easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_api.easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_api.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_api.easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_api.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                         timeout_ms < HTTP_CONNECT_TIMEOUT_MS ? timeout_ms
                                                              : HTTP_CONNECT_TIMEOUT_MS);
    curl_api.easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_api.easy_setopt(curl, CURLOPT_PROXY,
                         ""); /* never through a proxy: metadata is link-local */
    curl_api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect_body);
    curl_api.easy_setopt(curl, CURLOPT_WRITEDATA, out);
    if (body) {
        curl_api.easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_api.easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else if (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
        curl_api.easy_setopt(curl, CURLOPT_POSTFIELDS, "");
        curl_api.easy_setopt(curl, CURLOPT_POSTFIELDSIZE, 0L);
    }
    rc = curl_api.easy_perform(curl);
    if (rc == CURLE_OK)
        curl_api.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out->status);
    else
        snprintf(out->error, sizeof(out->error), "%s %s: %s", method, url,
                 curl_api.easy_strerror(rc));
    curl_api.slist_free_all(list);
    curl_api.easy_cleanup(curl);
    return rc == CURLE_OK ? 0 : -1;
}

void
http_response_free(HttpResponse *response)
{
    free(response->body);
    response->body = NULL;
    response->body_len = 0;
}
