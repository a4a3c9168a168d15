/* Cloud discovery from DMI/sysfs evidence, then the one vendor's metadata service (cloud.h). */
#include "cloud.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "http.h"

#define AZURE_ASSET_TAG "7783-7084-3265-9085-8269-3286-77"
#define LINK_LOCAL "http://169.254.169.254"
#define DMI_VALUE_MAX 128

/* The vendors' own metadata hosts (replaced by CloudConfig.metadata_url when set). */
static const struct {
    const char *vendor;
    const char *host;
} metadata_hosts[] = {
    {"aws", LINK_LOCAL},     {"gcp", "http://metadata.google.internal"},
    {"azure", LINK_LOCAL},   {"hcloud", LINK_LOCAL},
    {"upcloud", LINK_LOCAL}, {"alicloud", "http://100.100.100.200"},
    {"ovh", LINK_LOCAL},
};

/* One discovery's requests: where they go, how long they may take, what failed. */
typedef struct Fetch {
    const char *base;
    double deadline;
    CloudInfo *info;
} Fetch;

/* seconds on the monotonic clock */
static double
mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* length of the lower-cased, trimmed first line of a sysfs file in buf (0 when missing) */
static size_t
read_lower(const char *root, const char *rel, char *buf, size_t size)
{
    char path[1024];
    FILE *f = NULL;
    size_t n, i, start = 0;

    buf[0] = '\0';
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            n = i;
            break;
        }
        buf[i] = (char)tolower((unsigned char)buf[i]);
    }
    while (n > 0 && isspace((unsigned char)buf[n - 1]))
        n--;
    while (start < n && isspace((unsigned char)buf[start]))
        start++;
    memmove(buf, buf + start, n - start);
    buf[n - start] = '\0';
    return n - start;
}

/* What a vendor's machines show in one DMI field (a substring of the lower-cased value). */
static const struct {
    const char *field;
    const char *needle;
    const char *vendor;
} dmi_marks[] = {
    {"sys_vendor", "amazon", "aws"},
    {"bios_vendor", "amazon", "aws"},
    {"board_vendor", "amazon", "aws"},
    {"product_version", "amazon", "aws"},
    {"bios_version", "amazon", "aws"},
    {"product_name", "google compute engine", "gcp"},
    {"chassis_asset_tag", AZURE_ASSET_TAG, "azure"}, /* Hyper-V says Microsoft too: not this */
    {"sys_vendor", "hetzner", "hcloud"},
    {"sys_vendor", "upcloud", "upcloud"},
    {"sys_vendor", "alibaba", "alicloud"},
    {"product_name", "alibaba cloud ecs", "alicloud"},
    {"sys_vendor", "ovh", "ovh"},
    {"sys_vendor", "openstack", "ovh"}, /* OpenStack Nova: OVHcloud's Public Cloud */
    {"product_name", "openstack", "ovh"},
};

/* the vendor id the DMI/hypervisor strings name, or NULL */
const char *
cloud_local_evidence(const char *sysfs_root)
{
    static const char *const fields[] = {"sys_vendor",       "bios_vendor",  "board_vendor",
                                         "product_version",  "bios_version", "product_name",
                                         "chassis_asset_tag"};
    enum { NFIELDS = sizeof(fields) / sizeof(fields[0]) };
    const char *root = sysfs_root && sysfs_root[0] ? sysfs_root : "/sys";
    char values[NFIELDS][DMI_VALUE_MAX], rel[128];
    size_t i, f;

    /* Xen-based EC2 instances: the hypervisor uuid starts with "ec2" */
    if (read_lower(root, "hypervisor/uuid", values[0], sizeof(values[0])) &&
        strncmp(values[0], "ec2", 3) == 0)
        return "aws";
    for (f = 0; f < NFIELDS; f++) {
        snprintf(rel, sizeof(rel), "class/dmi/id/%s", fields[f]);
        read_lower(root, rel, values[f], sizeof(values[f]));
    }
    for (i = 0; i < sizeof(dmi_marks) / sizeof(dmi_marks[0]); i++) {
        for (f = 0; f < NFIELDS; f++) {
            if (strcmp(fields[f], dmi_marks[i].field) == 0 && values[f][0] &&
                strstr(values[f], dmi_marks[i].needle))
                return dmi_marks[i].vendor;
        }
    }
    return NULL;
}

/* nonzero when text (trimmed into dst) is a plausible id: [A-Za-z0-9._-], 1..100 chars */
static int
copy_id(const char *text, char *dst, size_t size)
{
    size_t n, i;

    dst[0] = '\0';
    if (text == NULL)
        return 0;
    while (isspace((unsigned char)*text))
        text++;
    n = strlen(text);
    while (n > 0 && isspace((unsigned char)text[n - 1]))
        n--;
    if (n == 0 || n > 100 || n >= size)
        return 0;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-')
            return 0;
    }
    memcpy(dst, text, n);
    dst[n] = '\0';
    return 1;
}

/* the part of text after its last '/' */
static const char *
last_segment(const char *text)
{
    const char *slash = text ? strrchr(text, '/') : NULL;
    return slash ? slash + 1 : text;
}

/* the body of a 200 answer (malloc'd, caller frees), or NULL with info->error set */
static char *
fetch(Fetch *f, const char *method, const char *path, const char *const *headers)
{
    char url[1024];
    HttpResponse resp;
    long left_ms = (long)((f->deadline - mono_now()) * 1000.0);
    char *body = NULL;

    if (left_ms < 1) {
        snprintf(f->info->error, sizeof(f->info->error), "%s %s: out of time", method, path);
        return NULL;
    }
    snprintf(url, sizeof(url), "%s%s", f->base, path);
    f->info->requests++;
    if (http_request(method, url, headers, NULL, left_ms, &resp) != 0) {
        snprintf(f->info->error, sizeof(f->info->error), "%s", resp.error);
        http_response_free(&resp);
        return NULL;
    }
    if (resp.status != 200 || resp.body == NULL) {
        snprintf(f->info->error, sizeof(f->info->error), "%s %s: HTTP %ld", method, path,
                 resp.status);
        http_response_free(&resp);
        return NULL;
    }
    body = resp.body;
    resp.body = NULL;
    return body;
}

/* the string member at a dotted path of a JSON object, or NULL */
static const char *
json_string(const cJSON *root, const char *a, const char *b)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, a);

    if (b)
        item = cJSON_GetObjectItemCaseSensitive(item, b);
    return cJSON_IsString(item) ? item->valuestring : NULL;
}

/* the parsed JSON answer of GET path, or NULL (no answer, or not JSON) */
static cJSON *
fetch_json(Fetch *f, const char *path, const char *const *headers)
{
    char *doc = fetch(f, "GET", path, headers);
    cJSON *json = doc ? cJSON_Parse(doc) : NULL;

    free(doc);
    return json;
}

/* 0 when the instance type was found: AWS IMDSv2 (token PUT, then the identity document) */
static int
ask_aws(Fetch *f)
{
    static const char *const token_headers[] = {"X-aws-ec2-metadata-token-ttl-seconds: 60", NULL};
    char header[512];
    const char *headers[] = {header, NULL};
    char *token = NULL;
    cJSON *json = NULL;
    int rc = -1;

    token = fetch(f, "PUT", "/latest/api/token", token_headers);
    if (token == NULL || strlen(token) > 400 || strpbrk(token, "\r\n"))
        goto error;
    snprintf(header, sizeof(header), "X-aws-ec2-metadata-token: %s", token);
    json = fetch_json(f, "/latest/dynamic/instance-identity/document", headers);
    if (json == NULL)
        goto error;
    if (copy_id(json_string(json, "instanceType", NULL), f->info->instance_type,
                sizeof(f->info->instance_type))) {
        copy_id(json_string(json, "region", NULL), f->info->region, sizeof(f->info->region));
        rc = 0;
    }

error:
    cJSON_Delete(json);
    free(token);
    return rc;
}

/* 0 when the machine type was found: GCP (Metadata-Flavor: Google) */
static int
ask_gcp(Fetch *f)
{
    static const char *const headers[] = {"Metadata-Flavor: Google", NULL};
    char *type = NULL, *zone = NULL;
    char *dash = NULL;
    int rc = -1;

    type = fetch(f, "GET", "/computeMetadata/v1/instance/machine-type", headers);
    if (type == NULL ||
        !copy_id(last_segment(type), f->info->instance_type, sizeof(f->info->instance_type)))
        goto error;
    rc = 0;
    zone = fetch(f, "GET", "/computeMetadata/v1/instance/zone", headers);
    /* projects/<n>/zones/europe-west1-b: region europe-west1 */
    if (zone && copy_id(last_segment(zone), f->info->region, sizeof(f->info->region))) {
        dash = strrchr(f->info->region, '-');
        if (dash)
            *dash = '\0';
    }

error:
    free(zone);
    free(type);
    return rc;
}

/* 0 when the VM size was found: Azure IMDS (Metadata: true, api-version) */
static int
ask_azure(Fetch *f)
{
    static const char *const headers[] = {"Metadata: true", NULL};
    cJSON *json = NULL;
    int rc = -1;

    json = fetch_json(f, "/metadata/instance?api-version=2021-02-01", headers);
    if (json == NULL)
        goto error;
    if (copy_id(json_string(json, "compute", "vmSize"), f->info->instance_type,
                sizeof(f->info->instance_type))) {
        copy_id(json_string(json, "compute", "location"), f->info->region, sizeof(f->info->region));
        rc = 0;
    }

error:
    cJSON_Delete(json);
    return rc;
}

/* the value of "key: value" in a YAML-like text into dst: nonzero when found and plausible */
static int
yaml_value(const char *text, const char *key, char *dst, size_t size)
{
    size_t klen = strlen(key);
    const char *line = text;
    char value[CLOUD_FIELD_MAX];

    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > klen + 1 && strncmp(line, key, klen) == 0 && line[klen] == ':') {
            size_t vlen = len - klen - 1;
            if (vlen >= sizeof(value))
                return 0;
            memcpy(value, line + klen + 1, vlen);
            value[vlen] = '\0';
            return copy_id(value, dst, size);
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

/* 0 when the location was found: Hetzner Cloud (its metadata has no server type) */
static int
ask_hcloud(Fetch *f)
{
    char *doc = fetch(f, "GET", "/hetzner/v1/metadata", NULL);
    int rc = -1;

    /* availability-zone fsn1-dc14 is the catalog's region api_reference */
    if (doc && yaml_value(doc, "availability-zone", f->info->region, sizeof(f->info->region)))
        rc = 0;
    free(doc);
    return rc;
}

/* 0 when the answer is UpCloud's: /metadata/v1.json (no plan name in it) */
static int
ask_upcloud(Fetch *f)
{
    cJSON *json = NULL;
    const char *cloud = NULL;
    int rc = -1;

    json = fetch_json(f, "/metadata/v1.json", NULL);
    if (json == NULL)
        goto error;
    cloud = json_string(json, "cloud_name", NULL);
    if (copy_id(json_string(json, "region", NULL), f->info->region, sizeof(f->info->region)) &&
        (cloud == NULL || strcmp(cloud, "upcloud") == 0)) {
        copy_id(json_string(json, "plan", NULL), f->info->instance_type,
                sizeof(f->info->instance_type));
        rc = 0;
    }

error:
    cJSON_Delete(json);
    return rc;
}

/* 0 when the instance type was found: Alibaba ECS (token when hardened mode answers) */
static int
ask_alicloud(Fetch *f)
{
    static const char *const token_headers[] = {"X-aliyun-ecs-metadata-token-ttl-seconds: 60",
                                                NULL};
    char header[512];
    const char *headers[] = {header, NULL};
    char *token = NULL, *type = NULL, *region = NULL;
    int rc = -1;

    token = fetch(f, "PUT", "/latest/api/token", token_headers);
    if (token && strlen(token) < 400 && !strpbrk(token, "\r\n"))
        snprintf(header, sizeof(header), "X-aliyun-ecs-metadata-token: %s", token);
    else
        headers[0] = NULL; /* normal mode: no token needed */
    type = fetch(f, "GET", "/latest/meta-data/instance/instance-type", headers);
    if (type == NULL || !copy_id(type, f->info->instance_type, sizeof(f->info->instance_type)))
        goto error;
    rc = 0;
    region = fetch(f, "GET", "/latest/meta-data/region-id", headers);
    if (region)
        copy_id(region, f->info->region, sizeof(f->info->region));

error:
    free(region);
    free(type);
    free(token);
    return rc;
}

/* 0 when the flavor was found: OVHcloud Public Cloud (OpenStack metadata) */
static int
ask_ovh(Fetch *f)
{
    char *type = NULL;
    cJSON *json = NULL;
    const char *zone = NULL;
    size_t i;
    int rc = -1;

    /* the EC2-compatible tree carries the flavor name, e.g. b3-8 */
    type = fetch(f, "GET", "/latest/meta-data/instance-type", NULL);
    if (type == NULL || !copy_id(type, f->info->instance_type, sizeof(f->info->instance_type)))
        goto error;
    rc = 0;
    json = fetch_json(f, "/openstack/latest/meta_data.json", NULL);
    if (json == NULL)
        goto error;
    zone = json_string(json, "region", NULL);
    if (zone == NULL)
        zone = json_string(json, "availability_zone", NULL);
    /* "nova" is OpenStack's default zone name, not a location */
    if (zone && strcmp(zone, "nova") != 0 &&
        copy_id(zone, f->info->region, sizeof(f->info->region))) {
        for (i = 0; f->info->region[i]; i++)
            f->info->region[i] = (char)toupper((unsigned char)f->info->region[i]);
    }

error:
    cJSON_Delete(json);
    free(type);
    return rc;
}

/* 0 when a vendor was identified */
int
cloud_discover(const CloudConfig *cfg, CloudInfo *out)
{
    double start = mono_now();
    const char *vendor = NULL;
    Fetch f;
    size_t i;
    int rc = -1;

    memset(out, 0, sizeof(*out));
    vendor = cloud_local_evidence(cfg->sysfs_root);
    if (vendor == NULL)
        goto done;
    snprintf(out->evidence, sizeof(out->evidence), "%s", vendor);
    f.info = out;
    f.deadline = start + (cfg->timeout_ms > 0 ? (double)cfg->timeout_ms : 2000.0) / 1000.0;
    f.base = cfg->metadata_url && cfg->metadata_url[0] ? cfg->metadata_url : NULL;
    for (i = 0; f.base == NULL && i < sizeof(metadata_hosts) / sizeof(metadata_hosts[0]); i++) {
        if (strcmp(metadata_hosts[i].vendor, vendor) == 0)
            f.base = metadata_hosts[i].host;
    }
    if (strcmp(vendor, "aws") == 0)
        rc = ask_aws(&f);
    else if (strcmp(vendor, "gcp") == 0)
        rc = ask_gcp(&f);
    else if (strcmp(vendor, "azure") == 0)
        rc = ask_azure(&f);
    else if (strcmp(vendor, "hcloud") == 0)
        rc = ask_hcloud(&f);
    else if (strcmp(vendor, "upcloud") == 0)
        rc = ask_upcloud(&f);
    else if (strcmp(vendor, "alicloud") == 0)
        rc = ask_alicloud(&f);
    else if (strcmp(vendor, "ovh") == 0)
        rc = ask_ovh(&f);

done:
    if (rc == 0) {
        snprintf(out->vendor, sizeof(out->vendor), "%s", vendor);
        out->error[0] = '\0';
    } else {
        snprintf(out->vendor, sizeof(out->vendor), "unknown");
        out->instance_type[0] = out->region[0] = '\0';
    }
    out->discovery_time = mono_now() - start;
    return rc;
}
