/* libFuzzer target: parse_pid_stat() on /proc/<pid>/stat text. */
#include "fuzz_common.h"
#include "procfs_parse.h"

/* 0 always: the parser must survive any input (ASan/UBSan report what it does wrong) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);

    if (text == NULL)
        return 0;
    PidStat st;
    parse_pid_stat(text, &st);
    free(text);
    return 0;
}
