/* The one platform boundary of the C core.
 *
 * The portable core (columns, stats and the resource rules, table, textbuf, module.c,
 * py_stats.c) builds on any POSIX system. The Linux readers (procfs and cgroup, the sampler
 * thread over them, NVML loaded with dlopen, cloud discovery and the Keeper API over libcurl and
 * cJSON) build only where RT_HAVE_PROCFS is 1: setup.py leaves their source files out
 * otherwise, and module.c registers them in one place under this macro.
 *
 * RT_PORTABLE (setup.py: RESOURCE_TRACKER_PORTABLE=1, or any non-Linux platform) builds the
 * portable core alone, as a non-Linux platform would, so that this boundary is tested on Linux.
 * Python then samples with psutil (resource_tracker/psutil_sampler.py). */
#ifndef RT_PLATFORM_H
#define RT_PLATFORM_H

#if defined(__linux__) && !defined(RT_PORTABLE)
#define RT_HAVE_PROCFS 1 /* the Linux readers are built and registered */
#define RT_HAVE_MREMAP 1 /* table columns are mappings grown in place (table.c) */
#else
#define RT_HAVE_PROCFS 0
#define RT_HAVE_MREMAP 0
#endif

#endif
