/* A stand-in for AMD's SMI libraries used by the tests (there is no GPU here). Built as is it
 * is libamd_smi.so: it speaks the amdsmi C interface (the functions, structs and status codes
 * of amdsmi.h, ROCm 5.7 to 6.2, that resource_tracker calls; like amdsmi, its init and
 * shut_down are not counted); built with -DSTUB_ROCM_SMI it is librocm_smi64.so instead
 * (rocm_smi.h: devices by index, the machine's process list with each process's VRAM and GPUs
 * but not its time, init and shut_down counted). Scripted values:
 *   GPU 0: "AMD Instinct MI210", 64 GiB, 4096 MiB used, 30 % busy, an energy counter rising
 *          300 W (15.259 uJ a count) and 300 W average power; a process outside the tracked
 *          tree (other_pid) holding 1024 MiB, on the graphics engine 30 % of the time;
 *   GPU 1: "AMD Instinct MI300X", 192 GiB, 8192 MiB used, 60 % busy, no energy counter
 *          (AMDSMI_STATUS_NOT_SUPPORTED), 500 W average power; a process of the tracked tree
 *          (tree_pid) holding 6144 MiB, on the graphics engine 60 % of the time.
 * The processes' engine time and the energy counter follow CLOCK_MONOTONIC from the first
 * initialisation. A control file (path in env AMDSMI_STUB_CONTROL, re-read at most every 5 ms)
 * holds key=value lines: tree_pid=N, other_pid=N, hang_ms=N (every utilisation query sleeps N
 * ms first, as a wedged driver does), mode=flag,flag where the flags are
 *   init_fails       amdsmi_init / rsmi_init fail (AMDSMI_STATUS_INIT_ERROR: no driver)
 *   no_gpu           no socket, no processor (rsmi: 0 devices)
 *   no_process_list  amdsmi_get_gpu_process_list / rsmi_compute_process_info_get return
 *                    AMDSMI_STATUS_NOT_SUPPORTED / RSMI_STATUS_NOT_SUPPORTED
 *   shared           (ROCm SMI) the process outside the tree uses GPU 1 too
 *   absurd           impossible readings: GPU 0 250 % busy, GPU 1 more memory used than it
 *                    has, the tree's process 2^63 bytes of VRAM and engine time leaping 10^18
 *                    ns a reading, 65535 W (the library's "no value"), an energy counter
 *                    running backwards. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stub_control.h"

#define EXPORT __attribute__((visibility("default")))
#define MIB (1024ULL * 1024ULL)
#define STUB_GPUS 2

typedef enum {
    AMDSMI_STATUS_SUCCESS = 0,
    AMDSMI_STATUS_INVAL = 1,
    AMDSMI_STATUS_NOT_SUPPORTED = 2,
    AMDSMI_STATUS_OUT_OF_RESOURCES = 15,
    AMDSMI_STATUS_INIT_ERROR = 18,
    AMDSMI_STATUS_NOT_INIT = 32,
} amdsmi_status_t;

typedef enum {
    AMDSMI_MEM_TYPE_VRAM = 0,
    AMDSMI_MEM_TYPE_VIS_VRAM,
    AMDSMI_MEM_TYPE_GTT
} amdsmi_memory_type_t;

typedef struct {
    int index;
} StubGpu;

static int init_count;
static double init_at;
static struct {
    unsigned int tree_pid, other_pid, hang_ms;
    int init_fails, no_gpu, no_process_list, absurd, shared;
} ctl;
static double ctl_read_at = -1.0;

static void
load_control(void)
{
    char line[256];
    int due;
    FILE *f = open_control("AMDSMI_STUB_CONTROL", &ctl_read_at, &due);

    if (due)
        memset(&ctl, 0, sizeof(ctl));
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f)) {
        if (control_uint(line, "tree_pid", &ctl.tree_pid) ||
            control_uint(line, "other_pid", &ctl.other_pid) ||
            control_uint(line, "hang_ms", &ctl.hang_ms))
            continue;
        if (strncmp(line, "mode=", 5) == 0) {
            ctl.init_fails = strstr(line, "init_fails") != NULL;
            ctl.no_gpu = strstr(line, "no_gpu") != NULL;
            ctl.no_process_list = strstr(line, "no_process_list") != NULL;
            ctl.absurd = strstr(line, "absurd") != NULL;
            ctl.shared = strstr(line, "shared") != NULL;
        }
    }
    fclose(f);
}

static void
hang_if_asked(void)
{
    struct timespec ts;

    if (ctl.hang_ms == 0)
        return;
    ts.tv_sec = ctl.hang_ms / 1000;
    ts.tv_nsec = (long)(ctl.hang_ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

static double
since_init(void)
{
    return now() - init_at;
}

static int
stub_init(void)
{
    load_control();
    if (ctl.init_fails)
        return AMDSMI_STATUS_INIT_ERROR;
    if (init_count == 0)
        init_at = now();
    init_count++;
    return AMDSMI_STATUS_SUCCESS;
}

static unsigned int
gpu_count(void)
{
    return ctl.no_gpu ? 0 : STUB_GPUS;
}

/* the scripted figures of GPU i */
static uint32_t
busy_of(int i)
{
    return i == 0 ? (ctl.absurd ? 250 : 30) : 60;
}

static uint64_t
total_bytes(int i)
{
    return (i == 0 ? 64ULL : 192ULL) * 1024ULL * MIB;
}

static uint64_t
used_bytes(int i)
{
    if (i == 1 && ctl.absurd)
        return total_bytes(1) + MIB;
    return (i == 0 ? 4096ULL : 8192ULL) * MIB;
}

static const char *
gpu_name(int i)
{
    return i == 0 ? "AMD Instinct MI210" : "AMD Instinct MI300X";
}

/* GPU 0's energy counter in counts of 15.259 uJ (300 W); GPU 1 has none */
#define STUB_RESOLUTION 15.259f
static int
energy_count(int i, uint64_t *counter, float *resolution, uint64_t *stamp)
{
    double joules = 300.0 * since_init();

    if (i != 0)
        return AMDSMI_STATUS_NOT_SUPPORTED;
    if (ctl.absurd)
        joules = 1e6 - joules; /* backwards */
    *counter = (uint64_t)(joules * 1e6 / STUB_RESOLUTION);
    *resolution = STUB_RESOLUTION;
    *stamp = (uint64_t)(now() * 1e9);
    return AMDSMI_STATUS_SUCCESS;
}

static uint32_t
average_watts(int i)
{
    return ctl.absurd ? 0xFFFF : (i == 0 ? 300 : 500);
}

#ifndef STUB_ROCM_SMI

typedef void *amdsmi_socket_handle;
typedef void *amdsmi_processor_handle;
typedef uint32_t amdsmi_process_handle_t;
#define AMDSMI_MAX_STRING_LENGTH 64
#define AMDSMI_NORMAL_STRING_LENGTH 32
#define AMDSMI_256_LENGTH 256
#define AMDSMI_INIT_AMD_GPUS (1 << 1)

static StubGpu gpus[STUB_GPUS] = {{0}, {1}};
static int socket_ids[STUB_GPUS];
static uint64_t absurd_leap; /* the tree process's engine time in absurd mode */

typedef struct {
    uint32_t gfx_activity;
    uint32_t umc_activity;
    uint32_t mm_activity;
    uint32_t reserved[13];
} amdsmi_engine_usage_t;

typedef struct {
    uint32_t current_socket_power;
    uint32_t average_socket_power;
    uint32_t gfx_voltage;
    uint32_t soc_voltage;
    uint32_t mem_voltage;
    uint32_t power_limit;
    uint32_t reserved[11];
} amdsmi_power_info_t;

typedef struct {
    char name[AMDSMI_NORMAL_STRING_LENGTH];
    amdsmi_process_handle_t pid;
    uint64_t mem;
    struct engine_usage_ {
        uint64_t gfx;
        uint64_t enc;
        uint32_t reserved[12];
    } engine_usage;
    struct memory_usage_ {
        uint64_t gtt_mem;
        uint64_t cpu_mem;
        uint64_t vram_mem;
        uint32_t reserved[10];
    } memory_usage;
    char container_name[AMDSMI_NORMAL_STRING_LENGTH];
    uint32_t reserved[4];
} amdsmi_proc_info_t;

typedef struct {
    char market_name[AMDSMI_256_LENGTH];
    uint32_t vendor_id;
    char vendor_name[AMDSMI_MAX_STRING_LENGTH];
    uint32_t subvendor_id;
    uint64_t device_id;
    uint32_t rev_id;
    char asic_serial[AMDSMI_NORMAL_STRING_LENGTH];
    uint32_t oam_id;
    uint32_t num_of_compute_units;
    uint64_t target_graphics_version;
    uint32_t reserved[15];
} amdsmi_asic_info_t;

/* the GPU's index, or -1 (status in *rc) */
static int
gpu_of(amdsmi_processor_handle h, amdsmi_status_t *rc)
{
    load_control();
    *rc = AMDSMI_STATUS_SUCCESS;
    if (init_count <= 0) {
        *rc = AMDSMI_STATUS_NOT_INIT;
        return -1;
    }
    if (h != (void *)&gpus[0] && h != (void *)&gpus[1]) {
        *rc = AMDSMI_STATUS_INVAL;
        return -1;
    }
    return ((StubGpu *)h)->index;
}

/* as amdsmi's: not counted, a second init is a success that changes nothing */
EXPORT amdsmi_status_t
amdsmi_init(uint64_t init_flags)
{
    if (!(init_flags & AMDSMI_INIT_AMD_GPUS))
        return AMDSMI_STATUS_INVAL;
    return init_count > 0 ? AMDSMI_STATUS_SUCCESS : stub_init();
}

/* as amdsmi's: the first shut_down ends the session, whoever else uses it */
EXPORT amdsmi_status_t
amdsmi_shut_down(void)
{
    init_count = 0;
    return AMDSMI_STATUS_SUCCESS;
}

/* one socket a GPU, as on MI210/MI300X machines */
EXPORT amdsmi_status_t
amdsmi_get_socket_handles(uint32_t *socket_count, amdsmi_socket_handle *socket_handles)
{
    uint32_t n, i;

    load_control();
    if (init_count <= 0)
        return AMDSMI_STATUS_NOT_INIT;
    if (socket_count == NULL)
        return AMDSMI_STATUS_INVAL;
    n = gpu_count();
    if (socket_handles != NULL) {
        for (i = 0; i < n && i < *socket_count; i++)
            socket_handles[i] = &socket_ids[i];
        n = i;
    }
    *socket_count = n;
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t
amdsmi_get_processor_handles(amdsmi_socket_handle socket_handle, uint32_t *processor_count,
                             amdsmi_processor_handle *processor_handles)
{
    int *socket = socket_handle;

    if (init_count <= 0)
        return AMDSMI_STATUS_NOT_INIT;
    if (processor_count == NULL || socket < &socket_ids[0] || socket >= &socket_ids[STUB_GPUS])
        return AMDSMI_STATUS_INVAL;
    if (processor_handles != NULL && *processor_count >= 1)
        processor_handles[0] = &gpus[socket - socket_ids];
    *processor_count = 1;
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t
amdsmi_get_gpu_activity(amdsmi_processor_handle h, amdsmi_engine_usage_t *info)
{
    amdsmi_status_t rc;
    int i = gpu_of(h, &rc);

    if (i < 0)
        return rc;
    hang_if_asked();
    memset(info, 0, sizeof(*info));
    info->gfx_activity = busy_of(i);
    info->umc_activity = 10;
    return AMDSMI_STATUS_SUCCESS;
}

/* the GPU's total or used VRAM, as the two memory queries answer */
static amdsmi_status_t
memory_query(amdsmi_processor_handle h, amdsmi_memory_type_t type, uint64_t *out, int total)
{
    amdsmi_status_t rc;
    int i = gpu_of(h, &rc);

    if (i < 0)
        return rc;
    if (type != AMDSMI_MEM_TYPE_VRAM || out == NULL)
        return AMDSMI_STATUS_INVAL;
    *out = total ? total_bytes(i) : used_bytes(i);
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t
amdsmi_get_gpu_memory_total(amdsmi_processor_handle h, amdsmi_memory_type_t type, uint64_t *total)
{
    return memory_query(h, type, total, 1);
}

EXPORT amdsmi_status_t
amdsmi_get_gpu_memory_usage(amdsmi_processor_handle h, amdsmi_memory_type_t type, uint64_t *used)
{
    return memory_query(h, type, used, 0);
}

EXPORT amdsmi_status_t
amdsmi_get_gpu_asic_info(amdsmi_processor_handle h, amdsmi_asic_info_t *info)
{
    amdsmi_status_t rc;
    int i = gpu_of(h, &rc);

    if (i < 0)
        return rc;
    memset(info, 0, sizeof(*info));
    snprintf(info->market_name, sizeof(info->market_name), "%s", gpu_name(i));
    info->vendor_id = 0x1002;
    snprintf(info->vendor_name, sizeof(info->vendor_name), "Advanced Micro Devices Inc.");
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t
amdsmi_get_power_info(amdsmi_processor_handle h, amdsmi_power_info_t *info)
{
    amdsmi_status_t rc;
    int i = gpu_of(h, &rc);

    if (i < 0)
        return rc;
    memset(info, 0, sizeof(*info));
    info->current_socket_power = 0xFFFF; /* not on MI200/MI300: the library's "no value" */
    info->average_socket_power = average_watts(i);
    info->power_limit = 560;
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t
amdsmi_get_energy_count(amdsmi_processor_handle h, uint64_t *energy_accumulator,
                        float *counter_resolution, uint64_t *timestamp)
{
    amdsmi_status_t rc;
    int i = gpu_of(h, &rc);

    if (i < 0)
        return rc;
    return energy_count(i, energy_accumulator, counter_resolution, timestamp);
}

/* the GPU's one process, as the library lists it: OUT_OF_RESOURCES when it does not fit */
EXPORT amdsmi_status_t
amdsmi_get_gpu_process_list(amdsmi_processor_handle h, uint32_t *max_processes,
                            amdsmi_proc_info_t *list)
{
    amdsmi_status_t rc;
    int i = gpu_of(h, &rc);
    int tree = i == 1;
    double share = i == 0 ? 0.30 : 0.60;

    if (i < 0)
        return rc;
    if (max_processes == NULL)
        return AMDSMI_STATUS_INVAL;
    if (ctl.no_process_list)
        return AMDSMI_STATUS_NOT_SUPPORTED;
    if (*max_processes == 0) {
        *max_processes = 1;
        return AMDSMI_STATUS_SUCCESS;
    }
    if (list == NULL)
        return AMDSMI_STATUS_INVAL;
    memset(&list[0], 0, sizeof(list[0]));
    snprintf(list[0].name, sizeof(list[0].name), "%s", tree ? "python" : "other");
    list[0].pid = tree ? ctl.tree_pid : ctl.other_pid;
    list[0].memory_usage.vram_mem = (tree ? 6144ULL : 1024ULL) * MIB;
    list[0].engine_usage.gfx = (uint64_t)(share * since_init() * 1e9);
    if (tree && ctl.absurd) {
        list[0].memory_usage.vram_mem = 1ULL << 63;
        absurd_leap += 1000000000000000000ULL;
        list[0].engine_usage.gfx = absurd_leap;
    }
    list[0].mem = list[0].memory_usage.vram_mem;
    *max_processes = 1;
    return AMDSMI_STATUS_SUCCESS;
}

#else /* ROCm SMI: devices by index */

typedef enum {
    RSMI_STATUS_SUCCESS = 0x0,
    RSMI_STATUS_INVALID_ARGS = 0x1,
    RSMI_STATUS_NOT_SUPPORTED = 0x2,
    RSMI_STATUS_INIT_ERROR = 0x8,
    RSMI_STATUS_INSUFFICIENT_SIZE = 0xB,
} rsmi_status_t;

typedef struct {
    uint32_t process_id;
    uint32_t pasid;
    uint64_t vram_usage;
    uint64_t sdma_usage;
    uint32_t cu_occupancy;
} rsmi_process_info_t;

typedef enum {
    RSMI_MEM_TYPE_VRAM = 0,
    RSMI_MEM_TYPE_VIS_VRAM,
    RSMI_MEM_TYPE_GTT
} rsmi_memory_type_t;

/* RSMI_STATUS_SUCCESS when device i may be queried */
static rsmi_status_t
check(uint32_t i)
{
    load_control();
    if (init_count <= 0)
        return RSMI_STATUS_INIT_ERROR;
    return i < gpu_count() ? RSMI_STATUS_SUCCESS : RSMI_STATUS_INVALID_ARGS;
}

EXPORT rsmi_status_t
rsmi_init(uint64_t init_flags)
{
    (void)init_flags;
    return stub_init() == AMDSMI_STATUS_SUCCESS ? RSMI_STATUS_SUCCESS : RSMI_STATUS_INIT_ERROR;
}

EXPORT rsmi_status_t
rsmi_shut_down(void)
{
    if (init_count > 0)
        init_count--;
    return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t
rsmi_num_monitor_devices(uint32_t *num_devices)
{
    load_control();
    if (num_devices == NULL)
        return RSMI_STATUS_INVALID_ARGS;
    *num_devices = gpu_count();
    return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t
rsmi_dev_busy_percent_get(uint32_t dv_ind, uint32_t *busy_percent)
{
    rsmi_status_t rc = check(dv_ind);

    if (rc != RSMI_STATUS_SUCCESS)
        return rc;
    hang_if_asked();
    *busy_percent = busy_of((int)dv_ind);
    return RSMI_STATUS_SUCCESS;
}

/* device i's total or used VRAM, as the two memory queries answer */
static rsmi_status_t
memory_query(uint32_t dv_ind, rsmi_memory_type_t type, uint64_t *out, int total)
{
    rsmi_status_t rc = check(dv_ind);

    if (rc != RSMI_STATUS_SUCCESS)
        return rc;
    if (type != RSMI_MEM_TYPE_VRAM || out == NULL)
        return RSMI_STATUS_INVALID_ARGS;
    *out = total ? total_bytes((int)dv_ind) : used_bytes((int)dv_ind);
    return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t
rsmi_dev_memory_total_get(uint32_t dv_ind, rsmi_memory_type_t type, uint64_t *total)
{
    return memory_query(dv_ind, type, total, 1);
}

EXPORT rsmi_status_t
rsmi_dev_memory_usage_get(uint32_t dv_ind, rsmi_memory_type_t type, uint64_t *used)
{
    return memory_query(dv_ind, type, used, 0);
}

EXPORT rsmi_status_t
rsmi_dev_name_get(uint32_t dv_ind, char *name, size_t len)
{
    rsmi_status_t rc = check(dv_ind);

    if (rc != RSMI_STATUS_SUCCESS)
        return rc;
    snprintf(name, len, "%s", gpu_name((int)dv_ind));
    return RSMI_STATUS_SUCCESS;
}

/* average power in microwatts */
EXPORT rsmi_status_t
rsmi_dev_power_ave_get(uint32_t dv_ind, uint32_t sensor_ind, uint64_t *power)
{
    rsmi_status_t rc = check(dv_ind);

    if (rc != RSMI_STATUS_SUCCESS)
        return rc;
    if (sensor_ind != 0)
        return RSMI_STATUS_INVALID_ARGS;
    *power = (uint64_t)average_watts((int)dv_ind) * 1000000ULL;
    return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t
rsmi_dev_energy_count_get(uint32_t dv_ind, uint64_t *power, float *counter_resolution,
                          uint64_t *timestamp)
{
    rsmi_status_t rc = check(dv_ind);

    if (rc != RSMI_STATUS_SUCCESS)
        return rc;
    return energy_count((int)dv_ind, power, counter_resolution, timestamp) == AMDSMI_STATUS_SUCCESS
               ? RSMI_STATUS_SUCCESS
               : RSMI_STATUS_NOT_SUPPORTED;
}

/* the machine's GPU processes: the one outside the tree (GPU 0, 1024 MiB), the tree's (GPU 1,
 * 6144 MiB; 2^63 bytes in absurd mode); INSUFFICIENT_SIZE when they do not fit */
EXPORT rsmi_status_t
rsmi_compute_process_info_get(rsmi_process_info_t *procs, uint32_t *num_items)
{
    uint32_t found = 2, i;

    load_control();
    if (init_count <= 0)
        return RSMI_STATUS_INIT_ERROR;
    if (num_items == NULL)
        return RSMI_STATUS_INVALID_ARGS;
    if (ctl.no_process_list)
        return RSMI_STATUS_NOT_SUPPORTED;
    if (procs == NULL) {
        *num_items = found;
        return RSMI_STATUS_SUCCESS;
    }
    for (i = 0; i < found && i < *num_items; i++) {
        memset(&procs[i], 0, sizeof(procs[i]));
        procs[i].process_id = i == 0 ? ctl.other_pid : ctl.tree_pid;
        procs[i].vram_usage = (i == 0 ? 1024ULL : 6144ULL) * MIB;
        if (i == 1 && ctl.absurd)
            procs[i].vram_usage = 1ULL << 63;
    }
    if (*num_items < found)
        return RSMI_STATUS_INSUFFICIENT_SIZE;
    *num_items = found;
    return RSMI_STATUS_SUCCESS;
}

/* the GPUs of a listed process: the tree's GPU 1, the other one's GPU 0 (and 1 when shared) */
EXPORT rsmi_status_t
rsmi_compute_process_gpus_get(uint32_t pid, uint32_t *dv_indices, uint32_t *num_devices)
{
    uint32_t gpus[2], n = 0, i;

    load_control();
    if (num_devices == NULL)
        return RSMI_STATUS_INVALID_ARGS;
    if (pid == ctl.tree_pid && gpu_count() > 1)
        gpus[n++] = 1;
    else if (pid == ctl.other_pid && gpu_count() > 0) {
        gpus[n++] = 0;
        if (ctl.shared && gpu_count() > 1)
            gpus[n++] = 1;
    }
    if (dv_indices != NULL)
        for (i = 0; i < n && i < *num_devices; i++)
            dv_indices[i] = gpus[i];
    if (dv_indices != NULL && *num_devices < n)
        return RSMI_STATUS_INSUFFICIENT_SIZE;
    *num_devices = n;
    return RSMI_STATUS_SUCCESS;
}

#endif
