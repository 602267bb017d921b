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
/* "HOST:PORT" (HOST an IPv4 address, [IPv6] or localhost, PORT 1..65535)
 * into host (at most hn bytes with its NUL) and *port. NULL if it parses,
 * else what is wrong ("has no valid port", "has a host that is not an IP address"). */
const char *config_parse_listen(const char *v, char *host, size_t hn, uint16_t *port);
const char *config_fmt_size(char *buf, size_t n, uint64_t v);
const char *config_fmt_duration(char *buf, size_t n, uint64_t ms);
void config_store_uint(void *field, size_t size, uint64_t v);
/* Lexically normalise an absolute path ("//a/./b/../c/" -> "/a/c"). */
int config_path_normalize(const char *in, char *out, size_t n);
/* Is path a equal to or inside path b? */
bool config_path_inside(const char *a, const char *b);

#endif
