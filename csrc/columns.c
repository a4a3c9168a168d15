#include "columns.h"

const char *const process_column_names[PC_COUNT] = {
    "timestamp", "pid",        "children",    "utime",     "stime",    "cpu_usage",
    "memory",    "read_bytes", "write_bytes", "gpu_usage", "gpu_vram", "gpu_utilized",
};

const char *const system_column_names[SC_COUNT] = {
    "timestamp",
    "processes",
    "utime",
    "stime",
    "cpu_usage",
    "memory_free",
    "memory_used",
    "memory_buffers",
    "memory_cached",
    "memory_active",
    "memory_inactive",
    "disk_read_bytes",
    "disk_write_bytes",
    "disk_space_total_gb",
    "disk_space_used_gb",
    "disk_space_free_gb",
    "net_recv_bytes",
    "net_sent_bytes",
    "gpu_usage",
    "gpu_vram",
    "gpu_utilized",
};
