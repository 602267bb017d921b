/*
 * Unit tests of the TC_OP_CONN_JOB payload codec (common/proto_job.c):
 * the documented encoding (u8 flags, u64 job, u32 rank, little-endian),
 * round trips of tags and of untagging, and every malformed payload
 * (each truncation, trailing bytes, unknown flags) refused without touching
 * the output. Inputs live in exact-size heap buffers so ASan sees any
 * overread.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto_job.h"

static uint8_t *exact(const void *p, size_t n)
{
	uint8_t *b = malloc(n ? n : 1);
	assert_non_null(b);
	if (n)
		memcpy(b, p, n);
	return b;
}

/* Encode t into a fresh writer; the payload is w->buf + TC_HDR_SIZE. */
static size_t encode(struct proto_wr *w, const struct tc_job_tag *t)
{
	proto_wr_init(w);
	proto_wr_begin(w);
	proto_job_encode(w, t);
	assert_false(w->oom);
	return w->len - TC_HDR_SIZE;
}

static void test_encoding_is_documented(void **state)
{
	(void)state;
	struct proto_wr w;
	struct tc_job_tag t = {.set = true, .job = 0x0102030405060708ull, .rank = 0x0a0b0c0d};
	size_t n = encode(&w, &t);
	const uint8_t want[] = {0x01, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
				0x0d, 0x0c, 0x0b, 0x0a};
	assert_int_equal(n, sizeof(want));
	assert_memory_equal(w.buf + TC_HDR_SIZE, want, sizeof(want));
	proto_wr_free(&w);
}

static void test_round_trip(void **state)
{
	(void)state;
	const struct tc_job_tag tags[] = {
		{.set = true, .job = 0, .rank = 0},
		{.set = true, .job = UINT64_MAX, .rank = TC_JOB_RANK_ANY},
		{.set = true, .job = 0x5eed, .rank = 3},
	};
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		struct proto_wr w;
		size_t n = encode(&w, &tags[i]);
		uint8_t *p = exact(w.buf + TC_HDR_SIZE, n);
		struct tc_job_tag got = {0};
		assert_int_equal(proto_job_decode(p, n, &got), 0);
		assert_true(got.set);
		assert_true(got.job == tags[i].job);
		assert_int_equal(got.rank, tags[i].rank);
		free(p);
		proto_wr_free(&w);
	}
}

static void test_untag_decodes_to_unset(void **state)
{
	(void)state;
	struct proto_wr w;
	/* the encoder zeroes job and rank of an untagging request */
	struct tc_job_tag t = {.set = false, .job = 99, .rank = 7};
	size_t n = encode(&w, &t);
	uint8_t *p = exact(w.buf + TC_HDR_SIZE, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(p[i], 0);
	struct tc_job_tag got = {.set = true, .job = 1, .rank = 1};
	assert_int_equal(proto_job_decode(p, n, &got), 0);
	assert_false(got.set);
	assert_true(got.job == 0);
	assert_int_equal(got.rank, 0);
	/* job and rank sent with flags 0 are ignored */
	p[1] = 0x42;
	assert_int_equal(proto_job_decode(p, n, &got), 0);
	assert_false(got.set);
	assert_true(got.job == 0);
	free(p);
	proto_wr_free(&w);
}

static void test_malformed_refused(void **state)
{
	(void)state;
	struct proto_wr w;
	struct tc_job_tag t = {.set = true, .job = 5, .rank = 1};
	size_t n = encode(&w, &t);
	const struct tc_job_tag sentinel = {.set = true, .job = 0xdead, .rank = 0xbeef};
	/* every truncation */
	for (size_t cut = 0; cut < n; cut++) {
		uint8_t *p = exact(w.buf + TC_HDR_SIZE, cut);
		struct tc_job_tag got = sentinel;
		assert_int_equal(proto_job_decode(p, cut, &got), -EBADMSG);
		assert_true(got.job == sentinel.job && got.rank == sentinel.rank);
		free(p);
	}
	/* a trailing byte */
	uint8_t longer[32];
	memcpy(longer, w.buf + TC_HDR_SIZE, n);
	longer[n] = 0;
	uint8_t *p = exact(longer, n + 1);
	struct tc_job_tag got = sentinel;
	assert_int_equal(proto_job_decode(p, n + 1, &got), -EBADMSG);
	assert_true(got.job == sentinel.job);
	free(p);
	/* every unknown flag bit */
	for (unsigned bit = 1; bit < 8; bit++) {
		uint8_t *q = exact(w.buf + TC_HDR_SIZE, n);
		q[0] = (uint8_t)(1u << bit);
		got = sentinel;
		assert_int_equal(proto_job_decode(q, n, &got), -EINVAL);
		assert_true(got.job == sentinel.job);
		q[0] |= TC_JOB_F_SET;
		assert_int_equal(proto_job_decode(q, n, &got), -EINVAL);
		free(q);
	}
	proto_wr_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encoding_is_documented),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_untag_decodes_to_unset),
		cmocka_unit_test(test_malformed_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
