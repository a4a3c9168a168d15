/* Shared by the libFuzzer targets: the input as a NUL-terminated string, as procfs text is. */
#ifndef RT_FUZZ_COMMON_H
#define RT_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* a malloc'd NUL-terminated copy of data (the caller frees it), or NULL when out of memory */
static char *
fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);

    if (text == NULL)
        return NULL;
    memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

#endif
