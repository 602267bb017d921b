/*
 * libFuzzer target for the peer protocol (common/peer_proto.c, peer_auth.c).
 *
 * Input: u8 control, then a byte stream a peer might send, cut into frames
 * the way a server reads them: a 16-byte header (peer_hdr_decode: a
 * refused header ends the stream, as it closes the connection), then its
 * payload (the bytes that are there, if fewer: a truncation), decoded by
 * the op's decoder. A payload that decodes is encoded again and must give
 * the same bytes: the encoding is canonical, so a decoder that accepted
 * something its encoder cannot write would show here.
 *
 * Alongside, a server-side handshake checker as peer_proto.h describes it:
 * HELLO, then AUTH, then requests; a frame out of order or a bad proof ends
 * the stream. Control bit 0 makes the "client" honest: its AUTH's mac is
 * replaced by the right proof, so the fuzzer reaches the requests behind
 * the handshake; otherwise it has to forge an HMAC, which it must not.
 *
 * Build and run: tests/fuzz/build.sh fuzz_peer.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <assert.h>

#include "peer_auth.h"
#include "peer_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum hs_state { HS_WANT_HELLO, HS_WANT_AUTH, HS_READY };

struct hs {
	enum hs_state state;
	struct peer_keys keys;
	char client_node[PEER_NAME_MAX + 1];
	uint8_t client_nonce[PEER_NONCE_LEN];
	uint8_t server_nonce[PEER_NONCE_LEN];
	bool honest;
};

static struct peer_transcript hs_transcript(const struct hs *s)
{
	struct peer_transcript t = {"train", s->client_node, "server", s->client_nonce, s->server_nonce};
	return t;
}

/* The encoders give back the same payload bytes. */
static void same_payload(const struct proto_wr *w, int rc, const uint8_t *p, size_t n)
{
	assert(rc == 0);
	assert(w->len - PEER_HDR_SIZE == n);
	assert(memcmp(w->buf + PEER_HDR_SIZE, p, n) == 0);
}

/* One frame: false ends the stream (the server would close). */
static bool frame(struct hs *s, struct proto_wr *w, const struct peer_hdr *h, const uint8_t *p, size_t n)
{
	switch (h->op) {
	case PEER_OP_HELLO: {
		struct peer_hello m;
		int rc = peer_dec_hello(p, n, &m);
		if (rc == 0)
			same_payload(w, peer_enc_hello(w, h->id, &m), p, n);
		if (s->state != HS_WANT_HELLO || rc < 0 || strcmp(m.cluster, "train") != 0)
			return false;
		memcpy(s->client_node, m.node, sizeof(s->client_node));
		memcpy(s->client_nonce, m.nonce, PEER_NONCE_LEN);
		/* the server's CHALLENGE: a fixed nonce keeps runs repeatable */
		struct peer_challenge c = {.node = "server"};
		memset(s->server_nonce, 0x5a, PEER_NONCE_LEN);
		memcpy(c.nonce, s->server_nonce, PEER_NONCE_LEN);
		struct peer_transcript t = hs_transcript(s);
		assert(peer_proof(&s->keys, PEER_ROLE_SERVER, &t, c.mac) == 0);
		assert(peer_enc_challenge(w, 1, &c) == 0);
		struct peer_challenge back;
		assert(peer_dec_challenge(w->buf + PEER_HDR_SIZE, w->len - PEER_HDR_SIZE, &back) == 0);
		assert(peer_proof_check(&s->keys, PEER_ROLE_SERVER, &t, back.mac) == 0);
		s->state = HS_WANT_AUTH;
		return true;
	}
	case PEER_OP_AUTH: {
		uint8_t mac[PEER_MAC_LEN];
		int rc = peer_dec_auth(p, n, mac);
		if (rc == 0)
			same_payload(w, peer_enc_auth(w, h->id, mac), p, n);
		if (s->state != HS_WANT_AUTH || rc < 0)
			return false;
		struct peer_transcript t = hs_transcript(s);
		if (s->honest)
			assert(peer_proof(&s->keys, PEER_ROLE_CLIENT, &t, mac) == 0);
		int k = peer_proof_check(&s->keys, PEER_ROLE_CLIENT, &t, mac);
		/* only the right proof passes: an honest client always, a
		 * fuzzed mac never (nor the server's own, reflected) */
		assert(s->honest ? k == 0 : k == -EACCES);
		if (k < 0)
			return false;
		s->state = HS_READY;
		return true;
	}
	case PEER_OP_GET: {
		static struct peer_get m; /* 4 KiB of path: off the stack */
		int rc = peer_dec_get(p, n, &m);
		if (rc == 0) {
			same_payload(w, peer_enc_get(w, h->id, &m), p, n);
			assert(m.path[0] != '/' && strstr(m.path, "//") == NULL);
			assert(m.len <= m.chunk_size && m.chunk_size <= PEER_CHUNK_MAX);
		}
		return s->state == HS_READY && rc == 0;
	}
	case PEER_OP_DATA: {
		/* h->len is the frame's whole payload; p has n of its bytes */
		struct peer_data m;
		if (n < PEER_DATA_META && h->len >= PEER_DATA_META)
			return false;
		int rc = peer_dec_data_head(p, h->len, &m);
		if (rc == 0) {
			assert((size_t)PEER_DATA_META + m.len == h->len);
			assert(peer_enc_data_head(w, h->id, &m) == 0);
			assert(memcmp(w->buf + PEER_HDR_SIZE, p, PEER_DATA_META) == 0);
		}
		return rc == 0 && n == h->len;
	}
	case PEER_OP_ERROR: {
		static char d[PEER_CTRL_MAX];
		int rc = peer_dec_error(p, n, d, sizeof(d));
		if (rc == 0) {
			assert(strlen(d) < sizeof(d));
			same_payload(w, peer_enc_error(w, h->id, (int)h->aux, d), p, n);
		}
		char small[5];
		assert(peer_dec_error(p, n, small, sizeof(small)) == rc);
		assert(rc < 0 || strlen(small) <= 4);
		return rc == 0;
	}
	case PEER_OP_CHALLENGE: {
		struct peer_challenge m;
		int rc = peer_dec_challenge(p, n, &m);
		if (rc == 0)
			same_payload(w, peer_enc_challenge(w, h->id, &m), p, n);
		return false; /* a server never takes one */
	}
	case PEER_OP_READY:
		return false;
	default:
		assert(!"peer_hdr_decode let an unknown op through");
		return false;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct hs s = {.state = HS_WANT_HELLO, .honest = data[0] & 1};
	s.keys.n = 1;
	s.keys.len[0] = PEER_KEY_MIN;
	memset(s.keys.key[0], 0x42, PEER_KEY_MIN);
	struct proto_wr w;
	proto_wr_init(&w);
	size_t at = 1;
	while (size - at >= PEER_HDR_SIZE) {
		struct peer_hdr h;
		int rc = peer_hdr_decode(data + at, &h);
		if (rc < 0) {
			assert(rc == -EPROTO || rc == -EMSGSIZE);
			break;
		}
		assert(h.len <= peer_op_max(h.op));
		at += PEER_HDR_SIZE;
		size_t n = size - at < h.len ? size - at : h.len;
		/* an exact-size copy: ASan sees a read past the payload */
		uint8_t *p = malloc(n ? n : 1);
		assert(p);
		memcpy(p, data + at, n);
		bool go = frame(&s, &w, &h, p, n);
		free(p);
		at += n;
		if (!go)
			break;
	}
	proto_wr_free(&w);
	peer_keys_clear(&s.keys);
	return 0;
}
