/* NVIDIA's GPUs through NVML, loaded with dlopen: no build-time CUDA dependency. The
 * declarations below follow the NVML C API (nvml.h); only the symbols used here are resolved. */
#include "gpu_common.h"
#include "gpu_vendor.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ULL)

typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

/* nvmlProcessInfo_v1_t: the unversioned *RunningProcesses functions */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfoV1_t;

/* nvmlProcessInfo_v2_t (same layout as v3): the _v2 and _v3 *RunningProcesses functions */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfoV2_t;

typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef nvmlReturn_t (*fn_void)(void);
typedef nvmlReturn_t (*fn_count)(unsigned int *);
typedef nvmlReturn_t (*fn_handle)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*fn_util)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*fn_memory)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*fn_procs)(nvmlDevice_t, unsigned int *, void *);
typedef nvmlReturn_t (*fn_proc_util)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
                                     unsigned long long);
typedef nvmlReturn_t (*fn_name)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*fn_energy)(nvmlDevice_t, unsigned long long *); /* mJ since driver load */
typedef nvmlReturn_t (*fn_power)(nvmlDevice_t, unsigned int *);        /* mW */

/* A process on one GPU, whichever struct version NVML filled. */
typedef struct {
    pid_t pid;
    double mib;
} GpuProcess;

typedef struct {
    nvmlDevice_t handle;
    int valid;
    unsigned long long last_seen; /* newest per-process utilisation sample read, in us */
    GpuEnergyCounter energy;
} GpuDevice;

struct NvmlMonitor {
    void *lib;
    fn_void shutdown;
    fn_util utilization;
    fn_memory memory;
    fn_procs compute;
    fn_procs graphics;
    size_t proc_stride; /* sizeof the process struct the resolved functions fill */
    fn_proc_util proc_util;
    fn_name name;
    fn_energy energy;
    fn_power power;
    fn_handle handle;
    unsigned int count;
    GpuDevice devices[GPU_MAX_DEVICES];
    unsigned char *raw;   /* buffer for the running-process lists */
    unsigned int raw_cap; /* entries */
    GpuProcess *procs;    /* one GPU's processes, both lists */
    size_t procs_cap;
    nvmlProcessUtilizationSample_t *samples;
    unsigned int samples_cap;
    PidMap seen; /* one device's processes, each once, with its largest figure */
};

/* the first of the names that the library exports, or NULL */
static void *
resolve(void *lib, const char *const *names)
{
    size_t i;

    for (i = 0; names[i]; i++) {
        void *sym = dlsym(lib, names[i]);
        if (sym)
            return sym;
    }
    return NULL;
}

/* the *RunningProcesses function of the newest version exported, setting *stride */
static fn_procs
resolve_procs(void *lib, const char *base, size_t *stride)
{
    static const char *const suffixes[] = {"_v3", "_v2", ""};
    char name[96];
    size_t i;

    for (i = 0; i < 3; i++) {
        void *sym;
        strcpy(name, base);
        strcat(name, suffixes[i]);
        sym = dlsym(lib, name);
        if (sym) {
            *stride = suffixes[i][0] ? sizeof(nvmlProcessInfoV2_t) : sizeof(nvmlProcessInfoV1_t);
            return (fn_procs)sym;
        }
    }
    return NULL;
}

/* a monitor, or NULL when there is no usable library or no GPU */
NvmlMonitor *
nvml_monitor_open(const char *library_path)
{
    static const char *const init_names[] = {"nvmlInit_v2", "nvmlInit", NULL};
    static const char *const count_names[] = {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", NULL};
    static const char *const handle_names[] = {"nvmlDeviceGetHandleByIndex_v2",
                                               "nvmlDeviceGetHandleByIndex", NULL};
    NvmlMonitor *m = NULL;
    fn_void init = NULL;
    fn_count count = NULL;
    size_t stride_c = 0, stride_g = 0;
    unsigned int n = 0, i;
    int initialised = 0;

    m = calloc(1, sizeof(*m));
    if (m == NULL)
        goto error;
    m->lib = dlopen(library_path ? library_path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (m->lib == NULL)
        goto error;
    init = (fn_void)resolve(m->lib, init_names);
    count = (fn_count)resolve(m->lib, count_names);
    m->handle = (fn_handle)resolve(m->lib, handle_names);
    m->shutdown = (fn_void)dlsym(m->lib, "nvmlShutdown");
    if (!init || !count || !m->handle || !m->shutdown)
        goto error;
    m->utilization = (fn_util)dlsym(m->lib, "nvmlDeviceGetUtilizationRates");
    m->memory = (fn_memory)dlsym(m->lib, "nvmlDeviceGetMemoryInfo");
    m->compute = resolve_procs(m->lib, "nvmlDeviceGetComputeRunningProcesses", &stride_c);
    m->graphics = resolve_procs(m->lib, "nvmlDeviceGetGraphicsRunningProcesses", &stride_g);
    if (m->compute && m->graphics && stride_c != stride_g)
        m->graphics = NULL; /* a mixed library: one struct layout only */
    m->proc_stride = stride_c ? stride_c : stride_g;
    m->proc_util = (fn_proc_util)dlsym(m->lib, "nvmlDeviceGetProcessUtilization");
    m->name = (fn_name)dlsym(m->lib, "nvmlDeviceGetName");
    m->energy = (fn_energy)dlsym(m->lib, "nvmlDeviceGetTotalEnergyConsumption");
    m->power = (fn_power)dlsym(m->lib, "nvmlDeviceGetPowerUsage");
    if (init() != NVML_SUCCESS)
        goto error;
    initialised = 1;
    if (count(&n) != NVML_SUCCESS || n == 0)
        goto error;
    m->count = n > GPU_MAX_DEVICES ? GPU_MAX_DEVICES : n;
    for (i = 0; i < m->count; i++)
        m->devices[i].valid = m->handle(i, &m->devices[i].handle) == NVML_SUCCESS;
    return m;

error:
    if (m) {
        if (initialised)
            m->shutdown();
        if (m->lib)
            dlclose(m->lib);
        free(m);
    }
    return NULL;
}

/* 0 when the buffer for n process entries is there */
static int
ensure_raw(NvmlMonitor *m, unsigned int n)
{
    unsigned char *grown;

    if (n <= m->raw_cap)
        return 0;
    grown = realloc(m->raw, (size_t)n * sizeof(nvmlProcessInfoV2_t));
    if (grown == NULL)
        return -1;
    m->raw = grown;
    m->raw_cap = n;
    return 0;
}

/* 0 when procs has room for n more entries */
static int
ensure_procs(NvmlMonitor *m, size_t used, size_t n)
{
    GpuProcess *grown;

    if (used + n <= m->procs_cap)
        return 0;
    grown = realloc(m->procs, (used + n) * 2 * sizeof(GpuProcess));
    if (grown == NULL)
        return -1;
    m->procs = grown;
    m->procs_cap = (used + n) * 2;
    return 0;
}

/* entries appended to m->procs from one running-process list (0 when the call fails) */
static size_t
read_process_list(NvmlMonitor *m, fn_procs call, nvmlDevice_t dev, size_t used)
{
    unsigned int n = m->raw_cap, i;
    nvmlReturn_t rc;

    if (call == NULL || (n == 0 && ensure_raw(m, 16) != 0))
        return 0;
    n = m->raw_cap;
    rc = call(dev, &n, m->raw);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE && n < GPU_MAX_PROCESSES) {
        if (ensure_raw(m, n + 8) != 0)
            return 0;
        n = m->raw_cap;
        rc = call(dev, &n, m->raw);
    }
    if (rc != NVML_SUCCESS || n > m->raw_cap || ensure_procs(m, used, n) != 0)
        return 0;
    for (i = 0; i < n; i++) {
        const unsigned char *entry = m->raw + (size_t)i * m->proc_stride;
        unsigned long long bytes;
        unsigned int pid;
        if (m->proc_stride == sizeof(nvmlProcessInfoV1_t)) {
            pid = ((const nvmlProcessInfoV1_t *)entry)->pid;
            bytes = ((const nvmlProcessInfoV1_t *)entry)->usedGpuMemory;
        } else {
            pid = ((const nvmlProcessInfoV2_t *)entry)->pid;
            bytes = ((const nvmlProcessInfoV2_t *)entry)->usedGpuMemory;
        }
        m->procs[used + i].pid = (pid_t)pid;
        m->procs[used + i].mib =
            bytes == NVML_VALUE_NOT_AVAILABLE_ULL ? 0.0 : (double)bytes / GPU_MIB;
    }
    return n;
}

/* MiB of GPU memory the tree uses on the device (a process in both lists counts once, with its
 * larger figure; one above the device's memory, limit_mib, is impossible and not counted);
 * *others is set when a process outside the tree holds the device too. Linear in the number
 * of processes listed: each is looked up in hash maps, none is compared with the others. */
static double
tree_memory(NvmlMonitor *m, const PidMap *tree, nvmlDevice_t dev, double limit_mib, int *mine,
            int *others)
{
    size_t n, i;

    n = read_process_list(m, m->compute, dev, 0);
    n += read_process_list(m, m->graphics, dev, n);
    *mine = 0;
    *others = 0;
    if (pid_map_reset(&m->seen, n) != 0)
        return 0.0;
    for (i = 0; i < n; i++) {
        int added;
        double *mib = pid_map_slot(&m->seen, m->procs[i].pid, &added);
        if (mib == NULL)
            *others = 1; /* not a pid the tree can have */
        else if (m->procs[i].mib <= limit_mib && m->procs[i].mib > *mib)
            *mib = m->procs[i].mib;
    }
    return gpu_sum_over_tree(&m->seen, tree, INFINITY, mine, others);
}

/* the samples of one call: their newest time stamp, and in *total the summed per-process peaks
 * of the tree's processes (each process once; a peak above 100% is impossible: left out) */
static unsigned long long
sum_tree_samples(NvmlMonitor *m, const PidMap *tree, const nvmlProcessUtilizationSample_t *samples,
                 unsigned int n, unsigned long long newest, double *total)
{
    unsigned int i;
    int mine = 0, others = 0;

    *total = 0.0;
    for (i = 0; i < n; i++)
        if (samples[i].timeStamp > newest)
            newest = samples[i].timeStamp;
    if (pid_map_reset(&m->seen, n) != 0)
        return newest;
    for (i = 0; i < n; i++) {
        int added;
        double *peak = pid_map_slot(&m->seen, (pid_t)samples[i].pid, &added);
        if (peak != NULL && (double)samples[i].smUtil > *peak)
            *peak = (double)samples[i].smUtil;
    }
    *total = gpu_sum_over_tree(&m->seen, tree, 100.0, &mine, &others);
    return newest;
}

/* utilisation (0..100 per process, summed) of the tree's processes from the samples newer than
 * the last read; -1 when NVML cannot tell (not supported, failing call) */
static double
tree_utilization(NvmlMonitor *m, const PidMap *tree, GpuDevice *d)
{
    unsigned int n;
    nvmlReturn_t rc;
    double total = 0.0;

    if (m->proc_util == NULL)
        return -1.0;
    if (m->samples == NULL) {
        m->samples = calloc(64, sizeof(*m->samples));
        if (m->samples == NULL)
            return -1.0;
        m->samples_cap = 64;
    }
    n = m->samples_cap;
    rc = m->proc_util(d->handle, m->samples, &n, d->last_seen);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE && n > m->samples_cap && n < GPU_MAX_PROCESSES) {
        nvmlProcessUtilizationSample_t *grown = realloc(m->samples, (size_t)n * sizeof(*grown));
        if (grown == NULL)
            return -1.0;
        m->samples = grown;
        m->samples_cap = n;
        rc = m->proc_util(d->handle, m->samples, &n, d->last_seen);
    }
    if (rc == NVML_ERROR_NOT_FOUND)
        return 0.0; /* no sample since the last read: nothing ran */
    if (rc != NVML_SUCCESS || n > m->samples_cap)
        return -1.0;
    d->last_seen = sum_tree_samples(m, tree, m->samples, n, d->last_seen, &total);
    return total > 100.0 ? 100.0 : total;
}

/* The device's power (mW) and energy counter (mJ since the driver loaded: Volta and later)
 * into system (gpu_energy_add) */
static void
read_energy(NvmlMonitor *m, GpuDevice *d, double dt, GpuReading *system)
{
    unsigned int mw;
    unsigned long long mj;
    double watts = -1.0, counter_j = -1.0;

    if (m->power && m->power(d->handle, &mw) == NVML_SUCCESS)
        watts = mw / 1000.0;
    if (m->energy && m->energy(d->handle, &mj) == NVML_SUCCESS)
        counter_j = (double)mj / 1000.0;
    gpu_energy_add(&d->energy, watts, counter_j, dt, system);
}

/* the tree's figures on one device into process */
static void
read_tree_device(NvmlMonitor *m, const PidMap *tree, GpuDevice *d, double device_util,
                 double limit_mib, GpuReading *process)
{
    int mine = 0, others = 0;
    double mine_mib = tree_memory(m, tree, d->handle, limit_mib, &mine, &others);
    double mine_util = tree_utilization(m, tree, d);

    if (mine_util < 0)
        /* no per-process figures: the device's when the tree is alone on it */
        mine_util = mine && !others ? device_util : 0.0;
    process->vram_mib += mine_mib;
    process->usage += mine_util / 100.0;
    process->utilized += (mine || mine_util > 0) ? 1.0 : 0.0;
}

/* adds the GPUs to the readings; failing calls leave their values at 0 */
void
nvml_monitor_sample(NvmlMonitor *m, const PidMap *tree, double dt, size_t first, GpuReading *system,
                    GpuReading *process)
{
    unsigned int i;

    for (i = 0; i < m->count; i++) {
        GpuDevice *d = &m->devices[i];
        nvmlUtilization_t util;
        nvmlMemory_t mem;
        double device_util = 0.0, used_mib = -1.0, limit_mib = GPU_MAX_VRAM_MIB;

        if (!d->valid) {
            /* a GPU that failed may come back (e.g. after a reset) */
            d->valid = m->handle(i, &d->handle) == NVML_SUCCESS;
            if (!d->valid)
                continue;
        }
        if (m->utilization && m->utilization(d->handle, &util) == NVML_SUCCESS)
            device_util = util.gpu;
        if (m->memory && m->memory(d->handle, &mem) == NVML_SUCCESS && mem.used <= mem.total) {
            used_mib = (double)mem.used / GPU_MIB;
            limit_mib = (double)mem.total / GPU_MIB;
        }
        if (m->power || m->energy)
            read_energy(m, d, dt, system);
        gpu_add_device(system, first + i, device_util, used_mib);
        if (device_util > 100)
            device_util = 0.0;
        if (tree)
            read_tree_device(m, tree, d, device_util, limit_mib, process);
    }
}

size_t
nvml_monitor_count(const NvmlMonitor *m)
{
    return m ? m->count : 0;
}

/* the first max GPUs described in out */
void
nvml_monitor_inventory(NvmlMonitor *m, GpuInfo *out, size_t max)
{
    size_t i;

    for (i = 0; i < m->count && i < max; i++) {
        nvmlDevice_t dev = NULL;
        nvmlMemory_t mem;
        memset(&out[i], 0, sizeof(out[i]));
        if (m->handle((unsigned int)i, &dev) != NVML_SUCCESS)
            continue;
        if (m->name && m->name(dev, out[i].name, sizeof(out[i].name)) != NVML_SUCCESS)
            out[i].name[0] = '\0';
        out[i].name[sizeof(out[i].name) - 1] = '\0';
        if (m->memory && m->memory(dev, &mem) == NVML_SUCCESS)
            out[i].memory_mib = (double)mem.total / GPU_MIB;
    }
}

/* nothing: shuts NVML down and unloads it */
void
nvml_monitor_close(NvmlMonitor *m)
{
    m->shutdown();
    dlclose(m->lib);
    free(m->raw);
    free(m->procs);
    free(m->samples);
    pid_map_free(&m->seen);
    free(m);
}
