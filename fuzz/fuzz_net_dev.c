/* libFuzzer target: parse_net_dev() on /proc/net/dev text. */
#include "fuzz_common.h"
#include "procfs_parse.h"

/* 0 always: the parser must survive any input (ASan/UBSan report what it does wrong) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);

    if (text == NULL)
        return 0;
    unsigned long long recv = 0, sent = 0;
    parse_net_dev(text, &recv, &sent);
    free(text);
    return 0;
}
