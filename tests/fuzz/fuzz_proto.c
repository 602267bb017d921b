/*
 * libFuzzer target for the frame codec (common/proto.c): header decoding,
 * the payload getters driven by a little program taken from the input, and
 * record-set parsing. A record set that parses is written back with the
 * record-set writer and must parse again to the same thing.
 *
 * Build and run: tests/fuzz/build.sh (clang -fsanitize=fuzzer,address).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <assert.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fuzz builds keep assertions on (no NDEBUG): a failed one is a crash the
 * fuzzer reports with its input. */

/* Input: u8 n, n op bytes, then the payload the ops read from. */
static void fuzz_getters(const uint8_t *data, size_t size)
{
	if (size < 1)
		return;
	size_t n = data[0] % 64;
	if (size < 1 + n)
		return;
	const uint8_t *ops = data + 1;
	struct proto_rd r;
	proto_rd_init(&r, data + 1 + n, size - 1 - n);
	size_t total = size - 1 - n;
	for (size_t i = 0; i < n; i++) {
		size_t before = r.left;
		size_t len = 0;
		char dst[32];
		switch (ops[i] % 8) {
		case 0: (void)proto_rd_u8(&r); break;
		case 1: (void)proto_rd_u16(&r); break;
		case 2: (void)proto_rd_u32(&r); break;
		case 3: (void)proto_rd_u64(&r); break;
		case 4: (void)proto_rd_i64(&r); break;
		case 5: {
			const char *s = proto_rd_str(&r, ops[i] >> 3, &len);
			assert(s || len == 0);
			assert(!s || len <= (size_t)(ops[i] >> 3));
			break;
		}
		case 6:
			if (proto_rd_str_copy(&r, dst, sizeof(dst)))
				assert(strlen(dst) < sizeof(dst));
			else
				assert(dst[0] == '\0');
			break;
		default: {
			const char *s = proto_rd_str(&r, TC_FRAME_MAX, &len);
			/* the string lies inside the payload */
			assert(!s || (s >= (const char *)data && s + len <= (const char *)data + size));
			break;
		}
		}
		assert(r.left <= before); /* never grows, never wraps */
		assert(r.left <= total);
	}
}

static void recset_check_same(const struct proto_recset *a, const struct proto_recset *b)
{
	assert(a->nsections == b->nsections);
	for (uint32_t s = 0; s < a->nsections; s++) {
		const struct proto_section *x = &a->sections[s], *y = &b->sections[s];
		assert(strcmp(x->name, y->name) == 0 && x->shape == y->shape);
		assert(x->nrecords == y->nrecords);
		for (uint32_t i = 0; i < x->nrecords; i++) {
			const struct proto_record *p = &x->records[i], *q = &y->records[i];
			assert(p->nfields == q->nfields);
			for (uint32_t k = 0; k < p->nfields; k++) {
				const struct proto_field *f = &p->fields[k], *g = &q->fields[k];
				assert(strcmp(f->key, g->key) == 0 && f->type == g->type);
				switch (f->type) {
				case TC_VAL_U64: assert(f->v.u == g->v.u); break;
				case TC_VAL_I64: assert(f->v.i == g->v.i); break;
				case TC_VAL_STR: assert(strcmp(f->v.s, g->v.s) == 0); break;
				case TC_VAL_BOOL: assert(f->v.b == g->v.b); break;
				default: assert(0);
				}
			}
		}
	}
}

static void fuzz_recset(const uint8_t *data, size_t size)
{
	struct proto_recset rs;
	if (proto_recset_parse(data, size, &rs) < 0) {
		assert(rs.nsections == 0 && rs.sections == NULL);
		return;
	}
	struct proto_wr w;
	struct proto_rs rw;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_rs_begin(&rw, &w);
	for (uint32_t s = 0; s < rs.nsections; s++) {
		const struct proto_section *sec = &rs.sections[s];
		proto_rs_section(&rw, sec->name, sec->shape);
		for (uint32_t i = 0; i < sec->nrecords; i++) {
			proto_rs_record(&rw);
			for (uint32_t k = 0; k < sec->records[i].nfields; k++) {
				const struct proto_field *f = &sec->records[i].fields[k];
				switch (f->type) {
				case TC_VAL_U64: proto_rs_u64(&rw, f->key, f->v.u); break;
				case TC_VAL_I64: proto_rs_i64(&rw, f->key, f->v.i); break;
				case TC_VAL_STR: proto_rs_str(&rw, f->key, f->v.s); break;
				default: proto_rs_bool(&rw, f->key, f->v.b); break;
				}
			}
		}
	}
	proto_rs_end(&rw);
	assert(!w.oom);
	struct proto_recset again;
	/* strings are C strings now (cut at a NUL), so parse them the same */
	assert(proto_recset_parse(w.buf + TC_HDR_SIZE, w.len - TC_HDR_SIZE, &again) == 0);
	recset_check_same(&rs, &again);
	proto_recset_free(&again);
	proto_wr_free(&w);
	proto_recset_free(&rs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= TC_HDR_SIZE) {
		struct tc_hdr h;
		int rc = proto_hdr_decode(data, &h);
		assert(rc == 0 || rc == -EPROTO || rc == -EMSGSIZE);
		if (rc == 0) {
			assert(h.len <= TC_FRAME_MAX);
			uint8_t enc[TC_HDR_SIZE];
			proto_hdr_encode(enc, &h);
			assert(memcmp(enc, data, TC_HDR_SIZE) == 0);
			/* a whole frame: its payload as a record set */
			if (h.len == size - TC_HDR_SIZE)
				fuzz_recset(data + TC_HDR_SIZE, h.len);
		}
	}
	fuzz_getters(data, size);
	fuzz_recset(data, size);
	return 0;
}
