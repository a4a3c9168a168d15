/* AMD's GPUs through amdsmi (libamd_smi.so, ROCm 5.7 and later) or, where only that is
 * installed, ROCm SMI (librocm_smi64.so), loaded with dlopen: no build-time ROCm dependency.
 * The declarations below follow amdsmi.h and rocm_smi.h of ROCm 5.7 to 6.2; only the symbols
 * used here are resolved. amdsmi lists each GPU's processes with their VRAM and the time they
 * spent on the graphics engine: the tracked tree's share is theirs. ROCm SMI lists the
 * machine's GPU processes with their VRAM and GPUs, not their time: the tree's utilisation is
 * then its GPUs' own. Where the library cannot split a GPU's figures between its processes
 * (amdsmi without a process list; ROCm SMI on a GPU the tree shares) the tree's figures are
 * the GPU's, counted in GpuReading.machine_wide. */
#include "gpu_common.h"
#include "gpu_vendor.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int amd_status_t; /* amdsmi_status_t and rsmi_status_t: 0 is success in both */
typedef void *amdsmi_handle;

#define AMD_SUCCESS 0
#define AMDSMI_STATUS_OUT_OF_RESOURCES 15 /* the process list did not fit: *count says how many */
#define AMDSMI_INIT_AMD_GPUS (1ULL << 1)
#define AMD_MEM_TYPE_VRAM 0 /* AMDSMI_MEM_TYPE_VRAM, RSMI_MEM_TYPE_VRAM */
#define AMD_OUT_BYTES 4096  /* room for a struct the library fills: its later versions grow them */
#define AMD_NAME_MAX 95

typedef struct {
    uint32_t gfx_activity; /* % */
    uint32_t umc_activity;
    uint32_t mm_activity;
    uint32_t reserved[13];
} amdsmi_engine_usage_t;

typedef struct {
    uint32_t current_socket_power; /* W */
    uint32_t average_socket_power; /* W */
    uint32_t gfx_voltage;
    uint32_t soc_voltage;
    uint32_t mem_voltage;
    uint32_t power_limit;
    uint32_t reserved[11];
} amdsmi_power_info_t;

typedef struct {
    char name[32];
    uint32_t pid;
    uint64_t mem; /* bytes */
    struct {
        uint64_t gfx; /* ns on the graphics engine since the process began */
        uint64_t enc;
        uint32_t reserved[12];
    } engine_usage;
    struct {
        uint64_t gtt_mem;
        uint64_t cpu_mem;
        uint64_t vram_mem; /* bytes */
        uint32_t reserved[10];
    } memory_usage;
    char container_name[32];
    uint32_t reserved[4];
} amdsmi_proc_info_t;

typedef amd_status_t (*fn_init)(uint64_t);
typedef amd_status_t (*fn_void)(void);
/* amdsmi */
typedef amd_status_t (*fn_sockets)(uint32_t *, amdsmi_handle *);
typedef amd_status_t (*fn_processors)(amdsmi_handle, uint32_t *, amdsmi_handle *);
typedef amd_status_t (*fn_activity)(amdsmi_handle, amdsmi_engine_usage_t *);
typedef amd_status_t (*fn_memory)(amdsmi_handle, int, uint64_t *);
typedef amd_status_t (*fn_procs)(amdsmi_handle, uint32_t *, amdsmi_proc_info_t *);
typedef amd_status_t (*fn_asic)(amdsmi_handle, void *);
typedef amd_status_t (*fn_energy)(amdsmi_handle, uint64_t *, float *, uint64_t *);
typedef amd_status_t (*fn_power)(amdsmi_handle, amdsmi_power_info_t *);
/* ROCm SMI: devices by index */
typedef amd_status_t (*fn_count)(uint32_t *);
typedef amd_status_t (*fn_busy)(uint32_t, uint32_t *);
typedef amd_status_t (*fn_rmemory)(uint32_t, int, uint64_t *);
typedef amd_status_t (*fn_name)(uint32_t, char *, size_t);
typedef amd_status_t (*fn_renergy)(uint32_t, uint64_t *, float *, uint64_t *);
typedef amd_status_t (*fn_rpower)(uint32_t, uint32_t, uint64_t *); /* uW */
typedef struct {
    uint32_t process_id;
    uint32_t pasid;
    uint64_t vram_usage; /* bytes, over all its GPUs */
    uint64_t sdma_usage;
    uint32_t cu_occupancy;
} rsmi_process_info_t;
typedef amd_status_t (*fn_rprocs)(rsmi_process_info_t *, uint32_t *);
typedef amd_status_t (*fn_rgpus)(uint32_t, uint32_t *, uint32_t *);
#define RSMI_STATUS_INSUFFICIENT_SIZE 11

typedef struct {
    amdsmi_handle handle; /* amdsmi; ROCm SMI: the index */
    GpuEnergyCounter energy;
    PidMap gfx;   /* the processes' graphics-engine ns at the previous reading */
    int gfx_read; /* gfx holds a reading */
} AmdDevice;

typedef struct {
    fn_activity activity;
    fn_memory used, total;
    fn_procs procs;
    fn_asic asic;
    fn_energy energy;
    fn_power power;
} AmdsmiCalls;

typedef struct {
    fn_busy busy;
    fn_rmemory used, total;
    fn_name name;
    fn_renergy energy;
    fn_rpower power;
    fn_rprocs procs; /* the machine's GPU processes */
    fn_rgpus gpus;   /* the GPUs of one process */
} RsmiCalls;

struct AmdMonitor {
    void *lib;
    int library; /* GPU_SOURCE_AMDSMI or GPU_SOURCE_ROCM_SMI */
    fn_void shutdown;
    AmdsmiCalls a;
    RsmiCalls r;
    unsigned int count;
    AmdDevice devices[GPU_MAX_DEVICES];
    amdsmi_proc_info_t *procs;   /* one GPU's process list */
    uint32_t procs_cap;          /* entries (the buffer has room for twice as many) */
    PidMap seen;                 /* one GPU's processes, each once, with its largest VRAM */
    PidMap gfx_next;             /* one GPU's processes' graphics-engine ns, being read */
    rsmi_process_info_t *rprocs; /* ROCm SMI's process list */
    uint32_t rprocs_cap;         /* entries (the buffer has room for twice as many) */
};

/* One GPU's reading: utilisation %, memory used and total in MiB (< 0: unknown), power in W
 * and energy counter in J (< 0: unknown). */
typedef struct {
    double util, used_mib, total_mib, watts, counter_j;
} AmdDeviceReading;

/* amdsmi_init and amdsmi_shut_down are not counted: the first shut_down ends the session of
 * every user in the process (a sampler, gpu_inventory, another tracker). The monitors of one
 * library share one session, begun by the first and ended by the last. The lock is waited
 * for at most AMD_SESSION_WAIT_S (a call that hangs inside amdsmi_init holds it): then there
 * is no AMD GPU for that monitor. ROCm SMI counts its own. */
#define AMD_SESSIONS 8
#define AMD_SESSION_WAIT_S 2
static struct {
    void *lib;
    unsigned int users;
} amd_sessions[AMD_SESSIONS];
static pthread_mutex_t amd_sessions_lock = PTHREAD_MUTEX_INITIALIZER;

/* 0 when the session lock is held */
static int
lock_sessions(void)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += AMD_SESSION_WAIT_S;
    return pthread_mutex_timedlock(&amd_sessions_lock, &until) == 0 ? 0 : -1;
}

/* 0 when lib's session is begun (or already was) with this monitor among its users */
static int
begin_session(void *lib, fn_init init)
{
    int i, free_slot = -1, rc = -1;

    if (lock_sessions() != 0)
        return -1;
    for (i = 0; i < AMD_SESSIONS; i++) {
        if (amd_sessions[i].lib == lib && amd_sessions[i].users > 0) {
            amd_sessions[i].users++;
            rc = 0;
            break;
        }
        if (amd_sessions[i].users == 0 && free_slot < 0)
            free_slot = i;
    }
    if (rc != 0 && free_slot >= 0 && init(AMDSMI_INIT_AMD_GPUS) == AMD_SUCCESS) {
        amd_sessions[free_slot].lib = lib;
        amd_sessions[free_slot].users = 1;
        rc = 0;
    }
    pthread_mutex_unlock(&amd_sessions_lock);
    return rc;
}

/* the monitor's part of lib's session ended: amdsmi shut down after its last user */
static void
end_session(void *lib, fn_void shutdown)
{
    int i;

    if (lock_sessions() != 0)
        return; /* the session stays begun: the library's state, not a fault */
    for (i = 0; i < AMD_SESSIONS; i++) {
        if (amd_sessions[i].lib != lib || amd_sessions[i].users == 0)
            continue;
        if (--amd_sessions[i].users == 0) {
            shutdown();
            amd_sessions[i].lib = NULL;
        }
        break;
    }
    pthread_mutex_unlock(&amd_sessions_lock);
}

/* amdsmi's GPUs into m->devices: their number */
static unsigned int
amdsmi_devices(AmdMonitor *m, fn_sockets sockets, fn_processors processors)
{
    amdsmi_handle socket_handles[GPU_MAX_DEVICES], gpus[GPU_MAX_DEVICES];
    uint32_t nsockets = GPU_MAX_DEVICES, s, n = 0;

    if (sockets(&nsockets, socket_handles) != AMD_SUCCESS)
        return 0;
    for (s = 0; s < nsockets && s < GPU_MAX_DEVICES && n < GPU_MAX_DEVICES; s++) {
        uint32_t k = GPU_MAX_DEVICES - n, j;
        if (processors(socket_handles[s], &k, gpus) != AMD_SUCCESS)
            continue;
        for (j = 0; j < k && j < GPU_MAX_DEVICES - n; j++)
            m->devices[n + j].handle = gpus[j];
        n += j;
    }
    return n;
}

/* 0 when amdsmi is initialised with its GPUs found */
static int
open_amdsmi(AmdMonitor *m, fn_init init)
{
    fn_sockets sockets = (fn_sockets)dlsym(m->lib, "amdsmi_get_socket_handles");
    fn_processors processors = (fn_processors)dlsym(m->lib, "amdsmi_get_processor_handles");

    m->shutdown = (fn_void)dlsym(m->lib, "amdsmi_shut_down");
    if (!sockets || !processors || !m->shutdown || begin_session(m->lib, init) != 0)
        return -1;
    m->library = GPU_SOURCE_AMDSMI;
    m->a.activity = (fn_activity)dlsym(m->lib, "amdsmi_get_gpu_activity");
    m->a.used = (fn_memory)dlsym(m->lib, "amdsmi_get_gpu_memory_usage");
    m->a.total = (fn_memory)dlsym(m->lib, "amdsmi_get_gpu_memory_total");
    m->a.procs = (fn_procs)dlsym(m->lib, "amdsmi_get_gpu_process_list");
    m->a.asic = (fn_asic)dlsym(m->lib, "amdsmi_get_gpu_asic_info");
    m->a.energy = (fn_energy)dlsym(m->lib, "amdsmi_get_energy_count");
    m->a.power = (fn_power)dlsym(m->lib, "amdsmi_get_power_info");
    m->count = amdsmi_devices(m, sockets, processors);
    return 0;
}

/* 0 when ROCm SMI is initialised with its GPUs counted */
static int
open_rsmi(AmdMonitor *m, fn_init init)
{
    fn_count count = (fn_count)dlsym(m->lib, "rsmi_num_monitor_devices");
    uint32_t n = 0, i;

    m->shutdown = (fn_void)dlsym(m->lib, "rsmi_shut_down");
    if (!count || !m->shutdown || init(0) != AMD_SUCCESS)
        return -1;
    m->library = GPU_SOURCE_ROCM_SMI;
    m->r.busy = (fn_busy)dlsym(m->lib, "rsmi_dev_busy_percent_get");
    m->r.used = (fn_rmemory)dlsym(m->lib, "rsmi_dev_memory_usage_get");
    m->r.total = (fn_rmemory)dlsym(m->lib, "rsmi_dev_memory_total_get");
    m->r.name = (fn_name)dlsym(m->lib, "rsmi_dev_name_get");
    m->r.energy = (fn_renergy)dlsym(m->lib, "rsmi_dev_energy_count_get");
    m->r.power = (fn_rpower)dlsym(m->lib, "rsmi_dev_power_ave_get");
    m->r.procs = (fn_rprocs)dlsym(m->lib, "rsmi_compute_process_info_get");
    m->r.gpus = (fn_rgpus)dlsym(m->lib, "rsmi_compute_process_gpus_get");
    if (count(&n) != AMD_SUCCESS)
        n = 0;
    m->count = n > GPU_MAX_DEVICES ? GPU_MAX_DEVICES : n;
    for (i = 0; i < m->count; i++)
        m->devices[i].handle = (amdsmi_handle)(uintptr_t)i;
    return 0;
}

/* the monitor's use of its library ended (amdsmi: its part of the session) */
static void
end_library(AmdMonitor *m)
{
    if (m->library == GPU_SOURCE_AMDSMI)
        end_session(m->lib, m->shutdown);
    else
        m->shutdown();
}

/* a monitor of the library at path, or NULL */
static AmdMonitor *
open_library(const char *path)
{
    AmdMonitor *m = calloc(1, sizeof(*m));
    fn_init init;
    int opened = -1;

    if (m == NULL)
        return NULL;
    m->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (m->lib == NULL) {
        free(m);
        return NULL;
    }
    if ((init = (fn_init)dlsym(m->lib, "amdsmi_init")) != NULL)
        opened = open_amdsmi(m, init);
    else if ((init = (fn_init)dlsym(m->lib, "rsmi_init")) != NULL)
        opened = open_rsmi(m, init);
    if (opened == 0 && m->count > 0)
        return m;
    if (opened == 0)
        end_library(m);
    dlclose(m->lib);
    free(m);
    return NULL;
}

AmdMonitor *
amd_monitor_open(const char *library_path)
{
    static const char *const defaults[] = {"libamd_smi.so", "/opt/rocm/lib/libamd_smi.so",
                                           "librocm_smi64.so", "/opt/rocm/lib/librocm_smi64.so",
                                           NULL};
    AmdMonitor *m = NULL;
    size_t i;

    if (library_path)
        return open_library(library_path);
    for (i = 0; defaults[i] && m == NULL; i++)
        m = open_library(defaults[i]);
    return m;
}

/* the counter (in units of resolution uJ) in J, or -1 when it is no reading */
static double
counter_joules(uint64_t counter, float resolution)
{
    double joules = (double)counter * (double)resolution / 1e6;

    return resolution > 0 && isfinite(joules) ? joules : -1.0;
}

/* one GPU's figures through amdsmi */
static void
read_amdsmi(const AmdsmiCalls *a, amdsmi_handle h, AmdDeviceReading *r)
{
    union {
        amdsmi_engine_usage_t engine;
        amdsmi_power_info_t power;
        unsigned char room[AMD_OUT_BYTES];
    } out;
    uint64_t used, total, counter, stamp;
    float resolution;

    if (a->activity && a->activity(h, &out.engine) == AMD_SUCCESS)
        r->util = out.engine.gfx_activity;
    if (a->used && a->total && a->used(h, AMD_MEM_TYPE_VRAM, &used) == AMD_SUCCESS &&
        a->total(h, AMD_MEM_TYPE_VRAM, &total) == AMD_SUCCESS && used <= total) {
        r->used_mib = (double)used / GPU_MIB;
        r->total_mib = (double)total / GPU_MIB;
    }
    if (a->power && a->power(h, &out.power) == AMD_SUCCESS)
        r->watts = out.power.average_socket_power;
    if (a->energy && a->energy(h, &counter, &resolution, &stamp) == AMD_SUCCESS)
        r->counter_j = counter_joules(counter, resolution);
}

/* one GPU's figures through ROCm SMI */
static void
read_rsmi(const RsmiCalls *c, uint32_t i, AmdDeviceReading *r)
{
    uint32_t busy;
    uint64_t used, total, counter, stamp, microwatts;
    float resolution;

    if (c->busy && c->busy(i, &busy) == AMD_SUCCESS)
        r->util = busy;
    if (c->used && c->total && c->used(i, AMD_MEM_TYPE_VRAM, &used) == AMD_SUCCESS &&
        c->total(i, AMD_MEM_TYPE_VRAM, &total) == AMD_SUCCESS && used <= total) {
        r->used_mib = (double)used / GPU_MIB;
        r->total_mib = (double)total / GPU_MIB;
    }
    if (c->power && c->power(i, 0, &microwatts) == AMD_SUCCESS)
        r->watts = (double)microwatts / 1e6;
    if (c->energy && c->energy(i, &counter, &resolution, &stamp) == AMD_SUCCESS)
        r->counter_j = counter_joules(counter, resolution);
}

/* one GPU's figures, -1 where unknown (utilisation: 0) */
static void
read_device(const AmdMonitor *m, unsigned int i, AmdDeviceReading *r)
{
    r->util = 0.0;
    r->used_mib = r->total_mib = r->watts = r->counter_j = -1.0;
    if (m->library == GPU_SOURCE_AMDSMI)
        read_amdsmi(&m->a, m->devices[i].handle, r);
    else
        read_rsmi(&m->r, i, r);
    if (!(r->util <= 100))
        r->util = 0.0; /* no real reading */
}

/* the GPU's process list into m->procs: the entries, or -1 when the library cannot list them */
static long
read_process_list(AmdMonitor *m, amdsmi_handle h)
{
    uint32_t n;
    amd_status_t rc;

    if (m->a.procs == NULL)
        return -1;
    for (;;) {
        n = m->procs_cap;
        rc = m->a.procs(h, &n, m->procs);
        if (rc != AMDSMI_STATUS_OUT_OF_RESOURCES || n <= m->procs_cap || n >= GPU_MAX_PROCESSES)
            break;
        /* room for twice the entries: a later library's larger struct stays inside */
        amdsmi_proc_info_t *grown = realloc(m->procs, (size_t)(n + 8) * 2 * sizeof(*grown));
        if (grown == NULL)
            return -1;
        m->procs = grown;
        m->procs_cap = n + 8;
    }
    if (rc != AMD_SUCCESS && rc != AMDSMI_STATUS_OUT_OF_RESOURCES)
        return -1;
    return n < m->procs_cap ? (long)n : (long)m->procs_cap;
}

/* The tree's utilisation % of the GPU (its processes' graphics-engine time in the interval
 * over the interval), from the n entries of m->procs; -1 when the list cannot tell (no
 * previous reading, or no process with engine time while the GPU is busy: not counted by
 * this driver). The processes' times are kept for the next reading. */
static double
tree_engine_util(AmdMonitor *m, const PidMap *tree, AmdDevice *d, long n, double dt,
                 double device_util)
{
    double busy_ns = 0.0, limit_ns = dt * 1e9 * 1.5, any = 0.0;
    int known = 0, added;
    long i;
    PidMap swap;

    if (pid_map_reset(&m->gfx_next, (size_t)n) != 0)
        return -1.0;
    for (i = 0; i < n; i++) {
        pid_t pid = (pid_t)m->procs[i].pid;
        double ns = (double)m->procs[i].engine_usage.gfx;
        double *slot = pid_map_slot(&m->gfx_next, pid, &added);
        if (slot == NULL || !added)
            continue; /* no pid, or listed twice: its first entry counts */
        *slot = ns;
        any += ns;
        if (!d->gfx_read || !pid_map_has(tree, pid) || !pid_map_has(&d->gfx, pid))
            continue;
        double before = *pid_map_slot(&d->gfx, pid, &added);
        known = 1;
        if (ns >= before && ns - before <= limit_ns) /* more is no real reading */
            busy_ns += ns - before;
    }
    swap = d->gfx;
    d->gfx = m->gfx_next;
    m->gfx_next = swap;
    d->gfx_read = 1;
    if (dt <= 0 || !known || (any == 0 && device_util > 0))
        return -1.0;
    busy_ns = busy_ns / (dt * 1e9) * 100.0;
    return busy_ns > 100.0 ? 100.0 : busy_ns;
}

/* one GPU's own figures as the tree's, counted as machine-wide (the library cannot tell which
 * process uses the GPU) */
static void
add_machine_wide(const AmdDeviceReading *r, GpuReading *process)
{
    process->usage += r->util / 100.0;
    process->vram_mib += r->used_mib > 0 ? r->used_mib : 0.0;
    process->utilized += r->util > 0 ? 1.0 : 0.0;
    process->machine_wide++;
}

/* the tree's figures on one GPU into process through amdsmi: its processes' when the library
 * lists them, the GPU's otherwise */
static void
read_tree_device(AmdMonitor *m, const PidMap *tree, AmdDevice *d, const AmdDeviceReading *r,
                 double dt, GpuReading *process)
{
    double limit_mib = r->total_mib > 0 ? r->total_mib : GPU_MAX_VRAM_MIB, mine_mib, util;
    long n = read_process_list(m, d->handle), i;
    int mine = 0, others = 0, added;

    if (n < 0 || pid_map_reset(&m->seen, (size_t)n) != 0) {
        add_machine_wide(r, process);
        return;
    }
    for (i = 0; i < n; i++) {
        double mib = (double)m->procs[i].memory_usage.vram_mem / GPU_MIB;
        double *slot = pid_map_slot(&m->seen, (pid_t)m->procs[i].pid, &added);
        if (slot == NULL)
            others = 1; /* not a pid the tree can have */
        else if (mib <= limit_mib && mib > *slot)
            *slot = mib; /* more than the GPU has is no real reading */
    }
    mine_mib = gpu_sum_over_tree(&m->seen, tree, INFINITY, &mine, &others);
    util = tree_engine_util(m, tree, d, n, dt, r->util);
    if (util < 0)
        /* no per-process time: the GPU's when the tree is alone on it */
        util = mine && !others ? r->util : 0.0;
    process->vram_mib += mine_mib;
    process->usage += util / 100.0;
    process->utilized += (mine || util > 0) ? 1.0 : 0.0;
}

/* ROCm SMI's list of the machine's GPU processes into m->rprocs: how many, or -1 */
static long
rsmi_process_list(AmdMonitor *m)
{
    uint32_t n;
    amd_status_t rc;

    if (m->r.procs == NULL || m->r.gpus == NULL)
        return -1;
    for (;;) {
        rsmi_process_info_t *grown;
        n = m->rprocs_cap;
        rc = m->rprocs ? m->r.procs(m->rprocs, &n) : RSMI_STATUS_INSUFFICIENT_SIZE;
        if (rc != RSMI_STATUS_INSUFFICIENT_SIZE || m->rprocs_cap >= GPU_MAX_PROCESSES)
            break;
        /* it does not say how many: twice the room, and room for twice that */
        n = m->rprocs_cap ? m->rprocs_cap * 2 : 16;
        grown = realloc(m->rprocs, (size_t)n * 2 * sizeof(*grown));
        if (grown == NULL)
            return -1;
        m->rprocs = grown;
        m->rprocs_cap = n;
    }
    if (rc != AMD_SUCCESS)
        return -1;
    return n < m->rprocs_cap ? (long)n : (long)m->rprocs_cap;
}

/* The tree's figures through ROCm SMI: its processes' VRAM (each over all its GPUs; above
 * limit_mib, no real reading) and, on each GPU one of them uses, the GPU's utilisation:
 * theirs alone, or the GPU's shared with other processes (counted as machine-wide). A
 * process list refused: every GPU's figures, machine-wide. */
static void
rsmi_tree(AmdMonitor *m, const PidMap *tree, const AmdDeviceReading *r, double limit_mib,
          GpuReading *process)
{
    unsigned char used_by[GPU_MAX_DEVICES]; /* 1: the tree, 2: others, 3: both */
    long n = rsmi_process_list(m), i;
    unsigned int d;

    if (n < 0) {
        for (d = 0; d < m->count; d++)
            add_machine_wide(&r[d], process);
        return;
    }
    memset(used_by, 0, sizeof(used_by));
    for (i = 0; i < n; i++) {
        const rsmi_process_info_t *p = &m->rprocs[i];
        int mine = pid_map_has(tree, (pid_t)p->process_id);
        uint32_t gpus[GPU_MAX_DEVICES], k = GPU_MAX_DEVICES, j;
        if (m->r.gpus(p->process_id, gpus, &k) != AMD_SUCCESS)
            k = 0;
        for (j = 0; j < k && j < GPU_MAX_DEVICES; j++)
            if (gpus[j] < m->count)
                used_by[gpus[j]] |= mine ? 1 : 2;
        if (mine && (double)p->vram_usage / GPU_MIB <= limit_mib)
            process->vram_mib += (double)p->vram_usage / GPU_MIB;
    }
    for (d = 0; d < m->count; d++) {
        if (!(used_by[d] & 1))
            continue;
        process->usage += r[d].util / 100.0;
        process->utilized += 1.0;
        process->machine_wide += used_by[d] == 3;
    }
}

void
amd_monitor_sample(AmdMonitor *m, const PidMap *tree, double dt, size_t first, GpuReading *system,
                   GpuReading *process)
{
    AmdDeviceReading r[GPU_MAX_DEVICES];
    double total_mib = 0.0;
    unsigned int i;

    if (m->procs == NULL && m->library == GPU_SOURCE_AMDSMI) {
        m->procs = calloc(16 * 2, sizeof(*m->procs));
        m->procs_cap = m->procs ? 16 : 0;
    }
    for (i = 0; i < m->count; i++) {
        read_device(m, i, &r[i]);
        gpu_energy_add(&m->devices[i].energy, r[i].watts, r[i].counter_j, dt, system);
        gpu_add_device(system, first + i, r[i].util, r[i].used_mib);
        total_mib += r[i].total_mib > 0 ? r[i].total_mib : 0.0;
    }
    if (tree == NULL)
        return;
    if (m->library == GPU_SOURCE_ROCM_SMI) {
        rsmi_tree(m, tree, r, total_mib > 0 ? total_mib : GPU_MAX_VRAM_MIB, process);
        return;
    }
    for (i = 0; i < m->count; i++)
        read_tree_device(m, tree, &m->devices[i], &r[i], dt, process);
}

size_t
amd_monitor_count(const AmdMonitor *m)
{
    return m ? m->count : 0;
}

int
amd_monitor_library(const AmdMonitor *m)
{
    return m->library;
}

/* one GPU's name (the asic's market name through amdsmi) into name */
static void
device_name(const AmdMonitor *m, unsigned int i, char *name, size_t size)
{
    union {
        char market_name[AMD_NAME_MAX + 1]; /* the first field of amdsmi_asic_info_t */
        unsigned char room[AMD_OUT_BYTES];
    } asic;

    name[0] = '\0';
    if (m->library == GPU_SOURCE_AMDSMI) {
        if (m->a.asic && m->a.asic(m->devices[i].handle, &asic) == AMD_SUCCESS) {
            asic.market_name[AMD_NAME_MAX] = '\0';
            snprintf(name, size, "%s", asic.market_name);
        }
    } else if (m->r.name && m->r.name(i, name, size) != AMD_SUCCESS) {
        name[0] = '\0';
    }
    name[size - 1] = '\0';
}

void
amd_monitor_inventory(AmdMonitor *m, GpuInfo *out, size_t max)
{
    unsigned int i;

    for (i = 0; i < m->count && i < max; i++) {
        AmdDeviceReading r;
        memset(&out[i], 0, sizeof(out[i]));
        device_name(m, i, out[i].name, sizeof(out[i].name));
        read_device(m, i, &r);
        out[i].memory_mib = r.total_mib > 0 ? r.total_mib : 0.0;
    }
}

void
amd_monitor_close(AmdMonitor *m)
{
    unsigned int i;

    end_library(m);
    dlclose(m->lib);
    for (i = 0; i < m->count; i++)
        pid_map_free(&m->devices[i].gfx);
    free(m->procs);
    free(m->rprocs);
    pid_map_free(&m->seen);
    pid_map_free(&m->gfx_next);
    free(m);
}
