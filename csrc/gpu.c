/* The GPU monitor: NVIDIA's GPUs (gpu_nvml.c) and AMD's (gpu_amd.c) read together, for the
 * same tracked pids. */
#include "gpu_vendor.h"

#include <stdlib.h>
#include <string.h>

struct GpuMonitor {
    NvmlMonitor *nvml;
    AmdMonitor *amd;
    PidMap tree; /* the tracked tree's pids, for the reading under way */
};

GpuMonitor *
gpu_monitor_open(const char *nvml_path, const char *amd_path)
{
    GpuMonitor *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return NULL;
    m->nvml = nvml_monitor_open(nvml_path);
    m->amd = amd_monitor_open(amd_path);
    if (m->nvml == NULL && m->amd == NULL) {
        free(m);
        return NULL;
    }
    return m;
}

void
gpu_monitor_sources(const GpuMonitor *m, GpuSources *out)
{
    memset(out, 0, sizeof(*out));
    if (m == NULL)
        return;
    out->nvidia = nvml_monitor_count(m->nvml);
    out->amd = amd_monitor_count(m->amd);
    out->amd_library = m->amd ? amd_monitor_library(m->amd) : GPU_SOURCE_NONE;
}

/* the tree's pids into m->tree: 0, or -1 when out of memory */
static int
load_tree(GpuMonitor *m, const pid_t *pids, size_t npids)
{
    size_t i;
    int added;

    if (pid_map_reset(&m->tree, npids) != 0)
        return -1;
    for (i = 0; i < npids; i++)
        pid_map_slot(&m->tree, pids[i], &added);
    return 0;
}

void
gpu_monitor_sample(GpuMonitor *m, const pid_t *pids, size_t npids, double dt, GpuReading *system,
                   GpuReading *process)
{
    const PidMap *tree;

    memset(system, 0, sizeof(*system));
    memset(process, 0, sizeof(*process));
    if (m == NULL)
        return;
    /* out of memory: the devices' figures only, this time */
    tree = npids > 0 && load_tree(m, pids, npids) == 0 ? &m->tree : NULL;
    if (m->nvml)
        nvml_monitor_sample(m->nvml, tree, dt, 0, system, process);
    if (m->amd)
        amd_monitor_sample(m->amd, tree, dt, nvml_monitor_count(m->nvml), system, process);
}

size_t
gpu_monitor_count(const GpuMonitor *m)
{
    return m ? nvml_monitor_count(m->nvml) + amd_monitor_count(m->amd) : 0;
}

size_t
gpu_monitor_inventory(GpuMonitor *m, GpuInfo *out, size_t max)
{
    size_t nvidia;

    if (m == NULL)
        return 0;
    nvidia = nvml_monitor_count(m->nvml);
    if (m->nvml)
        nvml_monitor_inventory(m->nvml, out, max);
    if (m->amd && nvidia < max)
        amd_monitor_inventory(m->amd, out + nvidia, max - nvidia);
    return gpu_monitor_count(m);
}

void
gpu_monitor_close(GpuMonitor *m)
{
    if (m == NULL)
        return;
    if (m->nvml)
        nvml_monitor_close(m->nvml);
    if (m->amd)
        amd_monitor_close(m->amd);
    pid_map_free(&m->tree);
    free(m);
}
