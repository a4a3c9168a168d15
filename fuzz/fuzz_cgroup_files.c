/* libFuzzer target: the cgroup file parsers of the tree source (cgroup_parse.h) on one text:
 * keyed files (cpu.stat, memory.stat, cpuacct.stat), cpuacct.usage, io.stat, blkio and
 * cgroup.procs (into a small array: a count above it is reported, not stored). */
#include "cgroup_parse.h"
#include "fuzz_common.h"

/* 0 always: the parsers must survive any input (ASan/UBSan report what they do wrong) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    unsigned long long a, b;
    pid_t pids[8];
    const char *p, *key;
    size_t klen;

    if (text == NULL)
        return 0;
    parse_cgroup_keyed(text, "usage_usec", &a);
    parse_cgroup_keyed(text, "total_rss", &a);
    for (p = text; p && *p; p = parse_cgroup_next_line(p)) /* every line, as _core.cgroup_keyed */
        if (parse_cgroup_keyed_line(p, &key, &klen, &a) == 0 && (klen == 0 || key != p))
            abort(); /* a key is the line's start, never empty */
    parse_cgroup_number(text, &a);
    parse_cgroup_io_stat(text, &a, &b);
    parse_cgroup_blkio(text, &a, &b);
    parse_cgroup_procs(text, pids, 8);
    free(text);
    return 0;
}
