/* libFuzzer target: parse_meminfo() on /proc/meminfo text. */
#include "fuzz_common.h"
#include "procfs_parse.h"

/* 0 always: the parser must survive any input (ASan/UBSan report what it does wrong) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);

    if (text == NULL)
        return 0;
    MemInfo mem;
    parse_meminfo(text, &mem);
    free(text);
    return 0;
}
