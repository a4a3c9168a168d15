/* The metric columns of the two tables (names and order are the public contract). */
#ifndef RT_COLUMNS_H
#define RT_COLUMNS_H

enum ProcessColumn {
    PC_TIMESTAMP,
    PC_PID,
    PC_CHILDREN,
    PC_UTIME,
    PC_STIME,
    PC_CPU_USAGE,
    PC_MEMORY,
    PC_READ_BYTES,
    PC_WRITE_BYTES,
    PC_GPU_USAGE,
    PC_GPU_VRAM,
    PC_GPU_UTILIZED,
    PC_COUNT
};

enum SystemColumn {
    SC_TIMESTAMP,
    SC_PROCESSES,
    SC_UTIME,
    SC_STIME,
    SC_CPU_USAGE,
    SC_MEMORY_FREE,
    SC_MEMORY_USED,
    SC_MEMORY_BUFFERS,
    SC_MEMORY_CACHED,
    SC_MEMORY_ACTIVE,
    SC_MEMORY_INACTIVE,
    SC_DISK_READ_BYTES,
    SC_DISK_WRITE_BYTES,
    SC_DISK_SPACE_TOTAL_GB,
    SC_DISK_SPACE_USED_GB,
    SC_DISK_SPACE_FREE_GB,
    SC_NET_RECV_BYTES,
    SC_NET_SENT_BYTES,
    SC_GPU_USAGE,
    SC_GPU_VRAM,
    SC_GPU_UTILIZED,
    SC_COUNT
};

extern const char *const process_column_names[PC_COUNT];
extern const char *const system_column_names[SC_COUNT];

#endif
