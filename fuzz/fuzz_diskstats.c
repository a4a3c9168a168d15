/* libFuzzer target: parse_diskstats() on /proc/diskstats text, with a filter reading every name. */
#include "fuzz_common.h"
#include "procfs_parse.h"

/* non-zero for names not starting with 'l' (reads the whole name, as the real filter does) */
static int
keep_device(const char *name, void *ctx)
{
    (void)ctx;
    return strlen(name) > 0 && name[0] != 'l';
}

/* 0 always: the parser must survive any input (ASan/UBSan report what it does wrong) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);

    if (text == NULL)
        return 0;
    unsigned long long rd = 0, wr = 0;
    parse_diskstats(text, keep_device, NULL, &rd, &wr);
    free(text);
    return 0;
}
