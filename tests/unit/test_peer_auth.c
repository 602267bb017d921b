/*
 * Unit tests of the peer handshake (common/peer_auth.c): proofs verify with
 * the same key and with a second key in force, and fail for another key,
 * any flipped bit in a name or nonce, swapped roles or a reflected proof;
 * a whole handshake run in process through the codec (a client and a
 * server, as the daemon and tcpeer run it) succeeds, and a replay of a
 * recorded HELLO and AUTH against a fresh server nonce fails; key files
 * are loaded, or refused with a reason, for every shape the header names.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "peer_auth.h"
#include "peer_proto.h"
#include "unit_tmpdir.h"

static char dir[] = "/tmp/tc_peer_auth.XXXXXX";

static int setup(void **state)
{
	(void)state;
	return unit_tmpdir_make(dir);
}

static int teardown(void **state)
{
	(void)state;
	return unit_tmpdir_remove(dir);
}

#define KEY_A "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define KEY_B "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"

/* Write dir/NAME with TEXT and MODE; returns the path (static buffer). */
static const char *key_file(const char *name, const char *text, mode_t mode)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	size_t n = strlen(text);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

static void load_ok(struct peer_keys *k, const char *text)
{
	char err[512];
	const char *p = key_file("ok.key", text, 0600);
	int rc = peer_keys_load(p, k, err, sizeof(err));
	if (rc != 0)
		fail_msg("load of good file refused: %s", err);
}

/* Refused with -WANT and an error that contains NEEDLE. */
static void load_refused(const char *path, int want, const char *needle)
{
	struct peer_keys k;
	char err[512];
	int rc = peer_keys_load(path, &k, err, sizeof(err));
	if (rc != want)
		fail_msg("%s: want %d, got %d (%s)", path, want, rc, err);
	assert_non_null(strstr(err, path));
	if (!strstr(err, needle))
		fail_msg("error \"%s\" does not say \"%s\"", err, needle);
	assert_int_equal(k.n, 0);
}

static void test_keys_good(void **state)
{
	(void)state;
	struct peer_keys k;
	load_ok(&k, KEY_A "\n");
	assert_int_equal(k.n, 1);
	assert_int_equal(k.len[0], 32);
	assert_int_equal(k.key[0][0], 0x00);
	assert_int_equal(k.key[0][1], 0x11);
	assert_int_equal(k.key[0][31], 0xff);

	/* comments, blank lines, CRLF, spaces, upper case, no final newline */
	load_ok(&k, "# the cluster key\n\n  " KEY_A "  \r\n# next one, for the rotation\n"
		    "FFEEDDCCBBAA99887766554433221100FFEEDDCCBBAA99887766554433221100");
	assert_int_equal(k.n, 2);
	assert_int_equal(k.key[1][0], 0xff);
	assert_int_equal(k.len[1], 32);

	/* the longest key */
	load_ok(&k, KEY_A KEY_B "\n");
	assert_int_equal(k.n, 1);
	assert_int_equal(k.len[0], 64);
	peer_keys_clear(&k);
	assert_int_equal(k.n, 0);
	assert_int_equal(k.key[0][1], 0);
}

static void test_keys_refused(void **state)
{
	(void)state;
	char path[256];
	load_refused(key_file("a.key", KEY_A "\n", 0644), -EACCES, "chmod 600");
	load_refused(key_file("b.key", KEY_A "\n", 0640), -EACCES, "mode 0640");
	load_refused(key_file("c.key", KEY_A "\n", 0604), -EACCES, "chmod 600");

	/* a symlink to a good file */
	const char *good = key_file("good.key", KEY_A "\n", 0600);
	snprintf(path, sizeof(path), "%s/link.key", dir);
	unlink(path);
	assert_int_equal(symlink(good, path), 0);
	load_refused(path, -ELOOP, "symbolic link");

	/* a directory, a missing file */
	snprintf(path, sizeof(path), "%s/adir", dir);
	mkdir(path, 0700);
	load_refused(path, -EINVAL, "not a regular file");
	snprintf(path, sizeof(path), "%s/missing.key", dir);
	load_refused(path, -ENOENT, "No such file");

	/* contents, with the line named */
	load_refused(key_file("d.key", "# c\n" KEY_A "\nzz" KEY_A "\n", 0600), -EINVAL, ":3: not a hex key");
	load_refused(key_file("e.key", KEY_A "0\n", 0600), -EINVAL, ":1: a key of 65 hex digits");
	load_refused(key_file("f.key", "00112233445566778899aabbccddeeff00112233445566778899aabbccddee\n", 0600),
		     -EINVAL, ":1: a key of 62 hex digits");
	load_refused(key_file("g.key", KEY_A KEY_B "00\n", 0600), -EINVAL, ":1: a key of 130 hex digits");
	load_refused(key_file("h.key", KEY_A "\n" KEY_B "\n" KEY_A "\n", 0600), -EINVAL, ":3: a third key");
	load_refused(key_file("i.key", "", 0600), -EINVAL, "no key");
	load_refused(key_file("j.key", "# only a comment\n\n", 0600), -EINVAL, "no key");
	load_refused(key_file("k.key", "0x" KEY_A "\n", 0600), -EINVAL, "not a hex key");

	/* too big to be a key file */
	char *big = malloc(5000);
	assert_non_null(big);
	memset(big, '#', 4999);
	big[4999] = '\0';
	load_refused(key_file("l.key", big, 0600), -EFBIG, "too big");
	free(big);

	/* owned by another user (only root can make one) */
	if (geteuid() == 0) {
		const char *p = key_file("m.key", KEY_A "\n", 0600);
		assert_int_equal(chown(p, 1, 1), 0);
		load_refused(p, -EACCES, "chown");
	}
}

static void keys_of(struct peer_keys *k, const char *text)
{
	load_ok(k, text);
}

static void test_proofs(void **state)
{
	(void)state;
	struct peer_keys a, b, ab, ba;
	keys_of(&a, KEY_A "\n");
	keys_of(&b, KEY_B "\n");
	keys_of(&ab, KEY_A "\n" KEY_B "\n");
	keys_of(&ba, KEY_B "\n" KEY_A "\n");

	uint8_t cn[PEER_NONCE_LEN], sn[PEER_NONCE_LEN];
	assert_int_equal(peer_nonce(cn), 0);
	assert_int_equal(peer_nonce(sn), 0);
	assert_memory_not_equal(cn, sn, PEER_NONCE_LEN);
	char cluster[] = "train", cnode[] = "node-a", snode[] = "node-b";
	struct peer_transcript t = {cluster, cnode, snode, cn, sn};

	uint8_t mac[PEER_MAC_LEN], smac[PEER_MAC_LEN];
	assert_int_equal(peer_proof(&a, PEER_ROLE_CLIENT, &t, mac), 0);
	assert_int_equal(peer_proof_check(&a, PEER_ROLE_CLIENT, &t, mac), 0);
	assert_int_equal(peer_proof_check(&b, PEER_ROLE_CLIENT, &t, mac), -EACCES);
	/* during a rotation: either key is accepted, the index says which */
	assert_int_equal(peer_proof_check(&ab, PEER_ROLE_CLIENT, &t, mac), 0);
	assert_int_equal(peer_proof_check(&ba, PEER_ROLE_CLIENT, &t, mac), 1);
	/* a node proves with its first key */
	uint8_t mac_ba[PEER_MAC_LEN];
	assert_int_equal(peer_proof(&ba, PEER_ROLE_CLIENT, &t, mac_ba), 0);
	assert_int_equal(peer_proof_check(&b, PEER_ROLE_CLIENT, &t, mac_ba), 0);
	assert_int_equal(peer_proof_check(&a, PEER_ROLE_CLIENT, &t, mac_ba), -EACCES);

	/* roles: a client's proof is not a server's, and the reverse */
	assert_int_equal(peer_proof(&a, PEER_ROLE_SERVER, &t, smac), 0);
	assert_memory_not_equal(mac, smac, PEER_MAC_LEN);
	assert_int_equal(peer_proof_check(&a, PEER_ROLE_SERVER, &t, mac), -EACCES);
	assert_int_equal(peer_proof_check(&a, PEER_ROLE_CLIENT, &t, smac), -EACCES);
	assert_int_equal(peer_proof_check(&a, PEER_ROLE_SERVER, &t, smac), 0);

	/* every bit of both nonces and all three names counts */
	for (size_t i = 0; i < PEER_NONCE_LEN * 8; i++) {
		cn[i / 8] ^= (uint8_t)(1u << (i % 8));
		assert_int_equal(peer_proof_check(&a, PEER_ROLE_CLIENT, &t, mac), -EACCES);
		cn[i / 8] ^= (uint8_t)(1u << (i % 8));
		sn[i / 8] ^= (uint8_t)(1u << (i % 8));
		assert_int_equal(peer_proof_check(&a, PEER_ROLE_CLIENT, &t, mac), -EACCES);
		sn[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
	char *names[] = {cluster, cnode, snode};
	for (size_t k = 0; k < 3; k++)
		for (size_t i = 0; i < strlen(names[k]) * 8; i++) {
			names[k][i / 8] ^= (char)(1u << (i % 8));
			if (names[k][i / 8] != '\0')
				assert_int_equal(peer_proof_check(&a, PEER_ROLE_CLIENT, &t, mac), -EACCES);
			names[k][i / 8] ^= (char)(1u << (i % 8));
		}
	/* the names' boundaries count: ("node-a","node-b") is not ("node-an","ode-b") */
	struct peer_transcript shifted = {cluster, "node-an", "ode-b", cn, sn};
	assert_int_equal(peer_proof_check(&a, PEER_ROLE_CLIENT, &shifted, mac), -EACCES);
	/* the nodes swapped */
	struct peer_transcript swapped = {cluster, snode, cnode, cn, sn};
	assert_int_equal(peer_proof_check(&a, PEER_ROLE_CLIENT, &swapped, mac), -EACCES);
	/* unchanged again: still good */
	assert_int_equal(peer_proof_check(&a, PEER_ROLE_CLIENT, &t, mac), 0);

	/* no key loaded: nothing is proved or accepted */
	struct peer_keys none = {0};
	assert_true(peer_proof(&none, PEER_ROLE_CLIENT, &t, mac) < 0);
	assert_int_equal(peer_proof_check(&none, PEER_ROLE_CLIENT, &t, mac), -EACCES);
}

/* ---- a handshake in process, through the codec ---- */

struct end {
	struct peer_keys keys;
	const char *cluster, *node;
	uint8_t nonce[PEER_NONCE_LEN];
	char peer_node[PEER_NAME_MAX + 1];
	uint8_t peer_nonce[PEER_NONCE_LEN];
};

static const uint8_t *body(const struct proto_wr *w, struct peer_hdr *h, uint8_t op)
{
	assert_int_equal(peer_hdr_decode(w->buf, h), 0);
	assert_int_equal(h->op, op);
	assert_int_equal(h->len, w->len - PEER_HDR_SIZE);
	return w->buf + PEER_HDR_SIZE;
}

/* The server's side: HELLO in, CHALLENGE out (0) or refusal (-errno). */
static int server_hello(struct end *s, const struct proto_wr *in, struct proto_wr *out)
{
	struct peer_hdr h;
	struct peer_hello m;
	const uint8_t *p = body(in, &h, PEER_OP_HELLO);
	int rc = peer_dec_hello(p, h.len, &m);
	if (rc < 0)
		return rc;
	if (strcmp(m.cluster, s->cluster) != 0)
		return -EACCES;
	strcpy(s->peer_node, m.node);
	memcpy(s->peer_nonce, m.nonce, PEER_NONCE_LEN);
	assert_int_equal(peer_nonce(s->nonce), 0);
	struct peer_challenge c = {0};
	strcpy(c.node, s->node);
	memcpy(c.nonce, s->nonce, PEER_NONCE_LEN);
	struct peer_transcript t = {s->cluster, s->peer_node, s->node, s->peer_nonce, s->nonce};
	assert_int_equal(peer_proof(&s->keys, PEER_ROLE_SERVER, &t, c.mac), 0);
	return peer_enc_challenge(out, 2, &c);
}

/* The server's side: AUTH in, READY out or refusal. */
static int server_auth(struct end *s, const struct proto_wr *in, struct proto_wr *out)
{
	struct peer_hdr h;
	uint8_t mac[PEER_MAC_LEN];
	const uint8_t *p = body(in, &h, PEER_OP_AUTH);
	int rc = peer_dec_auth(p, h.len, mac);
	if (rc < 0)
		return rc;
	struct peer_transcript t = {s->cluster, s->peer_node, s->node, s->peer_nonce, s->nonce};
	rc = peer_proof_check(&s->keys, PEER_ROLE_CLIENT, &t, mac);
	if (rc < 0)
		return rc;
	return peer_enc_ready(out, 3);
}

static void client_hello(struct end *c, struct proto_wr *out)
{
	struct peer_hello m = {.version = PEER_PROTO_VERSION};
	strcpy(m.cluster, c->cluster);
	strcpy(m.node, c->node);
	assert_int_equal(peer_nonce(c->nonce), 0);
	memcpy(m.nonce, c->nonce, PEER_NONCE_LEN);
	assert_int_equal(peer_enc_hello(out, 1, &m), 0);
}

/* The client's side: CHALLENGE in, AUTH out (0) or -EACCES. */
static int client_auth(struct end *c, const struct proto_wr *in, struct proto_wr *out)
{
	struct peer_hdr h;
	struct peer_challenge m;
	const uint8_t *p = body(in, &h, PEER_OP_CHALLENGE);
	assert_int_equal(peer_dec_challenge(p, h.len, &m), 0);
	strcpy(c->peer_node, m.node);
	struct peer_transcript t = {c->cluster, c->node, m.node, c->nonce, m.nonce};
	int rc = peer_proof_check(&c->keys, PEER_ROLE_SERVER, &t, m.mac);
	if (rc < 0)
		return rc;
	uint8_t mac[PEER_MAC_LEN];
	assert_int_equal(peer_proof(&c->keys, PEER_ROLE_CLIENT, &t, mac), 0);
	return peer_enc_auth(out, 3, mac);
}

static void test_handshake(void **state)
{
	(void)state;
	struct end s = {.cluster = "train", .node = "server-1"};
	struct end c = {.cluster = "train", .node = "client-9"};
	keys_of(&s.keys, KEY_A "\n" KEY_B "\n");
	keys_of(&c.keys, KEY_A "\n");
	struct proto_wr hello, chal, auth, ready;
	proto_wr_init(&hello);
	proto_wr_init(&chal);
	proto_wr_init(&auth);
	proto_wr_init(&ready);

	client_hello(&c, &hello);
	assert_int_equal(server_hello(&s, &hello, &chal), 0);
	assert_int_equal(client_auth(&c, &chal, &auth), 0);
	assert_int_equal(server_auth(&s, &auth, &ready), 0);
	struct peer_hdr h;
	(void)body(&ready, &h, PEER_OP_READY);
	assert_string_equal(c.peer_node, "server-1");
	assert_string_equal(s.peer_node, "client-9");

	/* replay: the recorded HELLO and AUTH against a new server nonce */
	assert_int_equal(server_hello(&s, &hello, &chal), 0);
	assert_int_equal(server_auth(&s, &auth, &ready), -EACCES);

	/* reflection: the server's own proof sent back as the AUTH */
	client_hello(&c, &hello);
	assert_int_equal(server_hello(&s, &hello, &chal), 0);
	struct peer_challenge m;
	assert_int_equal(peer_dec_challenge(chal.buf + PEER_HDR_SIZE, chal.len - PEER_HDR_SIZE, &m), 0);
	assert_int_equal(peer_enc_auth(&auth, 3, m.mac), 0);
	assert_int_equal(server_auth(&s, &auth, &ready), -EACCES);

	/* an AUTH of zeros (no key) */
	uint8_t zero[PEER_MAC_LEN] = {0};
	client_hello(&c, &hello);
	assert_int_equal(server_hello(&s, &hello, &chal), 0);
	assert_int_equal(peer_enc_auth(&auth, 3, zero), 0);
	assert_int_equal(server_auth(&s, &auth, &ready), -EACCES);

	/* a client with the other key: it refuses the server's proof, and the
	 * server would refuse its own */
	struct end x = {.cluster = "train", .node = "client-x"};
	keys_of(&x.keys, KEY_B "\n");
	struct end s2 = {.cluster = "train", .node = "server-2"};
	keys_of(&s2.keys, KEY_A "\n");
	client_hello(&x, &hello);
	assert_int_equal(server_hello(&s2, &hello, &chal), 0);
	assert_int_equal(client_auth(&x, &chal, &auth), -EACCES);
	assert_int_equal(peer_dec_challenge(chal.buf + PEER_HDR_SIZE, chal.len - PEER_HDR_SIZE, &m), 0);
	struct peer_transcript t = {x.cluster, x.node, m.node, x.nonce, m.nonce};
	uint8_t mac[PEER_MAC_LEN];
	assert_int_equal(peer_proof(&x.keys, PEER_ROLE_CLIENT, &t, mac), 0);
	assert_int_equal(peer_enc_auth(&auth, 3, mac), 0);
	assert_int_equal(server_auth(&s2, &auth, &ready), -EACCES);
	/* ... but server 1, which holds both keys (a rotation), accepts it */
	client_hello(&x, &hello);
	assert_int_equal(server_hello(&s, &hello, &chal), 0);
	assert_int_equal(client_auth(&x, &chal, &auth), -EACCES); /* s proves with A */
	assert_int_equal(peer_dec_challenge(chal.buf + PEER_HDR_SIZE, chal.len - PEER_HDR_SIZE, &m), 0);
	struct peer_transcript t2 = {x.cluster, x.node, m.node, x.nonce, m.nonce};
	assert_int_equal(peer_proof(&x.keys, PEER_ROLE_CLIENT, &t2, mac), 0);
	assert_int_equal(peer_enc_auth(&auth, 3, mac), 0);
	assert_int_equal(server_auth(&s, &auth, &ready), 0);

	/* another cluster's name */
	struct end o = {.cluster = "other", .node = "client-o"};
	keys_of(&o.keys, KEY_A "\n");
	client_hello(&o, &hello);
	assert_int_equal(server_hello(&s, &hello, &chal), -EACCES);

	proto_wr_free(&hello);
	proto_wr_free(&chal);
	proto_wr_free(&auth);
	proto_wr_free(&ready);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_good),
		cmocka_unit_test(test_keys_refused),
		cmocka_unit_test(test_proofs),
		cmocka_unit_test(test_handshake),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
