/* libFuzzer target: the metadata answer parsers of csrc/cloud.c (AWS identity document, GCP
 * machine type and zone, Azure IMDS JSON, Hetzner YAML, UpCloud JSON, Alibaba and OVHcloud
 * answers), reached through the public entry point cloud_discover().
 *
 * This file replaces csrc/http.c: its http_request() answers each request with the next part of
 * the fuzz input instead of going to the network (nothing is ever sent anywhere). Input: the
 * first byte picks the vendor whose local evidence (a DMI tree in a temporary directory) is
 * shown; the rest is split at "\n@@\n" into the successive answer bodies. A part starting with
 * "!" is a failed request; one starting with "#" is an HTTP 404. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cloud.h"
#include "fuzz_http.h"

#define SEPARATOR "\n@@\n"

static const struct {
    const char *vendor, *file, *value;
} machines[] = {
    {"aws", "sys_vendor", "Amazon EC2"},
    {"gcp", "product_name", "Google Compute Engine"},
    {"azure", "chassis_asset_tag", "7783-7084-3265-9085-8269-3286-77"},
    {"hcloud", "sys_vendor", "Hetzner"},
    {"upcloud", "sys_vendor", "UpCloud"},
    {"alicloud", "sys_vendor", "Alibaba Cloud"},
    {"ovh", "sys_vendor", "OpenStack Foundation"},
};
enum { NMACHINES = sizeof(machines) / sizeof(machines[0]) };

static char sysfs_roots[NMACHINES][256];
static const uint8_t *answers;
static size_t answers_left;

/* 0 when the fake DMI trees were written under a new temporary directory */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char base[] = "/tmp/rt-fuzz-cloud-XXXXXX", path[512];
    size_t i;
    FILE *f = NULL;

    (void)argc;
    (void)argv;
    if (mkdtemp(base) == NULL)
        abort();
    for (i = 0; i < NMACHINES; i++) {
        snprintf(sysfs_roots[i], sizeof(sysfs_roots[i]), "%s/%s", base, machines[i].vendor);
        mkdir(sysfs_roots[i], 0700);
        snprintf(path, sizeof(path), "%s/class", sysfs_roots[i]);
        mkdir(path, 0700);
        snprintf(path, sizeof(path), "%s/class/dmi", sysfs_roots[i]);
        mkdir(path, 0700);
        snprintf(path, sizeof(path), "%s/class/dmi/id", sysfs_roots[i]);
        mkdir(path, 0700);
        snprintf(path, sizeof(path), "%s/class/dmi/id/%s", sysfs_roots[i], machines[i].file);
        f = fopen(path, "w");
        if (f == NULL)
            abort();
        fprintf(f, "%s\n", machines[i].value);
        fclose(f);
    }
    return 0;
}

/* 0 with the next part of the input as the answer, -1 for a failed request ("!") */
int
http_request(const char *method, const char *url, const char *const *headers, const char *body,
             long timeout_ms, HttpResponse *out)
{
    const uint8_t *end = NULL;
    size_t len = answers_left;

    fuzz_http_ignore_request(method, url, headers, body, timeout_ms, out);
    if (answers == NULL) {
        snprintf(out->error, sizeof(out->error), "no more answers");
        return -1;
    }
    end = memmem(answers, answers_left, SEPARATOR, strlen(SEPARATOR));
    if (end)
        len = (size_t)(end - answers);
    if (len > 0 && answers[0] == '!') {
        snprintf(out->error, sizeof(out->error), "connection reset");
    } else {
        out->status = len > 0 && answers[0] == '#' ? 404 : 200;
        out->body = fuzz_text(answers, len);
        out->body_len = len;
    }
    if (end) {
        answers_left -= len + strlen(SEPARATOR);
        answers = end + strlen(SEPARATOR);
    } else {
        answers = NULL;
        answers_left = 0;
    }
    return out->status ? 0 : -1;
}

/* 0 always */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    CloudConfig cfg = {NULL, "http://fuzz.invalid", 60000};
    CloudInfo info;

    if (size < 1)
        return 0;
    cfg.sysfs_root = sysfs_roots[data[0] % NMACHINES];
    answers = data + 1;
    answers_left = size - 1;
    cloud_discover(&cfg, &info);
    if (memchr(info.vendor, '\0', sizeof(info.vendor)) == NULL ||
        memchr(info.instance_type, '\0', sizeof(info.instance_type)) == NULL ||
        memchr(info.region, '\0', sizeof(info.region)) == NULL)
        abort(); /* every field must stay a terminated string */
    return 0;
}
