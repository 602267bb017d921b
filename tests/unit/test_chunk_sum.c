/*
 * The chunk checksum (cached/cache/chunk_sum.h): the daemon computes it
 * through libxxhash's runtime-dispatched XXH3 (AVX2 / AVX-512 where the
 * CPU has them), while every index record written before that change, and
 * any other program, holds the plain XXH3_64bits value. They must agree to
 * the bit, one shot and piece by piece (a fill checksums its bytes in
 * pieces just before each write), for every length and alignment, or
 * every chunk would fail verification after an upgrade.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "chunk.h"
#include "chunk_sum.h"

#define BUF_MAX (300u * 1024u + 64u)

static uint8_t *pattern(void)
{
	uint8_t *b = malloc(BUF_MAX);
	assert_non_null(b);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < BUF_MAX; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
	return b;
}

/* the lengths XXH3 treats differently (0, 1-3, 4-8, 9-16, 17-128,
 * 129-240, longer: stripes and blocks), and the sizes of small files */
static const size_t lens[] = {0,	1,	3,     4,     8,      9,      16,     17,
			      128,	129,	240,   241,   1023,   1024,   1025,   4096,
			      65535,	65536,	65537, 99999, 102400, 143360, 262144, 300u * 1024u};

static void oneshot_matches_plain(void **state)
{
	(void)state;
	uint8_t *b = pattern();
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (size_t al = 0; al < 64 && lens[i] + al <= BUF_MAX; al += 7)
			assert_int_equal(chunk_checksum(b + al, lens[i]), XXH3_64bits(b + al, lens[i]));
	/* a fixed value: XXH3-64 of nothing, seed 0 (xxhash's own test vector) */
	assert_int_equal(chunk_checksum(b, 0), 0x2D06800538D394C2ull);
	free(b);
}

static void pieces_match_plain(void **state)
{
	(void)state;
	uint8_t *b = pattern();
	/* piece sizes: tiny, odd, the stripe and block sizes, TIER_PIECE */
	static const size_t pieces[] = {1, 7, 64, 1000, 1024, 4096, 65536, 256u * 1024u};
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
			XXH3_state_t st;
			XXH3_INITSTATE(&st);
			assert_int_equal(XXH3_64bits_reset(&st), XXH_OK);
			for (size_t at = 0; at < lens[i]; at += pieces[p]) {
				size_t n = lens[i] - at < pieces[p] ? lens[i] - at : pieces[p];
				assert_int_equal(chunk_sum_update(&st, b + 3 + at, n), 0);
			}
			assert_int_equal(XXH3_64bits_digest(&st), XXH3_64bits(b + 3, lens[i]));
		}
	}
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(oneshot_matches_plain),
		cmocka_unit_test(pieces_match_plain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
