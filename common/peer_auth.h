/*
 * The peer handshake's proofs and the cluster key file (peer_proto.h has
 * the exchange). HMAC-SHA256 (OpenSSL's libcrypto) over a transcript of
 * the role, the cluster name, both node ids and both nonces; nonces from
 * getrandom(). Two keys may be in force at once, so a key can be rotated
 * node by node: a node proves itself with its first key and accepts a proof
 * made with either.
 *
 * The key file: one key per line, as hex (64 to 128 hex digits: 32 to 64
 * bytes); blank lines and lines starting with '#' are skipped; the first
 * key is the one this node proves with, a second (optional) one is also
 * accepted. The file must be a regular file owned by the daemon's user and
 * readable by nobody else (mode & 077 == 0): anything else is refused with
 * what to do (chmod 600 / chown).
 *
 * Pure apart from reading the key file and getrandom(); no global state.
 */
#ifndef TIERCACHE_PEER_AUTH_H
#define TIERCACHE_PEER_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "peer_proto.h"

#define PEER_KEY_MIN 32u
#define PEER_KEY_MAX 64u
#define PEER_KEYS_MAX 2u

struct peer_keys {
	unsigned n;                 /* 1 or 2 once loaded */
	size_t len[PEER_KEYS_MAX];
	uint8_t key[PEER_KEYS_MAX][PEER_KEY_MAX];
};

enum peer_role {
	PEER_ROLE_SERVER = 1, /* the CHALLENGE's proof */
	PEER_ROLE_CLIENT = 2, /* the AUTH's proof */
};

/* What both proofs are computed over. */
struct peer_transcript {
	const char *cluster;
	const char *client_node;
	const char *server_node;
	const uint8_t *client_nonce; /* PEER_NONCE_LEN bytes */
	const uint8_t *server_nonce; /* PEER_NONCE_LEN bytes */
};

/* Load PATH: 0, or -errno with the reason (naming PATH and the fix) in err:
 * -EACCES (owner, mode), -ELOOP (a symlink), -EINVAL (not a regular file, a
 * bad line, no key, a third key), -EFBIG (over 4 KiB), or open's errno. */
int peer_keys_load(const char *path, struct peer_keys *k, char *err, size_t errlen);
/* Wipe the keys from memory. */
void peer_keys_clear(struct peer_keys *k);

/* A fresh nonce: 0 or -errno (getrandom failed). */
int peer_nonce(uint8_t out[PEER_NONCE_LEN]);

/* The proof of ROLE over T with the node's own (first) key: 0, -EINVAL (no
 * key loaded, a name past PEER_NAME_MAX) or -ENOMEM. */
int peer_proof(const struct peer_keys *k, enum peer_role role, const struct peer_transcript *t,
	       uint8_t mac[PEER_MAC_LEN]);
/* Does MAC prove ROLE over T with any of the keys? The index of the key
 * that matched (0 or 1), or -EACCES. Compares in constant time. */
int peer_proof_check(const struct peer_keys *k, enum peer_role role, const struct peer_transcript *t,
		     const uint8_t mac[PEER_MAC_LEN]);

#endif
