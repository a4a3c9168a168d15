/* GPU readings for one sample: NVIDIA's through NVML, AMD's through amdsmi (or ROCm SMI where
 * only that is installed), each library loaded with dlopen at run time; a machine with both
 * reads both. No Python here. With no library or no GPU the monitor is NULL and every GPU
 * column stays 0. */
#ifndef RT_GPU_H
#define RT_GPU_H

#include <stddef.h>
#include <sys/types.h>

/* GPUs of the per-GPU series (the sampler's side table keeps 2 values a GPU a row) */
#define GPU_SERIES_MAX 16

typedef struct GpuReading {
    double usage;    /* sum of utilisation over GPUs, in GPUs (0..N) */
    double vram_mib; /* memory used, MiB */
    double utilized; /* GPUs with utilisation above 0 */
    /* system reading only: power and energy, summed over the GPUs that report them */
    double power_w;          /* power draw at the reading, W */
    double energy_j;         /* energy in the interval, J: the GPU's energy counter, else (no
                                counter, or its first reading) the power times the interval */
    unsigned int integrated; /* GPUs whose energy was the power times the interval */
    /* process reading only: GPUs whose figures are the machine's (the library cannot tell
       which process uses them: ROCm SMI, or amdsmi without a process list) */
    unsigned int machine_wide;
    /* system reading only: each of the first GPU_SERIES_MAX GPUs, as nvidia-smi shows it */
    double device_util[GPU_SERIES_MAX];     /* utilisation, % (0 when the call fails) */
    double device_vram_mib[GPU_SERIES_MAX]; /* memory used, MiB */
} GpuReading;

/* One GPU as server_info shows it. */
typedef struct GpuInfo {
    char name[96];
    double memory_mib; /* total memory, MiB (0 when NVML cannot tell) */
} GpuInfo;

typedef struct GpuMonitor GpuMonitor;

/* The libraries a monitor reads. */
enum { GPU_SOURCE_NONE = 0, GPU_SOURCE_AMDSMI = 1, GPU_SOURCE_ROCM_SMI = 2 };
typedef struct GpuSources {
    size_t nvidia;   /* GPUs read through NVML */
    size_t amd;      /* GPUs read through the AMD library */
    int amd_library; /* GPU_SOURCE_AMDSMI, GPU_SOURCE_ROCM_SMI, or GPU_SOURCE_NONE */
} GpuSources;

/* Loads NVML from nvml_path (NULL: libnvidia-ml.so.1) and AMD's library from amd_path (NULL:
 * libamd_smi.so, else librocm_smi64.so; a path: whichever of the two it is) and initialises
 * them: a monitor, or NULL when there is no usable library or no GPU (silently: that is the
 * normal case). */
GpuMonitor *gpu_monitor_open(const char *nvml_path, const char *amd_path);

/* The libraries in use and their GPUs (all 0 for NULL). */
void gpu_monitor_sources(const GpuMonitor *monitor, GpuSources *out);

/* Fills system (all GPUs) and process (only the processes in pids, in any order) for an
 * interval of dt seconds. A failing call leaves the affected values at 0; sampling goes on.
 * Process-level: usage is the tree's per-process utilisation, vram the tree's used GPU
 * memory, utilized the GPUs where the tree has utilisation or memory (power and energy are
 * the system reading's only: no library splits them by process). */
void gpu_monitor_sample(GpuMonitor *monitor, const pid_t *pids, size_t npids, double dt,
                        GpuReading *system, GpuReading *process);

/* Number of GPUs the monitor reads (0 for NULL). */
size_t gpu_monitor_count(const GpuMonitor *monitor);

/* Number of GPUs (up to max written into out, NVIDIA's first; a GPU whose calls fail gets an
 * empty name). */
size_t gpu_monitor_inventory(GpuMonitor *monitor, GpuInfo *out, size_t max);

void gpu_monitor_close(GpuMonitor *monitor);

#endif
