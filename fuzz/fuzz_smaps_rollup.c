/* libFuzzer target: parse_smaps_rollup() on /proc/<pid>/smaps_rollup text, and
 * parse_status_hwm() on the same text (/proc/<pid>/status has the same "Key: value kB" lines). */
#include "fuzz_common.h"
#include "procfs_parse.h"

/* 0 always: the parser must survive any input (ASan/UBSan report what it does wrong) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);

    if (text == NULL)
        return 0;
    long long rss = 0, pss = 0, hwm = 0;
    parse_smaps_rollup(text, &rss, &pss);
    parse_status_hwm(text, &hwm);
    free(text);
    return 0;
}
