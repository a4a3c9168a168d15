#include "sampler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "columns.h"

/* Copies the collector's counters and where the tree's columns come from (an EngineSource
 * publish(): the caller holds the engine's lock; at sampler_new, no thread yet). */
static void
publish_counters(void *arg)
{
    Sampler *s = arg;
    const Collector *c = &s->collector;
    const CgroupTree *cg = &c->cgroup;
    int i;

    s->pss_seconds = c->tree.pss_seconds;
    s->pss_reads = c->tree.pss_reads;
    s->memory_hwm_kib = (double)c->tree.hwm_kib;
    s->read_errors = c->tree.read_errors + c->system.read_errors;
    s->io_denied = c->tree.io_denied;
    s->pss_denied = c->tree.pss_denied;
    s->listings = c->tree.listings;
    s->probes = c->tree.probes;
    s->children_scans = c->tree.scans;
    s->wait_reads = c->wait.task_reads;
    s->wait_carried = c->wait.tasks_carried;
    s->list_failures = c->tree.list_failures;
    s->children_lists = c->tree.children_lists;
    s->fd_sheds = c->tree.fd_sheds;
    s->kept_open = (unsigned long)c->tree.kept_open;
    s->fds_replaced = c->tree.fds_replaced + c->system.fds_replaced + cg->fds_replaced;
    s->powercap_zones = (unsigned long)powercap_zone_count(&c->powercap);
    s->powercap_unreadable = c->powercap.unreadable;
    s->powercap_wraps = c->powercap.wraps;
    s->gpu_energy_integrated = c->gpu_energy_integrated;
    s->gpu_machine_wide = c->gpu_machine_wide;
    s->gpu_tried = c->gpu_tried;
    gpu_monitor_sources(c->gpu, &s->gpu_sources);
    s->tree_seen = c->tree_seen;
    s->tree_missed = c->tree_missed;
    snprintf(s->tree_source, sizeof(s->tree_source), "%s", cgroup_tree_source(cg));
    for (i = 0; i < CG_COLUMNS; i++)
        snprintf(s->column_source[i], sizeof(s->column_source[i]), "%s",
                 cgroup_tree_column_source(cg, i));
    snprintf(s->tree_note, sizeof(s->tree_note), "%s", cg->note);
    s->cgroup_reads = cg->reads;
    s->cgroup_readings = cg->ticks;
    s->walks = c->walks;
}

/* At the first row: the GPUs of the per-GPU series (the first GPU_SERIES_MAX), their names
 * and memory, the engine's side series opened for them. */
static void
open_gpu_series(Sampler *s)
{
    size_t n = gpu_monitor_count(s->collector.gpu);

    s->gpu_series_tried = 1;
    if (n == 0 || !s->collector.cfg.track_system)
        return;
    n = n < GPU_SERIES_MAX ? n : GPU_SERIES_MAX;
    gpu_monitor_inventory(s->collector.gpu, s->gpu_info, n);
    engine_open_side(s->engine, 2 * n);
}

/* An EngineSource side_row(): utilisation % and used MiB of each GPU in turn, of the last
 * reading. */
static void
gpu_row(void *arg, double *row, size_t ncols)
{
    const GpuReading *g = &((Sampler *)arg)->collector.gpu_last;
    size_t i;

    for (i = 0; 2 * i + 1 < ncols; i++) {
        row[2 * i] = g->device_util[i];
        row[2 * i + 1] = g->device_vram_mib[i];
    }
}

/* An EngineSource read(): one collector pass. The tracker's own usage is handed over as the
 * collector takes it off the tree: the thread's CPU split into user and system time
 * (getrusage; the stack captures' thread counted as user time), the memory of the rows and of
 * the collector. Outside the engine thread the CPU stays the thread's last. */
static int
procfs_read(void *arg, double mono, double wall, const EngineOwn *own, double *prow, double *srow)
{
    Sampler *s = arg;
    struct rusage ru;
    int filled;

    if (own->cpu_s >= 0 && getrusage(RUSAGE_THREAD, &ru) == 0) {
        s->own.cpu.user_s =
            (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + own->hook_cpu_s;
        s->own.cpu.sys_s = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    }
    s->own.memory_kib = own->memory_kib + (double)collector_bytes(&s->collector) / 1024.0;
    filled = collector_sample(&s->collector, mono, wall, &s->own, prow, srow);
    if (filled && !s->gpu_series_tried)
        open_gpu_series(s);
    return filled;
}

/* An EngineSource after_baseline(): hands the hook its arg (once); an arg the hook refused
 * is kept for its owner. */
static void
run_after_baseline(void *arg)
{
    Sampler *s = arg;
    void *job = sampler_take_after_baseline(s);

    if (job != NULL && s->after_baseline(job) != 0) {
        engine_lock(s->engine);
        s->after_baseline_arg = job;
        engine_unlock(s->engine);
    }
}

/* An EngineSource after_rows(): the row hook (the stack captures), its thread's CPU. */
static double
run_row_hook(void *arg, size_t rows)
{
    Sampler *s = arg;

    return s->row_hook ? s->row_hook(s->row_hook_arg, rows) : 0.0;
}

static void
last_reading(void *arg)
{
    collector_last_reading(&((Sampler *)arg)->collector);
}

static void
release_collector(void *arg)
{
    collector_release(&((Sampler *)arg)->collector);
}

/* An EngineSource free(): everything the reader holds (no thread uses it any more). */
static void
sampler_destroy(void *arg)
{
    Sampler *s = arg;

    if (s->row_hook_free)
        s->row_hook_free(s->row_hook_arg);
    collector_free(&s->collector);
    free(s);
}

/* a new sampler, or NULL with errno */
Sampler *
sampler_new(const CollectorConfig *cfg, double interval)
{
    EngineSource source = {.read = procfs_read,
                           .free = sampler_destroy,
                           .publish = publish_counters,
                           .side_row = gpu_row,
                           .after_baseline = run_after_baseline,
                           .after_rows = run_row_hook,
                           .last_reading = last_reading,
                           .release = release_collector};
    EngineConfig ecfg;
    Sampler *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    if (collector_init(&s->collector, cfg) != 0) {
        int saved = errno;
        free(s);
        errno = saved;
        return NULL;
    }
    ecfg.interval = interval;
    ecfg.track_processes = cfg->track_processes;
    ecfg.track_system = cfg->track_system;
    ecfg.process_cores = s->collector.process_cores;
    ecfg.system_cores = s->collector.system_cores;
    source.arg = s;
    publish_counters(s);
    s->engine = engine_new(&source, &ecfg);
    if (s->engine == NULL) {
        collector_free(&s->collector);
        free(s);
        errno = ENOMEM;
        return NULL;
    }
    return s;
}

void
sampler_use_cgroup(Sampler *sampler, const CgroupTreeConfig *cfg)
{
    engine_lock_reader(sampler->engine);
    collector_use_cgroup(&sampler->collector, cfg);
    engine_unlock_reader(sampler->engine);
}

void
sampler_set_after_baseline(Sampler *sampler, SamplerHook hook, void *arg)
{
    engine_lock(sampler->engine);
    sampler->after_baseline = hook;
    sampler->after_baseline_arg = arg;
    engine_unlock(sampler->engine);
}

void
sampler_set_row_hook(Sampler *sampler, SamplerRowHook hook, void (*free_arg)(void *arg), void *arg)
{
    engine_lock(sampler->engine);
    sampler->row_hook = hook;
    sampler->row_hook_arg = arg;
    sampler->row_hook_free = free_arg;
    engine_unlock(sampler->engine);
}

void *
sampler_take_after_baseline(Sampler *sampler)
{
    void *arg;

    engine_lock(sampler->engine);
    arg = sampler->after_baseline_arg;
    sampler->after_baseline_arg = NULL;
    engine_unlock(sampler->engine);
    return arg;
}

void
sampler_free(Sampler *sampler)
{
    if (sampler != NULL)
        engine_free(sampler->engine); /* frees sampler (sampler_destroy) */
}
