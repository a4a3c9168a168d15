/* GPU monitor over NVML, loaded with dlopen: no build-time CUDA dependency. The declarations
 * below follow the NVML C API (nvml.h); only the symbols used here are resolved. */
#include "gpu.h"
#include "pid_map.h"

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
#define GPU_MAX_DEVICES 64
#define GPU_MAX_PROCESSES 4096
#define GPU_MAX_VRAM_MIB (1024.0 * 1024.0 * 1024.0) /* 1 PiB: more is no real reading */
#define GPU_MAX_WATTS 10000.0                       /* one GPU drawing more is no real reading */

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
    unsigned long long last_mj;   /* the energy counter at the previous reading */
    int has_mj;                   /* last_mj was read */
} GpuDevice;

struct GpuMonitor {
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
    PidMap tree; /* the tracked tree's pids, for the reading under way */
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
GpuMonitor *
gpu_monitor_open(const char *library_path)
{
    static const char *const init_names[] = {"nvmlInit_v2", "nvmlInit", NULL};
    static const char *const count_names[] = {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", NULL};
    static const char *const handle_names[] = {"nvmlDeviceGetHandleByIndex_v2",
                                               "nvmlDeviceGetHandleByIndex", NULL};
    GpuMonitor *m = NULL;
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
ensure_raw(GpuMonitor *m, unsigned int n)
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
ensure_procs(GpuMonitor *m, size_t used, size_t n)
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
read_process_list(GpuMonitor *m, fn_procs call, nvmlDevice_t dev, size_t used)
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
            bytes == NVML_VALUE_NOT_AVAILABLE_ULL ? 0.0 : (double)bytes / (1024.0 * 1024.0);
    }
    return n;
}

/* m->seen's figures summed over the tree's processes, leaving out those above limit (not
 * possible); *mine / *others: whether a process in / outside the tree is among them */
static double
sum_over_tree(const GpuMonitor *m, double limit, int *mine, int *others)
{
    double total = 0.0;
    size_t i;

    for (i = 0; i < m->seen.cap; i++) {
        if (m->seen.keys[i] == PID_MAP_EMPTY)
            continue;
        if (!pid_map_has(&m->tree, m->seen.keys[i])) {
            *others = 1;
            continue;
        }
        *mine = 1;
        if (m->seen.values[i] <= limit)
            total += m->seen.values[i];
    }
    return total;
}

/* MiB of GPU memory the tree uses on the device (a process in both lists counts once, with its
 * larger figure; one above the device's memory, limit_mib, is impossible and not counted);
 * *others is set when a process outside the tree holds the device too. Linear in the number
 * of processes listed: each is looked up in hash maps, none is compared with the others. */
static double
tree_memory(GpuMonitor *m, nvmlDevice_t dev, double limit_mib, int *mine, int *others)
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
    return sum_over_tree(m, INFINITY, mine, others);
}

/* the samples of one call: their newest time stamp, and in *total the summed per-process peaks
 * of the tree's processes (each process once; a peak above 100% is impossible: left out) */
static unsigned long long
sum_tree_samples(GpuMonitor *m, const nvmlProcessUtilizationSample_t *samples, unsigned int n,
                 unsigned long long newest, double *total)
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
    *total = sum_over_tree(m, 100.0, &mine, &others);
    return newest;
}

/* utilisation (0..100 per process, summed) of the tree's processes from the samples newer than
 * the last read; -1 when NVML cannot tell (not supported, failing call) */
static double
tree_utilization(GpuMonitor *m, GpuDevice *d)
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
    d->last_seen = sum_tree_samples(m, m->samples, n, d->last_seen, &total);
    return total > 100.0 ? 100.0 : total;
}

/* the tree's pids into m->tree: 0, or -1 when out of memory */
static int
load_tree(GpuMonitor *m, const pid_t *pids, size_t npids)
{
    size_t i;
    int added;

    if (npids == 0)
        return 0;
    if (pid_map_reset(&m->tree, npids) != 0)
        return -1;
    for (i = 0; i < npids; i++)
        pid_map_slot(&m->tree, pids[i], &added);
    return 0;
}

/* The device's power (W) and energy of the interval (J) into system: the energy counter's rise
 * (Volta and later), else the power times dt (older GPUs, a counter's first reading or a
 * counter gone back: a driver reload). Readings beyond GPU_MAX_WATTS are no real ones. */
static void
read_energy(GpuMonitor *m, GpuDevice *d, double dt, GpuReading *system)
{
    unsigned int mw;
    unsigned long long mj;
    double watts = 0.0;

    if (m->power && m->power(d->handle, &mw) == NVML_SUCCESS && mw <= GPU_MAX_WATTS * 1000.0) {
        watts = mw / 1000.0;
        system->power_w += watts;
    }
    if (m->energy && m->energy(d->handle, &mj) == NVML_SUCCESS) {
        double span = dt > 1.0 ? dt : 1.0;
        int rose =
            d->has_mj && mj >= d->last_mj && (mj - d->last_mj) / 1000.0 <= GPU_MAX_WATTS * span;
        double joules = rose ? (double)(mj - d->last_mj) / 1000.0 : -1.0;
        d->last_mj = mj;
        d->has_mj = 1;
        if (joules >= 0) {
            system->energy_j += joules;
            return;
        }
    }
    if (watts > 0 && dt > 0) {
        system->energy_j += watts * dt;
        system->integrated += !d->has_mj; /* a GPU with a counter: at its first reading only */
    }
}

/* fills the readings; failing calls leave their values at 0 */
void
gpu_monitor_sample(GpuMonitor *m, const pid_t *pids, size_t npids, double dt, GpuReading *system,
                   GpuReading *process)
{
    unsigned int i;

    memset(system, 0, sizeof(*system));
    memset(process, 0, sizeof(*process));
    if (m == NULL)
        return;
    if (load_tree(m, pids, npids) != 0)
        npids = 0; /* out of memory: the devices' figures only, this time */
    for (i = 0; i < m->count; i++) {
        GpuDevice *d = &m->devices[i];
        nvmlUtilization_t util;
        nvmlMemory_t mem;
        double device_util = 0.0, mine_mib = 0.0, mine_util = 0.0, limit_mib;
        int mine = 0, others = 0;

        if (!d->valid) {
            /* a GPU that failed may come back (e.g. after a reset) */
            d->valid = m->handle(i, &d->handle) == NVML_SUCCESS;
            if (!d->valid)
                continue;
        }
        if (m->utilization && m->utilization(d->handle, &util) == NVML_SUCCESS && util.gpu <= 100)
            device_util = util.gpu;
        limit_mib = GPU_MAX_VRAM_MIB;
        if (m->memory && m->memory(d->handle, &mem) == NVML_SUCCESS && mem.used <= mem.total) {
            system->vram_mib += (double)mem.used / (1024.0 * 1024.0);
            limit_mib = (double)mem.total / (1024.0 * 1024.0);
            if (i < GPU_SERIES_MAX)
                system->device_vram_mib[i] = (double)mem.used / (1024.0 * 1024.0);
        }
        if (m->power || m->energy)
            read_energy(m, d, dt, system);
        if (i < GPU_SERIES_MAX)
            system->device_util[i] = device_util;
        system->usage += device_util / 100.0;
        system->utilized += device_util > 0 ? 1.0 : 0.0;
        if (npids == 0)
            continue;
        mine_mib = tree_memory(m, d->handle, limit_mib, &mine, &others);
        mine_util = tree_utilization(m, d);
        if (mine_util < 0)
            /* no per-process figures: the device's when the tree is alone on it */
            mine_util = mine && !others ? device_util : 0.0;
        process->vram_mib += mine_mib;
        process->usage += mine_util / 100.0;
        process->utilized += (mine || mine_util > 0) ? 1.0 : 0.0;
    }
}

size_t
gpu_monitor_count(const GpuMonitor *m)
{
    return m ? m->count : 0;
}

/* number of GPUs described in out */
size_t
gpu_monitor_inventory(GpuMonitor *m, GpuInfo *out, size_t max)
{
    size_t i;

    if (m == NULL)
        return 0;
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
            out[i].memory_mib = (double)mem.total / (1024.0 * 1024.0);
    }
    return m->count;
}

/* nothing: shuts NVML down and unloads it */
void
gpu_monitor_close(GpuMonitor *m)
{
    if (m == NULL)
        return;
    m->shutdown();
    dlclose(m->lib);
    free(m->raw);
    free(m->procs);
    free(m->samples);
    pid_map_free(&m->tree);
    pid_map_free(&m->seen);
    free(m);
}
