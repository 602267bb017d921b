/*
 * Reproducible test bytes: see unit_pattern.h.
 */
#include "unit_pattern.h"

#include <stdint.h>

void unit_fill_pattern(void *p, size_t n, unsigned seed)
{
	uint8_t *b = p;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
}
