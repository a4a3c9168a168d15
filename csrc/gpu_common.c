/* What the GPU vendors' readers share (gpu_common.h). */
#include "gpu_common.h"

void
gpu_energy_add(GpuEnergyCounter *c, double watts, double counter_j, double dt, GpuReading *system)
{
    if (!(watts >= 0 && watts <= GPU_MAX_WATTS))
        watts = 0.0;
    system->power_w += watts;
    if (counter_j >= 0) {
        double span = dt > 1.0 ? dt : 1.0;
        int rose =
            c->has_j && counter_j >= c->last_j && counter_j - c->last_j <= GPU_MAX_WATTS * span;
        double joules = rose ? counter_j - c->last_j : -1.0;
        c->last_j = counter_j;
        c->has_j = 1;
        if (joules >= 0) {
            system->energy_j += joules;
            return;
        }
    }
    if (watts > 0 && dt > 0) {
        system->energy_j += watts * dt;
        system->integrated += !c->has_j; /* a GPU with a counter: at its first reading only */
    }
}

void
gpu_add_device(GpuReading *system, size_t series_index, double util, double used_mib)
{
    if (!(util >= 0 && util <= 100))
        util = 0.0;
    if (used_mib >= 0) {
        system->vram_mib += used_mib;
        if (series_index < GPU_SERIES_MAX)
            system->device_vram_mib[series_index] = used_mib;
    }
    if (series_index < GPU_SERIES_MAX)
        system->device_util[series_index] = util;
    system->usage += util / 100.0;
    system->utilized += util > 0 ? 1.0 : 0.0;
}

double
gpu_sum_over_tree(const PidMap *seen, const PidMap *tree, double limit, int *mine, int *others)
{
    double total = 0.0;
    size_t i;

    for (i = 0; i < seen->cap; i++) {
        if (seen->keys[i] == PID_MAP_EMPTY)
            continue;
        if (!pid_map_has(tree, seen->keys[i])) {
            *others = 1;
            continue;
        }
        *mine = 1;
        if (seen->values[i] <= limit)
            total += seen->values[i];
    }
    return total;
}
