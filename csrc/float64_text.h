/* Base64 text of float64 columns, little-endian whatever the machine: the snapshot's and
 * dumps()'s column encoding ("float64-le-base64"), written straight into a caller's buffer so
 * that no intermediate bytes object exists. No Python here. */
#ifndef RT_FLOAT64_TEXT_H
#define RT_FLOAT64_TEXT_H

#include <stddef.h>

/* Characters of the base64 text of n float64 values (padding included). */
size_t float64_b64_length(size_t n);

/* Writes the base64 of the n values (as little-endian float64) to out, which has room for
 * float64_b64_length(n) characters; no terminator. Returns the characters written. */
size_t float64_b64_encode(const double *values, size_t n, char *out);

#endif
