/*
 * Encoding and decoding of tiercache protocol frames (include/tiercache/
 * protocol.h). Shared by the daemon, libtiercache and tierctl.
 *
 * No I/O and no global state: callers own the buffers. Every decoder is
 * bounds-checked against the bytes it was given and fails with -EBADMSG,
 * never reads past the end; a failed get leaves the cursor marked bad so a
 * sequence of gets can be checked once at the end (proto_rd_ok()).
 */
#ifndef TIERCACHE_COMMON_PROTO_H
#define TIERCACHE_COMMON_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tiercache/protocol.h"

/* Growable output buffer. The first TC_HDR_SIZE bytes are reserved for the
 * header, filled by proto_wr_finish(). */
struct proto_wr {
	uint8_t *buf;
	size_t len;
	size_t cap;
	bool oom;
};

void proto_wr_init(struct proto_wr *w);
void proto_wr_free(struct proto_wr *w);
/* Start a frame: reset and reserve room for the header. */
void proto_wr_begin(struct proto_wr *w);
void proto_wr_u8(struct proto_wr *w, uint8_t v);
void proto_wr_u16(struct proto_wr *w, uint16_t v);
void proto_wr_u32(struct proto_wr *w, uint32_t v);
void proto_wr_u64(struct proto_wr *w, uint64_t v);
void proto_wr_i64(struct proto_wr *w, int64_t v);
void proto_wr_str(struct proto_wr *w, const char *s);
void proto_wr_strn(struct proto_wr *w, const char *s, size_t n);
void proto_wr_bytes(struct proto_wr *w, const void *p, size_t n);
/* Reserve n bytes at the end and return them for the caller to fill. */
uint8_t *proto_wr_reserve(struct proto_wr *w, size_t n);
/* Write the header in front of the payload. Returns 0, -ENOMEM if any
 * append failed, or -EMSGSIZE if the payload exceeds TC_FRAME_MAX. */
int proto_wr_finish(struct proto_wr *w, uint8_t op, uint32_t id, uint32_t aux);

/* Read cursor over one payload. */
struct proto_rd {
	const uint8_t *p;
	size_t left;
	bool bad;
};

void proto_rd_init(struct proto_rd *r, const void *p, size_t n);
uint8_t proto_rd_u8(struct proto_rd *r);
uint16_t proto_rd_u16(struct proto_rd *r);
uint32_t proto_rd_u32(struct proto_rd *r);
uint64_t proto_rd_u64(struct proto_rd *r);
int64_t proto_rd_i64(struct proto_rd *r);
/* A str field: returns a pointer into the payload (not NUL-terminated) and
 * its length; marks the cursor bad if longer than max or than what is left. */
const char *proto_rd_str(struct proto_rd *r, size_t max, size_t *n);
/* Copy a str field into dst (size dstsz, NUL-terminated); bad if it does not
 * fit or contains a NUL byte. */
bool proto_rd_str_copy(struct proto_rd *r, char *dst, size_t dstsz);
/* True if every get so far succeeded. */
static inline bool proto_rd_ok(const struct proto_rd *r) { return !r->bad; }
/* True if every get succeeded and the payload was consumed exactly. */
static inline bool proto_rd_done(const struct proto_rd *r) { return !r->bad && r->left == 0; }

void proto_hdr_encode(uint8_t out[TC_HDR_SIZE], const struct tc_hdr *h);
/* The header's fields as they are, unchecked (the peer protocol has the
 * same layout under its own magic and limits: peer_proto.c). */
void proto_hdr_unpack(const uint8_t in[TC_HDR_SIZE], struct tc_hdr *h);
/* Decode and validate magic, version and len <= TC_FRAME_MAX.
 * Returns 0, -EPROTO (magic/version) or -EMSGSIZE (len). */
int proto_hdr_decode(const uint8_t in[TC_HDR_SIZE], struct tc_hdr *h);

/* ---- record sets (status, datasets) ---- */

/* Writer: sections and records are written in order; counts are patched in
 * when a section or record ends. Use within one frame body. */
struct proto_rs {
	struct proto_wr *w;
	size_t nsec_at, nrec_at, nfld_at;
	uint32_t nsec, nrec, nfld;
};

void proto_rs_begin(struct proto_rs *rs, struct proto_wr *w);
void proto_rs_section(struct proto_rs *rs, const char *name, uint8_t shape);
void proto_rs_record(struct proto_rs *rs);
void proto_rs_u64(struct proto_rs *rs, const char *key, uint64_t v);
void proto_rs_i64(struct proto_rs *rs, const char *key, int64_t v);
void proto_rs_str(struct proto_rs *rs, const char *key, const char *v);
void proto_rs_bool(struct proto_rs *rs, const char *key, bool v);
void proto_rs_end(struct proto_rs *rs);

/* Reader: a parsed record set, all strings copied and NUL-terminated. */
struct proto_field {
	char *key;
	uint8_t type;
	union {
		uint64_t u;
		int64_t i;
		char *s;
		bool b;
	} v;
};

struct proto_record {
	uint32_t nfields;
	struct proto_field *fields;
};

struct proto_section {
	char *name;
	uint8_t shape;
	uint32_t nrecords;
	struct proto_record *records;
};

struct proto_recset {
	uint32_t nsections;
	struct proto_section *sections;
};

/* Parse a record set payload. Returns 0 or -EBADMSG / -ENOMEM; on error
 * nothing needs freeing. Limits: 64 sections, 100000 records, 256 fields. */
int proto_recset_parse(const void *p, size_t n, struct proto_recset *out);
void proto_recset_free(struct proto_recset *rs);
const struct proto_section *proto_recset_find(const struct proto_recset *rs, const char *name);
const struct proto_field *proto_record_find(const struct proto_record *r, const char *key);

#endif
