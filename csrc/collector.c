#include "collector.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "columns.h"
#include "row_rules.h"

/* CPUs listed in <proc_root>/stat ("cpuN" lines); the online CPUs when it cannot be read. */
static int
machine_cpus(Collector *collector)
{
    TextBuf *buf = &collector->tree.buf;
    const char *line;
    int n = 0;

    line = textbuf_read_at(buf, collector->tree.proc.fd, "stat") >= 0 ? buf->data : NULL;
    while (line != NULL) {
        if (strncmp(line, "cpu", 3) == 0 && line[3] >= '0' && line[3] <= '9')
            n++;
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    if (n <= 0)
        n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

/* CPUs pid may run on (its affinity mask), at most machine; machine when unknown. */
static int
process_cpus(const CollectorConfig *cfg, int machine)
{
    cpu_set_t set;
    int n;

    if (cfg->proc_root[0] && strcmp(cfg->proc_root, "/proc") != 0)
        return machine; /* another procfs (tests, a container's view): no affinity of it */
    if (!cfg->track_processes || sched_getaffinity(cfg->pid, sizeof(set), &set) != 0)
        return machine;
    n = CPU_COUNT(&set);
    return n > 0 && n < machine ? n : machine;
}

static void
set_cpu_caps(Collector *collector)
{
    int machine = machine_cpus(collector);

    collector->system_cores = machine;
    collector->process_cores = process_cpus(&collector->cfg, machine);
    collector->tick_s = ROW_CLOCK_TICK_S;
}

/* 0 on success */
int
collector_init(Collector *collector, const CollectorConfig *cfg)
{
    memset(collector, 0, sizeof(*collector));
    collector->cfg = *cfg;
    /* the tree also counts the system's processes; without process tracking it has no root */
    if (proc_tree_init(&collector->tree, cfg->proc_root, cfg->track_processes ? cfg->pid : -1,
                       cfg->track_processes && cfg->follow_children) != 0)
        return -1;
    collector->tree.count_processes = cfg->track_system;
    if (cfg->child_listing)
        proc_tree_use_listing(&collector->tree);
    cgroup_tree_init(&collector->cgroup, collector->tree.proc.fd, cfg->pid,
                     cfg->follow_children ? cfg->adopter : 0);
    collector->walked_last = 1;
    sched_wait_init(&collector->wait);
    if (cfg->track_processes && cfg->follow_children && cfg->adopter > 0)
        proc_tree_adopt_children_of(&collector->tree, cfg->adopter);
    if (system_stats_init(&collector->system, cfg->proc_root,
                          cfg->sys_root[0] ? cfg->sys_root : NULL) != 0) {
        proc_tree_free(&collector->tree);
        return -1;
    }
    powercap_init(&collector->powercap, cfg->sys_root[0] ? cfg->sys_root : NULL);
    return 0;
}

/* the tree's member pids: from the walk when it ran at this tick, else from the cgroup */
static size_t
member_pids(const Collector *collector, pid_t *out, size_t cap)
{
    if (collector->walked_last)
        return proc_tree_member_pids(&collector->tree, out, cap);
    return cgroup_tree_member_pids(&collector->cgroup, out, cap);
}

/* Room for n members in member_pids and member_hints: 0, or -1 (out of memory). */
static int
grow_members(Collector *collector, size_t n)
{
    pid_t *pids;
    WaitHint *hints;

    if (n <= collector->member_pids_cap)
        return 0;
    if ((pids = realloc(collector->member_pids, n * 2 * sizeof(pid_t))) == NULL)
        return -1;
    collector->member_pids = pids;
    if ((hints = realloc(collector->member_hints, n * 2 * sizeof(WaitHint))) == NULL)
        return -1;
    collector->member_hints = hints;
    collector->member_pids_cap = n * 2;
    return 0;
}

/* The tree's member pids in collector->member_pids (grown as needed): how many there are. */
static size_t
current_member_pids(Collector *collector)
{
    size_t n = member_pids(collector, collector->member_pids, collector->member_pids_cap);

    if (n > collector->member_pids_cap) {
        if (grow_members(collector, n) != 0)
            return 0;
        n = member_pids(collector, collector->member_pids, collector->member_pids_cap);
    }
    return n < collector->member_pids_cap ? n : collector->member_pids_cap;
}

/* The tree's member pids as current_member_pids() does (*n of them) and what the walk knows of
 * each (collector->member_hints), or NULL where the tick read the tree's cgroup. */
static const WaitHint *
current_member_hints(Collector *collector, size_t *n)
{
    size_t cap = collector->member_pids_cap;

    if (!collector->walked_last) {
        *n = current_member_pids(collector);
        return NULL;
    }
    *n = proc_tree_member_hints(&collector->tree, collector->member_pids, collector->member_hints,
                                cap);
    if (*n > cap) {
        if (grow_members(collector, *n) != 0) {
            *n = 0;
            return NULL;
        }
        cap = collector->member_pids_cap;
        *n = proc_tree_member_hints(&collector->tree, collector->member_pids,
                                    collector->member_hints, cap);
    }
    if (*n > cap)
        *n = cap;
    return collector->member_hints;
}

/* GPU readings for the tree's members (the library is loaded on first use, in this thread). */
static void
read_gpus(Collector *collector, double dt, GpuReading *system, GpuReading *process)
{
    size_t n;

    memset(system, 0, sizeof(*system));
    memset(process, 0, sizeof(*process));
    if (!collector->gpu_tried) {
        collector->gpu_tried = 1;
        collector->gpu =
            gpu_monitor_open(collector->cfg.nvml_library[0] ? collector->cfg.nvml_library : NULL,
                             collector->cfg.amd_library[0] ? collector->cfg.amd_library : NULL);
    }
    if (collector->gpu == NULL)
        return;
    n = current_member_pids(collector);
    gpu_monitor_sample(collector->gpu, collector->member_pids, n, dt, system, process);
}

/* The seconds the tree's tasks waited for a CPU during the interval (sched_wait.h; the
 * sampler's own thread left out), -1 when unknown. In the sampler thread. */
static double
read_wait(Collector *collector, double dt)
{
    const WaitHint *hints;
    size_t n;

    if (!collector->cfg.track_processes)
        return -1.0;
    hints = current_member_hints(collector, &n);
    return sched_wait_sample(&collector->wait, collector->tree.proc.fd, collector->member_pids,
                             hints, n, dt, (pid_t)syscall(SYS_gettid));
}

static void
fill_process_row(Collector *collector, const ProcTreeReading *tree, int self_in_tree,
                 const GpuReading *gpu, const OwnUsage *own, double dt, double wall, double *row)
{
    double memory = tree->memory_kib;

    if (own && self_in_tree)
        memory = memory > own->memory_kib ? memory - own->memory_kib : 0.0;
    row[PC_TIMESTAMP] = wall;
    row[PC_PID] = (double)collector->cfg.pid;
    row[PC_CHILDREN] = (double)(tree->members - (tree->root_alive ? 1 : 0));
    row[PC_UTIME] = tree->interval.user_s;
    row[PC_STIME] = tree->interval.sys_s;
    row[PC_CPU_USAGE] = row_cpu_rate(tree->interval.user_s + tree->interval.sys_s, dt,
                                     collector->tick_s, collector->process_cores);
    row[PC_MEMORY] = memory;
    row[PC_READ_BYTES] = tree->interval.read_b;
    row[PC_WRITE_BYTES] = tree->interval.write_b;
    row[PC_GPU_USAGE] = gpu->usage;
    row[PC_GPU_VRAM] = gpu->vram_mib;
    row[PC_GPU_UTILIZED] = gpu->utilized;
    row[PC_CPU_WAIT] = collector->wait_s > 0 && dt > 0 ? collector->wait_s / dt : 0.0;
}

/* The machine's energy columns (the process's share is estimated from the run's figures:
 * resource_tracker/_energy.py) */
static void
fill_energy(const PowercapReading *rapl, const GpuReading *gpu_system, double *srow)
{
    srow[SC_CPU_ENERGY_J] = rapl->package_j;
    srow[SC_DRAM_ENERGY_J] = rapl->dram_j;
    srow[SC_GPU_ENERGY_J] = gpu_system->energy_j;
}

static void
fill_system_row(const Collector *collector, const SystemReading *sys, const GpuReading *gpu,
                int processes, double dt, double wall, double *row)
{
    row[SC_TIMESTAMP] = wall;
    row[SC_PROCESSES] = (double)processes;
    row[SC_UTIME] = sys->user_s;
    row[SC_STIME] = sys->sys_s;
    row[SC_CPU_USAGE] =
        row_cpu_rate(sys->user_s + sys->sys_s, dt, collector->tick_s, collector->system_cores);
    row[SC_MEMORY_FREE] = sys->free_kib;
    row[SC_MEMORY_USED] = sys->used_kib;
    row[SC_MEMORY_BUFFERS] = sys->buffers_kib;
    row[SC_MEMORY_CACHED] = sys->cached_kib;
    row[SC_MEMORY_ACTIVE] = sys->active_kib;
    row[SC_MEMORY_INACTIVE] = sys->inactive_kib;
    row[SC_DISK_READ_BYTES] = sys->disk_read_b;
    row[SC_DISK_WRITE_BYTES] = sys->disk_write_b;
    row[SC_DISK_SPACE_TOTAL_GB] = sys->space_total_gb;
    row[SC_DISK_SPACE_USED_GB] = sys->space_used_gb;
    row[SC_DISK_SPACE_FREE_GB] = sys->space_free_gb;
    row[SC_NET_RECV_BYTES] = sys->net_recv_b;
    row[SC_NET_SENT_BYTES] = sys->net_sent_b;
    row[SC_GPU_USAGE] = gpu->usage;
    row[SC_GPU_VRAM] = gpu->vram_mib;
    row[SC_GPU_UTILIZED] = gpu->utilized;
}

/* Processes on the system while the walk does not run: /proc listed at most every
 * LISTING_MAX_AGE seconds (a cost of the machine's size, not of the tree's, and rare). */
static int
count_processes(Collector *collector, double mono)
{
    KeptFd opened;
    DIR *dir;
    struct dirent *d;
    int n = 0;

    if (collector->processes_at > 0 && mono - collector->processes_at < LISTING_MAX_AGE)
        return collector->processes;
    dir = kept_dir_open_at(&opened, collector->tree.proc.fd, ".");
    if (dir == NULL)
        return collector->processes;
    while ((d = readdir(dir)) != NULL)
        n += d->d_name[0] >= '1' && d->d_name[0] <= '9';
    kept_dir_close(dir, &opened);
    collector->processes = n;
    collector->processes_at = mono;
    return n;
}

/* The process walk of this tick into walk; its rises count only when it ran at the previous
 * tick too (after ticks without it they span those ticks, which the cgroup counted). */
static void
walk_tree(Collector *collector, double mono, ProcTreeReading *walk, int *walked, int *fresh)
{
    proc_tree_sample(&collector->tree, mono, walk);
    *fresh = collector->walked_last;
    *walked = 1;
    collector->walks++;
    collector->processes = walk->processes;
    collector->processes_at = mono;
}

/* The tree's reading at this tick: the cgroup's columns where it gives them, the walk's for
 * the rest (the walk runs only when a column needs it, or the cgroup's first reading). */
static void
read_tree(Collector *collector, double mono, const OwnUsage *own, ProcTreeReading *out,
          int *self_in_tree)
{
    ProcTreeReading walk;
    CgroupReading cg;
    int walked = 0, fresh = 0, on;

    memset(&walk, 0, sizeof(walk));
    if (own)
        collector->tree.self_offset = own->cpu;
    if (cgroup_tree_needs_walk(&collector->cgroup) || !cgroup_tree_covers_all(&collector->cgroup))
        walk_tree(collector, mono, &walk, &walked, &fresh);
    on = cgroup_tree_sample(&collector->cgroup, mono, walked ? &collector->tree : NULL,
                            own ? &own->cpu : NULL, &cg);
    if (!walked && !(on && cg.have_interval[CG_CPU] && cg.have[CG_MEMORY] &&
                     cg.have_interval[CG_IO] && cgroup_tree_covers_all(&collector->cgroup)))
        walk_tree(collector, mono, &walk, &walked, &fresh);
    *out = walk;
    if (!on || !cg.have_interval[CG_CPU]) {
        out->interval.user_s = fresh ? walk.interval.user_s : 0.0;
        out->interval.sys_s = fresh ? walk.interval.sys_s : 0.0;
    } else {
        out->interval.user_s = cg.interval.user_s;
        out->interval.sys_s = cg.interval.sys_s;
    }
    if (!on || !cg.have_interval[CG_IO]) {
        out->interval.read_b = fresh ? walk.interval.read_b : 0.0;
        out->interval.write_b = fresh ? walk.interval.write_b : 0.0;
    } else {
        out->interval.read_b = cg.interval.read_b;
        out->interval.write_b = cg.interval.write_b;
    }
    /* a cgroup found shared at this tick: its rises above still count (the stranger joined
     * during the interval), its levels and member list no more (the walk ran) */
    if (on && collector->cgroup.state != CG_ON)
        on = 0;
    if (on && cg.have[CG_MEMORY])
        out->memory_kib = cg.memory_kib;
    if (on) {
        out->members = cg.members;
        out->root_alive = cg.root_alive;
    }
    *self_in_tree = on ? cg.self_member : proc_tree_contains(&collector->tree, getpid());
    collector->walked_last = walked;
    if (!walked)
        out->processes = collector->cfg.track_system ? count_processes(collector, mono) : 0;
}

/* 1 when the root lives though no reading found it: it exists for the kernel (kill(2):
 * also a process of another user) and its stat is unreadable here (a readable one is a
 * zombie's, or that of another process that got the pid: neither is hidden) */
static int
root_hidden(Collector *collector)
{
    char path[32];

    if (kill(collector->cfg.pid, 0) != 0 && errno != EPERM)
        return 0; /* gone */
    snprintf(path, sizeof(path), "%d/stat", (int)collector->cfg.pid);
    return textbuf_read_path(&collector->tree.buf, collector->tree.proc.fd, path, O_NONBLOCK) <= 0;
}

/* 0 for the baseline, 1 when rows were filled */
int
collector_sample(Collector *collector, double mono, double wall, const OwnUsage *own, double *prow,
                 double *srow)
{
    ProcTreeReading tree;
    SystemReading sys;
    GpuReading gpu_system, gpu_process;
    PowercapReading rapl;
    double dt = mono - collector->last_mono;
    int self_in_tree = 0;

    /* the procfs root the tree and the cgroup read under (opened again if it was replaced) */
    collector->cgroup.proc_fd = proc_tree_check_root(&collector->tree);
    read_tree(collector, mono, own, &tree, &self_in_tree);
    if (collector->tree.fd_sheds > 0 && !collector->system.kept_given_back)
        system_stats_give_back(&collector->system); /* the application ran short of them */
    if (tree.members > 0)
        collector->tree_seen++;
    else if (collector->cfg.track_processes && root_hidden(collector))
        collector->tree_missed++;
    memset(&sys, 0, sizeof(sys));
    memset(&rapl, 0, sizeof(rapl));
    if (collector->cfg.track_system) {
        system_stats_sample(&collector->system, mono, &sys);
        powercap_sample(&collector->powercap, mono, &rapl);
    }
    if (collector->has_baseline || !collector->cfg.gpu_from_first_row) {
        read_gpus(collector, collector->has_baseline ? dt : 0.0, &gpu_system, &gpu_process);
    } else { /* a process that ends before its first row never loads the GPU library */
        memset(&gpu_system, 0, sizeof(gpu_system));
        memset(&gpu_process, 0, sizeof(gpu_process));
    }
    collector->gpu_last = gpu_system;
    collector->gpu_energy_integrated += gpu_system.integrated;
    collector->gpu_machine_wide += gpu_process.machine_wide;
    collector->wait_s = read_wait(collector, dt);
    collector->last_mono = mono;
    if (!collector->has_baseline) {
        set_cpu_caps(collector); /* at the baseline: in the sampler thread, not in start() */
        collector->has_baseline = 1;
        return 0;
    }
    fill_process_row(collector, &tree, self_in_tree, &gpu_process, own, dt, wall, prow);
    fill_system_row(collector, &sys, &gpu_system, tree.processes, dt, wall, srow);
    fill_energy(&rapl, &gpu_system, srow);
    return 1;
}

void
collector_use_cgroup(Collector *collector, const CgroupTreeConfig *cfg)
{
    if (!collector->released && collector->cfg.track_processes && collector->cfg.follow_children)
        cgroup_tree_request(&collector->cgroup, cfg);
}

void
collector_last_reading(Collector *collector)
{
    proc_tree_read_everything(&collector->tree);
}

void
collector_fold_rows(const Collector *collector, double *pp, double *ps, const double *p,
                    const double *s, double prev_dt, double part_dt)
{
    double dt = prev_dt + part_dt;

    if (pp) {
        row_fold(process_columns, PC_COUNT, pp, p, dt, collector->tick_s, collector->process_cores);
    }
    if (ps) {
        row_fold(system_columns, SC_COUNT, ps, s, dt, collector->tick_s, collector->system_cores);
    }
}

/* heap bytes held */
size_t
collector_bytes(const Collector *collector)
{
    return proc_tree_bytes(&collector->tree) + cgroup_tree_bytes(&collector->cgroup) +
           collector->system.buf.cap + collector->powercap.buf.cap +
           collector->member_pids_cap * (sizeof(pid_t) + sizeof(WaitHint)) +
           sched_wait_bytes(&collector->wait);
}

void
collector_release(Collector *collector)
{
    if (collector->released)
        return;
    cgroup_tree_free(&collector->cgroup);
    proc_tree_free(&collector->tree);
    sched_wait_free(&collector->wait);
    system_stats_free(&collector->system);
    powercap_free(&collector->powercap);
    if (collector->gpu)
        gpu_monitor_close(collector->gpu);
    collector->gpu = NULL;
    free(collector->member_pids);
    free(collector->member_hints);
    collector->member_pids = NULL;
    collector->member_hints = NULL;
    collector->member_pids_cap = 0;
    collector->released = 1;
}

void
collector_free(Collector *collector)
{
    collector_release(collector);
}
