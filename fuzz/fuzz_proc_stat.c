/* libFuzzer target: parse_proc_stat_cpu() and parse_proc_stat_forks() on /proc/stat text. */
#include "fuzz_common.h"
#include "procfs_parse.h"

/* 0 always: the parser must survive any input (ASan/UBSan report what it does wrong) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);

    if (text == NULL)
        return 0;
    CpuTimes cpu;
    unsigned long long forks = 0;
    parse_proc_stat_cpu(text, &cpu);
    parse_proc_stat_forks(text, &forks);
    free(text);
    return 0;
}
