/*
 * Reproducible test bytes: the same seed gives the same bytes, different
 * seeds different ones (xorshift64), so a test can make a file and later
 * say exactly what each byte must be.
 */
#ifndef TIERCACHE_TEST_UNIT_PATTERN_H
#define TIERCACHE_TEST_UNIT_PATTERN_H

#include <stddef.h>

void unit_fill_pattern(void *p, size_t n, unsigned seed);

#endif
