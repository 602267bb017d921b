/*
 * The peer handshake's proofs and the key file (common/peer_auth.h).
 *
 * The transcript a proof covers is unambiguous: a fixed label, then the
 * role, the cluster name, the client's node id, the server's node id, the
 * client's nonce and the server's nonce, each as u32 length + bytes
 * (little-endian). The role is in it so a server's proof cannot be sent
 * back as a client's (a reflection), and both nonces so a proof recorded
 * on one connection fails on the next, where the other end's nonce is new.
 */
#include "peer_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define PEER_TRANSCRIPT_LABEL "tiercache peer handshake v1"
/* The key file is a few lines; anything bigger is not one. */
#define PEER_KEY_FILE_MAX 4096

void peer_keys_clear(struct peer_keys *k)
{
	OPENSSL_cleanse(k, sizeof(*k));
	k->n = 0;
}

int peer_nonce(uint8_t out[PEER_NONCE_LEN])
{
	size_t got = 0;
	while (got < PEER_NONCE_LEN) {
		ssize_t r = getrandom(out + got, PEER_NONCE_LEN - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	return 0;
}

static void put_field(uint8_t *buf, size_t *at, const void *p, size_t n)
{
	for (unsigned i = 0; i < 4; i++)
		buf[*at + i] = (uint8_t)(n >> (8 * i));
	memcpy(buf + *at + 4, p, n);
	*at += 4 + n;
}

/* label, role, cluster, two node ids, two nonces: each u32 + bytes */
#define TRANSCRIPT_MAX \
	(7 * 4 + sizeof(PEER_TRANSCRIPT_LABEL) + 6 + 3 * PEER_NAME_MAX + 2 * PEER_NONCE_LEN)

static int transcript(enum peer_role role, const struct peer_transcript *t, uint8_t *buf, size_t *n)
{
	const char *rl = role == PEER_ROLE_SERVER ? "server" : role == PEER_ROLE_CLIENT ? "client" : NULL;
	if (!rl || !t->cluster || !t->client_node || !t->server_node || !t->client_nonce ||
	    !t->server_nonce)
		return -EINVAL;
	size_t cl = strnlen(t->cluster, PEER_NAME_MAX + 1);
	size_t cn = strnlen(t->client_node, PEER_NAME_MAX + 1);
	size_t sn = strnlen(t->server_node, PEER_NAME_MAX + 1);
	if (cl > PEER_NAME_MAX || cn > PEER_NAME_MAX || sn > PEER_NAME_MAX)
		return -EINVAL;
	size_t at = 0;
	put_field(buf, &at, PEER_TRANSCRIPT_LABEL, sizeof(PEER_TRANSCRIPT_LABEL) - 1);
	put_field(buf, &at, rl, strlen(rl));
	put_field(buf, &at, t->cluster, cl);
	put_field(buf, &at, t->client_node, cn);
	put_field(buf, &at, t->server_node, sn);
	put_field(buf, &at, t->client_nonce, PEER_NONCE_LEN);
	put_field(buf, &at, t->server_nonce, PEER_NONCE_LEN);
	*n = at;
	return 0;
}

static int hmac_one(const uint8_t *key, size_t klen, const uint8_t *msg, size_t n,
		    uint8_t mac[PEER_MAC_LEN])
{
	unsigned int ml = 0;
	if (klen == 0 || klen > PEER_KEY_MAX)
		return -EINVAL;
	if (!HMAC(EVP_sha256(), key, (int)klen, msg, n, mac, &ml) || ml != PEER_MAC_LEN)
		return -ENOMEM;
	return 0;
}

int peer_proof(const struct peer_keys *k, enum peer_role role, const struct peer_transcript *t,
	       uint8_t mac[PEER_MAC_LEN])
{
	uint8_t buf[TRANSCRIPT_MAX];
	size_t n;
	if (k->n < 1 || k->n > PEER_KEYS_MAX)
		return -EINVAL;
	int rc = transcript(role, t, buf, &n);
	if (rc == 0)
		rc = hmac_one(k->key[0], k->len[0], buf, n, mac);
	return rc;
}

int peer_proof_check(const struct peer_keys *k, enum peer_role role, const struct peer_transcript *t,
		     const uint8_t mac[PEER_MAC_LEN])
{
	uint8_t buf[TRANSCRIPT_MAX];
	size_t n;
	if (k->n < 1 || k->n > PEER_KEYS_MAX || transcript(role, t, buf, &n) < 0)
		return -EACCES;
	int found = -EACCES;
	/* every key is tried, so the time taken does not say which matched */
	for (unsigned i = 0; i < k->n; i++) {
		uint8_t want[PEER_MAC_LEN];
		if (hmac_one(k->key[i], k->len[i], buf, n, want) == 0 &&
		    CRYPTO_memcmp(want, mac, PEER_MAC_LEN) == 0 && found < 0)
			found = (int)i;
		OPENSSL_cleanse(want, sizeof(want));
	}
	return found;
}

/* ---- the key file ---- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One key line (trimmed, not blank, not a comment) into k's next slot. */
static int parse_key(const char *path, unsigned line, const char *s, size_t n, struct peer_keys *k,
		     char *err, size_t errlen)
{
	if (k->n >= PEER_KEYS_MAX) {
		snprintf(err, errlen,
			 "%s:%u: a third key; the file holds at most %u (the key this node proves with, "
			 "then the one it also accepts during a rotation)",
			 path, line, PEER_KEYS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if (hexval(s[i]) < 0) {
			snprintf(err, errlen,
				 "%s:%u: not a hex key (character %zu is not 0-9 a-f); write one key per "
				 "line, e.g. from: openssl rand -hex 32",
				 path, line, i + 1);
			return -EINVAL;
		}
	if (n % 2 || n < 2 * PEER_KEY_MIN || n > 2 * PEER_KEY_MAX) {
		snprintf(err, errlen,
			 "%s:%u: a key of %zu hex digits; want an even number from %u to %u (%u to %u "
			 "bytes), e.g. from: openssl rand -hex 32",
			 path, line, n, 2 * PEER_KEY_MIN, 2 * PEER_KEY_MAX, PEER_KEY_MIN, PEER_KEY_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n / 2; i++)
		k->key[k->n][i] = (uint8_t)(hexval(s[2 * i]) << 4 | hexval(s[2 * i + 1]));
	k->len[k->n] = n / 2;
	k->n++;
	return 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static int parse_keys(const char *path, const char *buf, size_t len, struct peer_keys *k, char *err,
		      size_t errlen)
{
	unsigned line = 0;
	size_t at = 0;
	while (at < len) {
		const char *nl = memchr(buf + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - buf) : len;
		const char *s = buf + at;
		size_t n = end - at;
		at = end + 1;
		line++;
		while (n && is_space(*s)) {
			s++;
			n--;
		}
		while (n && is_space(s[n - 1]))
			n--;
		if (n == 0 || *s == '#')
			continue;
		int rc = parse_key(path, line, s, n, k, err, errlen);
		if (rc < 0)
			return rc;
	}
	if (k->n == 0) {
		snprintf(err, errlen,
			 "%s: no key in the file; put one hex key on a line (e.g. openssl rand -hex 32 > %s) "
			 "and copy the same file to every node of the cluster",
			 path, path);
		return -EINVAL;
	}
	return 0;
}

/* fd is open on path: is it a file only this user can read? */
static int check_file(const char *path, int fd, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: cannot stat the key file: %s", path, strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file; key_file must name a file holding the key",
			 path);
		return -EINVAL;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen,
			 "%s: owned by uid %u, not by the daemon's user (uid %u); chown it to the "
			 "daemon's user",
			 path, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EACCES;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "%s: readable by group or others (mode %04o); chmod 600 %s", path,
			 (unsigned)(st.st_mode & 07777), path);
		return -EACCES;
	}
	if (st.st_size > PEER_KEY_FILE_MAX) {
		snprintf(err, errlen, "%s: %lld bytes, too big for a key file (at most %d)", path,
			 (long long)st.st_size, PEER_KEY_FILE_MAX);
		return -EFBIG;
	}
	return 0;
}

int peer_keys_load(const char *path, struct peer_keys *k, char *err, size_t errlen)
{
	char buf[PEER_KEY_FILE_MAX + 1];
	size_t len = 0;
	int rc = 0;
	memset(k, 0, sizeof(*k));
	if (errlen)
		err[0] = '\0';
	/* O_NONBLOCK: a FIFO put there must not hang the daemon's start */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ELOOP)
			snprintf(err, errlen,
				 "%s: a symbolic link; key_file must name the key file itself", path);
		else
			snprintf(err, errlen, "%s: cannot open the key file: %s", path, strerror(-rc));
		return rc;
	}
	rc = check_file(path, fd, err, errlen);
	while (rc == 0) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			snprintf(err, errlen, "%s: cannot read the key file: %s", path, strerror(-rc));
		} else if (r == 0) {
			break;
		} else {
			len += (size_t)r;
			if (len > PEER_KEY_FILE_MAX) {
				snprintf(err, errlen, "%s: too big for a key file (more than %d bytes)",
					 path, PEER_KEY_FILE_MAX);
				rc = -EFBIG;
			}
		}
	}
	close(fd);
	if (rc == 0)
		rc = parse_keys(path, buf, len, k, err, errlen);
	OPENSSL_cleanse(buf, sizeof(buf));
	if (rc < 0)
		peer_keys_clear(k);
	return rc;
}
