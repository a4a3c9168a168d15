/* The GPU vendors' readers that the GPU monitor (gpu.c) drives: each a monitor, or NULL when
 * there is no usable library or no GPU. sample() adds its GPUs to the readings (tree: the
 * tracked pids, NULL for none), numbering them from first in the per-GPU series. No Python
 * here. */
#ifndef RT_GPU_VENDOR_H
#define RT_GPU_VENDOR_H

#include <stddef.h>

#include "gpu.h"
#include "pid_map.h"

typedef struct NvmlMonitor NvmlMonitor;
NvmlMonitor *nvml_monitor_open(const char *library_path);
void nvml_monitor_sample(NvmlMonitor *m, const PidMap *tree, double dt, size_t first,
                         GpuReading *system, GpuReading *process);
size_t nvml_monitor_count(const NvmlMonitor *m);
void nvml_monitor_inventory(NvmlMonitor *m, GpuInfo *out, size_t max);
void nvml_monitor_close(NvmlMonitor *m);

typedef struct AmdMonitor AmdMonitor;
AmdMonitor *amd_monitor_open(const char *library_path);
void amd_monitor_sample(AmdMonitor *m, const PidMap *tree, double dt, size_t first,
                        GpuReading *system, GpuReading *process);
size_t amd_monitor_count(const AmdMonitor *m);
void amd_monitor_inventory(AmdMonitor *m, GpuInfo *out, size_t max);
/* GPU_SOURCE_AMDSMI or GPU_SOURCE_ROCM_SMI */
int amd_monitor_library(const AmdMonitor *m);
void amd_monitor_close(AmdMonitor *m);

#endif
