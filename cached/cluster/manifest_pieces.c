/*
 * Published manifests, packed and checked: see manifest_pieces.h.
 */
#include "manifest_pieces.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

uint64_t mfp_piece_count(uint64_t zsize)
{
	return (zsize + MFP_PIECE_MAX - 1) / MFP_PIECE_MAX;
}

size_t mfp_piece_len(const struct mfp_meta *m, uint64_t i)
{
	if (i >= m->pieces || i >= mfp_piece_count(m->zsize))
		return 0;
	uint64_t left = m->zsize - i * MFP_PIECE_MAX;
	return (size_t)(left < MFP_PIECE_MAX ? left : MFP_PIECE_MAX);
}

int mfp_pack(const void *raw, size_t n, int level, void **z, size_t *zn, struct mfp_meta *m)
{
	*z = NULL;
	*zn = 0;
	if (n == 0 || n > MFP_RAW_MAX)
		return -EFBIG;
	size_t cap = ZSTD_compressBound(n);
	void *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	size_t r = ZSTD_compress(buf, cap, raw, n, level);
	if (ZSTD_isError(r)) {
		free(buf);
		return -ENOMEM; /* only a failed allocation inside zstd is left */
	}
	*z = buf;
	*zn = r;
	m->raw = n;
	m->zsize = r;
	m->pieces = mfp_piece_count(r);
	m->xxh3 = XXH3_64bits(raw, n);
	return 0;
}

int mfp_meta_check(const struct mfp_meta *m, char *why, size_t whyn)
{
	if (m->gen == 0)
		snprintf(why, whyn, "no generation");
	else if (m->raw == 0 || m->raw > MFP_RAW_MAX)
		snprintf(why, whyn, "raw size %" PRIu64 " not in 1..%llu", m->raw, MFP_RAW_MAX);
	else if (m->zsize == 0 || m->zsize > ZSTD_compressBound((size_t)m->raw))
		snprintf(why, whyn, "compressed size %" PRIu64 " impossible for raw size %" PRIu64, m->zsize,
			 m->raw);
	else if (m->pieces != mfp_piece_count(m->zsize))
		snprintf(why, whyn, "%" PRIu64 " pieces for %" PRIu64 " compressed bytes", m->pieces, m->zsize);
	else if (!m->source[0])
		snprintf(why, whyn, "no source");
	else
		return 0;
	return -EINVAL;
}

/* A decimal u64 of exactly vn bytes. */
static int parse_u64(const char *v, size_t vn, uint64_t *out)
{
	uint64_t x = 0;
	if (vn == 0 || vn > 20)
		return -EINVAL;
	for (size_t i = 0; i < vn; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		uint64_t d = (uint64_t)(v[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -EINVAL;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

static int parse_hex64(const char *v, size_t vn, uint64_t *out)
{
	uint64_t x = 0;
	if (vn != 16)
		return -EINVAL;
	for (size_t i = 0; i < vn; i++) {
		char c = v[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			return -EINVAL;
		x = x << 4 | d;
	}
	*out = x;
	return 0;
}

static int copy_text(char *dst, size_t cap, const char *v, size_t vn)
{
	if (vn == 0 || vn >= cap || memchr(v, '\0', vn))
		return -EINVAL;
	memcpy(dst, v, vn);
	dst[vn] = '\0';
	return 0;
}

static bool is(const char *f, size_t fn, const char *name)
{
	return fn == strlen(name) && memcmp(f, name, fn) == 0;
}

int mfp_meta_field(struct mfp_meta *m, const char *f, size_t fn, const char *v, size_t vn)
{
	if (is(f, fn, "gen"))
		return parse_u64(v, vn, &m->gen);
	if (is(f, fn, "pieces"))
		return parse_u64(v, vn, &m->pieces);
	if (is(f, fn, "raw"))
		return parse_u64(v, vn, &m->raw);
	if (is(f, fn, "zsize"))
		return parse_u64(v, vn, &m->zsize);
	if (is(f, fn, "listed_ms"))
		return parse_u64(v, vn, &m->listed_ms);
	if (is(f, fn, "xxh3"))
		return parse_hex64(v, vn, &m->xxh3);
	if (is(f, fn, "source"))
		return copy_text(m->source, sizeof(m->source), v, vn);
	if (is(f, fn, "node"))
		return copy_text(m->node, sizeof(m->node), v, vn);
	return 0;
}

int mfp_unpack(const void *z, size_t zn, const struct mfp_meta *m, void **raw, char *why, size_t whyn)
{
	*raw = NULL;
	if (mfp_meta_check(m, why, whyn) < 0)
		return -EINVAL;
	if (zn != m->zsize) {
		snprintf(why, whyn, "%zu compressed bytes, the meta says %" PRIu64, zn, m->zsize);
		return -EINVAL;
	}
	unsigned long long fs = ZSTD_getFrameContentSize(z, zn);
	if (fs == ZSTD_CONTENTSIZE_ERROR || fs == ZSTD_CONTENTSIZE_UNKNOWN || fs != m->raw) {
		snprintf(why, whyn, "not a zstd frame of %" PRIu64 " bytes", m->raw);
		return -EINVAL;
	}
	void *buf = malloc((size_t)m->raw);
	if (!buf)
		return -ENOMEM;
	size_t r = ZSTD_decompress(buf, (size_t)m->raw, z, zn);
	if (ZSTD_isError(r) || r != m->raw) {
		snprintf(why, whyn, "zstd: %s", ZSTD_isError(r) ? ZSTD_getErrorName(r) : "short");
		free(buf);
		return -EINVAL;
	}
	if (XXH3_64bits(buf, r) != m->xxh3) {
		snprintf(why, whyn, "checksum mismatch");
		free(buf);
		return -EINVAL;
	}
	*raw = buf;
	return 0;
}
