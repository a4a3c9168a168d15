/* The column registry (see columns.h): one entry per column, in table order. */
#include "columns.h"

#define COL(name, label, unit, fold, agg, res, digits, role, chart)                                \
    {                                                                                              \
        name, label, unit, FOLD_##fold, AGG_##agg, RES_##res, digits, role, chart                  \
    }

const ColumnSpec process_columns[PC_COUNT] = {
    COL("timestamp", "Timestamp", "s", LATEST, NONE, NONE, -1, "timestamp", ""),
    COL("pid", "Process PID", "", LATEST, NONE, NONE, 0, "pid", ""),
    COL("children", "Process children", "processes", PEAK, MAX, NONE, 0, "children", ""),
    COL("utime", "Process CPU time (user)", "s", SUM, NONE, NONE, 4, "cpu_user", ""),
    COL("stime", "Process CPU time (system)", "s", SUM, NONE, NONE, 4, "cpu_system", ""),
    COL("cpu_usage", "Process CPU usage", "cores", RATE, DIST, CPU, 4, "cpu", "cpu"),
    COL("memory", "Process memory usage", "KiB", PEAK, DIST, MEMORY, 0, "memory", "memory"),
    COL("read_bytes", "Process disk read", "B", SUM, SUM, NONE, 0, "disk_read", "diskio"),
    COL("write_bytes", "Process disk write", "B", SUM, SUM, NONE, 0, "disk_write", "diskio"),
    COL("gpu_usage", "Process GPU usage", "GPUs", PEAK, DIST, NONE, 4, "gpu_usage", "gpu"),
    COL("gpu_vram", "Process VRAM used", "MiB", PEAK, DIST, VRAM, 2, "vram", "vram"),
    COL("gpu_utilized", "Process GPUs in use", "GPUs", PEAK, DIST, GPU, 4, "gpu", ""),
    /* cores' worth of the tree's tasks runnable but not running (run-queue wait, sched_wait.h):
     * a busy machine or a CPU quota held them; tuning tells a starved run from it */
    COL("cpu_wait", "Process CPU wait", "cores", PEAK, DIST, NONE, 4, "cpu_wait", ""),
};

const ColumnSpec system_columns[SC_COUNT] = {
    COL("timestamp", "Timestamp", "s", LATEST, NONE, NONE, -1, "timestamp", ""),
    COL("processes", "System processes", "processes", LATEST, NONE, NONE, 0, "processes", ""),
    COL("utime", "System CPU time (user)", "s", SUM, NONE, NONE, 4, "cpu_user", ""),
    COL("stime", "System CPU time (system)", "s", SUM, NONE, NONE, 4, "cpu_system", ""),
    COL("cpu_usage", "System CPU usage", "cores", RATE, DIST, NONE, 4, "cpu", "cpu"),
    COL("memory_free", "System free memory", "KiB", LATEST, NONE, NONE, 0, "memory_free", ""),
    COL("memory_used", "System used memory", "KiB", LATEST, DIST, NONE, 0, "memory", "memory"),
    COL("memory_buffers", "System memory buffers", "KiB", LATEST, NONE, NONE, 0, "memory_buffers",
        ""),
    COL("memory_cached", "System memory page/file cached", "KiB", LATEST, NONE, NONE, 0,
        "memory_cached", ""),
    COL("memory_active", "System active memory", "KiB", LATEST, NONE, NONE, 0, "memory_active", ""),
    COL("memory_inactive", "System inactive memory", "KiB", LATEST, NONE, NONE, 0,
        "memory_inactive", ""),
    COL("disk_read_bytes", "System disk read", "B", SUM, SUM, NONE, 0, "disk_read", "diskio"),
    COL("disk_write_bytes", "System disk write", "B", SUM, SUM, NONE, 0, "disk_write", "diskio"),
    COL("disk_space_total_gb", "System disk space total", "GB", LATEST, NONE, NONE, 2,
        "disk_space_total", "diskspace"),
    COL("disk_space_used_gb", "System disk space used", "GB", LATEST, MAX, NONE, 2,
        "disk_space_used", "diskspace"),
    COL("disk_space_free_gb", "System disk space free", "GB", LATEST, NONE, NONE, 2,
        "disk_space_free", ""),
    COL("net_recv_bytes", "System inbound network traffic", "B", SUM, SUM, NONE, 0, "net_recv",
        "network"),
    COL("net_sent_bytes", "System outbound network traffic", "B", SUM, SUM, NONE, 0, "net_sent",
        "network"),
    COL("gpu_usage", "System GPU usage", "GPUs", PEAK, DIST, NONE, 4, "gpu_usage", "gpu"),
    COL("gpu_vram", "System VRAM used", "MiB", PEAK, DIST, NONE, 2, "vram", "vram"),
    COL("gpu_utilized", "System GPUs in use", "GPUs", PEAK, DIST, NONE, 4, "gpu", ""),
    COL("cpu_energy_j", "System CPU package energy (RAPL)", "J", SUM, SUM, NONE, 3, "cpu_energy",
        ""),
    COL("dram_energy_j", "System DRAM energy (RAPL)", "J", SUM, SUM, NONE, 3, "dram_energy", ""),
    COL("gpu_energy_j", "System GPU energy", "J", SUM, SUM, NONE, 3, "gpu_energy", ""),
};

const char *
column_fold_name(enum ColumnFold fold)
{
    static const char *const names[] = {"latest", "sum", "peak", "rate"};
    return names[fold];
}

const char *
column_aggregate_name(enum ColumnAggregate aggregate)
{
    static const char *const names[] = {"none", "dist", "sum", "max"};
    return names[aggregate];
}

const char *
column_resource_name(enum ColumnResource resource)
{
    static const char *const names[] = {"", "cpu", "memory", "gpu", "vram"};
    return names[resource];
}
