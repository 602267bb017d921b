/*
 * tcpeer: a peer-protocol client for tests (common/peer_proto.h): does the
 * handshake a daemon's peer port asks for, optionally fetches one chunk,
 * or misbehaves in one of the ways the port must refuse.
 *
 *   tcpeer [--key FILE] [--cluster NAME] [--node ID] [--mode MODE] HOST:PORT
 *          [get DATASET PATH SIZE MTIME_NS VERSION CHUNK_SIZE IDX LEN OUTFILE]
 *
 * MODE: normal (handshake, then the GET: the bytes go to OUTFILE, their
 * XXH3 must equal DATA's checksum; prints "ok where=hit|filled len=N
 * checksum=HEX version=V" or "error errno=NAME detail=..."); noauth (a GET
 * without a handshake); nokey (HELLO, then an AUTH of zeros); replay (a
 * good handshake, then its HELLO and AUTH sent again on a second
 * connection, where the server's new nonce must make them fail); garbage
 * (4 KiB of random bytes); clientframe (a client-protocol header, "TC").
 *
 * Exit: 0 accepted (and the data checked, if asked); 3 refused or closed
 * during the handshake (prints "refused: ..."); 4 the GET got an ERROR;
 * 1 anything else; 2 usage. Every read waits at most 10 s.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <xxhash.h>

#include "peer_auth.h"
#include "peer_proto.h"

#define IO_DEADLINE_MS 10000
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_REFUSED = 3, EXIT_GET_ERROR = 4 };

struct opts {
	const char *key, *cluster, *node, *mode, *addr;
	bool get;
	struct peer_get g;
	const char *outfile;
};

static int usage(void)
{
	fprintf(stderr, "usage: tcpeer [--key FILE] [--cluster NAME] [--node ID] [--mode "
			"normal|noauth|nokey|replay|garbage|clientframe] HOST:PORT\n"
			"              [get DATASET PATH SIZE MTIME_NS VERSION CHUNK_SIZE IDX LEN OUTFILE]\n");
	return EXIT_USAGE;
}

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "unknown";
}

/* Wait for EV on fd for at most IO_DEADLINE_MS: 0 or -ETIMEDOUT/-errno. */
static int wait_fd(int fd, short ev)
{
	struct pollfd p = {.fd = fd, .events = ev};
	int r;
	do
		r = poll(&p, 1, IO_DEADLINE_MS);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r == 0 ? -ETIMEDOUT : 0;
}

static int connect_to(const char *addr)
{
	char host[256];
	const char *colon = strrchr(addr, ':');
	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return -EINVAL;
	const char *h = addr;
	size_t hl = (size_t)(colon - addr);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	memcpy(host, h, hl);
	host[hl] = '\0';
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai;
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
		return -EINVAL;
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int rc = fd < 0 ? -errno : 0;
	if (rc == 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		rc = errno == EINPROGRESS ? wait_fd(fd, POLLOUT) : -errno;
		int soe = 0;
		socklen_t sl = sizeof(soe);
		if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soe, &sl) == 0 && soe)
			rc = -soe;
	}
	freeaddrinfo(ai);
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		fprintf(stderr, "tcpeer: connect %s: %s\n", addr, strerror(-rc));
		return rc;
	}
	return fd;
}

static int send_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
		if (r < 0 && errno == EAGAIN) {
			int rc = wait_fd(fd, POLLOUT);
			if (rc < 0)
				return rc;
			continue;
		}
		if (r < 0 && (errno == EPIPE || errno == ECONNRESET))
			return -EPIPE;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0) {
			p += r;
			n -= (size_t)r;
		}
	}
	return 0;
}

/* n bytes: 0, -EPIPE at EOF (or reset), -ETIMEDOUT, -errno. */
static int read_exact(int fd, void *buf, size_t n)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t r = recv(fd, p, n, 0);
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return -EPIPE;
		if (r < 0 && errno == EAGAIN) {
			int rc = wait_fd(fd, POLLIN);
			if (rc < 0)
				return rc;
			continue;
		}
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0) {
			p += r;
			n -= (size_t)r;
		}
	}
	return 0;
}

/* A control frame (not DATA) into buf[PEER_CTRL_MAX]: 0 or -errno. */
static int read_ctrl(int fd, struct peer_hdr *h, uint8_t *buf)
{
	uint8_t hb[PEER_HDR_SIZE];
	int rc = read_exact(fd, hb, sizeof(hb));
	if (rc == 0)
		rc = peer_hdr_decode(hb, h);
	if (rc == 0 && h->op == PEER_OP_DATA)
		return -EPROTO;
	return rc == 0 ? read_exact(fd, buf, h->len) : rc;
}

/* What the server did instead of going on: 3 with a line saying so. */
static int refused(int rc, const struct peer_hdr *h, const uint8_t *buf, const char *when)
{
	if (rc == -EPIPE) {
		printf("refused: EOF %s\n", when);
		return EXIT_REFUSED;
	}
	if (rc < 0) {
		printf("error errno=%s detail=reading the reply %s\n", errname(-rc), when);
		return EXIT_FAIL;
	}
	if (h->op == PEER_OP_ERROR) {
		char d[256];
		if (peer_dec_error(buf, h->len, d, sizeof(d)) < 0)
			snprintf(d, sizeof(d), "(undecodable)");
		printf("refused: error errno=%s detail=%s %s\n", errname((int)h->aux), d, when);
		return EXIT_REFUSED;
	}
	printf("error errno=EPROTO detail=op %u %s\n", h->op, when);
	return EXIT_FAIL;
}

/* Bytes sent on a good handshake, for replay mode. */
struct record {
	uint8_t hello[PEER_CTRL_MAX + PEER_HDR_SIZE];
	size_t hello_len;
	uint8_t auth[PEER_HDR_SIZE + PEER_MAC_LEN];
};

/* HELLO, CHALLENGE, AUTH (our proof; zeros without keys; rec's if
 * replaying), READY. 0 when READY came, else an exit code. */
static int handshake(int fd, const struct opts *o, const struct peer_keys *k, struct record *rec,
		     bool replay)
{
	struct proto_wr w;
	proto_wr_init(&w);
	struct peer_hello hm = {.version = PEER_PROTO_VERSION};
	snprintf(hm.cluster, sizeof(hm.cluster), "%s", o->cluster);
	snprintf(hm.node, sizeof(hm.node), "%s", o->node);
	int rc = peer_nonce(hm.nonce);
	if (rc == 0 && !replay)
		rc = peer_enc_hello(&w, 1, &hm);
	if (rc < 0) {
		fprintf(stderr, "tcpeer: HELLO: %s\n", strerror(-rc));
		proto_wr_free(&w);
		return EXIT_FAIL;
	}
	if (!replay && rec) {
		memcpy(rec->hello, w.buf, w.len);
		rec->hello_len = w.len;
	}
	rc = replay ? send_all(fd, rec->hello, rec->hello_len) : send_all(fd, w.buf, w.len);
	if (replay) /* the HELLO replayed carries the recorded nonce */
		(void)peer_dec_hello(rec->hello + PEER_HDR_SIZE, rec->hello_len - PEER_HDR_SIZE, &hm);
	static uint8_t buf[PEER_CTRL_MAX];
	struct peer_hdr h = {0};
	if (rc == 0)
		rc = read_ctrl(fd, &h, buf);
	struct peer_challenge c;
	if (rc < 0 || h.op != PEER_OP_CHALLENGE || peer_dec_challenge(buf, h.len, &c) < 0) {
		proto_wr_free(&w);
		return refused(rc, &h, buf, "after HELLO");
	}
	struct peer_transcript t = {hm.cluster, hm.node, c.node, hm.nonce, c.nonce};
	uint8_t mac[PEER_MAC_LEN] = {0};
	bool server_ok = k && peer_proof_check(k, PEER_ROLE_SERVER, &t, c.mac) >= 0;
	if (k && !server_ok)
		fprintf(stderr, "tcpeer: the server's proof does not verify with our key(s)\n");
	if (k)
		(void)peer_proof(k, PEER_ROLE_CLIENT, &t, mac);
	rc = peer_enc_auth(&w, 2, mac);
	if (!replay && rec && rc == 0)
		memcpy(rec->auth, w.buf, w.len);
	if (rc == 0)
		rc = replay ? send_all(fd, rec->auth, sizeof(rec->auth)) : send_all(fd, w.buf, w.len);
	proto_wr_free(&w);
	if (rc == 0)
		rc = read_ctrl(fd, &h, buf);
	if (rc < 0 || h.op != PEER_OP_READY)
		return refused(rc, &h, buf, "after AUTH");
	if (k && !server_ok) {
		printf("error errno=EACCES detail=READY, though the server's proof did not verify\n");
		return EXIT_FAIL;
	}
	return 0;
}

/* GET, then DATA streamed to o->outfile and checked, or ERROR. */
static int get_chunk(int fd, const struct opts *o)
{
	struct proto_wr w;
	proto_wr_init(&w);
	int rc = peer_enc_get(&w, 3, &o->g);
	if (rc == 0)
		rc = send_all(fd, w.buf, w.len);
	proto_wr_free(&w);
	static uint8_t buf[PEER_CTRL_MAX > (1u << 16) ? PEER_CTRL_MAX : (1u << 16)];
	uint8_t hb[PEER_HDR_SIZE];
	struct peer_hdr h = {0};
	if (rc == 0)
		rc = read_exact(fd, hb, sizeof(hb));
	if (rc == 0)
		rc = peer_hdr_decode(hb, &h);
	if (rc == 0 && h.op == PEER_OP_ERROR) {
		char d[512];
		rc = read_exact(fd, buf, h.len);
		if (rc == 0 && peer_dec_error(buf, h.len, d, sizeof(d)) == 0) {
			printf("error errno=%s detail=%s\n", errname((int)h.aux), d);
			return EXIT_GET_ERROR;
		}
	}
	struct peer_data d;
	if (rc == 0 && h.op != PEER_OP_DATA)
		rc = -EPROTO;
	if (rc == 0)
		rc = h.len < PEER_DATA_META ? -EBADMSG : read_exact(fd, buf, PEER_DATA_META);
	if (rc == 0)
		rc = peer_dec_data_head(buf, h.len, &d);
	if (rc < 0) {
		printf("error errno=%s detail=reading the reply to GET (op %u)\n", errname(-rc), h.op);
		return EXIT_FAIL;
	}
	int out = open(o->outfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		printf("error errno=%s detail=cannot create %s\n", errname(errno), o->outfile);
		return EXIT_FAIL;
	}
	XXH3_state_t *xs = XXH3_createState();
	if (!xs || XXH3_64bits_reset(xs) != XXH_OK)
		rc = -ENOMEM;
	for (uint32_t left = d.len; rc == 0 && left;) {
		size_t n = left < sizeof(buf) ? left : sizeof(buf);
		rc = read_exact(fd, buf, n);
		if (rc == 0 && write(out, buf, n) != (ssize_t)n)
			rc = -EIO;
		if (rc == 0)
			XXH3_64bits_update(xs, buf, n);
		left -= (uint32_t)n;
	}
	uint64_t sum = rc == 0 ? XXH3_64bits_digest(xs) : 0;
	XXH3_freeState(xs);
	if (close(out) < 0 && rc == 0)
		rc = -EIO;
	if (rc < 0) {
		printf("error errno=%s detail=reading %u bytes of DATA\n", errname(-rc), d.len);
		return EXIT_FAIL;
	}
	if (sum != d.checksum || d.len != o->g.len) {
		printf("error errno=EBADMSG detail=len %u (asked %u) xxh3 %016" PRIx64
		       " but DATA.checksum %016" PRIx64 "\n",
		       d.len, o->g.len, sum, d.checksum);
		return EXIT_FAIL;
	}
	printf("ok where=%s len=%u checksum=%016" PRIx64 " version=%" PRIu64 "\n",
	       d.where == PEER_WHERE_FILLED ? "filled" : "hit", d.len, d.checksum, d.version);
	return EXIT_OK;
}

/* Send RAW and see what the server does: it must refuse. */
static int misbehave(int fd, const void *raw, size_t n)
{
	int rc = send_all(fd, raw, n);
	if (rc == -EPIPE) {
		printf("refused: EOF while sending\n");
		return EXIT_REFUSED;
	}
	static uint8_t buf[PEER_CTRL_MAX];
	struct peer_hdr h = {0};
	if (rc == 0)
		rc = read_ctrl(fd, &h, buf);
	if (rc == 0 && h.op != PEER_OP_ERROR) {
		printf("error errno=EPROTO detail=the server answered op %u\n", h.op);
		return EXIT_OK; /* it accepted: the test that expects 3 fails */
	}
	return refused(rc, &h, buf, "after the frame");
}

static int parse_get(struct opts *o, char **a)
{
	struct peer_get *g = &o->g;
	char *end;
	if (snprintf(g->dataset, sizeof(g->dataset), "%s", a[0]) >= (int)sizeof(g->dataset) ||
	    snprintf(g->path, sizeof(g->path), "%s", a[1]) >= (int)sizeof(g->path))
		return -1;
	uint64_t v[6];
	for (int i = 0; i < 6; i++) {
		errno = 0;
		v[i] = i == 1 ? (uint64_t)strtoll(a[2 + i], &end, 0) : strtoull(a[2 + i], &end, 0);
		if (errno || *end || end == a[2 + i] || (i >= 3 && v[i] > UINT32_MAX))
			return -1;
	}
	g->size = v[0];
	g->mtime_ns = (int64_t)v[1];
	g->version = v[2];
	g->chunk_size = (uint32_t)v[3];
	g->idx = (uint32_t)v[4];
	g->len = (uint32_t)v[5];
	o->outfile = a[8];
	o->get = true;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.cluster = "test", .node = "tcpeer", .mode = "normal"};
	int i = 1;
	for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		if (!strcmp(argv[i], "--key"))
			o.key = argv[i + 1];
		else if (!strcmp(argv[i], "--cluster"))
			o.cluster = argv[i + 1];
		else if (!strcmp(argv[i], "--node"))
			o.node = argv[i + 1];
		else if (!strcmp(argv[i], "--mode"))
			o.mode = argv[i + 1];
		else
			return usage();
	}
	if (i >= argc)
		return usage();
	o.addr = argv[i++];
	if (i < argc && (strcmp(argv[i], "get") || argc - i != 10 || parse_get(&o, argv + i + 1) < 0))
		return usage();
	signal(SIGPIPE, SIG_IGN);

	struct peer_keys keys, *k = NULL;
	bool needs_key = !strcmp(o.mode, "normal") || !strcmp(o.mode, "replay");
	if (o.key) {
		char err[512];
		if (peer_keys_load(o.key, &keys, err, sizeof(err)) < 0) {
			fprintf(stderr, "tcpeer: %s\n", err);
			return EXIT_FAIL;
		}
		k = &keys;
	} else if (needs_key) {
		fprintf(stderr, "tcpeer: --mode %s needs --key\n", o.mode);
		return EXIT_USAGE;
	}
	int fd = connect_to(o.addr);
	if (fd < 0)
		return EXIT_FAIL;
	int ex;
	if (!strcmp(o.mode, "normal")) {
		ex = handshake(fd, &o, k, NULL, false);
		if (ex == 0 && o.get)
			ex = get_chunk(fd, &o);
		else if (ex == 0)
			printf("ok handshake\n");
	} else if (!strcmp(o.mode, "nokey")) {
		ex = handshake(fd, &o, NULL, NULL, false);
		if (ex == 0)
			printf("ok handshake (with an AUTH of zeros)\n");
	} else if (!strcmp(o.mode, "replay")) {
		static struct record rec;
		ex = handshake(fd, &o, k, &rec, false);
		close(fd);
		fd = ex == 0 ? connect_to(o.addr) : -1;
		if (ex == 0 && fd < 0)
			ex = EXIT_FAIL;
		if (ex != 0) {
			fprintf(stderr, "tcpeer: the first, good handshake failed: nothing to replay\n");
			return EXIT_FAIL;
		}
		ex = handshake(fd, &o, NULL, &rec, true);
		if (ex == 0)
			printf("ok handshake (replayed)\n");
	} else if (!strcmp(o.mode, "noauth")) {
		struct proto_wr w;
		proto_wr_init(&w);
		struct peer_get g = {.dataset = "ds", .path = "a", .chunk_size = 4096};
		if (peer_enc_get(&w, 1, o.get ? &o.g : &g) < 0)
			return EXIT_USAGE;
		ex = misbehave(fd, w.buf, w.len);
		proto_wr_free(&w);
	} else if (!strcmp(o.mode, "garbage")) {
		static uint8_t junk[4096];
		if (getrandom(junk, sizeof(junk), 0) != (ssize_t)sizeof(junk))
			return EXIT_FAIL;
		if (junk[0] == 'T' && junk[1] == 'P')
			junk[0] = 'X'; /* never the peer magic by chance */
		ex = misbehave(fd, junk, sizeof(junk));
	} else if (!strcmp(o.mode, "clientframe")) {
		static const uint8_t tc[PEER_HDR_SIZE] = {'T', 'C', TC_PROTO_VERSION, 1, 4, 0, 0, 0, 1};
		uint8_t f[PEER_HDR_SIZE + 4] = {0};
		memcpy(f, tc, sizeof(tc));
		f[PEER_HDR_SIZE] = 2;
		ex = misbehave(fd, f, sizeof(f));
	} else {
		ex = usage();
	}
	if (fd >= 0)
		close(fd);
	if (k)
		peer_keys_clear(k);
	return ex;
}
