/*
 * Value parsing and formatting for the configuration: sizes, durations,
 * paths, lists of users and groups (config_ids.c); the bounded read of the
 * file itself. Shared by config.c and its tests.
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
/* A list of user (IS_GROUP false) or group names or numeric ids, separated
 * by commas or blanks, into ids[] (*n of them): 0, or -E2BIG past MAX
 * (the first MAX kept). Each word that names no one goes to unknown()
 * and is skipped (config_ids.c). */
int config_parse_ids(const char *list, bool is_group, uint32_t *ids, unsigned max, unsigned *n,
		     void (*unknown)(void *arg, const char *word), void *arg);
/* Read FILE whole (at most MAX bytes: -EFBIG past it) into *text,
 * NUL-terminated and malloc'd. 0 or -errno. */
int config_read_file(const char *file, size_t max, char **text, size_t *len);

#endif
