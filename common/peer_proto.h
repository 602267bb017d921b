/*
 * The peer protocol: how tiercached daemons of one cluster ask each other
 * for chunks (docs/cluster.md). TCP, one request at a time per connection,
 * frames with the client protocol's 16-byte header layout (magic u16,
 * version u8, op u8, len u32, id u32, aux u32; little-endian) under their
 * own magic, so a client frame sent to a peer port (or the reverse) is
 * refused at the first header.
 *
 * A connection starts with a handshake that proves both ends hold the
 * cluster key (peer_auth.h) before any request is served:
 *
 *   client -> HELLO     u32 PEER_PROTO_VERSION, str cluster, str node,
 *                       nonce[32] (the client's, fresh)
 *   server -> CHALLENGE str node, nonce[32] (the server's, fresh),
 *                       mac[32] = peer_proof(SERVER, transcript)
 *   client -> AUTH      mac[32] = peer_proof(CLIENT, transcript)
 *   server -> READY     (empty)
 *
 * The transcript binds the cluster name, both node ids and both nonces, so
 * a proof recorded on one connection is worth nothing on the next. Any
 * failure closes the connection after one ERROR frame (EACCES for a bad
 * proof, EPROTO for a frame out of order); nothing but HELLO and AUTH is
 * decoded before READY.
 *
 * Then requests:
 *
 *   client -> GET       str dataset, str path, u64 size, i64 mtime_ns,
 *                       u64 version (the source version the client's
 *                       manifest has), u32 chunk_size, u32 idx, u32 len
 *                       (bytes the chunk has at that version), u32 flags
 *                       (PEER_GET_*; unknown bits are ignored)
 *   server -> DATA      u64 size, i64 mtime_ns, u64 version (the version
 *                       these bytes are of), u64 checksum (XXH3-64 of the
 *                       bytes), u32 len, u8 where (PEER_WHERE_*), then len
 *                       raw bytes that are the rest of the frame (the
 *                       frame's len covers meta and bytes); len 0 for a
 *                       GET with PEER_GET_KEEP
 *   server -> ERROR     aux = errno, str detail. ESTALE: the server's
 *                       version of the file differs (the detail says which);
 *                       ENOENT: no such dataset or file; EAGAIN: not ready
 *                       (its dataset is still listing); EIO: its read failed;
 *                       ENODATA: PEER_GET_PREV_HOME and not resident here.
 *
 * Limits are hard: a control frame's payload is at most PEER_CTRL_MAX, a
 * DATA frame's at most PEER_DATA_META + PEER_CHUNK_MAX; anything larger,
 * a wrong magic or version, or a frame that does not decode closes the
 * connection.
 *
 * Pure: no I/O, no global state; the daemon (cached/cluster/), the test tool
 * (tests/integration/tcpeer.c) and the fuzz target share it.
 */
#ifndef TIERCACHE_PEER_PROTO_H
#define TIERCACHE_PEER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define PEER_MAGIC 0x5054u /* "TP" as little-endian bytes 'T','P' */
#define PEER_PROTO_VERSION 1u
#define PEER_HDR_SIZE 16u
#define PEER_CTRL_MAX 8192u            /* payload of any frame but DATA */
#define PEER_CHUNK_MAX (64u << 20)     /* chunk bytes in one DATA (= the largest chunk_size) */
#define PEER_DATA_META 37u             /* DATA's fields before its bytes */
#define PEER_NONCE_LEN 32u
#define PEER_MAC_LEN 32u
#define PEER_NAME_MAX 64u              /* a cluster name or node id, bytes */

enum peer_op {
	PEER_OP_HELLO = 1,
	PEER_OP_CHALLENGE = 2,
	PEER_OP_AUTH = 3,
	PEER_OP_READY = 4,
	PEER_OP_GET = 5,
	PEER_OP_DATA = 6,
	PEER_OP_ERROR = 7,
};

/* GET.flags. */
#define PEER_GET_PREV_HOME 0x1u /* the asker is the chunk's new home and this
				 * node its previous one: answer from a resident
				 * copy only (ERROR ENODATA if there is none),
				 * never fill, never ask anyone else */
#define PEER_GET_KEEP 0x2u      /* the asker hands the chunk over (a drain): the
				 * server gets and keeps it as for any GET, and
				 * answers DATA with no bytes (len 0) */

/* DATA.where: how the server had the chunk. */
enum peer_where {
	PEER_WHERE_HIT = 0,    /* resident on one of its tiers */
	PEER_WHERE_FILLED = 1, /* it read it from the cold store for this request */
};

struct peer_hdr {
	uint16_t magic;
	uint8_t version;
	uint8_t op;
	uint32_t len;
	uint32_t id;
	uint32_t aux;
};

/* Decode a header from 16 bytes and check it: 0, -EPROTO (magic, version,
 * unknown op) or -EMSGSIZE (len past the op's limit). */
int peer_hdr_decode(const uint8_t in[PEER_HDR_SIZE], struct peer_hdr *h);
void peer_hdr_encode(const struct peer_hdr *h, uint8_t out[PEER_HDR_SIZE]);
/* The largest payload op may carry. */
uint32_t peer_op_max(uint8_t op);

struct peer_hello {
	uint32_t version;
	char cluster[PEER_NAME_MAX + 1];
	char node[PEER_NAME_MAX + 1];
	uint8_t nonce[PEER_NONCE_LEN];
};

struct peer_challenge {
	char node[PEER_NAME_MAX + 1];
	uint8_t nonce[PEER_NONCE_LEN];
	uint8_t mac[PEER_MAC_LEN];
};

struct peer_get {
	char dataset[PEER_NAME_MAX + 1];
	char path[4097];       /* TC_PATH_MAX + 1 */
	uint64_t size;
	int64_t mtime_ns;
	uint64_t version;
	uint32_t chunk_size;
	uint32_t idx;
	uint32_t len;
	uint32_t flags;
};

struct peer_data {
	uint64_t size;
	int64_t mtime_ns;
	uint64_t version;
	uint64_t checksum;
	uint32_t len;
	uint8_t where;
};

/* Encoders write one whole frame (header included) into w: 0, -ENOMEM or
 * -EMSGSIZE. Names longer than PEER_NAME_MAX, paths longer than
 * TC_PATH_MAX, and anything else the decoders would refuse, are -EINVAL.
 * ERROR's detail is cut to fit, never refused. */
int peer_enc_hello(struct proto_wr *w, uint32_t id, const struct peer_hello *m);
int peer_enc_challenge(struct proto_wr *w, uint32_t id, const struct peer_challenge *m);
int peer_enc_auth(struct proto_wr *w, uint32_t id, const uint8_t mac[PEER_MAC_LEN]);
int peer_enc_ready(struct proto_wr *w, uint32_t id);
int peer_enc_get(struct proto_wr *w, uint32_t id, const struct peer_get *m);
/* DATA's header and meta only: the caller sends m->len bytes after them,
 * and the header's len already counts them. */
int peer_enc_data_head(struct proto_wr *w, uint32_t id, const struct peer_data *m);
int peer_enc_error(struct proto_wr *w, uint32_t id, int err, const char *detail);

/* Decoders take one payload (the bytes after the header): 0 or -EBADMSG
 * (short, trailing bytes, a name or path too long or with a NUL, a
 * version field that is not PEER_PROTO_VERSION is -EPROTO). A name is
 * 1..PEER_NAME_MAX bytes without '/'. A path must also be relative,
 * canonical and stay inside its dataset: components of 1..TC_NAME_MAX
 * bytes, none "." or "..", joined by single '/' ("a/../b", "/x", "x/",
 * "a//b", "" and a NUL are -EBADMSG). GET also wants 0 < chunk_size <=
 * PEER_CHUNK_MAX and len <= chunk_size; DATA a known where. */
int peer_dec_hello(const uint8_t *p, size_t n, struct peer_hello *m);
int peer_dec_challenge(const uint8_t *p, size_t n, struct peer_challenge *m);
int peer_dec_auth(const uint8_t *p, size_t n, uint8_t mac[PEER_MAC_LEN]);
int peer_dec_get(const uint8_t *p, size_t n, struct peer_get *m);
/* DATA's meta: the first PEER_DATA_META bytes of its payload; n is the
 * whole payload's length, which must be PEER_DATA_META + m->len. */
int peer_dec_data_head(const uint8_t *p, size_t n, struct peer_data *m);
/* ERROR's detail (its errno is the header's aux): a NUL-terminated copy,
 * cut to dn - 1 bytes. */
int peer_dec_error(const uint8_t *p, size_t n, char *detail, size_t dn);

#endif
