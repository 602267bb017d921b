/*
 * Unit tests of the whole-job plan document (cached/cluster/plan_codec.c):
 * round trips (empty plans, many entries, long paths), the bounds on what
 * it encodes, and what it refuses to decode: a wrong hash, a wrong announced
 * size, truncated or corrupted compressed bytes, and well-compressed
 * documents whose content lies (counts past the end, NUL in a path, trailing
 * bytes). Inputs live in exact-size heap buffers so ASan sees any overread.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>
#include <zstd.h>

#include "plan_codec.h"

/* A document of n entries "train/NNNNNN.tar" (entry i names file i % files). */
static void doc_make(struct plan_doc *d, uint32_t n, uint32_t files)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->dataset, sizeof(d->dataset), "imagenet");
	d->job = 0x5eedull << 32;
	d->world_size = 8;
	d->epoch = 3;
	d->reg_rank = 5;
	d->uid = 1000;
	d->n = n;
	d->blob = malloc((size_t)n * 20 + 1);
	d->off = malloc((n ? n : 1) * sizeof(*d->off));
	assert_non_null(d->blob);
	assert_non_null(d->off);
	size_t at = 0;
	for (uint32_t i = 0; i < n; i++) {
		d->off[i] = (uint32_t)at;
		at += (size_t)sprintf(d->blob + at, "train/%06u.tar", i % files) + 1;
	}
	d->bloblen = at;
}

static void doc_free(struct plan_doc *d)
{
	free(d->blob);
	free(d->off);
}

static uint8_t *exact(const void *p, size_t n)
{
	uint8_t *b = malloc(n ? n : 1);
	assert_non_null(b);
	memcpy(b, p, n);
	return b;
}

static void roundtrip(uint32_t n, uint32_t files)
{
	struct plan_doc d, back;
	doc_make(&d, n, files);
	uint8_t *enc = NULL;
	size_t len = 0;
	uint64_t raw = 0, hash = 0;
	assert_int_equal(plan_codec_encode(&d, &enc, &len, &raw, &hash), 0);
	uint8_t *in = exact(enc, len);
	char why[160];
	assert_int_equal(plan_codec_decode(in, len, raw, hash, &back, why, sizeof(why)), 0);
	assert_string_equal(back.dataset, d.dataset);
	assert_int_equal(back.job, d.job);
	assert_int_equal(back.world_size, d.world_size);
	assert_int_equal(back.epoch, d.epoch);
	assert_int_equal(back.reg_rank, d.reg_rank);
	assert_int_equal(back.uid, d.uid);
	assert_int_equal(back.n, d.n);
	for (uint32_t i = 0; i < n; i++)
		assert_string_equal(back.blob + back.off[i], d.blob + d.off[i]);
	doc_free(&back);
	doc_free(&d);
	free(enc);
	free(in);
}

static void test_roundtrips(void **state)
{
	(void)state;
	roundtrip(0, 1);
	roundtrip(1, 1);
	roundtrip(60, 60);
	roundtrip(200000, 50000); /* repeats compress */
}

static void test_compresses_and_pieces_bound(void **state)
{
	(void)state;
	struct plan_doc d;
	doc_make(&d, 200000, 200000);
	uint8_t *enc = NULL;
	size_t len = 0;
	uint64_t raw = 0, hash = 0;
	assert_int_equal(plan_codec_encode(&d, &enc, &len, &raw, &hash), 0);
	assert_true(len < raw / 2);
	assert_true(len <= PLAN_CODEC_ENCODED_MAX);
	free(enc);
	doc_free(&d);
}

static void test_encode_refuses(void **state)
{
	(void)state;
	struct plan_doc d;
	uint8_t *enc = NULL;
	size_t len;
	uint64_t raw, hash;
	doc_make(&d, 2, 2);
	d.world_size = 0;
	assert_int_equal(plan_codec_encode(&d, &enc, &len, &raw, &hash), -EINVAL);
	d.world_size = 2;
	d.dataset[0] = '\0';
	assert_int_equal(plan_codec_encode(&d, &enc, &len, &raw, &hash), -EINVAL);
	snprintf(d.dataset, sizeof(d.dataset), "ds");
	d.blob[d.off[1]] = '\0'; /* an empty path */
	assert_int_equal(plan_codec_encode(&d, &enc, &len, &raw, &hash), -EFBIG);
	assert_null(enc);
	doc_free(&d);
}

static int decode(const uint8_t *p, size_t n, uint64_t raw, uint64_t hash)
{
	struct plan_doc back;
	char why[160] = "";
	uint8_t *in = exact(p, n);
	int rc = plan_codec_decode(in, n, raw, hash, &back, why, sizeof(why));
	free(in);
	if (rc == 0) {
		doc_free(&back);
	} else {
		assert_true(why[0] != '\0'); /* says why */
		assert_null(back.blob);
	}
	return rc;
}

static void test_decode_refuses_damage(void **state)
{
	(void)state;
	struct plan_doc d;
	doc_make(&d, 500, 500);
	uint8_t *enc = NULL;
	size_t len = 0;
	uint64_t raw = 0, hash = 0;
	assert_int_equal(plan_codec_encode(&d, &enc, &len, &raw, &hash), 0);
	assert_int_equal(decode(enc, len, raw, hash), 0);
	assert_int_equal(decode(enc, len, raw, hash ^ 1), -EBADMSG);
	assert_int_equal(decode(enc, len, raw + 1, hash), -EBADMSG);
	assert_int_equal(decode(enc, len, raw - 1, hash), -EBADMSG);
	for (size_t cut = 1; cut < len; cut += len / 17 + 1)
		assert_int_equal(decode(enc, cut, raw, hash), -EBADMSG);
	for (size_t at = 0; at < len; at += len / 23 + 1) {
		uint8_t *bad = exact(enc, len);
		bad[at] ^= 0x5a;
		assert_int_equal(decode(bad, len, raw, hash), -EBADMSG);
		free(bad);
	}
	assert_int_equal(decode(enc, 0, raw, hash), -EBADMSG);
	assert_int_equal(decode(enc, len, (uint64_t)PLAN_CODEC_RAW_MAX + 1, hash), -EBADMSG);
	free(enc);
	doc_free(&d);
}

/* A lying document, compressed and hashed correctly: only the parser
 * stands between it and the daemon. */
static int decode_raw(const uint8_t *raw, size_t n)
{
	size_t cap = ZSTD_compressBound(n);
	uint8_t *enc = malloc(cap);
	assert_non_null(enc);
	size_t len = ZSTD_compress(enc, cap, raw, n, 1);
	assert_false(ZSTD_isError(len));
	int rc = decode(enc, len, n, XXH3_64bits(raw, n));
	free(enc);
	return rc;
}

static size_t head(uint8_t *b, uint32_t n, const char *ds)
{
	size_t at = 0;
	memcpy(b, "TCJP", 4);
	at = 4;
	b[at++] = 1;
	memset(b + at, 0, 8); /* job */
	at += 8;
	uint32_t v[5] = {2, 1, 0, 0, n};
	for (int i = 0; i < 5; i++, at += 4)
		memcpy(b + at, &v[i], 4); /* little-endian host (x86-64, arm64) */
	b[at++] = (uint8_t)strlen(ds);
	memcpy(b + at, ds, strlen(ds));
	return at + strlen(ds);
}

static void test_decode_refuses_lies(void **state)
{
	(void)state;
	uint8_t b[256];
	size_t at = head(b, 1, "ds");
	b[at++] = 3;
	b[at++] = 0;
	memcpy(b + at, "a/b", 3);
	assert_int_equal(decode_raw(b, at + 3), 0);          /* well formed */
	assert_int_equal(decode_raw(b, at + 2), -EBADMSG);   /* path cut short */
	b[at + 3] = 'x';
	assert_int_equal(decode_raw(b, at + 4), -EBADMSG);   /* trailing byte */
	b[at + 1] = 'a';
	b[at + 2] = '\0';
	assert_int_equal(decode_raw(b, at + 3), -EBADMSG);   /* NUL in a path */
	at = head(b, 1000000, "ds");                          /* count past the end */
	assert_int_equal(decode_raw(b, at + 10), -EBADMSG);
	at = head(b, 0, "ds");
	b[4] = 2;                                             /* unknown version */
	assert_int_equal(decode_raw(b, at), -EBADMSG);
	at = head(b, 0, "");                                  /* no dataset name */
	assert_int_equal(decode_raw(b, at), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrips),
		cmocka_unit_test(test_compresses_and_pieces_bound),
		cmocka_unit_test(test_encode_refuses),
		cmocka_unit_test(test_decode_refuses_damage),
		cmocka_unit_test(test_decode_refuses_lies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
