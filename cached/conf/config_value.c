/*
 * Value parsing and formatting for the configuration: see config_value.h
 * and the size / duration parsers declared in config.h.
 */
#include "config.h"
#include "config_value.h"

#include <assert.h>
#include <ctype.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

int config_parse_digits(const char **s, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	bool overflow = false;
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			v = v * 10 + d;
	}
	*s = p;
	*out = v;
	return overflow ? -ERANGE : 0;
}

int config_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGTPE";
	uint64_t whole, frac = 0, pow10 = 1, mult = 1;
	unsigned fdigits = 0;
	const char *p = s;
	int rc = config_parse_digits(&p, &whole);
	if (rc == -EINVAL)
		return rc;
	bool overflow = rc == -ERANGE;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++) {
			if (++fdigits > 9) /* keeps frac * (mult % pow10) in 64 bits */
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(*p - '0');
			pow10 *= 10;
		}
	}
	const char *u = *p ? strchr(units, toupper((unsigned char)*p)) : NULL;
	if (u) {
		mult = UINT64_C(1) << (10 * (u - units + 1));
		p++;
		if ((*p == 'i' || *p == 'I') && (p[1] == 'B' || p[1] == 'b'))
			p++; /* "KiB": the B follows */
	}
	if (*p == 'B' || *p == 'b')
		p++;
	if (*p || (fdigits && !u))
		return -EINVAL; /* junk, or a fraction of a byte */
	if (overflow || (whole && mult > UINT64_MAX / whole))
		return -ERANGE;
	/* frac / pow10 of the unit, exactly, rounded down. No overflow: it is
	 * below one unit, and whole * mult is a multiple of the unit. */
	uint64_t part = frac * (mult / pow10) + frac * (mult % pow10) / pow10;
	*out = whole * mult + part;
	return 0;
}

/* Largest first: config_fmt_duration() picks the first that divides exactly. */
static const struct {
	const char *suffix;
	uint64_t ms;
} duration_units[] = {{"d", DAY_MS}, {"h", HOUR_MS}, {"m", 60 * SEC_MS}, {"s", SEC_MS}, {"ms", 1}};

int config_parse_duration_ms(const char *s, uint64_t *out)
{
	const char *p = s;
	uint64_t v;
	int rc = config_parse_digits(&p, &v);
	if (rc == -EINVAL)
		return rc;
	for (size_t i = 0; i < ARRAY_SIZE(duration_units); i++) {
		uint64_t ms = duration_units[i].ms;
		if (*p && strcmp(p, duration_units[i].suffix) != 0)
			continue;
		if (!*p)
			ms = SEC_MS; /* a bare number is seconds */
		if (rc == -ERANGE || v > UINT64_MAX / ms)
			return -ERANGE;
		*out = v * ms;
		return 0;
	}
	return -EINVAL;
}

/* "64K", "1M": the largest unit that divides exactly, for messages. */
const char *config_fmt_size(char *buf, size_t n, uint64_t v)
{
	static const char units[] = "EPTGMK";
	for (int i = 0; v && i < 6; i++) {
		unsigned shift = 10u * (unsigned)(6 - i);
		if (v % (UINT64_C(1) << shift) == 0) {
			snprintf(buf, n, "%" PRIu64 "%c", v >> shift, units[i]);
			return buf;
		}
	}
	snprintf(buf, n, "%" PRIu64, v);
	return buf;
}

const char *config_fmt_duration(char *buf, size_t n, uint64_t ms)
{
	size_t i = 0;
	if (ms == 0)
		i = 3; /* "0s" */
	else
		while (ms % duration_units[i].ms)
			i++;
	snprintf(buf, n, "%" PRIu64 "%s", ms / duration_units[i].ms, duration_units[i].suffix);
	return buf;
}

void config_store_uint(void *field, size_t size, uint64_t v)
{
	if (size == sizeof(uint64_t)) {
		memcpy(field, &v, sizeof(v));
	} else {
		assert(size == sizeof(uint32_t) && v <= UINT32_MAX);
		uint32_t w = (uint32_t)v;
		memcpy(field, &w, sizeof(w));
	}
}

/* ---- paths ---- */

/* Lexically normalise absolute IN into OUT (size n): no "//", ".", ".."
 * or trailing '/'. Lexical because a tier directory may not exist yet.
 * Returns the length or -ENAMETOOLONG. */
int config_path_normalize(const char *in, char *out, size_t n)
{
	size_t len = 0;
	const char *p = in;
	while (*p) {
		while (*p == '/')
			p++;
		const char *end = strchrnul(p, '/');
		size_t clen = (size_t)(end - p);
		if (clen == 0 || (clen == 1 && p[0] == '.')) {
			/* nothing */
		} else if (clen == 2 && p[0] == '.' && p[1] == '.') {
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
		} else {
			if (len + 1 + clen + 1 > n)
				return -ENAMETOOLONG;
			out[len++] = '/';
			memcpy(out + len, p, clen);
			len += clen;
		}
		p = end;
	}
	if (len == 0) {
		if (n < 2)
			return -ENAMETOOLONG;
		out[len++] = '/';
	}
	out[len] = '\0';
	return (int)len;
}

/* Is A strictly inside directory B? Both normalised. */
bool config_path_inside(const char *a, const char *b)
{
	size_t lb = strlen(b);
	if (lb == 1)
		return a[1] != '\0';
	return strncmp(a, b, lb) == 0 && a[lb] == '/';
}

/* ---- setting one key ---- */

const char *config_parse_listen(const char *v, char *host, size_t hn, uint16_t *port)
{
	const char *colon = strrchr(v, ':');
	uint64_t x = 0;
	const char *p = colon ? colon + 1 : NULL;
	if (!colon || config_parse_digits(&p, &x) < 0 || *p || x < 1 || x > 65535)
		return "has no valid port";
	char h[256];
	size_t n = (size_t)(colon - v);
	if (n >= 2 && v[0] == '[' && v[n - 1] == ']') {
		v++;
		n -= 2;
	}
	if (n >= sizeof(h))
		return "has a host that is not an IP address";
	memcpy(h, v, n);
	h[n] = '\0';
	if (strcmp(h, "localhost") == 0)
		snprintf(h, sizeof(h), "127.0.0.1");
	struct in6_addr a6;
	struct in_addr a4;
	if ((inet_pton(AF_INET, h, &a4) != 1 && inet_pton(AF_INET6, h, &a6) != 1) || strlen(h) >= hn)
		return "has a host that is not an IP address";
	memcpy(host, h, strlen(h) + 1);
	*port = (uint16_t)x;
	return NULL;
}

int config_read_file(const char *file, size_t max, char **text, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	int rc = 0;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(max + 2);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, buf + n, max + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			rc = -EFBIG;
			goto out;
		}
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}
