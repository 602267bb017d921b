/*
 * A whole-job plan's travelling form: see plan_codec.h.
 *
 * Uncompressed (little-endian):
 *   "TCJP" u8 version (1), u64 job, u32 world_size, u32 epoch,
 *   u32 reg_rank, u32 uid, u32 n, u8 dataset length, dataset bytes,
 *   n x (u16 length, path bytes)
 */
#include "plan_codec.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>
#include <zstd.h>

#include "job_plans.h"
#include "tiercache/protocol.h"

#define CODEC_MAGIC "TCJP"
#define CODEC_VERSION 1u
#define CODEC_HEAD (4 + 1 + 8 + 4 * 5 + 1)
#define CODEC_LEVEL 3

static uint8_t *put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int plan_codec_encode(const struct plan_doc *d, uint8_t **out, size_t *outlen, uint64_t *rawlen,
		      uint64_t *hash)
{
	size_t dslen = strlen(d->dataset);
	if (!dslen || dslen > CONFIG_NAME_MAX || !d->world_size || d->n > TC_PLAN_ENTRIES_MAX)
		return -EINVAL;
	size_t raw_n = CODEC_HEAD + dslen;
	for (uint32_t i = 0; i < d->n; i++) {
		size_t len = strlen(d->blob + d->off[i]);
		if (!len || len >= TC_PATH_MAX)
			return -EFBIG;
		raw_n += 2 + len;
	}
	if (raw_n > PLAN_CODEC_RAW_MAX)
		return -EFBIG;
	uint8_t *raw = malloc(raw_n);
	if (!raw)
		return -ENOMEM;
	uint8_t *p = raw;
	memcpy(p, CODEC_MAGIC, 4);
	p += 4;
	*p++ = CODEC_VERSION;
	p = put_le(p, d->job, 8);
	p = put_le(p, d->world_size, 4);
	p = put_le(p, d->epoch, 4);
	p = put_le(p, d->reg_rank, 4);
	p = put_le(p, d->uid, 4);
	p = put_le(p, d->n, 4);
	*p++ = (uint8_t)dslen;
	memcpy(p, d->dataset, dslen);
	p += dslen;
	for (uint32_t i = 0; i < d->n; i++) {
		const char *s = d->blob + d->off[i];
		size_t len = strlen(s);
		p = put_le(p, len, 2);
		memcpy(p, s, len);
		p += len;
	}
	size_t cap = ZSTD_compressBound(raw_n);
	uint8_t *enc = malloc(cap);
	int rc = 0;
	if (!enc) {
		rc = -ENOMEM;
		goto out;
	}
	size_t n = ZSTD_compress(enc, cap, raw, raw_n, CODEC_LEVEL);
	if (ZSTD_isError(n)) {
		rc = -ENOMEM;
		goto out;
	}
	if (n > PLAN_CODEC_ENCODED_MAX) {
		rc = -EFBIG;
		goto out;
	}
	*out = enc;
	enc = NULL;
	*outlen = n;
	*rawlen = raw_n;
	*hash = XXH3_64bits(raw, raw_n);
out:
	free(enc);
	free(raw);
	return rc;
}

/* Parse raw (checked size and hash) into d. */
static int parse_raw(const uint8_t *raw, size_t n, struct plan_doc *d, char *why, size_t whylen)
{
	if (n < CODEC_HEAD || memcmp(raw, CODEC_MAGIC, 4) != 0 || raw[4] != CODEC_VERSION) {
		snprintf(why, whylen, "not a version %u plan document", CODEC_VERSION);
		return -EBADMSG;
	}
	const uint8_t *p = raw + 5, *end = raw + n;
	d->job = get_le(p, 8);
	d->world_size = (uint32_t)get_le(p + 8, 4);
	d->epoch = (uint32_t)get_le(p + 12, 4);
	d->reg_rank = (uint32_t)get_le(p + 16, 4);
	d->uid = (uint32_t)get_le(p + 20, 4);
	d->n = (uint32_t)get_le(p + 24, 4);
	size_t dslen = p[28];
	p += 29;
	if (!d->world_size || d->n > TC_PLAN_ENTRIES_MAX || !dslen || dslen > CONFIG_NAME_MAX ||
	    (size_t)(end - p) < dslen) {
		snprintf(why, whylen, "bad header (world_size %u, %u entries, dataset name of %zu bytes)",
			 d->world_size, d->n, dslen);
		return -EBADMSG;
	}
	memcpy(d->dataset, p, dslen);
	d->dataset[dslen] = '\0';
	p += dslen;
	/* every entry is at least 3 bytes: bounds the allocation by what came */
	if (d->n > (size_t)(end - p) / 3) {
		snprintf(why, whylen, "%u entries announced in %zu bytes", d->n, (size_t)(end - p));
		return -EBADMSG;
	}
	size_t bloblen = (size_t)(end - p) - 2 * (size_t)d->n + d->n; /* paths + NULs, if well formed */
	if (bloblen > JOB_PLAN_BLOB_MAX) {
		snprintf(why, whylen, "paths of %zu bytes (at most %u)", bloblen, JOB_PLAN_BLOB_MAX);
		return -EBADMSG;
	}
	d->blob = malloc(bloblen ? bloblen : 1);
	d->off = malloc((d->n ? d->n : 1) * sizeof(*d->off));
	if (!d->blob || !d->off)
		goto bad_free;
	size_t at = 0;
	for (uint32_t i = 0; i < d->n; i++) {
		if (end - p < 2)
			goto bad;
		size_t len = (size_t)get_le(p, 2);
		p += 2;
		if (!len || len >= TC_PATH_MAX || (size_t)(end - p) < len || memchr(p, '\0', len) ||
		    at + len + 1 > bloblen)
			goto bad;
		memcpy(d->blob + at, p, len);
		d->blob[at + len] = '\0';
		d->off[i] = (uint32_t)at;
		at += len + 1;
		p += len;
	}
	if (p != end)
		goto bad;
	d->bloblen = at;
	return 0;
bad:
	snprintf(why, whylen, "malformed entry list");
	free(d->blob);
	free(d->off);
	d->blob = NULL;
	d->off = NULL;
	return -EBADMSG;
bad_free:
	snprintf(why, whylen, "out of memory");
	free(d->blob);
	free(d->off);
	d->blob = NULL;
	d->off = NULL;
	return -EBADMSG;
}

int plan_codec_decode(const uint8_t *enc, size_t enclen, uint64_t rawlen, uint64_t hash,
		      struct plan_doc *d, char *why, size_t whylen)
{
	memset(d, 0, sizeof(*d));
	if (enclen == 0 || enclen > PLAN_CODEC_ENCODED_MAX || rawlen < CODEC_HEAD ||
	    rawlen > PLAN_CODEC_RAW_MAX) {
		snprintf(why, whylen, "sizes out of bounds (%zu compressed, %llu raw)", enclen,
			 (unsigned long long)rawlen);
		return -EBADMSG;
	}
	unsigned long long fcs = ZSTD_getFrameContentSize(enc, enclen);
	if (fcs != rawlen) {
		snprintf(why, whylen, "compressed frame does not announce %llu bytes", (unsigned long long)rawlen);
		return -EBADMSG;
	}
	uint8_t *raw = malloc(rawlen);
	if (!raw) {
		snprintf(why, whylen, "out of memory");
		return -EBADMSG;
	}
	size_t n = ZSTD_decompress(raw, rawlen, enc, enclen);
	int rc;
	if (ZSTD_isError(n) || n != rawlen) {
		snprintf(why, whylen, "does not decompress: %s",
			 ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short");
		rc = -EBADMSG;
	} else if (XXH3_64bits(raw, n) != hash) {
		snprintf(why, whylen, "hash mismatch");
		rc = -EBADMSG;
	} else {
		rc = parse_raw(raw, n, d, why, whylen);
	}
	free(raw);
	return rc;
}
