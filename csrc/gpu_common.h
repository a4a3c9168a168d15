/* What the GPU vendors' readers (gpu_nvml.c: NVIDIA through NVML, gpu_amd.c: AMD through
 * amdsmi or ROCm SMI) share: the limits of a real reading, the energy counters, the
 * machine-wide sums and the per-GPU series, the tree's share of a GPU. No Python here. */
#ifndef RT_GPU_COMMON_H
#define RT_GPU_COMMON_H

#include <stddef.h>

#include "gpu.h"
#include "pid_map.h"

#define GPU_MAX_DEVICES 64
#define GPU_MAX_PROCESSES 4096
#define GPU_MAX_VRAM_MIB (1024.0 * 1024.0 * 1024.0) /* 1 PiB: more is no real reading */
#define GPU_MAX_WATTS 10000.0                       /* one GPU drawing more is no real reading */
#define GPU_MIB (1024.0 * 1024.0)

/* One GPU's energy counter between readings. */
typedef struct GpuEnergyCounter {
    double last_j; /* the counter at the previous reading, J */
    int has_j;     /* last_j was read */
} GpuEnergyCounter;

/* One GPU's reading into system: power (W, < 0: unknown) and energy counter (J since some
 * start, < 0: unknown) for an interval of dt s. The interval's energy is the counter's rise,
 * else (no counter, its first reading, a counter gone back or rising beyond GPU_MAX_WATTS)
 * the power times dt. Power beyond GPU_MAX_WATTS is no real reading. */
void gpu_energy_add(GpuEnergyCounter *counter, double watts, double counter_j, double dt,
                    GpuReading *system);

/* One GPU's machine-wide figures into system: utilisation % (0 when unknown or beyond 100),
 * memory used in MiB (< 0: unknown), as GPU series_index of the per-GPU series. */
void gpu_add_device(GpuReading *system, size_t series_index, double util, double used_mib);

/* seen's figures summed over the processes of tree, leaving out those above limit (not
 * possible); *mine / *others set when a process in / outside the tree is among them. */
double gpu_sum_over_tree(const PidMap *seen, const PidMap *tree, double limit, int *mine,
                         int *others);

#endif
