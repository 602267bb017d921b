/*
 * Value parsing and formatting for the configuration: sizes, durations,
 * paths. Pure functions, shared by config.c and its tests.
 */
#ifndef TIERCACHE_CONFIG_VALUE_H
#define TIERCACHE_CONFIG_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEC_MS UINT64_C(1000)
#define HOUR_MS (3600 * SEC_MS)
#define DAY_MS (24 * HOUR_MS)

/* Decimal digits at *s into *out, advancing *s. 0, -EINVAL or -ERANGE. */
int config_parse_digits(const char **s, uint64_t *out);
const char *config_fmt_size(char *buf, size_t n, uint64_t v);
const char *config_fmt_duration(char *buf, size_t n, uint64_t ms);
void config_store_uint(void *field, size_t size, uint64_t v);
/* Lexically normalise an absolute path ("//a/./b/../c/" -> "/a/c"). */
int config_path_normalize(const char *in, char *out, size_t n);
/* Is path a equal to or inside path b? */
bool config_path_inside(const char *a, const char *b);

#endif
