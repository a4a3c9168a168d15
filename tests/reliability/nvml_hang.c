/* The tests' NVML stand-in (tests/gpu_cloud/nvml_stub.c, included, not copied) with one call
 * that hangs: nvmlDeviceGetUtilizationRates sleeps NVML_STUB_HANG_MS milliseconds (env, read
 * at each call; 0 or unset: no delay) before answering, as a wedged driver does. */
#include <stdlib.h>
#include <time.h>

#define nvmlDeviceGetUtilizationRates stub_utilization_rates
#include "nvml_stub.c"
#undef nvmlDeviceGetUtilizationRates

/* the stand-in's answer, after the configured delay */
EXPORT nvmlReturn_t
nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *util)
{
    const char *env = getenv("NVML_STUB_HANG_MS");
    long ms = env ? strtol(env, NULL, 10) : 0;
    struct timespec ts;

    if (ms > 0) {
        ts.tv_sec = ms / 1000;
        ts.tv_nsec = (ms % 1000) * 1000000L;
        nanosleep(&ts, NULL);
    }
    return stub_utilization_rates(dev, util);
}
