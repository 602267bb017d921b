/*
 * Unit tests of the frame codec (common/proto.c): every field type round
 * trips with the documented little-endian encoding, headers are checked,
 * truncated or lying payloads mark the cursor bad without reading past the
 * end (inputs live in exact-size heap buffers so ASan sees any overread),
 * and record sets round trip while malformed ones are refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto.h"

/* A heap copy of exactly n bytes: reading one byte more is an ASan error. */
static uint8_t *exact(const void *p, size_t n)
{
	uint8_t *b = malloc(n ? n : 1);
	assert_non_null(b);
	if (n)
		memcpy(b, p, n);
	return b;
}

static const uint8_t *payload(const struct proto_wr *w)
{
	return w->buf + TC_HDR_SIZE;
}

static size_t payload_len(const struct proto_wr *w)
{
	return w->len - TC_HDR_SIZE;
}

static void test_ints_round_trip(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u8(&w, 0xab);
	proto_wr_u16(&w, 0xbeef);
	proto_wr_u32(&w, 0xdeadbeefu);
	proto_wr_u64(&w, 0x0123456789abcdefull);
	proto_wr_i64(&w, -2);
	proto_wr_i64(&w, INT64_MIN);
	proto_wr_u64(&w, UINT64_MAX);
	assert_false(w.oom);
	assert_int_equal(payload_len(&w), 1 + 2 + 4 + 8 + 8 + 8 + 8);

	/* little-endian on the wire, whatever the host */
	static const uint8_t head[] = {0xab, 0xef, 0xbe, 0xef, 0xbe, 0xad, 0xde,
				       0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01};
	assert_memory_equal(payload(&w), head, sizeof(head));

	uint8_t *b = exact(payload(&w), payload_len(&w));
	struct proto_rd r;
	proto_rd_init(&r, b, payload_len(&w));
	assert_int_equal(proto_rd_u8(&r), 0xab);
	assert_int_equal(proto_rd_u16(&r), 0xbeef);
	assert_int_equal(proto_rd_u32(&r), 0xdeadbeefu);
	assert_true(proto_rd_u64(&r) == 0x0123456789abcdefull);
	assert_true(proto_rd_i64(&r) == -2);
	assert_true(proto_rd_i64(&r) == INT64_MIN);
	assert_true(proto_rd_u64(&r) == UINT64_MAX);
	assert_true(proto_rd_done(&r));
	free(b);
	proto_wr_free(&w);
}

static void test_str_and_bytes_round_trip(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, "imagenet/train/0001.tar");
	proto_wr_str(&w, "");
	proto_wr_str(&w, NULL); /* NULL writes an empty string */
	proto_wr_strn(&w, "abcdef", 3);
	proto_wr_bytes(&w, "\x00\x01\x02", 3);
	assert_false(w.oom);
	/* str = u32 length then the bytes, no NUL */
	assert_memory_equal(payload(&w), "\x17\x00\x00\x00imagenet", 12);

	uint8_t *b = exact(payload(&w), payload_len(&w));
	struct proto_rd r;
	size_t n;
	proto_rd_init(&r, b, payload_len(&w));
	const char *s = proto_rd_str(&r, TC_PATH_MAX, &n);
	assert_int_equal(n, 23);
	assert_memory_equal(s, "imagenet/train/0001.tar", 23);
	s = proto_rd_str(&r, 0, &n);
	assert_non_null(s);
	assert_int_equal(n, 0);
	char buf[8];
	assert_true(proto_rd_str_copy(&r, buf, sizeof(buf)));
	assert_string_equal(buf, "");
	assert_true(proto_rd_str_copy(&r, buf, sizeof(buf)));
	assert_string_equal(buf, "abc");
	assert_int_equal(r.left, 3);
	assert_memory_equal(r.p, "\x00\x01\x02", 3);
	r.p += 3;
	r.left = 0;
	assert_true(proto_rd_done(&r));
	free(b);
	proto_wr_free(&w);
}

static void test_many_appends_grow(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	for (uint32_t i = 0; i < 100000; i++)
		proto_wr_u32(&w, i * 2654435761u);
	assert_false(w.oom);
	assert_int_equal(proto_wr_finish(&w, TC_OP_READ, 7, 0), 0);
	struct proto_rd r;
	proto_rd_init(&r, payload(&w), payload_len(&w));
	for (uint32_t i = 0; i < 100000; i++)
		assert_int_equal(proto_rd_u32(&r), i * 2654435761u);
	assert_true(proto_rd_done(&r));
	/* begin resets for the next frame but keeps the buffer */
	uint8_t *keep = w.buf;
	proto_wr_begin(&w);
	assert_int_equal(w.len, TC_HDR_SIZE);
	assert_ptr_equal(w.buf, keep);
	proto_wr_free(&w);
	assert_null(w.buf);
}

static void test_header_round_trip(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u64(&w, 42);
	proto_wr_u32(&w, 3);
	assert_int_equal(proto_wr_finish(&w, TC_OP_CHUNK, 0x01020304u, TC_F_NOREPLY), 0);
	static const uint8_t want[TC_HDR_SIZE] = {'T', 'C', TC_PROTO_VERSION, TC_OP_CHUNK, 12, 0, 0, 0,
						  4, 3, 2, 1, 1, 0, 0, 0};
	assert_memory_equal(w.buf, want, TC_HDR_SIZE);

	struct tc_hdr h;
	assert_int_equal(proto_hdr_decode(w.buf, &h), 0);
	assert_int_equal(h.magic, TC_PROTO_MAGIC);
	assert_int_equal(h.version, TC_PROTO_VERSION);
	assert_int_equal(h.op, TC_OP_CHUNK);
	assert_int_equal(h.len, 12);
	assert_int_equal(h.id, 0x01020304u);
	assert_int_equal(h.aux, TC_F_NOREPLY);

	uint8_t enc[TC_HDR_SIZE];
	proto_hdr_encode(enc, &h);
	assert_memory_equal(enc, want, TC_HDR_SIZE);
	proto_wr_free(&w);
}

static void test_header_decode_errors(void **state)
{
	(void)state;
	struct tc_hdr h = {
		.magic = TC_PROTO_MAGIC,
		.version = TC_PROTO_VERSION,
		.op = TC_OP_STAT,
		.len = TC_FRAME_MAX,
	};
	uint8_t b[TC_HDR_SIZE];
	proto_hdr_encode(b, &h);
	assert_int_equal(proto_hdr_decode(b, &h), 0); /* the limit itself is fine */

	h.len = TC_FRAME_MAX + 1;
	proto_hdr_encode(b, &h);
	assert_int_equal(proto_hdr_decode(b, &h), -EMSGSIZE);
	h.len = UINT32_MAX;
	proto_hdr_encode(b, &h);
	assert_int_equal(proto_hdr_decode(b, &h), -EMSGSIZE);

	h.len = 0;
	h.magic = 0x5443; /* bytes 'C','T': swapped */
	proto_hdr_encode(b, &h);
	assert_int_equal(proto_hdr_decode(b, &h), -EPROTO);

	h.magic = TC_PROTO_MAGIC;
	h.version = TC_PROTO_VERSION + 1;
	proto_hdr_encode(b, &h);
	assert_int_equal(proto_hdr_decode(b, &h), -EPROTO);
	h.version = 0;
	proto_hdr_encode(b, &h);
	assert_int_equal(proto_hdr_decode(b, &h), -EPROTO);

	/* bad magic wins over a bad length: the stream is not ours at all */
	h.version = TC_PROTO_VERSION;
	h.magic = 0;
	h.len = UINT32_MAX;
	proto_hdr_encode(b, &h);
	assert_int_equal(proto_hdr_decode(b, &h), -EPROTO);
}

static void test_finish_errors(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	assert_int_equal(proto_wr_finish(&w, TC_OP_HELLO, 1, 0), -ENOMEM); /* no begin */

	proto_wr_begin(&w);
	uint8_t *p = proto_wr_reserve(&w, TC_FRAME_MAX);
	assert_non_null(p);
	memset(p, 0, TC_FRAME_MAX);
	assert_int_equal(proto_wr_finish(&w, TC_OP_READ, 1, 0), 0); /* exactly the max */
	proto_wr_u8(&w, 0);
	assert_int_equal(proto_wr_finish(&w, TC_OP_READ, 1, 0), -EMSGSIZE);

	/* a failed append poisons the frame until the next begin */
	proto_wr_begin(&w);
	proto_wr_strn(&w, "x", (size_t)UINT32_MAX + 1);
	assert_true(w.oom);
	assert_null(proto_wr_reserve(&w, 1));
	assert_int_equal(proto_wr_finish(&w, TC_OP_STAT, 1, 0), -ENOMEM);
	proto_wr_begin(&w);
	assert_false(w.oom);
	assert_int_equal(proto_wr_finish(&w, TC_OP_STAT, 1, 0), 0);
	proto_wr_free(&w);
}

/* A payload of every type, decoded from every shorter prefix: the cursor
 * must go bad, stay bad, and never move past its end. */
static void test_truncated_payloads(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u8(&w, 1);
	proto_wr_u16(&w, 2);
	proto_wr_u32(&w, 3);
	proto_wr_u64(&w, 4);
	proto_wr_i64(&w, -5);
	proto_wr_str(&w, "six");
	size_t full = payload_len(&w);

	for (size_t k = 0; k <= full; k++) {
		uint8_t *b = exact(payload(&w), k);
		struct proto_rd r;
		size_t n;
		proto_rd_init(&r, b, k);
		uint8_t a = proto_rd_u8(&r);
		uint16_t c = proto_rd_u16(&r);
		uint32_t d = proto_rd_u32(&r);
		uint64_t e = proto_rd_u64(&r);
		int64_t f = proto_rd_i64(&r);
		const char *s = proto_rd_str(&r, 16, &n);
		assert_true(r.p <= b + k);
		assert_true(r.left <= k);
		assert_true((size_t)(r.p - b) + r.left == k);
		if (k == full) {
			assert_true(proto_rd_done(&r));
			assert_int_equal(a, 1);
			assert_int_equal(c, 2);
			assert_int_equal(d, 3);
			assert_true(e == 4 && f == -5);
			assert_int_equal(n, 3);
			assert_memory_equal(s, "six", 3);
		} else {
			assert_false(proto_rd_ok(&r));
			assert_false(proto_rd_done(&r));
			assert_null(s);
			assert_int_equal(n, 0);
			/* sticky: a later get that would fit still fails */
			assert_int_equal(proto_rd_u8(&r), 0);
			assert_false(proto_rd_ok(&r));
		}
		free(b);
	}
	proto_wr_free(&w);
}

static void test_get_past_end_returns_zero(void **state)
{
	(void)state;
	uint8_t *b = exact("\x01\x02\x03", 3);
	struct proto_rd r;
	proto_rd_init(&r, b, 3);
	assert_int_equal(proto_rd_u32(&r), 0);
	assert_false(proto_rd_ok(&r));
	assert_int_equal(r.left, 3); /* a failed get consumes nothing */
	assert_ptr_equal(r.p, b);
	free(b);

	proto_rd_init(&r, NULL, 0);
	assert_int_equal(proto_rd_u8(&r), 0);
	assert_false(proto_rd_ok(&r));
}

static void test_str_limits(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, "0123456789");
	uint8_t *b = exact(payload(&w), payload_len(&w));
	size_t blen = payload_len(&w);
	struct proto_rd r;
	size_t n;

	proto_rd_init(&r, b, blen);
	assert_non_null(proto_rd_str(&r, 10, &n)); /* max is inclusive */
	assert_true(proto_rd_done(&r));

	proto_rd_init(&r, b, blen);
	assert_null(proto_rd_str(&r, 9, &n));
	assert_false(proto_rd_ok(&r));
	assert_int_equal(n, 0);

	/* the length says 10, only 9 bytes follow */
	proto_rd_init(&r, b, blen - 1);
	assert_null(proto_rd_str(&r, 100, &n));
	assert_false(proto_rd_ok(&r));

	/* str_copy: needs room for the NUL */
	char dst[11];
	proto_rd_init(&r, b, blen);
	assert_true(proto_rd_str_copy(&r, dst, sizeof(dst)));
	assert_string_equal(dst, "0123456789");
	char small[10];
	memset(small, 'x', sizeof(small));
	proto_rd_init(&r, b, blen);
	assert_false(proto_rd_str_copy(&r, small, sizeof(small)));
	assert_false(proto_rd_ok(&r));
	assert_int_equal(small[0], '\0'); /* never left unterminated */
	free(b);

	/* a NUL inside a str cannot become a C string */
	proto_wr_begin(&w);
	proto_wr_strn(&w, "ab\0cd", 5);
	b = exact(payload(&w), payload_len(&w));
	proto_rd_init(&r, b, payload_len(&w));
	assert_false(proto_rd_str_copy(&r, dst, sizeof(dst)));
	assert_false(proto_rd_ok(&r));
	assert_string_equal(dst, "");
	free(b);

	/* a length of 4 GiB - 1 with nothing behind it */
	uint8_t *huge = exact("\xff\xff\xff\xff", 4);
	proto_rd_init(&r, huge, 4);
	assert_null(proto_rd_str(&r, SIZE_MAX, &n));
	assert_false(proto_rd_ok(&r));
	free(huge);
	proto_wr_free(&w);
}

/* ---- record sets ---- */

static void write_sample_recset(struct proto_wr *w)
{
	struct proto_rs rs;
	proto_wr_begin(w);
	proto_rs_begin(&rs, w);
	proto_rs_section(&rs, "daemon", TC_SHAPE_OBJECT);
	proto_rs_record(&rs);
	proto_rs_str(&rs, "version", "0.1.0");
	proto_rs_u64(&rs, "uptime_s", 3600);
	proto_rs_i64(&rs, "skew_ns", -12);
	proto_rs_bool(&rs, "degraded", true);
	proto_rs_section(&rs, "tiers", TC_SHAPE_ARRAY);
	proto_rs_record(&rs);
	proto_rs_str(&rs, "name", "hot");
	proto_rs_u64(&rs, "capacity_bytes", 1ull << 40);
	proto_rs_record(&rs);
	proto_rs_str(&rs, "name", "warm");
	proto_rs_u64(&rs, "capacity_bytes", 4ull << 40);
	proto_rs_bool(&rs, "readonly", false);
	proto_rs_section(&rs, "empty", TC_SHAPE_ARRAY);
	proto_rs_section(&rs, "nofields", TC_SHAPE_ARRAY);
	proto_rs_record(&rs);
	proto_rs_end(&rs);
	assert_false(w->oom);
}

static void test_recset_round_trip(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	write_sample_recset(&w);
	uint8_t *b = exact(payload(&w), payload_len(&w));
	struct proto_recset rs;
	assert_int_equal(proto_recset_parse(b, payload_len(&w), &rs), 0);
	assert_int_equal(rs.nsections, 4);

	const struct proto_section *d = proto_recset_find(&rs, "daemon");
	assert_non_null(d);
	assert_ptr_equal(d, &rs.sections[0]);
	assert_int_equal(d->shape, TC_SHAPE_OBJECT);
	assert_int_equal(d->nrecords, 1);
	const struct proto_record *r = &d->records[0];
	assert_int_equal(r->nfields, 4);
	assert_string_equal(r->fields[0].key, "version"); /* order kept */
	assert_int_equal(r->fields[0].type, TC_VAL_STR);
	assert_string_equal(r->fields[0].v.s, "0.1.0");
	const struct proto_field *f = proto_record_find(r, "uptime_s");
	assert_non_null(f);
	assert_int_equal(f->type, TC_VAL_U64);
	assert_true(f->v.u == 3600);
	f = proto_record_find(r, "skew_ns");
	assert_int_equal(f->type, TC_VAL_I64);
	assert_true(f->v.i == -12);
	f = proto_record_find(r, "degraded");
	assert_int_equal(f->type, TC_VAL_BOOL);
	assert_true(f->v.b);
	assert_null(proto_record_find(r, "nope"));

	const struct proto_section *t = proto_recset_find(&rs, "tiers");
	assert_int_equal(t->shape, TC_SHAPE_ARRAY);
	assert_int_equal(t->nrecords, 2);
	assert_int_equal(t->records[0].nfields, 2);
	assert_int_equal(t->records[1].nfields, 3);
	assert_string_equal(proto_record_find(&t->records[1], "name")->v.s, "warm");
	assert_true(proto_record_find(&t->records[1], "capacity_bytes")->v.u == 4ull << 40);
	assert_false(proto_record_find(&t->records[1], "readonly")->v.b);

	assert_int_equal(proto_recset_find(&rs, "empty")->nrecords, 0);
	assert_int_equal(proto_recset_find(&rs, "nofields")->nrecords, 1);
	assert_int_equal(proto_recset_find(&rs, "nofields")->records[0].nfields, 0);
	assert_null(proto_recset_find(&rs, "counters"));

	proto_recset_free(&rs);
	assert_int_equal(rs.nsections, 0);
	assert_null(rs.sections);
	free(b);
	proto_wr_free(&w);
}

static void test_recset_empty(void **state)
{
	(void)state;
	struct proto_wr w;
	struct proto_rs rs;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_rs_begin(&rs, &w);
	proto_rs_end(&rs);
	assert_int_equal(payload_len(&w), 4);
	struct proto_recset out;
	assert_int_equal(proto_recset_parse(payload(&w), payload_len(&w), &out), 0);
	assert_int_equal(out.nsections, 0);
	proto_recset_free(&out);
	proto_wr_free(&w);
}

static void test_recset_every_truncation_rejected(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	write_sample_recset(&w);
	size_t full = payload_len(&w);
	for (size_t k = 0; k < full; k++) {
		uint8_t *b = exact(payload(&w), k);
		struct proto_recset rs;
		memset(&rs, 0xa5, sizeof(rs));
		assert_int_equal(proto_recset_parse(b, k, &rs), -EBADMSG);
		/* nothing to free after a failure, and it says so */
		assert_int_equal(rs.nsections, 0);
		assert_null(rs.sections);
		free(b);
	}
	proto_wr_free(&w);
}

static void test_recset_trailing_bytes_rejected(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	write_sample_recset(&w);
	proto_wr_u8(&w, 0);
	struct proto_recset rs;
	assert_int_equal(proto_recset_parse(payload(&w), payload_len(&w), &rs), -EBADMSG);
	proto_wr_free(&w);
}

/* Build a record set by hand to say what the writer never would. */
static void test_recset_bad_value_type(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	for (uint8_t type = 0; type < 8; type++) {
		proto_wr_begin(&w);
		proto_wr_u32(&w, 1);
		proto_wr_str(&w, "s");
		proto_wr_u8(&w, TC_SHAPE_OBJECT);
		proto_wr_u32(&w, 1);
		proto_wr_u32(&w, 1);
		proto_wr_str(&w, "k");
		proto_wr_u8(&w, type);
		proto_wr_u64(&w, 0); /* 8 bytes: enough for any value type */
		struct proto_recset rs;
		int rc = proto_recset_parse(payload(&w), payload_len(&w), &rs);
		if (type == TC_VAL_U64 || type == TC_VAL_I64) {
			assert_int_equal(rc, 0);
			proto_recset_free(&rs);
		} else {
			/* str: length 0 then 4 spare bytes; bool: 7 spare bytes;
			 * unknown types: refused */
			assert_int_equal(rc, -EBADMSG);
		}
	}
	proto_wr_free(&w);
}

static int parse_counts(uint32_t nsec, uint32_t nrec, uint32_t nfld, size_t pad)
{
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u32(&w, nsec);
	proto_wr_str(&w, "s");
	proto_wr_u8(&w, TC_SHAPE_ARRAY);
	proto_wr_u32(&w, nrec);
	proto_wr_u32(&w, nfld);
	uint8_t *p = proto_wr_reserve(&w, pad);
	if (pad)
		memset(p, 0, pad);
	uint8_t *b = exact(payload(&w), payload_len(&w));
	struct proto_recset rs;
	int rc = proto_recset_parse(b, payload_len(&w), &rs);
	if (rc == 0)
		proto_recset_free(&rs);
	free(b);
	proto_wr_free(&w);
	return rc;
}

/* Counts that the payload cannot back are refused before any allocation
 * sized by them: with ASan, a 4-billion-element calloc would abort the
 * test, and without it the result would be -ENOMEM, not -EBADMSG. */
static void test_recset_huge_counts_rejected(void **state)
{
	(void)state;
	assert_int_equal(parse_counts(UINT32_MAX, 1, 0, 0), -EBADMSG);
	assert_int_equal(parse_counts(65, 1, 0, 4096), -EBADMSG); /* > 64 sections */
	assert_int_equal(parse_counts(1, UINT32_MAX, 0, 0), -EBADMSG);
	assert_int_equal(parse_counts(1, 100001, 0, 400004), -EBADMSG); /* > 100000 */
	assert_int_equal(parse_counts(1, 1000, 0, 0), -EBADMSG);
	assert_int_equal(parse_counts(1, 1, UINT32_MAX, 0), -EBADMSG);
	assert_int_equal(parse_counts(1, 1, 257, 257 * 13), -EBADMSG); /* > 256 fields */
	assert_int_equal(parse_counts(1, 1, 2, 0), -EBADMSG);
	/* honest counts at the limits pass: 100000 records of 0 fields */
	assert_int_equal(parse_counts(1, 100000, 0, 99999 * 4), 0);
}

static void test_recset_long_string_rejected(void **state)
{
	(void)state;
	char *big = malloc(TC_PATH_MAX + 2);
	assert_non_null(big);
	memset(big, 'a', TC_PATH_MAX + 1);
	struct proto_wr w;
	struct proto_rs rs;
	struct proto_recset out;
	proto_wr_init(&w);

	big[TC_PATH_MAX] = '\0'; /* 4096 bytes: the limit */
	proto_wr_begin(&w);
	proto_rs_begin(&rs, &w);
	proto_rs_section(&rs, "s", TC_SHAPE_OBJECT);
	proto_rs_record(&rs);
	proto_rs_str(&rs, "k", big);
	proto_rs_end(&rs);
	assert_int_equal(proto_recset_parse(payload(&w), payload_len(&w), &out), 0);
	assert_int_equal(strlen(out.sections[0].records[0].fields[0].v.s), TC_PATH_MAX);
	proto_recset_free(&out);

	big[TC_PATH_MAX] = 'a';
	big[TC_PATH_MAX + 1] = '\0';
	proto_wr_begin(&w);
	proto_rs_begin(&rs, &w);
	proto_rs_section(&rs, "s", TC_SHAPE_OBJECT);
	proto_rs_record(&rs);
	proto_rs_str(&rs, big, "v"); /* as a key this time */
	proto_rs_end(&rs);
	assert_int_equal(proto_recset_parse(payload(&w), payload_len(&w), &out), -EBADMSG);
	proto_wr_free(&w);
	free(big);
}

/* A garbage-filled buffer of every length parses or fails cleanly. */
static void test_recset_garbage(void **state)
{
	(void)state;
	uint32_t x = 12345;
	for (size_t len = 0; len < 300; len++) {
		uint8_t *b = malloc(len ? len : 1);
		assert_non_null(b);
		for (size_t i = 0; i < len; i++) {
			x = x * 1103515245u + 12345u;
			b[i] = (uint8_t)(x >> 16);
			if (i < 4)
				b[i] = i == 0 ? (uint8_t)(x % 3) : 0; /* small section counts */
		}
		struct proto_recset rs;
		int rc = proto_recset_parse(b, len, &rs);
		assert_true(rc == 0 || rc == -EBADMSG);
		if (rc == 0)
			proto_recset_free(&rs);
		free(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ints_round_trip),
		cmocka_unit_test(test_str_and_bytes_round_trip),
		cmocka_unit_test(test_many_appends_grow),
		cmocka_unit_test(test_header_round_trip),
		cmocka_unit_test(test_header_decode_errors),
		cmocka_unit_test(test_finish_errors),
		cmocka_unit_test(test_truncated_payloads),
		cmocka_unit_test(test_get_past_end_returns_zero),
		cmocka_unit_test(test_str_limits),
		cmocka_unit_test(test_recset_round_trip),
		cmocka_unit_test(test_recset_empty),
		cmocka_unit_test(test_recset_every_truncation_rejected),
		cmocka_unit_test(test_recset_trailing_bytes_rejected),
		cmocka_unit_test(test_recset_bad_value_type),
		cmocka_unit_test(test_recset_huge_counts_rejected),
		cmocka_unit_test(test_recset_long_string_rejected),
		cmocka_unit_test(test_recset_garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
