/* A stand-in for libnvidia-ml.so.1 used by the tests (there is no GPU here). It speaks the NVML
 * C interface (the functions, structs and return codes of nvml.h that resource_tracker calls)
 * and answers with scripted values:
 *   GPU 0: 16 GiB, 1024 MiB used, 25 % busy, a process outside the tracked tree (other_pid)
 *          holding 512 MiB at 25 %;
 *   GPU 1: 24 GiB, 2048 MiB used, 40 % busy, a process of the tracked tree (tree_pid) holding
 *          1536 MiB (listed as compute and graphics, like nvidia-smi's "C+G"), samples 35 and 40 %.
 * A control file (path in env NVML_STUB_CONTROL, re-read at most every 5 ms) holds key=value
 * lines: tree_pid=N, other_pid=N, mode=flag,flag where the flags are
 *   not_supported           every per-device query returns NVML_ERROR_NOT_SUPPORTED
 *   no_process_utilization  nvmlDeviceGetProcessUtilization returns NVML_ERROR_NOT_SUPPORTED
 *   gpu1_lost               every call on GPU 1 returns NVML_ERROR_GPU_IS_LOST
 *   init_fails              nvmlInit returns NVML_ERROR_DRIVER_NOT_LOADED
 *   no_gpu                  nvmlDeviceGetCount reports 0 devices
 *   segfault                every per-device query writes through a null pointer (a driver's
 *                           crash, in the thread that asked)
 *   stack_overflow          every per-device query recurses until the thread's stack runs out
 * Crowd keys (the NVML duplicate-scan and impossible-reading tests): gpus=N (up to 64 devices;
 * GPUs 2.. answer as GPU 1 does), crowd=M (every device also lists M processes outside the tree,
 * pids 100000.., 1 MiB each, in both process lists and the utilisation samples), tree_bytes=B
 * (usedGpuMemory of the tree's process, e.g. near 2^64 as a broken driver reports).
 * Right-sizing keys (tests/gpu_cloud/test_gpu_fit.py): fit_gpus=N (up to 64) makes N GPUs of
 * fit_total_mib MiB (default 81920) where the tree's process (tree_pid) is the only one: GPU 0
 * 60 % busy (samples 55 and 60 %) with fit_busy_mib held (default 10240), GPUs 1.. 0 % busy
 * and no utilisation sample, each with fit_idle_mib held (default 512): GPUs held, never used.
 * Built with -DSTUB_OLD_API it exports only the old unversioned entry points (nvmlInit,
 * nvmlDeviceGetCount, ...) and the 16-byte nvmlProcessInfo_v1_t process lists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stub_control.h"

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_GPU_IS_LOST = 15,
};

typedef struct StubDevice {
    int index;
} StubDevice;
typedef StubDevice *nvmlDevice_t;

typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

#define MIB (1024ULL * 1024ULL)

#define STUB_MAX_GPUS 64
#define CROWD_FIRST_PID 100000u

static StubDevice devices[STUB_MAX_GPUS];
static int init_count;
static double init_at; /* monotonic seconds at the first nvmlInit: GPU 0's counter starts there */
static struct {
    unsigned int tree_pid, other_pid, gpus, crowd;
    unsigned long long tree_bytes;
    unsigned int fit_gpus;                            /* the right-sizing layout: 0 = off */
    unsigned long long fit_total, fit_busy, fit_idle; /* MiB */
    int not_supported, no_process_utilization, gpu1_lost, init_fails, no_gpu;
    int segfault, stack_overflow;
} ctl;
static double ctl_read_at = -1.0;

static void
load_control(void)
{
    char line[256];
    int due;
    FILE *f = open_control("NVML_STUB_CONTROL", &ctl_read_at, &due);

    if (due)
        memset(&ctl, 0, sizeof(ctl));
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f)) {
        if (control_uint(line, "tree_pid", &ctl.tree_pid) ||
            control_uint(line, "other_pid", &ctl.other_pid) ||
            control_uint(line, "gpus", &ctl.gpus) || control_uint(line, "crowd", &ctl.crowd) ||
            control_uint(line, "fit_gpus", &ctl.fit_gpus))
            continue;
        if (strncmp(line, "fit_total_mib=", 14) == 0)
            ctl.fit_total = strtoull(line + 14, NULL, 10);
        else if (strncmp(line, "fit_busy_mib=", 13) == 0)
            ctl.fit_busy = strtoull(line + 13, NULL, 10);
        else if (strncmp(line, "fit_idle_mib=", 13) == 0)
            ctl.fit_idle = strtoull(line + 13, NULL, 10);
        else if (strncmp(line, "tree_bytes=", 11) == 0)
            ctl.tree_bytes = strtoull(line + 11, NULL, 10);
        else if (strncmp(line, "mode=", 5) == 0) {
            ctl.not_supported = strstr(line, "not_supported") != NULL;
            ctl.no_process_utilization = strstr(line, "no_process_utilization") != NULL;
            ctl.gpu1_lost = strstr(line, "gpu1_lost") != NULL;
            ctl.init_fails = strstr(line, "init_fails") != NULL;
            ctl.no_gpu = strstr(line, "no_gpu") != NULL;
            ctl.segfault = strstr(line, "segfault") != NULL;
            ctl.stack_overflow = strstr(line, "stack_overflow") != NULL;
        }
    }
    fclose(f);
    if (ctl.fit_total == 0)
        ctl.fit_total = 81920;
    if (ctl.fit_busy == 0)
        ctl.fit_busy = 10240;
    if (ctl.fit_idle == 0)
        ctl.fit_idle = 512;
}

/* MiB the tree holds on a GPU of the right-sizing layout */
static unsigned long long
fit_held_mib(nvmlDevice_t dev)
{
    return dev->index == 0 ? ctl.fit_busy : ctl.fit_idle;
}

/* devices present */
static unsigned int
gpu_count(void)
{
    if (ctl.fit_gpus)
        return ctl.fit_gpus > STUB_MAX_GPUS ? STUB_MAX_GPUS : ctl.fit_gpus;
    if (ctl.gpus == 0)
        return 2;
    return ctl.gpus > STUB_MAX_GPUS ? STUB_MAX_GPUS : ctl.gpus;
}

/* Recurses with a frame the compiler cannot drop until the stack runs out. */
__attribute__((noinline)) static unsigned long
exhaust_stack(unsigned long depth)
{
    volatile char frame[1024];

    frame[depth % sizeof(frame)] = (char)depth;
    return exhaust_stack(depth + 1) + frame[(depth + 1) % sizeof(frame)];
}

/* The crash modes: a fault in the calling thread, as a broken driver's. */
static void
crash_if_asked(void)
{
    if (ctl.segfault)
        *(volatile int *)NULL = 1;
    if (ctl.stack_overflow)
        (void)exhaust_stack(0);
}

/* NVML_SUCCESS when the device may be queried */
static nvmlReturn_t
check(nvmlDevice_t dev)
{
    load_control();
    crash_if_asked();
    if (init_count <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (dev == NULL || dev < &devices[0] || dev >= &devices[gpu_count()])
        return NVML_ERROR_INVALID_ARGUMENT;
    if (dev->index == 1 && ctl.gpu1_lost)
        return NVML_ERROR_GPU_IS_LOST;
    return NVML_SUCCESS;
}

static nvmlReturn_t
stub_init(void)
{
    load_control();
    if (ctl.init_fails)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    for (int i = 0; i < STUB_MAX_GPUS; i++)
        devices[i].index = i;
    if (init_count == 0)
        init_at = now();
    init_count++;
    return NVML_SUCCESS;
}

static nvmlReturn_t
stub_count(unsigned int *count)
{
    load_control();
    if (init_count <= 0)
        return NVML_ERROR_UNINITIALIZED;
    *count = ctl.no_gpu ? 0 : gpu_count();
    return NVML_SUCCESS;
}

static nvmlReturn_t
stub_handle(unsigned int index, nvmlDevice_t *dev)
{
    load_control();
    if (init_count <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (index >= gpu_count() || ctl.no_gpu)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (index == 1 && ctl.gpu1_lost)
        return NVML_ERROR_GPU_IS_LOST;
    *dev = &devices[index];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t
nvmlShutdown(void)
{
    if (init_count <= 0)
        return NVML_ERROR_UNINITIALIZED;
    init_count--;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t
nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length)
{
    nvmlReturn_t rc = check(dev);
    char text[64];

    if (rc != NVML_SUCCESS)
        return rc;
    snprintf(text, sizeof(text), "Stub NVML GPU %d", dev->index);
    if (strlen(text) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(name, text);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t
nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *util)
{
    nvmlReturn_t rc = check(dev);

    if (rc != NVML_SUCCESS)
        return rc;
    if (ctl.not_supported)
        return NVML_ERROR_NOT_SUPPORTED;
    util->gpu = dev->index == 0 ? 25 : 40;
    if (ctl.fit_gpus)
        util->gpu = dev->index == 0 ? 60 : 0;
    util->memory = 10;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t
nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem)
{
    nvmlReturn_t rc = check(dev);

    if (rc != NVML_SUCCESS)
        return rc;
    if (ctl.not_supported)
        return NVML_ERROR_NOT_SUPPORTED;
    mem->total = (dev->index == 0 ? 16384 : 24576) * MIB;
    mem->used = (dev->index == 0 ? 1024 : 2048) * MIB;
    if (ctl.fit_gpus) {
        mem->total = ctl.fit_total * MIB;
        mem->used = fit_held_mib(dev) * MIB;
    }
    mem->free = mem->total - mem->used;
    return NVML_SUCCESS;
}

/* Power and energy: GPU 0 draws 100 W and has an energy counter (mJ since nvmlInit, as Volta and
 * later GPUs); GPUs 1.. draw 250 W and have no counter (NVML_ERROR_NOT_SUPPORTED, as older GPUs).
 * The power is in mW. Built with -DSTUB_NO_POWER neither is exported (bench/bench_energy.py). */
#ifndef STUB_NO_POWER
EXPORT nvmlReturn_t
nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *power)
{
    nvmlReturn_t rc = check(dev);

    if (rc != NVML_SUCCESS)
        return rc;
    if (ctl.not_supported)
        return NVML_ERROR_NOT_SUPPORTED;
    *power = dev->index == 0 ? 100000u : 250000u; /* mW */
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t
nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *energy)
{
    nvmlReturn_t rc = check(dev);

    if (rc != NVML_SUCCESS)
        return rc;
    if (ctl.not_supported || dev->index != 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *energy = (unsigned long long)((now() - init_at) * 100.0 * 1000.0); /* mJ at 100 W */
    return NVML_SUCCESS;
}
#endif

/* the scripted process (pid, bytes) on a device: 1, or 0 when there is none */
static int
scripted_process(nvmlDevice_t dev, unsigned int *pid, unsigned long long *bytes)
{
    *pid = dev->index == 0 ? ctl.other_pid : ctl.tree_pid;
    *bytes = (dev->index == 0 ? 512 : 1536) * MIB;
    if (dev->index != 0 && ctl.tree_bytes)
        *bytes = ctl.tree_bytes;
    if (ctl.fit_gpus) {
        *pid = ctl.tree_pid;
        *bytes = fit_held_mib(dev) * MIB;
    }
    return *pid != 0;
}

/* writes entry i of a process list */
static void
put_process(void *infos, int v1, unsigned int i, unsigned int pid, unsigned long long bytes)
{
    if (v1) {
        nvmlProcessInfo_v1_t *p = (nvmlProcessInfo_v1_t *)infos + i;
        p->pid = pid;
        p->usedGpuMemory = bytes;
    } else {
        nvmlProcessInfo_v2_t *p = (nvmlProcessInfo_v2_t *)infos + i;
        p->pid = pid;
        p->usedGpuMemory = bytes;
        p->gpuInstanceId = 0xFFFFFFFFu;
        p->computeInstanceId = 0xFFFFFFFFu;
    }
}

static nvmlReturn_t
list_processes(nvmlDevice_t dev, unsigned int *count, void *infos, int v1)
{
    nvmlReturn_t rc = check(dev);
    unsigned int pid;
    unsigned long long bytes;
    int n;

    if (rc != NVML_SUCCESS)
        return rc;
    if (ctl.not_supported)
        return NVML_ERROR_NOT_SUPPORTED;
    n = scripted_process(dev, &pid, &bytes);
    if (*count < (unsigned int)n + ctl.crowd) {
        *count = (unsigned int)n + ctl.crowd;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *count = (unsigned int)n + ctl.crowd;
    if (n)
        put_process(infos, v1, 0, pid, bytes);
    for (unsigned int k = 0; k < ctl.crowd; k++)
        put_process(infos, v1, (unsigned int)n + k, CROWD_FIRST_PID + k, MIB);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t
nvmlDeviceGetProcessUtilization(nvmlDevice_t dev, nvmlProcessUtilizationSample_t *samples,
                                unsigned int *count, unsigned long long last_seen)
{
    nvmlReturn_t rc = check(dev);
    struct timespec ts;
    unsigned long long stamp;
    unsigned int pid;
    unsigned long long bytes;

    if (rc != NVML_SUCCESS)
        return rc;
    if (ctl.not_supported || ctl.no_process_utilization)
        return NVML_ERROR_NOT_SUPPORTED;
    clock_gettime(CLOCK_REALTIME, &ts);
    stamp = (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
    if (!scripted_process(dev, &pid, &bytes) || stamp <= last_seen)
        return NVML_ERROR_NOT_FOUND;
    if (ctl.fit_gpus && dev->index != 0)
        return NVML_ERROR_NOT_FOUND; /* held, never used: no utilisation sample */
    if (samples == NULL || *count < 2 + ctl.crowd) {
        *count = 2 + ctl.crowd;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    memset(samples, 0, (2 + ctl.crowd) * sizeof(*samples));
    samples[0].pid = samples[1].pid = pid;
    samples[0].timeStamp = stamp - 1000;
    samples[1].timeStamp = stamp;
    samples[0].smUtil = dev->index == 0 ? 25 : 35;
    samples[1].smUtil = dev->index == 0 ? 20 : 40;
    if (ctl.fit_gpus) {
        samples[0].smUtil = 55;
        samples[1].smUtil = 60;
    }
    for (unsigned int k = 0; k < ctl.crowd; k++) {
        samples[2 + k].pid = CROWD_FIRST_PID + k;
        samples[2 + k].timeStamp = stamp;
        samples[2 + k].smUtil = 1;
    }
    *count = 2 + ctl.crowd;
    return NVML_SUCCESS;
}

#ifdef STUB_OLD_API
EXPORT nvmlReturn_t
nvmlInit(void)
{
    return stub_init();
}

EXPORT nvmlReturn_t
nvmlDeviceGetCount(unsigned int *count)
{
    return stub_count(count);
}

EXPORT nvmlReturn_t
nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *dev)
{
    return stub_handle(index, dev);
}

EXPORT nvmlReturn_t
nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t dev, unsigned int *count,
                                     nvmlProcessInfo_v1_t *infos)
{
    return list_processes(dev, count, infos, 1);
}

EXPORT nvmlReturn_t
nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t dev, unsigned int *count,
                                      nvmlProcessInfo_v1_t *infos)
{
    return list_processes(dev, count, infos, 1);
}
#else
EXPORT nvmlReturn_t
nvmlInit_v2(void)
{
    return stub_init();
}

EXPORT nvmlReturn_t
nvmlDeviceGetCount_v2(unsigned int *count)
{
    return stub_count(count);
}

EXPORT nvmlReturn_t
nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev)
{
    return stub_handle(index, dev);
}

EXPORT nvmlReturn_t
nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
                                        nvmlProcessInfo_v2_t *infos)
{
    return list_processes(dev, count, infos, 0);
}

EXPORT nvmlReturn_t
nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
                                         nvmlProcessInfo_v2_t *infos)
{
    return list_processes(dev, count, infos, 0);
}
#endif
