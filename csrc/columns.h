/* The column registry: every metric column of the two tables, declared once.
 *
 * A column's name, label, unit, how rows fold when the sampler merges ticks, how stats()
 * aggregates it, which resource it feeds in the recommendation and how many decimals the
 * rounded views keep all live in the one entry in columns.c. The enums give the order of
 * the columns (names and order are the public contract); Python reads the registry as
 * _core.COLUMN_REGISTRY (resource_tracker/registry.py). */
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
    PC_CPU_WAIT,
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
    SC_CPU_ENERGY_J,
    SC_DRAM_ENERGY_J,
    SC_GPU_ENERGY_J,
    SC_COUNT
};

/* How two consecutive rows merge into one (a tick that covers a late one). */
enum ColumnFold {
    FOLD_LATEST, /* a gauge or a key: the later reading */
    FOLD_SUM,    /* an amount during the interval: the two add up */
    FOLD_PEAK,   /* a level the recommendation sizes for: the higher one */
    FOLD_RATE    /* cpu_usage: recomputed from the summed utime + stime */
};

/* What stats() reports for the column. */
enum ColumnAggregate {
    AGG_NONE, /* not in stats() */
    AGG_DIST, /* time-weighted mean, max, p50, p90, p99 */
    AGG_SUM,  /* the total */
    AGG_MAX   /* the highest value */
};

/* The resource a process column sizes in the recommendation. */
enum ColumnResource { RES_NONE, RES_CPU, RES_MEMORY, RES_GPU, RES_VRAM };

typedef struct ColumnSpec {
    const char *name;  /* the column's name in its table */
    const char *label; /* for people, as the seeds print it: "System CPU usage" */
    const char *unit;  /* "s", "cores", "KiB", "MiB", "B", "GB", "GPUs", "J", "W", "count", "" */
    enum ColumnFold fold;
    enum ColumnAggregate aggregate;
    enum ColumnResource resource;
    int digits; /* decimals in the rounded views; -1 keeps the value as it is */
    /* what the column means to the views ("disk_read", "net_recv", "memory", "cpu", ...): one
     * column per role and table; views find columns by role, never by unit or label */
    const char *role;
    const char *chart; /* the report chart that draws it ("diskio", "memory", ...), "" none */
} ColumnSpec;

extern const ColumnSpec process_columns[PC_COUNT];
extern const ColumnSpec system_columns[SC_COUNT];

const char *column_fold_name(enum ColumnFold fold);
const char *column_aggregate_name(enum ColumnAggregate aggregate);
const char *column_resource_name(enum ColumnResource resource);

#endif
