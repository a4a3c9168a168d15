/* libFuzzer target: parse_mountinfo_line() on each line of /proc/<pid>/mountinfo text. The line
 * is passed as the sampler passes it (pointer and length, no newline); each line is copied to its
 * own exact-size heap block so that a read past its length is an ASan report. */
#include "fuzz_common.h"
#include "procfs_parse.h"

/* 0 always */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t start = 0, i;
    MountInfo mount;

    for (i = 0; i <= size; i++) {
        if (i == size || data[i] == '\n') {
            size_t len = i - start;
            char *line = malloc(len ? len : 1);
            if (line == NULL)
                return 0;
            memcpy(line, data + start, len);
            parse_mountinfo_line(line, len, &mount);
            free(line);
            start = i + 1;
        }
    }
    return 0;
}
