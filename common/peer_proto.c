/*
 * Frame codec for the peer protocol (common/peer_proto.h). Built on the
 * client protocol's writer and reader (proto.c) for the field encodings;
 * only the header differs (PEER_MAGIC, PEER_PROTO_VERSION, per-op limits),
 * so it has its own header writer.
 *
 * Every decoder reads only the bytes it was given, checks each string's
 * length before copying it, and wants the payload consumed exactly: a
 * frame with bytes left over is as malformed as a short one.
 *
 * Names (cluster, node ids, datasets) are 1..PEER_NAME_MAX bytes with no
 * NUL and no '/'. A path is canonical and relative: components of
 * 1..TC_NAME_MAX bytes separated by single '/', none "." or "..", no
 * leading or trailing '/' ("a//b" is refused too: manifests hold canonical
 * paths only, so a non-canonical one can name nothing and is malformed).
 * Encoders refuse what decoders refuse (-EINVAL), so a frame this code
 * writes always decodes.
 */
#include "peer_proto.h"

#include <errno.h>
#include <string.h>

uint32_t peer_op_max(uint8_t op)
{
	switch (op) {
	case PEER_OP_DATA:
		return PEER_DATA_META + PEER_CHUNK_MAX;
	case PEER_OP_HELLO:
	case PEER_OP_CHALLENGE:
	case PEER_OP_AUTH:
	case PEER_OP_READY:
	case PEER_OP_GET:
	case PEER_OP_ERROR:
		return PEER_CTRL_MAX;
	default:
		return 0;
	}
}

void peer_hdr_encode(const struct peer_hdr *h, uint8_t out[PEER_HDR_SIZE])
{
	const struct tc_hdr t = {.magic = h->magic, .version = h->version, .op = h->op,
				 .len = h->len, .id = h->id, .aux = h->aux};
	proto_hdr_encode(out, &t);
}

int peer_hdr_decode(const uint8_t in[PEER_HDR_SIZE], struct peer_hdr *h)
{
	struct tc_hdr t;
	proto_hdr_unpack(in, &t);
	*h = (struct peer_hdr){.magic = t.magic, .version = t.version, .op = t.op,
			       .len = t.len, .id = t.id, .aux = t.aux};
	if (h->magic != PEER_MAGIC || h->version != PEER_PROTO_VERSION)
		return -EPROTO;
	uint32_t max = peer_op_max(h->op);
	if (max == 0)
		return -EPROTO;
	if (h->len > max)
		return -EMSGSIZE;
	return 0;
}

/* The header in front of w's payload; len is the payload's length on the
 * wire, which for DATA counts bytes the caller sends after w's. */
static int peer_finish(struct proto_wr *w, uint8_t op, uint32_t id, uint32_t aux, uint64_t len)
{
	if (w->oom || w->len < PEER_HDR_SIZE)
		return -ENOMEM;
	if (len > peer_op_max(op))
		return -EMSGSIZE;
	struct peer_hdr h = {
		.magic = PEER_MAGIC,
		.version = PEER_PROTO_VERSION,
		.op = op,
		.len = (uint32_t)len,
		.id = id,
		.aux = aux,
	};
	peer_hdr_encode(&h, w->buf);
	return 0;
}

static int finish(struct proto_wr *w, uint8_t op, uint32_t id, uint32_t aux)
{
	return peer_finish(w, op, id, aux, w->len >= PEER_HDR_SIZE ? w->len - PEER_HDR_SIZE : 0);
}

static bool name_ok(const char *s, size_t n)
{
	return n >= 1 && n <= PEER_NAME_MAX && !memchr(s, '\0', n) && !memchr(s, '/', n);
}

static bool path_ok(const char *s, size_t n)
{
	if (n == 0 || n > TC_PATH_MAX || memchr(s, '\0', n))
		return false;
	size_t i = 0;
	while (i <= n) {
		const char *c = s + i;
		const char *slash = memchr(c, '/', n - i);
		size_t cl = slash ? (size_t)(slash - c) : n - i;
		if (cl == 0 || cl > TC_NAME_MAX)
			return false; /* leading, trailing or doubled '/' */
		if ((cl == 1 && c[0] == '.') || (cl == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		i += cl + 1;
	}
	return true;
}

static bool cstr_name_ok(const char *s)
{
	return name_ok(s, strnlen(s, PEER_NAME_MAX + 1));
}

/* Copy a str field into dst (size dn) if ok(field) holds. */
static bool rd_checked(struct proto_rd *r, char *dst, size_t dn, size_t max,
		       bool (*ok)(const char *, size_t))
{
	size_t n;
	const char *s = proto_rd_str(r, max, &n);
	if (!s || n >= dn || !ok(s, n)) {
		r->bad = true;
		dst[0] = '\0';
		return false;
	}
	memcpy(dst, s, n);
	dst[n] = '\0';
	return true;
}

int peer_enc_hello(struct proto_wr *w, uint32_t id, const struct peer_hello *m)
{
	if (!cstr_name_ok(m->cluster) || !cstr_name_ok(m->node))
		return -EINVAL;
	proto_wr_begin(w);
	proto_wr_u32(w, m->version);
	proto_wr_str(w, m->cluster);
	proto_wr_str(w, m->node);
	proto_wr_bytes(w, m->nonce, PEER_NONCE_LEN);
	return finish(w, PEER_OP_HELLO, id, 0);
}

int peer_dec_hello(const uint8_t *p, size_t n, struct peer_hello *m)
{
	struct proto_rd r;
	proto_rd_init(&r, p, n);
	memset(m, 0, sizeof(*m));
	m->version = proto_rd_u32(&r);
	if (!proto_rd_ok(&r))
		return -EBADMSG;
	/* a later version may lay out the rest differently: say so first */
	if (m->version != PEER_PROTO_VERSION)
		return -EPROTO;
	rd_checked(&r, m->cluster, sizeof(m->cluster), PEER_NAME_MAX, name_ok);
	rd_checked(&r, m->node, sizeof(m->node), PEER_NAME_MAX, name_ok);
	if (!proto_rd_ok(&r) || r.left != PEER_NONCE_LEN)
		return -EBADMSG;
	memcpy(m->nonce, r.p, PEER_NONCE_LEN);
	return 0;
}

int peer_enc_challenge(struct proto_wr *w, uint32_t id, const struct peer_challenge *m)
{
	if (!cstr_name_ok(m->node))
		return -EINVAL;
	proto_wr_begin(w);
	proto_wr_str(w, m->node);
	proto_wr_bytes(w, m->nonce, PEER_NONCE_LEN);
	proto_wr_bytes(w, m->mac, PEER_MAC_LEN);
	return finish(w, PEER_OP_CHALLENGE, id, 0);
}

int peer_dec_challenge(const uint8_t *p, size_t n, struct peer_challenge *m)
{
	struct proto_rd r;
	proto_rd_init(&r, p, n);
	memset(m, 0, sizeof(*m));
	rd_checked(&r, m->node, sizeof(m->node), PEER_NAME_MAX, name_ok);
	if (!proto_rd_ok(&r) || r.left != PEER_NONCE_LEN + PEER_MAC_LEN)
		return -EBADMSG;
	memcpy(m->nonce, r.p, PEER_NONCE_LEN);
	memcpy(m->mac, r.p + PEER_NONCE_LEN, PEER_MAC_LEN);
	return 0;
}

int peer_enc_auth(struct proto_wr *w, uint32_t id, const uint8_t mac[PEER_MAC_LEN])
{
	proto_wr_begin(w);
	proto_wr_bytes(w, mac, PEER_MAC_LEN);
	return finish(w, PEER_OP_AUTH, id, 0);
}

int peer_dec_auth(const uint8_t *p, size_t n, uint8_t mac[PEER_MAC_LEN])
{
	if (n != PEER_MAC_LEN)
		return -EBADMSG;
	memcpy(mac, p, PEER_MAC_LEN);
	return 0;
}

int peer_enc_ready(struct proto_wr *w, uint32_t id)
{
	proto_wr_begin(w);
	return finish(w, PEER_OP_READY, id, 0);
}

int peer_enc_get(struct proto_wr *w, uint32_t id, const struct peer_get *m)
{
	if (!cstr_name_ok(m->dataset) || !path_ok(m->path, strnlen(m->path, TC_PATH_MAX + 1)))
		return -EINVAL;
	if (m->chunk_size == 0 || m->chunk_size > PEER_CHUNK_MAX || m->len > m->chunk_size)
		return -EINVAL;
	proto_wr_begin(w);
	proto_wr_str(w, m->dataset);
	proto_wr_str(w, m->path);
	proto_wr_u64(w, m->size);
	proto_wr_i64(w, m->mtime_ns);
	proto_wr_u64(w, m->version);
	proto_wr_u32(w, m->chunk_size);
	proto_wr_u32(w, m->idx);
	proto_wr_u32(w, m->len);
	proto_wr_u32(w, m->flags);
	return finish(w, PEER_OP_GET, id, 0);
}

int peer_dec_get(const uint8_t *p, size_t n, struct peer_get *m)
{
	struct proto_rd r;
	proto_rd_init(&r, p, n);
	memset(m, 0, sizeof(*m));
	rd_checked(&r, m->dataset, sizeof(m->dataset), PEER_NAME_MAX, name_ok);
	rd_checked(&r, m->path, sizeof(m->path), TC_PATH_MAX, path_ok);
	m->size = proto_rd_u64(&r);
	m->mtime_ns = proto_rd_i64(&r);
	m->version = proto_rd_u64(&r);
	m->chunk_size = proto_rd_u32(&r);
	m->idx = proto_rd_u32(&r);
	m->len = proto_rd_u32(&r);
	m->flags = proto_rd_u32(&r);
	if (!proto_rd_done(&r))
		return -EBADMSG;
	if (m->chunk_size == 0 || m->chunk_size > PEER_CHUNK_MAX || m->len > m->chunk_size)
		return -EBADMSG;
	return 0;
}

int peer_enc_data_head(struct proto_wr *w, uint32_t id, const struct peer_data *m)
{
	if (m->where != PEER_WHERE_HIT && m->where != PEER_WHERE_FILLED)
		return -EINVAL;
	if (m->len > PEER_CHUNK_MAX)
		return -EMSGSIZE;
	proto_wr_begin(w);
	proto_wr_u64(w, m->size);
	proto_wr_i64(w, m->mtime_ns);
	proto_wr_u64(w, m->version);
	proto_wr_u64(w, m->checksum);
	proto_wr_u32(w, m->len);
	proto_wr_u8(w, m->where);
	return peer_finish(w, PEER_OP_DATA, id, 0, (uint64_t)PEER_DATA_META + m->len);
}

int peer_dec_data_head(const uint8_t *p, size_t n, struct peer_data *m)
{
	memset(m, 0, sizeof(*m));
	if (n < PEER_DATA_META)
		return -EBADMSG;
	struct proto_rd r;
	proto_rd_init(&r, p, PEER_DATA_META);
	m->size = proto_rd_u64(&r);
	m->mtime_ns = proto_rd_i64(&r);
	m->version = proto_rd_u64(&r);
	m->checksum = proto_rd_u64(&r);
	m->len = proto_rd_u32(&r);
	m->where = proto_rd_u8(&r);
	if (!proto_rd_done(&r))
		return -EBADMSG;
	if (m->len > PEER_CHUNK_MAX || n != (size_t)PEER_DATA_META + m->len)
		return -EBADMSG;
	if (m->where != PEER_WHERE_HIT && m->where != PEER_WHERE_FILLED)
		return -EBADMSG;
	return 0;
}

/* Longest detail an ERROR carries; a longer one is cut, never refused. */
#define PEER_DETAIL_MAX (PEER_CTRL_MAX - 4u)

int peer_enc_error(struct proto_wr *w, uint32_t id, int err, const char *detail)
{
	if (!detail)
		detail = "";
	proto_wr_begin(w);
	proto_wr_strn(w, detail, strnlen(detail, PEER_DETAIL_MAX));
	/* the code's magnitude, negated as unsigned: INT_MIN has no int negation */
	uint32_t code = err < 0 ? 0u - (uint32_t)err : (uint32_t)err;
	return finish(w, PEER_OP_ERROR, id, code);
}

static bool detail_ok(const char *s, size_t n)
{
	return !memchr(s, '\0', n);
}

int peer_dec_error(const uint8_t *p, size_t n, char *detail, size_t dn)
{
	struct proto_rd r;
	proto_rd_init(&r, p, n);
	size_t len;
	const char *s = proto_rd_str(&r, PEER_DETAIL_MAX, &len);
	if (dn)
		detail[0] = '\0';
	if (!s || !proto_rd_done(&r) || !detail_ok(s, len))
		return -EBADMSG;
	if (dn) {
		size_t c = len < dn - 1 ? len : dn - 1;
		memcpy(detail, s, c);
		detail[c] = '\0';
	}
	return 0;
}
