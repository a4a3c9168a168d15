#include "float64_text.h"

#include <stdint.h>
#include <string.h>

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
float64_b64_length(size_t n)
{
    return (n * 8 + 2) / 3 * 4;
}

/* the 8 bytes of v, least significant first */
static void
little_endian_bytes(double v, unsigned char *out)
{
    uint64_t bits;
    int i;

    memcpy(&bits, &v, sizeof(bits));
    for (i = 0; i < 8; i++)
        out[i] = (unsigned char)(bits >> (8 * i));
}

/* base64 of len (1..3) bytes, padded to 4 characters */
static void
encode_group(const unsigned char *in, size_t len, char *out)
{
    uint32_t word = (uint32_t)in[0] << 16 | (len > 1 ? (uint32_t)in[1] << 8 : 0) |
                    (len > 2 ? (uint32_t)in[2] : 0);

    out[0] = b64_alphabet[(word >> 18) & 63];
    out[1] = b64_alphabet[(word >> 12) & 63];
    out[2] = len > 1 ? b64_alphabet[(word >> 6) & 63] : '=';
    out[3] = len > 2 ? b64_alphabet[word & 63] : '=';
}

/* Three values (24 bytes) make 32 characters: the text is written in such chunks, the last
 * one shorter. */
size_t
float64_b64_encode(const double *values, size_t n, char *out)
{
    unsigned char chunk[24];
    size_t i, written = 0;

    for (i = 0; i < n; i += 3) {
        size_t take = n - i < 3 ? n - i : 3, bytes = take * 8, j;
        for (j = 0; j < take; j++)
            little_endian_bytes(values[i + j], chunk + 8 * j);
        for (j = 0; j < bytes; j += 3) {
            encode_group(chunk + j, bytes - j < 3 ? bytes - j : 3, out + written);
            written += 4;
        }
    }
    return written;
}
