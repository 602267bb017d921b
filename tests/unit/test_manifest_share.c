/*
 * Unit tests of cached/cluster/manifest_pieces.c (a manifest as published
 * through Redis): a real manifest encoded, packed, cut into pieces and put
 * back decodes to the same entries; piece lengths add up and each is at
 * most 1 MiB; a meta that is cut, too large, with a piece count or size
 * that does not fit, or with bad field values is refused before anything
 * is allocated from it; a changed byte, a wrong size or a wrong checksum is
 * refused by unpack; an empty or oversized input is not packed. Pure
 * computation, single-threaded.
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

#include "manifest.h"
#include "manifest_pieces.h"
#include "proto.h"

/* An encoded manifest of n files in nested directories. */
static void encoded(size_t n, struct proto_wr *w)
{
	struct manifest *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	for (size_t i = 0; i < n; i++) {
		char path[64];
		snprintf(path, sizeof(path), "d%zu/e%zu/file-%zu.bin", i % 7, i % 13, i);
		struct cold_stat st = {.size = 1000 + i, .mtime_ns = (int64_t)(1700000000000000000ll + i),
				       .version = i * 31};
		assert_int_equal(manifest_add(m, path, &st, 0), 0);
	}
	manifest_sort(m);
	proto_wr_init(w);
	manifest_encode(m, w);
	assert_false(w->oom);
	manifest_free(m);
}

static struct mfp_meta meta_for(const struct mfp_meta *packed)
{
	struct mfp_meta m = *packed;
	m.gen = 7;
	snprintf(m.source, sizeof(m.source), "posix:/data/x");
	snprintf(m.node, sizeof(m.node), "n1");
	return m;
}

static void test_round_trip(void **state)
{
	(void)state;
	struct proto_wr w;
	encoded(50000, &w); /* about 2 MiB encoded */
	void *z;
	size_t zn;
	struct mfp_meta m = {0};
	assert_int_equal(mfp_pack(w.buf, w.len, 3, &z, &zn, &m), 0);
	m = meta_for(&m);
	assert_int_equal(m.raw, w.len);
	assert_int_equal(m.zsize, zn);
	assert_int_equal(m.pieces, mfp_piece_count(zn));
	char why[160];
	assert_int_equal(mfp_meta_check(&m, why, sizeof(why)), 0);
	/* the pieces, as a reader gathers them */
	uint8_t *back = malloc(zn);
	size_t at = 0;
	for (uint64_t i = 0; i < m.pieces; i++) {
		size_t len = mfp_piece_len(&m, i);
		assert_true(len > 0 && len <= MFP_PIECE_MAX);
		memcpy(back + at, (uint8_t *)z + at, len);
		at += len;
	}
	assert_int_equal(at, zn);
	assert_int_equal(mfp_piece_len(&m, m.pieces), 0);
	void *raw;
	assert_int_equal(mfp_unpack(back, zn, &m, &raw, why, sizeof(why)), 0);
	assert_memory_equal(raw, w.buf, w.len);
	struct manifest *dm;
	assert_int_equal(manifest_decode(raw, (size_t)m.raw, &dm), 0);
	assert_int_equal(dm->n, 50000);
	assert_non_null(manifest_find(dm, "d3/e4/file-17.bin"));
	manifest_free(dm);
	free(raw);
	/* one changed byte anywhere: refused (zstd or the checksum) */
	for (size_t off = 0; off < zn; off += zn / 5 + 1) {
		back[off] ^= 0x5a;
		assert_int_equal(mfp_unpack(back, zn, &m, &raw, why, sizeof(why)), -EINVAL);
		assert_null(raw);
		back[off] ^= 0x5a;
	}
	/* the wrong size, the wrong checksum */
	assert_int_equal(mfp_unpack(back, zn - 1, &m, &raw, why, sizeof(why)), -EINVAL);
	struct mfp_meta bad = m;
	bad.xxh3 ^= 1;
	assert_int_equal(mfp_unpack(back, zn, &bad, &raw, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "checksum mismatch");
	bad = m;
	bad.raw += 1;
	assert_int_equal(mfp_unpack(back, zn, &bad, &raw, why, sizeof(why)), -EINVAL);
	free(back);
	free(z);
	proto_wr_free(&w);
}

/* Incompressible bytes: several pieces, the last one short. */
static void test_multi_piece(void **state)
{
	(void)state;
	size_t n = 3u * MFP_PIECE_MAX + 12345;
	uint8_t *raw = malloc(n);
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		raw[i] = (uint8_t)x;
	}
	void *z, *back;
	size_t zn;
	struct mfp_meta m = {0};
	assert_int_equal(mfp_pack(raw, n, 1, &z, &zn, &m), 0);
	m = meta_for(&m);
	assert_true(m.pieces >= 4);
	uint64_t sum = 0;
	for (uint64_t i = 0; i < m.pieces; i++)
		sum += mfp_piece_len(&m, i);
	assert_int_equal(sum, zn);
	assert_true(mfp_piece_len(&m, m.pieces - 1) < MFP_PIECE_MAX);
	char why[160];
	assert_int_equal(mfp_unpack(z, zn, &m, &back, why, sizeof(why)), 0);
	assert_memory_equal(back, raw, n);
	free(back);
	/* a piece swapped with another: refused */
	uint8_t *sw = malloc(zn);
	memcpy(sw, z, zn);
	memcpy(sw, (uint8_t *)z + MFP_PIECE_MAX, MFP_PIECE_MAX);
	memcpy(sw + MFP_PIECE_MAX, z, MFP_PIECE_MAX);
	assert_int_equal(mfp_unpack(sw, zn, &m, &back, why, sizeof(why)), -EINVAL);
	free(sw);
	free(z);
	free(raw);
}

static void test_pieces_bounds(void **state)
{
	(void)state;
	assert_int_equal(mfp_piece_count(0), 0);
	assert_int_equal(mfp_piece_count(1), 1);
	assert_int_equal(mfp_piece_count(MFP_PIECE_MAX), 1);
	assert_int_equal(mfp_piece_count(MFP_PIECE_MAX + 1), 2);
	struct mfp_meta m = {.gen = 1, .raw = 5u * MFP_PIECE_MAX, .zsize = 2u * MFP_PIECE_MAX + 10};
	m.pieces = mfp_piece_count(m.zsize);
	snprintf(m.source, sizeof(m.source), "posix:/x");
	char why[160];
	assert_int_equal(mfp_meta_check(&m, why, sizeof(why)), 0);
	assert_int_equal(mfp_piece_len(&m, 0), MFP_PIECE_MAX);
	assert_int_equal(mfp_piece_len(&m, 1), MFP_PIECE_MAX);
	assert_int_equal(mfp_piece_len(&m, 2), 10);
	assert_int_equal(mfp_piece_len(&m, 3), 0);
	/* refused: no generation, sizes out of bounds, counts that do not fit */
	struct mfp_meta b = m;
	b.gen = 0;
	assert_int_equal(mfp_meta_check(&b, why, sizeof(why)), -EINVAL);
	b = m;
	b.raw = MFP_RAW_MAX + 1;
	assert_int_equal(mfp_meta_check(&b, why, sizeof(why)), -EINVAL);
	b = m;
	b.raw = 0;
	assert_int_equal(mfp_meta_check(&b, why, sizeof(why)), -EINVAL);
	b = m;
	b.zsize = 100u * MFP_PIECE_MAX; /* more than zstd can make of 5 MiB */
	b.pieces = mfp_piece_count(b.zsize);
	assert_int_equal(mfp_meta_check(&b, why, sizeof(why)), -EINVAL);
	b = m;
	b.pieces = 1000000;
	assert_int_equal(mfp_meta_check(&b, why, sizeof(why)), -EINVAL);
	assert_int_equal(mfp_piece_len(&b, 5), 0); /* beyond the size: no length */
	b = m;
	b.source[0] = '\0';
	assert_int_equal(mfp_meta_check(&b, why, sizeof(why)), -EINVAL);
}

static void test_pack_limits(void **state)
{
	(void)state;
	void *z = (void *)1;
	size_t zn = 1;
	struct mfp_meta m = {0};
	assert_int_equal(mfp_pack("", 0, 3, &z, &zn, &m), -EFBIG);
	assert_null(z);
	assert_int_equal(mfp_pack("x", (size_t)MFP_RAW_MAX + 1, 3, &z, &zn, &m), -EFBIG);
	assert_null(z);
}

static void test_meta_fields(void **state)
{
	(void)state;
	struct mfp_meta m = {0};
#define F(f, v) mfp_meta_field(&m, f, strlen(f), v, strlen(v))
	assert_int_equal(F("gen", "12"), 0);
	assert_int_equal(m.gen, 12);
	assert_int_equal(F("pieces", "18446744073709551615"), 0);
	assert_int_equal(F("pieces", "18446744073709551616"), -EINVAL); /* 2^64 */
	assert_int_equal(F("raw", ""), -EINVAL);
	assert_int_equal(F("raw", "-1"), -EINVAL);
	assert_int_equal(F("raw", "1 "), -EINVAL);
	assert_int_equal(F("zsize", "123456789012345678901"), -EINVAL);
	assert_int_equal(F("xxh3", "00112233445566ff"), 0);
	assert_true(m.xxh3 == UINT64_C(0x00112233445566ff));
	assert_int_equal(F("xxh3", "00112233445566f"), -EINVAL);
	assert_int_equal(F("xxh3", "00112233445566FG"), -EINVAL);
	assert_int_equal(F("source", "posix:/a"), 0);
	assert_string_equal(m.source, "posix:/a");
	assert_int_equal(F("source", ""), -EINVAL);
	assert_int_equal(mfp_meta_field(&m, "node", 4, "a\0b", 3), -EINVAL);
	char big[MFP_SOURCE_MAX + 2];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(F("source", big), -EINVAL);
	assert_int_equal(F("something_newer", "whatever"), 0);
#undef F
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_multi_piece),
		cmocka_unit_test(test_pieces_bounds),
		cmocka_unit_test(test_pack_limits),
		cmocka_unit_test(test_meta_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
