/*
 * Unit tests of the peer protocol's codec (common/peer_proto.c): every
 * message round trips; headers with a wrong magic, version or op, or a
 * length past the op's limit, are refused; every decoder refuses each
 * truncation, trailing bytes, overlong or NUL-bearing names and paths and
 * paths that leave their dataset. Inputs live in exact-size heap buffers,
 * so an ASan build sees any overread.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "peer_proto.h"

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
	return w->buf + PEER_HDR_SIZE;
}

static size_t payload_len(const struct proto_wr *w)
{
	return w->len - PEER_HDR_SIZE;
}

/* The decoders under one signature, for the loops below. */
typedef int (*dec_fn)(const uint8_t *p, size_t n);

static int d_hello(const uint8_t *p, size_t n)
{
	struct peer_hello m;
	return peer_dec_hello(p, n, &m);
}

static int d_challenge(const uint8_t *p, size_t n)
{
	struct peer_challenge m;
	return peer_dec_challenge(p, n, &m);
}

static int d_auth(const uint8_t *p, size_t n)
{
	uint8_t mac[PEER_MAC_LEN];
	return peer_dec_auth(p, n, mac);
}

static struct peer_get *get_buf;

static int d_get(const uint8_t *p, size_t n)
{
	return peer_dec_get(p, n, get_buf);
}

static int d_error(const uint8_t *p, size_t n)
{
	char d[64];
	return peer_dec_error(p, n, d, sizeof(d));
}

static int decode_copy(dec_fn f, const uint8_t *p, size_t n)
{
	uint8_t *b = exact(p, n);
	int rc = f(b, n);
	free(b);
	return rc;
}

/* Every proper prefix is refused, and so is one byte more. */
static void check_cuts(dec_fn f, const struct proto_wr *w)
{
	size_t n = payload_len(w);
	assert_int_equal(decode_copy(f, payload(w), n), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(decode_copy(f, payload(w), i), -EBADMSG);
	uint8_t *more = malloc(n + 1);
	assert_non_null(more);
	memcpy(more, payload(w), n);
	more[n] = 0;
	assert_int_equal(f(more, n + 1), -EBADMSG);
	free(more);
}

static void check_hdr(const struct proto_wr *w, uint8_t op, uint32_t id, uint32_t len)
{
	struct peer_hdr h;
	assert_int_equal(peer_hdr_decode(w->buf, &h), 0);
	assert_int_equal(h.magic, PEER_MAGIC);
	assert_int_equal(h.version, PEER_PROTO_VERSION);
	assert_int_equal(h.op, op);
	assert_int_equal(h.id, id);
	assert_int_equal(h.len, len);
	assert_memory_equal(w->buf, "TP", 2);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static void test_hello(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	struct peer_hello m = {.version = PEER_PROTO_VERSION}, o;
	strcpy(m.cluster, "train-a");
	strcpy(m.node, "node-07.example");
	fill(m.nonce, sizeof(m.nonce), 3);
	assert_int_equal(peer_enc_hello(&w, 9, &m), 0);
	check_hdr(&w, PEER_OP_HELLO, 9, (uint32_t)payload_len(&w));
	assert_int_equal(peer_dec_hello(payload(&w), payload_len(&w), &o), 0);
	assert_int_equal(o.version, PEER_PROTO_VERSION);
	assert_string_equal(o.cluster, m.cluster);
	assert_string_equal(o.node, m.node);
	assert_memory_equal(o.nonce, m.nonce, PEER_NONCE_LEN);
	check_cuts(d_hello, &w);

	/* another version: EPROTO, whatever follows */
	m.version = 2;
	assert_int_equal(peer_enc_hello(&w, 9, &m), 0);
	assert_int_equal(decode_copy(d_hello, payload(&w), payload_len(&w)), -EPROTO);
	assert_int_equal(decode_copy(d_hello, payload(&w), 4), -EPROTO);
	m.version = PEER_PROTO_VERSION;

	/* names: empty, longest, one too long, with '/' */
	strcpy(m.cluster, "");
	assert_int_equal(peer_enc_hello(&w, 1, &m), -EINVAL);
	memset(m.cluster, 'c', PEER_NAME_MAX);
	m.cluster[PEER_NAME_MAX] = '\0';
	assert_int_equal(peer_enc_hello(&w, 1, &m), 0);
	assert_int_equal(peer_dec_hello(payload(&w), payload_len(&w), &o), 0);
	assert_int_equal(strlen(o.cluster), PEER_NAME_MAX);
	strcpy(m.cluster, "a/b");
	assert_int_equal(peer_enc_hello(&w, 1, &m), -EINVAL);
	proto_wr_free(&w);
}

/* A HELLO written field by field, so a name can be what encoders refuse. */
static int raw_hello(const char *cluster, size_t cn, const char *node, size_t nn)
{
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u32(&w, PEER_PROTO_VERSION);
	proto_wr_strn(&w, cluster, cn);
	proto_wr_strn(&w, node, nn);
	uint8_t nonce[PEER_NONCE_LEN] = {0};
	proto_wr_bytes(&w, nonce, sizeof(nonce));
	assert_false(w.oom);
	int rc = decode_copy(d_hello, payload(&w), payload_len(&w));
	proto_wr_free(&w);
	return rc;
}

static void test_hello_bad_names(void **state)
{
	(void)state;
	char big[PEER_NAME_MAX + 2];
	memset(big, 'x', sizeof(big));
	assert_int_equal(raw_hello("c", 1, "n", 1), 0);
	assert_int_equal(raw_hello(big, PEER_NAME_MAX, "n", 1), 0);
	assert_int_equal(raw_hello(big, PEER_NAME_MAX + 1, "n", 1), -EBADMSG);
	assert_int_equal(raw_hello("c", 1, big, PEER_NAME_MAX + 1), -EBADMSG);
	assert_int_equal(raw_hello("", 0, "n", 1), -EBADMSG);
	assert_int_equal(raw_hello("c", 1, "", 0), -EBADMSG);
	assert_int_equal(raw_hello("c\0d", 3, "n", 1), -EBADMSG);
	assert_int_equal(raw_hello("c", 1, "n\0", 2), -EBADMSG);
	assert_int_equal(raw_hello("c/d", 3, "n", 1), -EBADMSG);
}

static void test_challenge_auth_ready(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	struct peer_challenge m = {0}, o;
	strcpy(m.node, "server-1");
	fill(m.nonce, sizeof(m.nonce), 11);
	fill(m.mac, sizeof(m.mac), 200);
	assert_int_equal(peer_enc_challenge(&w, 2, &m), 0);
	check_hdr(&w, PEER_OP_CHALLENGE, 2, (uint32_t)payload_len(&w));
	assert_int_equal(peer_dec_challenge(payload(&w), payload_len(&w), &o), 0);
	assert_string_equal(o.node, "server-1");
	assert_memory_equal(o.nonce, m.nonce, PEER_NONCE_LEN);
	assert_memory_equal(o.mac, m.mac, PEER_MAC_LEN);
	check_cuts(d_challenge, &w);
	m.node[0] = '\0';
	assert_int_equal(peer_enc_challenge(&w, 2, &m), -EINVAL);

	uint8_t mac[PEER_MAC_LEN], back[PEER_MAC_LEN];
	fill(mac, sizeof(mac), 77);
	assert_int_equal(peer_enc_auth(&w, 3, mac), 0);
	check_hdr(&w, PEER_OP_AUTH, 3, PEER_MAC_LEN);
	assert_int_equal(peer_dec_auth(payload(&w), payload_len(&w), back), 0);
	assert_memory_equal(back, mac, PEER_MAC_LEN);
	check_cuts(d_auth, &w);

	assert_int_equal(peer_enc_ready(&w, 4), 0);
	check_hdr(&w, PEER_OP_READY, 4, 0);
	assert_int_equal(w.len, PEER_HDR_SIZE);
	proto_wr_free(&w);
}

static struct peer_get sample_get(void)
{
	struct peer_get m = {
		.size = 5u << 20,
		.mtime_ns = -1234567,
		.version = 0xfeedfacecafebeefull,
		.chunk_size = 1u << 20,
		.idx = 4,
		.len = 1u << 20,
		.flags = 0,
	};
	strcpy(m.dataset, "imagenet");
	strcpy(m.path, "train/n01440764/img_0001.JPEG");
	return m;
}

static void test_get(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	struct peer_get m = sample_get();
	struct peer_get *o = malloc(sizeof(*o));
	assert_non_null(o);
	get_buf = o;
	assert_int_equal(peer_enc_get(&w, 5, &m), 0);
	check_hdr(&w, PEER_OP_GET, 5, (uint32_t)payload_len(&w));
	assert_int_equal(peer_dec_get(payload(&w), payload_len(&w), o), 0);
	assert_string_equal(o->dataset, m.dataset);
	assert_string_equal(o->path, m.path);
	assert_true(o->size == m.size && o->mtime_ns == m.mtime_ns && o->version == m.version);
	assert_true(o->chunk_size == m.chunk_size && o->idx == m.idx && o->len == m.len);
	assert_int_equal(o->flags, 0);
	check_cuts(d_get, &w);

	/* the longest path round trips */
	memset(m.path, 'p', TC_PATH_MAX);
	for (size_t i = 200; i < TC_PATH_MAX; i += 200)
		m.path[i] = '/';
	m.path[TC_PATH_MAX] = '\0';
	assert_int_equal(peer_enc_get(&w, 5, &m), 0);
	assert_int_equal(peer_dec_get(payload(&w), payload_len(&w), o), 0);
	assert_int_equal(strlen(o->path), TC_PATH_MAX);

	/* chunk bounds the encoder refuses */
	m = sample_get();
	m.chunk_size = 0;
	assert_int_equal(peer_enc_get(&w, 5, &m), -EINVAL);
	m.chunk_size = PEER_CHUNK_MAX + 1;
	assert_int_equal(peer_enc_get(&w, 5, &m), -EINVAL);
	m.chunk_size = 4096;
	m.len = 4097;
	assert_int_equal(peer_enc_get(&w, 5, &m), -EINVAL);
	free(o);
	proto_wr_free(&w);
}

/* A GET written field by field with dataset and path as given. */
static int raw_get(const char *ds, size_t dn, const char *path, size_t pn, uint32_t chunk, uint32_t len)
{
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_strn(&w, ds, dn);
	proto_wr_strn(&w, path, pn);
	proto_wr_u64(&w, 100);
	proto_wr_i64(&w, 1);
	proto_wr_u64(&w, 2);
	proto_wr_u32(&w, chunk);
	proto_wr_u32(&w, 0);
	proto_wr_u32(&w, len);
	proto_wr_u32(&w, 0);
	assert_false(w.oom);
	int rc = decode_copy(d_get, payload(&w), payload_len(&w));
	proto_wr_free(&w);
	return rc;
}

static int path_rc(const char *path)
{
	return raw_get("ds", 2, path, strlen(path), 4096, 100);
}

static void test_get_bad(void **state)
{
	(void)state;
	struct peer_get *o = malloc(sizeof(*o));
	assert_non_null(o);
	get_buf = o;
	static const char *good[] = {"a", "a/b", "a/b.c/d", "...", "..a/b..", ".hidden/x", "a/.b"};
	static const char *bad[] = {"", "/x", "x/", "../x", "a/../../x", "a/../b", "a/./b", ".",
				    "..", "a//b", "a/b/..", "//", "/"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(path_rc(good[i]), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(path_rc(bad[i]), -EBADMSG);
		/* and the encoder will not write it */
		struct peer_get m = sample_get();
		strcpy(m.path, bad[i]);
		struct proto_wr w;
		proto_wr_init(&w);
		assert_int_equal(peer_enc_get(&w, 1, &m), -EINVAL);
		proto_wr_free(&w);
	}
	assert_int_equal(raw_get("ds", 2, "a\0b", 3, 4096, 1), -EBADMSG);

	/* too long: the whole path, and one component */
	char *p = malloc(TC_PATH_MAX + 2);
	assert_non_null(p);
	memset(p, 'p', TC_PATH_MAX + 1);
	for (size_t i = 100; i < TC_PATH_MAX; i += 100)
		p[i] = '/';
	assert_int_equal(raw_get("ds", 2, p, TC_PATH_MAX, 4096, 1), 0);
	assert_int_equal(raw_get("ds", 2, p, TC_PATH_MAX + 1, 4096, 1), -EBADMSG);
	memset(p, 'q', TC_NAME_MAX + 1);
	assert_int_equal(raw_get("ds", 2, p, TC_NAME_MAX, 4096, 1), 0);
	assert_int_equal(raw_get("ds", 2, p, TC_NAME_MAX + 1, 4096, 1), -EBADMSG);
	free(p);

	/* dataset names */
	char big[PEER_NAME_MAX + 1];
	memset(big, 'd', sizeof(big));
	assert_int_equal(raw_get(big, PEER_NAME_MAX, "a", 1, 4096, 1), 0);
	assert_int_equal(raw_get(big, PEER_NAME_MAX + 1, "a", 1, 4096, 1), -EBADMSG);
	assert_int_equal(raw_get("", 0, "a", 1, 4096, 1), -EBADMSG);
	assert_int_equal(raw_get("d\0", 2, "a", 1, 4096, 1), -EBADMSG);
	assert_int_equal(raw_get("d/e", 3, "a", 1, 4096, 1), -EBADMSG);

	/* chunk fields */
	assert_int_equal(raw_get("ds", 2, "a", 1, 0, 0), -EBADMSG);
	assert_int_equal(raw_get("ds", 2, "a", 1, PEER_CHUNK_MAX, PEER_CHUNK_MAX), 0);
	assert_int_equal(raw_get("ds", 2, "a", 1, PEER_CHUNK_MAX + 1, 1), -EBADMSG);
	assert_int_equal(raw_get("ds", 2, "a", 1, 4096, 4097), -EBADMSG);
	free(o);
}

static void test_data_head(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	struct peer_data m = {
		.size = 123456789,
		.mtime_ns = 1700000000123456789ll,
		.version = 42,
		.checksum = 0x0123456789abcdefull,
		.len = 65536,
		.where = PEER_WHERE_FILLED,
	}, o;
	assert_int_equal(peer_enc_data_head(&w, 6, &m), 0);
	assert_int_equal(payload_len(&w), PEER_DATA_META);
	check_hdr(&w, PEER_OP_DATA, 6, PEER_DATA_META + 65536);
	size_t n = PEER_DATA_META + m.len;
	assert_int_equal(peer_dec_data_head(payload(&w), n, &o), 0);
	assert_true(o.size == m.size && o.mtime_ns == m.mtime_ns && o.version == m.version);
	assert_true(o.checksum == m.checksum && o.len == m.len && o.where == m.where);

	/* n that disagrees with len, or shorter than the meta */
	assert_int_equal(peer_dec_data_head(payload(&w), n - 1, &o), -EBADMSG);
	assert_int_equal(peer_dec_data_head(payload(&w), n + 1, &o), -EBADMSG);
	assert_int_equal(peer_dec_data_head(payload(&w), PEER_DATA_META, &o), -EBADMSG);
	for (size_t i = 0; i < PEER_DATA_META; i++) {
		uint8_t *b = exact(payload(&w), i);
		assert_int_equal(peer_dec_data_head(b, i, &o), -EBADMSG);
		free(b);
	}

	/* an empty chunk is one meta */
	m.len = 0;
	m.where = PEER_WHERE_HIT;
	assert_int_equal(peer_enc_data_head(&w, 6, &m), 0);
	check_hdr(&w, PEER_OP_DATA, 6, PEER_DATA_META);
	assert_int_equal(peer_dec_data_head(payload(&w), PEER_DATA_META, &o), 0);
	assert_int_equal(o.where, PEER_WHERE_HIT);

	/* the largest chunk, one more, an unknown where */
	m.len = PEER_CHUNK_MAX;
	assert_int_equal(peer_enc_data_head(&w, 6, &m), 0);
	assert_int_equal(peer_dec_data_head(payload(&w), PEER_DATA_META + PEER_CHUNK_MAX, &o), 0);
	m.len = PEER_CHUNK_MAX + 1;
	assert_int_equal(peer_enc_data_head(&w, 6, &m), -EMSGSIZE);
	uint8_t raw[PEER_DATA_META];
	memcpy(raw, payload(&w), PEER_DATA_META); /* the previous, good one */
	raw[32] = 1; /* len's bytes 32..35: PEER_CHUNK_MAX + 1 */
	raw[33] = 0;
	raw[34] = 0;
	raw[35] = 4;
	assert_int_equal(peer_dec_data_head(raw, (size_t)PEER_DATA_META + PEER_CHUNK_MAX + 1, &o), -EBADMSG);
	m.len = 10;
	m.where = 2;
	assert_int_equal(peer_enc_data_head(&w, 6, &m), -EINVAL);
	m.where = PEER_WHERE_HIT;
	assert_int_equal(peer_enc_data_head(&w, 6, &m), 0);
	memcpy(raw, payload(&w), PEER_DATA_META);
	raw[36] = 2;
	assert_int_equal(peer_dec_data_head(raw, PEER_DATA_META + 10, &o), -EBADMSG);
	proto_wr_free(&w);
}

static void test_error(void **state)
{
	(void)state;
	struct proto_wr w;
	proto_wr_init(&w);
	assert_int_equal(peer_enc_error(&w, 7, -ESTALE, "version 3, you asked for 2"), 0);
	struct peer_hdr h;
	assert_int_equal(peer_hdr_decode(w.buf, &h), 0);
	assert_int_equal(h.op, PEER_OP_ERROR);
	assert_int_equal(h.aux, ESTALE);
	char d[64];
	assert_int_equal(peer_dec_error(payload(&w), payload_len(&w), d, sizeof(d)), 0);
	assert_string_equal(d, "version 3, you asked for 2");
	check_cuts(d_error, &w);
	/* cut to the caller's buffer */
	char small[8];
	assert_int_equal(peer_dec_error(payload(&w), payload_len(&w), small, sizeof(small)), 0);
	assert_string_equal(small, "version");
	/* a positive errno is the same; NULL detail is empty */
	assert_int_equal(peer_enc_error(&w, 7, ENOENT, NULL), 0);
	assert_int_equal(peer_hdr_decode(w.buf, &h), 0);
	assert_int_equal(h.aux, ENOENT);
	assert_int_equal(peer_dec_error(payload(&w), payload_len(&w), d, sizeof(d)), 0);
	assert_string_equal(d, "");
	/* a very long detail is cut to fit the frame, not refused */
	char *big = malloc(3 * PEER_CTRL_MAX);
	assert_non_null(big);
	memset(big, 'e', 3 * PEER_CTRL_MAX - 1);
	big[3 * PEER_CTRL_MAX - 1] = '\0';
	assert_int_equal(peer_enc_error(&w, 7, EIO, big), 0);
	assert_true(payload_len(&w) <= PEER_CTRL_MAX);
	assert_int_equal(peer_hdr_decode(w.buf, &h), 0);
	assert_int_equal(peer_dec_error(payload(&w), payload_len(&w), d, sizeof(d)), 0);
	free(big);
	/* NUL inside */
	proto_wr_begin(&w);
	proto_wr_strn(&w, "a\0b", 3);
	assert_int_equal(peer_dec_error(payload(&w), payload_len(&w), d, sizeof(d)), -EBADMSG);
	proto_wr_free(&w);
}

static void test_header(void **state)
{
	(void)state;
	struct peer_hdr h = {.magic = PEER_MAGIC, .version = PEER_PROTO_VERSION, .op = PEER_OP_GET,
			     .len = 100, .id = 0xa1b2c3d4u, .aux = 0x01020304u}, o;
	uint8_t b[PEER_HDR_SIZE];
	peer_hdr_encode(&h, b);
	static const uint8_t want[PEER_HDR_SIZE] = {'T', 'P', 1, 5, 100, 0, 0, 0,
						   0xd4, 0xc3, 0xb2, 0xa1, 4, 3, 2, 1};
	assert_memory_equal(b, want, sizeof(want));
	assert_int_equal(peer_hdr_decode(b, &o), 0);
	assert_true(o.len == h.len && o.id == h.id && o.aux == h.aux && o.op == h.op);

	/* a client-protocol header: the other magic */
	uint8_t c[PEER_HDR_SIZE];
	memcpy(c, b, sizeof(c));
	c[0] = 'T';
	c[1] = 'C';
	assert_int_equal(peer_hdr_decode(c, &o), -EPROTO);
	memcpy(c, b, sizeof(c));
	c[2] = 2;
	assert_int_equal(peer_hdr_decode(c, &o), -EPROTO);
	for (unsigned op = 0; op < 256; op++) {
		memcpy(c, b, sizeof(c));
		c[3] = (uint8_t)op;
		int want_rc = op >= PEER_OP_HELLO && op <= PEER_OP_ERROR ? 0 : -EPROTO;
		assert_int_equal(peer_hdr_decode(c, &o), want_rc);
		assert_int_equal(peer_op_max((uint8_t)op) != 0, want_rc == 0);
	}

	/* limits: control frames, DATA */
	h.len = PEER_CTRL_MAX;
	peer_hdr_encode(&h, b);
	assert_int_equal(peer_hdr_decode(b, &o), 0);
	h.len = PEER_CTRL_MAX + 1;
	peer_hdr_encode(&h, b);
	assert_int_equal(peer_hdr_decode(b, &o), -EMSGSIZE);
	h.op = PEER_OP_DATA;
	peer_hdr_encode(&h, b);
	assert_int_equal(peer_hdr_decode(b, &o), 0);
	h.len = PEER_DATA_META + PEER_CHUNK_MAX;
	peer_hdr_encode(&h, b);
	assert_int_equal(peer_hdr_decode(b, &o), 0);
	h.len = PEER_DATA_META + PEER_CHUNK_MAX + 1;
	peer_hdr_encode(&h, b);
	assert_int_equal(peer_hdr_decode(b, &o), -EMSGSIZE);
	h.len = UINT32_MAX;
	peer_hdr_encode(&h, b);
	assert_int_equal(peer_hdr_decode(b, &o), -EMSGSIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_hello_bad_names),
		cmocka_unit_test(test_challenge_auth_ready),
		cmocka_unit_test(test_get),
		cmocka_unit_test(test_get_bad),
		cmocka_unit_test(test_data_head),
		cmocka_unit_test(test_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
