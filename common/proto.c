/*
 * Frame codec for the tiercache protocol: see common/proto.h. Pure functions
 * over caller-owned buffers; safe from any thread.
 */
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void proto_wr_init(struct proto_wr *w)
{
	memset(w, 0, sizeof(*w));
}

void proto_wr_free(struct proto_wr *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

uint8_t *proto_wr_reserve(struct proto_wr *w, size_t n)
{
	if (w->oom)
		return NULL;
	if (n > SIZE_MAX / 2 - w->len) {
		w->oom = true;
		return NULL;
	}
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->len + n)
			cap *= 2;
		uint8_t *nb = realloc(w->buf, cap);
		if (!nb) {
			w->oom = true;
			return NULL;
		}
		w->buf = nb;
		w->cap = cap;
	}
	uint8_t *p = w->buf + w->len;
	w->len += n;
	return p;
}

void proto_wr_begin(struct proto_wr *w)
{
	w->len = 0;
	w->oom = false;
	uint8_t *p = proto_wr_reserve(w, TC_HDR_SIZE);
	if (p)
		memset(p, 0, TC_HDR_SIZE);
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void wr_int(struct proto_wr *w, uint64_t v, unsigned n)
{
	uint8_t *p = proto_wr_reserve(w, n);
	if (p)
		put_le(p, v, n);
}

void proto_wr_u8(struct proto_wr *w, uint8_t v) { wr_int(w, v, 1); }
void proto_wr_u16(struct proto_wr *w, uint16_t v) { wr_int(w, v, 2); }
void proto_wr_u32(struct proto_wr *w, uint32_t v) { wr_int(w, v, 4); }
void proto_wr_u64(struct proto_wr *w, uint64_t v) { wr_int(w, v, 8); }
void proto_wr_i64(struct proto_wr *w, int64_t v) { wr_int(w, (uint64_t)v, 8); }

void proto_wr_bytes(struct proto_wr *w, const void *p, size_t n)
{
	uint8_t *d = proto_wr_reserve(w, n);
	if (d && n)
		memcpy(d, p, n);
}

void proto_wr_strn(struct proto_wr *w, const char *s, size_t n)
{
	if (n > UINT32_MAX) {
		w->oom = true;
		return;
	}
	proto_wr_u32(w, (uint32_t)n);
	proto_wr_bytes(w, s, n);
}

void proto_wr_str(struct proto_wr *w, const char *s)
{
	proto_wr_strn(w, s ? s : "", s ? strlen(s) : 0);
}

void proto_hdr_encode(uint8_t out[TC_HDR_SIZE], const struct tc_hdr *h)
{
	put_le(out + 0, h->magic, 2);
	out[2] = h->version;
	out[3] = h->op;
	put_le(out + 4, h->len, 4);
	put_le(out + 8, h->id, 4);
	put_le(out + 12, h->aux, 4);
}

void proto_hdr_unpack(const uint8_t in[TC_HDR_SIZE], struct tc_hdr *h)
{
	h->magic = (uint16_t)get_le(in, 2);
	h->version = in[2];
	h->op = in[3];
	h->len = (uint32_t)get_le(in + 4, 4);
	h->id = (uint32_t)get_le(in + 8, 4);
	h->aux = (uint32_t)get_le(in + 12, 4);
}

int proto_hdr_decode(const uint8_t in[TC_HDR_SIZE], struct tc_hdr *h)
{
	proto_hdr_unpack(in, h);
	if (h->magic != TC_PROTO_MAGIC || h->version != TC_PROTO_VERSION)
		return -EPROTO;
	if (h->len > TC_FRAME_MAX)
		return -EMSGSIZE;
	return 0;
}

int proto_wr_finish(struct proto_wr *w, uint8_t op, uint32_t id, uint32_t aux)
{
	if (w->oom || w->len < TC_HDR_SIZE)
		return -ENOMEM;
	size_t plen = w->len - TC_HDR_SIZE;
	if (plen > TC_FRAME_MAX)
		return -EMSGSIZE;
	struct tc_hdr h = {
		.magic = TC_PROTO_MAGIC,
		.version = TC_PROTO_VERSION,
		.op = op,
		.len = (uint32_t)plen,
		.id = id,
		.aux = aux,
	};
	proto_hdr_encode(w->buf, &h);
	return 0;
}

void proto_rd_init(struct proto_rd *r, const void *p, size_t n)
{
	r->p = p;
	r->left = n;
	r->bad = false;
}

static uint64_t rd_int(struct proto_rd *r, unsigned n)
{
	if (r->bad || r->left < n) {
		r->bad = true;
		return 0;
	}
	uint64_t v = get_le(r->p, n);
	r->p += n;
	r->left -= n;
	return v;
}

uint8_t proto_rd_u8(struct proto_rd *r) { return (uint8_t)rd_int(r, 1); }
uint16_t proto_rd_u16(struct proto_rd *r) { return (uint16_t)rd_int(r, 2); }
uint32_t proto_rd_u32(struct proto_rd *r) { return (uint32_t)rd_int(r, 4); }
uint64_t proto_rd_u64(struct proto_rd *r) { return rd_int(r, 8); }
int64_t proto_rd_i64(struct proto_rd *r) { return (int64_t)rd_int(r, 8); }

const char *proto_rd_str(struct proto_rd *r, size_t max, size_t *n)
{
	uint32_t len = proto_rd_u32(r);
	if (r->bad || len > max || len > r->left) {
		r->bad = true;
		*n = 0;
		return NULL;
	}
	const char *s = (const char *)r->p;
	r->p += len;
	r->left -= len;
	*n = len;
	return s;
}

bool proto_rd_str_copy(struct proto_rd *r, char *dst, size_t dstsz)
{
	size_t n;
	if (dstsz == 0) {
		r->bad = true;
		return false;
	}
	const char *s = proto_rd_str(r, dstsz - 1, &n);
	if (!s || memchr(s, '\0', n)) {
		r->bad = true;
		dst[0] = '\0';
		return false;
	}
	memcpy(dst, s, n);
	dst[n] = '\0';
	return true;
}

/* ---- record sets ---- */

static void patch_u32(struct proto_wr *w, size_t at, uint32_t v)
{
	if (!w->oom && at + 4 <= w->len)
		put_le(w->buf + at, v, 4);
}

static void rs_end_record(struct proto_rs *rs)
{
	if (rs->nfld_at) {
		patch_u32(rs->w, rs->nfld_at, rs->nfld);
		rs->nfld_at = 0;
	}
}

static void rs_end_section(struct proto_rs *rs)
{
	rs_end_record(rs);
	if (rs->nrec_at) {
		patch_u32(rs->w, rs->nrec_at, rs->nrec);
		rs->nrec_at = 0;
	}
}

void proto_rs_begin(struct proto_rs *rs, struct proto_wr *w)
{
	memset(rs, 0, sizeof(*rs));
	rs->w = w;
	rs->nsec_at = w->len;
	proto_wr_u32(w, 0);
}

void proto_rs_section(struct proto_rs *rs, const char *name, uint8_t shape)
{
	rs_end_section(rs);
	proto_wr_str(rs->w, name);
	proto_wr_u8(rs->w, shape);
	rs->nrec_at = rs->w->len;
	rs->nrec = 0;
	proto_wr_u32(rs->w, 0);
	rs->nsec++;
}

void proto_rs_record(struct proto_rs *rs)
{
	rs_end_record(rs);
	rs->nfld_at = rs->w->len;
	rs->nfld = 0;
	proto_wr_u32(rs->w, 0);
	rs->nrec++;
}

static void rs_key(struct proto_rs *rs, const char *key, uint8_t type)
{
	proto_wr_str(rs->w, key);
	proto_wr_u8(rs->w, type);
	rs->nfld++;
}

void proto_rs_u64(struct proto_rs *rs, const char *key, uint64_t v)
{
	rs_key(rs, key, TC_VAL_U64);
	proto_wr_u64(rs->w, v);
}

void proto_rs_i64(struct proto_rs *rs, const char *key, int64_t v)
{
	rs_key(rs, key, TC_VAL_I64);
	proto_wr_i64(rs->w, v);
}

void proto_rs_str(struct proto_rs *rs, const char *key, const char *v)
{
	rs_key(rs, key, TC_VAL_STR);
	proto_wr_str(rs->w, v);
}

void proto_rs_bool(struct proto_rs *rs, const char *key, bool v)
{
	rs_key(rs, key, TC_VAL_BOOL);
	proto_wr_u8(rs->w, v ? 1 : 0);
}

void proto_rs_end(struct proto_rs *rs)
{
	rs_end_section(rs);
	patch_u32(rs->w, rs->nsec_at, rs->nsec);
}

#define RS_MAX_SECTIONS 64u
#define RS_MAX_RECORDS 100000u
#define RS_MAX_FIELDS 256u
#define RS_MAX_STR TC_PATH_MAX

static char *rd_dup(struct proto_rd *r)
{
	size_t n;
	const char *s = proto_rd_str(r, RS_MAX_STR, &n);
	if (!s)
		return NULL;
	char *d = malloc(n + 1);
	if (!d) {
		r->bad = true;
		return NULL;
	}
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

static void record_free(struct proto_record *rec)
{
	for (uint32_t i = 0; i < rec->nfields; i++) {
		free(rec->fields[i].key);
		if (rec->fields[i].type == TC_VAL_STR)
			free(rec->fields[i].v.s);
	}
	free(rec->fields);
}

void proto_recset_free(struct proto_recset *rs)
{
	for (uint32_t s = 0; s < rs->nsections; s++) {
		struct proto_section *sec = &rs->sections[s];
		for (uint32_t i = 0; i < sec->nrecords; i++)
			record_free(&sec->records[i]);
		free(sec->records);
		free(sec->name);
	}
	free(rs->sections);
	memset(rs, 0, sizeof(*rs));
}

/* Each element is at least this many payload bytes, so a count larger than
 * left / min cannot be honest: reject it before allocating. */
static bool count_fits(const struct proto_rd *r, uint32_t count, uint32_t max, size_t min_bytes)
{
	return count <= max && (size_t)count <= r->left / min_bytes;
}

static int parse_record(struct proto_rd *r, struct proto_record *rec)
{
	uint32_t nf = proto_rd_u32(r);
	if (r->bad || !count_fits(r, nf, RS_MAX_FIELDS, 5))
		return -EBADMSG;
	rec->fields = calloc(nf ? nf : 1, sizeof(*rec->fields));
	if (!rec->fields)
		return -ENOMEM;
	for (uint32_t i = 0; i < nf; i++) {
		struct proto_field *f = &rec->fields[i];
		f->key = rd_dup(r);
		f->type = proto_rd_u8(r);
		rec->nfields = i + 1;
		switch (f->type) {
		case TC_VAL_U64: f->v.u = proto_rd_u64(r); break;
		case TC_VAL_I64: f->v.i = proto_rd_i64(r); break;
		case TC_VAL_STR: f->v.s = rd_dup(r); break;
		case TC_VAL_BOOL: f->v.b = proto_rd_u8(r) != 0; break;
		default:
			f->type = 0;
			r->bad = true;
		}
		if (r->bad)
			return -EBADMSG;
	}
	return 0;
}

int proto_recset_parse(const void *p, size_t n, struct proto_recset *out)
{
	struct proto_rd r;
	int rc = -EBADMSG;
	memset(out, 0, sizeof(*out));
	proto_rd_init(&r, p, n);
	uint32_t ns = proto_rd_u32(&r);
	if (r.bad || !count_fits(&r, ns, RS_MAX_SECTIONS, 9))
		return -EBADMSG;
	out->sections = calloc(ns ? ns : 1, sizeof(*out->sections));
	if (!out->sections)
		return -ENOMEM;
	for (uint32_t s = 0; s < ns; s++) {
		struct proto_section *sec = &out->sections[s];
		out->nsections = s + 1;
		sec->name = rd_dup(&r);
		sec->shape = proto_rd_u8(&r);
		uint32_t nr = proto_rd_u32(&r);
		if (r.bad || !count_fits(&r, nr, RS_MAX_RECORDS, 4))
			goto fail;
		sec->records = calloc(nr ? nr : 1, sizeof(*sec->records));
		if (!sec->records) {
			rc = -ENOMEM;
			goto fail;
		}
		for (uint32_t i = 0; i < nr; i++) {
			sec->nrecords = i + 1;
			rc = parse_record(&r, &sec->records[i]);
			if (rc < 0)
				goto fail;
			rc = -EBADMSG;
		}
	}
	if (!proto_rd_done(&r))
		goto fail;
	return 0;
fail:
	proto_recset_free(out);
	return rc;
}

const struct proto_section *proto_recset_find(const struct proto_recset *rs, const char *name)
{
	for (uint32_t i = 0; i < rs->nsections; i++)
		if (rs->sections[i].name && strcmp(rs->sections[i].name, name) == 0)
			return &rs->sections[i];
	return NULL;
}

const struct proto_field *proto_record_find(const struct proto_record *r, const char *key)
{
	for (uint32_t i = 0; i < r->nfields; i++)
		if (r->fields[i].key && strcmp(r->fields[i].key, key) == 0)
			return &r->fields[i];
	return NULL;
}
