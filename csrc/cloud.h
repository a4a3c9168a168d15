/* Cloud discovery: which vendor, instance type and region this machine is. No Python here.
 * Local evidence (DMI/sysfs strings) comes first: with nothing pointing at a known cloud no
 * request is made at all. Otherwise only that vendor's metadata service is asked. */
#ifndef RT_CLOUD_H
#define RT_CLOUD_H

#define CLOUD_FIELD_MAX 128

typedef struct CloudConfig {
    const char *sysfs_root;   /* NULL: /sys */
    const char *metadata_url; /* scheme://host:port used in place of the vendor's host; NULL:
                                 the vendor's own */
    long timeout_ms;          /* total budget for the requests */
} CloudConfig;

typedef struct CloudInfo {
    char vendor[32];                     /* Spare Cores vendor id, or "unknown" */
    char instance_type[CLOUD_FIELD_MAX]; /* empty when unknown */
    char region[CLOUD_FIELD_MAX];        /* empty when unknown */
    char evidence[32];                   /* vendor the local evidence pointed at, or empty */
    double discovery_time;               /* seconds */
    int requests;                        /* HTTP requests made */
    char error[256];                     /* why the metadata service gave no answer */
} CloudInfo;

/* The Spare Cores vendor id that the DMI/sysfs strings under sysfs_root point at, or NULL. */
const char *cloud_local_evidence(const char *sysfs_root);

/* Fills out (always; vendor "unknown" when nothing was found). Returns 0 when a vendor was
 * identified, -1 otherwise. */
int cloud_discover(const CloudConfig *cfg, CloudInfo *out);

#endif
