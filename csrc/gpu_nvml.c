/* GPU monitor: placeholder until NVML support lands (GPU issue). No GPU: every value is 0. */
#include "gpu.h"

#include <string.h>

/* NULL: no GPU monitoring */
GpuMonitor *
gpu_monitor_open(const char *library_path)
{
    (void)library_path;
    return NULL;
}

void
gpu_monitor_sample(GpuMonitor *monitor, const pid_t *pids, size_t npids, GpuReading *system,
                   GpuReading *process)
{
    (void)monitor;
    (void)pids;
    (void)npids;
    memset(system, 0, sizeof(*system));
    memset(process, 0, sizeof(*process));
}

void
gpu_monitor_close(GpuMonitor *monitor)
{
    (void)monitor;
}
