/*
 * libFuzzer target for the daemon's connection code (cached/net/server.c):
 * the frame parser, the output queue with descriptor passing, backpressure,
 * fatal frames and connections held past their close, driven through a
 * real socketpair on a real libevent loop. No fake transport: one end of
 * the pair is adopted as a client connection (server_adopt), the fuzz
 * input is written to the other end in pieces, and replies are drained
 * from it as a client would.
 *
 * Input: one control byte, then the byte stream the client sends.
 *   control & 0x3f  piece size (x 16; 0: all at once)
 *   control & 0x40  drain replies only when the socket is full (lets the
 *                   output queue grow past SERVER_OUTQ_MAX: backpressure)
 *   control & 0x80  stop the server before the deferred replies are sent
 *                   (requests that outlive the server, as fills do at
 *                   shutdown)
 * The application is a small server_ops table here: each frame's op picks
 * its answer (a reply, one with a descriptor, an error, a bad frame, a
 * large reply, none, or one deferred until the loop has run).
 *
 * Oracle: the harness decodes the stream itself. Every whole frame before
 * the first bad header (or before the end) must reach the application
 * exactly once, in order, with its own header and payload; a bad header
 * must end the connection with an error reply; replies must be whole
 * frames; and each iteration frees all it made (LeakSanitizer, and no
 * event left on the loop).
 *
 * Single-threaded: the fuzzer's thread runs the loop.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "config.h"
#include "log.h"
#include "proto.h"
#include "server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FRAMES_MAX 1024 /* frames one input can hold (4096 / TC_HDR_SIZE) */
#define DEFER_MAX 64
#define STEPS_MAX 100000 /* loop steps per input: a stuck loop is a finding */
#define BIG_REPLY (6u << 10)

/* What the application does with a frame, by op. */
enum answer {
	ANS_REPLY, /* a small payload */
	ANS_FD,	   /* a small payload with a descriptor */
	ANS_ERR,   /* an error reply */
	ANS_BAD,   /* counted as a bad frame, answered EBADMSG */
	ANS_BIG,   /* a large payload: fills the output queue */
	ANS_NONE,  /* no reply (like RELEASE with NOREPLY) */
	ANS_DEFER, /* held (conn_get) and answered after the loop ran */
	ANS_COUNT
};

struct expect_frame {
	struct tc_hdr h;
	size_t off; /* payload offset in the stream */
};

struct sess {
	unsigned magic;
};
#define SESS_MAGIC 0x5e55u

struct deferred {
	struct conn *c;
	uint8_t op;
	uint32_t id;
};

static struct {
	struct event_base *base;
	struct config cfg;
	int devnull;
	int fd_probe; /* the lowest free descriptor when this input started */
	/* this input */
	const uint8_t *stream;
	size_t len;
	struct expect_frame want[FRAMES_MAX];
	size_t nwant;
	bool want_fatal;       /* a bad header follows the whole frames */
	size_t seen;	       /* frames the application got */
	unsigned replies_owed; /* replies the frames seen asked for */
	unsigned opened, closed, released;
	struct deferred defer[DEFER_MAX];
	size_t ndefer;
	/* what the client end received */
	uint8_t rx[64 << 10];
	size_t rxlen;
	unsigned rx_frames, rx_fds, rx_fatal;
} g;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERR); /* every bad frame logs a warning */
	g.base = event_base_new();
	g.devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert(g.base && g.devnull >= 0);
	g.fd_probe = fcntl(g.devnull, F_DUPFD_CLOEXEC, 0);
	assert(g.fd_probe >= 0 && close(g.fd_probe) == 0);
	g.cfg.max_clients = 1;
	g.cfg.max_clients_per_uid = 1;
	g.cfg.admin_gid = (gid_t)-1;
	g.cfg.socket_gid = (gid_t)-1;
	return 0;
}

/* ---- the application ---- */

static void *app_opened(void *arg, struct conn *c)
{
	(void)arg;
	(void)c;
	struct sess *s = malloc(sizeof(*s));
	assert(s);
	s->magic = SESS_MAGIC;
	g.opened++;
	return s;
}

static void reply_small(struct conn *c, uint8_t op, uint32_t id, int fd)
{
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u32(&w, id);
	proto_wr_str(&w, "ok");
	conn_reply(c, op, id, &w, fd);
	proto_wr_free(&w);
}

static void app_frame(void *arg, struct conn *c, const struct tc_hdr *h, const uint8_t *payload)
{
	(void)arg;
	assert(((struct sess *)c->sess)->magic == SESS_MAGIC);
	assert(!c->dead);
	/* exactly the next whole frame of the stream */
	assert(g.seen < g.nwant);
	const struct expect_frame *x = &g.want[g.seen++];
	assert(h->op == x->h.op && h->id == x->h.id && h->len == x->h.len && h->aux == x->h.aux);
	assert(memcmp(payload, g.stream + x->off, h->len) == 0);

	switch ((enum answer)(h->op % ANS_COUNT)) {
	case ANS_REPLY: reply_small(c, h->op, h->id, -1); break;
	case ANS_FD: {
		int fd = fcntl(g.devnull, F_DUPFD_CLOEXEC, 0);
		assert(fd >= 0);
		reply_small(c, h->op, h->id, fd);
		break;
	}
	case ANS_ERR:
		conn_reply_err(c, h->op, h->id, ENOENT, "no such thing: %u", (unsigned)h->len);
		break;
	case ANS_BAD:
		conn_count_bad_frame(c);
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed");
		break;
	case ANS_BIG: {
		struct proto_wr w;
		proto_wr_init(&w);
		proto_wr_begin(&w);
		for (unsigned i = 0; i < BIG_REPLY / 8; i++)
			proto_wr_u64(&w, (uint64_t)h->id * i);
		conn_reply(c, h->op, h->id, &w, -1);
		proto_wr_free(&w);
		break;
	}
	case ANS_NONE: return; /* owes nothing */
	case ANS_DEFER:
		if (g.ndefer == DEFER_MAX) {
			reply_small(c, h->op, h->id, -1);
			break;
		}
		conn_get(c);
		g.defer[g.ndefer++] = (struct deferred){.c = c, .op = h->op, .id = h->id};
		break;
	default: assert(0);
	}
	g.replies_owed++;
}

static void app_closed(void *arg, struct conn *c)
{
	(void)arg;
	assert(c->dead);
	assert(((struct sess *)c->sess)->magic == SESS_MAGIC);
	g.closed++;
}

static void app_release(void *arg, struct conn *c)
{
	(void)arg;
	struct sess *s = c->sess;
	assert(s->magic == SESS_MAGIC);
	s->magic = 0;
	free(s);
	g.released++;
}

/* Nothing here outlives a frame but the held requests, which the
 * server's own refs check covers. */
static bool app_idle(void *arg, struct conn *c)
{
	(void)arg;
	assert(((struct sess *)c->sess)->magic == SESS_MAGIC);
	return true;
}

static const struct server_ops app_ops = {
	.opened = app_opened,
	.frame = app_frame,
	.closed = app_closed,
	.release = app_release,
	.idle = app_idle,
};

/* Answer what was held: on a live connection a reply, on a closed one a
 * dropped reply (and its descriptor closed); the hold goes either way. */
static bool run_deferred(void)
{
	size_t n = g.ndefer;
	g.ndefer = 0;
	for (size_t i = 0; i < n; i++) {
		struct deferred *d = &g.defer[i];
		int fd = i % 2 ? fcntl(g.devnull, F_DUPFD_CLOEXEC, 0) : -1;
		reply_small(d->c, d->op, d->id, fd);
		conn_put(d->c);
	}
	return n > 0;
}

/* ---- the client end ---- */

/* Expected frames: the stream as the server must cut it. */
static void decode_stream(void)
{
	size_t at = 0;
	g.nwant = 0;
	g.want_fatal = false;
	while (g.len - at >= TC_HDR_SIZE) {
		struct tc_hdr h;
		if (proto_hdr_decode(g.stream + at, &h) < 0) {
			g.want_fatal = true;
			return;
		}
		if (g.len - at - TC_HDR_SIZE < h.len)
			return;
		assert(g.nwant < FRAMES_MAX);
		g.want[g.nwant++] = (struct expect_frame){.h = h, .off = at + TC_HDR_SIZE};
		at += TC_HDR_SIZE + h.len;
	}
}

/* Count whole reply frames at the front of rx and drop them. */
static void rx_consume(void)
{
	size_t at = 0;
	while (g.rxlen - at >= TC_HDR_SIZE) {
		struct tc_hdr h;
		/* the server only ever writes well-formed frames */
		assert(proto_hdr_decode(g.rx + at, &h) == 0);
		if (g.rxlen - at - TC_HDR_SIZE < h.len)
			break;
		if (h.op == 0 && (h.aux == EPROTO || h.aux == EMSGSIZE))
			g.rx_fatal++;
		g.rx_frames++;
		at += TC_HDR_SIZE + h.len;
	}
	memmove(g.rx, g.rx + at, g.rxlen - at);
	g.rxlen -= at;
}

/* Read what the server sent; close the descriptors that came with it.
 * Returns bytes read, 0 at EOF or when nothing is waiting. */
static size_t drain(int fd, bool *eof)
{
	size_t total = 0;
	for (;;) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(4 * sizeof(int))];
		} cm;
		assert(g.rxlen < sizeof(g.rx));
		struct iovec iov = {.iov_base = g.rx + g.rxlen, .iov_len = sizeof(g.rx) - g.rxlen};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cm.b,
				    .msg_controllen = sizeof(cm.b)};
		ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == ECONNRESET) {
			/* the server hung up with input unread (a fatal frame) */
			*eof = true;
			return total;
		}
		if (n < 0) {
			assert(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
			return total;
		}
		assert(!(mh.msg_flags & MSG_CTRUNC));
		for (struct cmsghdr *ch = CMSG_FIRSTHDR(&mh); ch; ch = CMSG_NXTHDR(&mh, ch)) {
			if (ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS)
				continue;
			size_t nfd = (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < nfd; i++) {
				int rfd;
				memcpy(&rfd, CMSG_DATA(ch) + i * sizeof(int), sizeof(int));
				close(rfd);
				g.rx_fds++;
			}
		}
		if (n == 0) {
			*eof = true;
			return total;
		}
		g.rxlen += (size_t)n;
		total += (size_t)n;
		rx_consume();
	}
}

/* One loop pass over whatever is ready. */
static void step(void)
{
	assert(event_base_loop(g.base, EVLOOP_NONBLOCK) >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t control = data[0];
	size_t piece = (size_t)(control & 0x3f) * 16;
	bool lazy_drain = control & 0x40;
	bool stop_first = control & 0x80;
	struct server *s = NULL;
	int sv[2];
	bool eof = false;

	/* taken per input, not once: libFuzzer itself may open descriptors
	 * between inputs (a pipe to its symbolizer when it first prints a
	 * NEW_FUNC) */
	g.fd_probe = fcntl(g.devnull, F_DUPFD_CLOEXEC, 0);
	assert(g.fd_probe >= 0 && close(g.fd_probe) == 0);
	memset(&g.want, 0, sizeof(g.want));
	g.stream = data + 1;
	g.len = size - 1;
	g.seen = g.replies_owed = 0;
	g.opened = g.closed = g.released = 0;
	g.rxlen = g.rx_frames = g.rx_fds = g.rx_fatal = 0;
	g.ndefer = 0;
	decode_stream();

	assert(server_new(g.base, &g.cfg, &app_ops, NULL, &s) == 0);
	assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
	/* small socket buffers: the output queue, not the kernel, holds replies */
	int small = 4096;
	assert(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
	assert(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) == 0);
	assert(server_adopt(s, sv[0]) == 0);
	assert(g.opened == 1 && server_clients(s) == 1);
	if (control & 0x20) {
		/* max_clients is 1: a second client is refused and told why */
		int sv2[2];
		assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv2) == 0);
		assert(server_adopt(s, sv2[0]) == -EBUSY);
		assert(server_clients(s) == 1 && g.opened == 1);
		uint8_t hdr[TC_HDR_SIZE];
		struct tc_hdr h;
		assert(recv(sv2[1], hdr, sizeof(hdr), MSG_DONTWAIT) == TC_HDR_SIZE);
		assert(proto_hdr_decode(hdr, &h) == 0 && h.aux == EBUSY);
		close(sv2[1]);
	}

	/* send the stream in pieces, running the loop between them */
	size_t sent = 0;
	unsigned steps = 0;
	while (sent < g.len && !eof && steps++ < STEPS_MAX) {
		size_t want = piece ? piece : g.len;
		if (want > g.len - sent)
			want = g.len - sent;
		ssize_t n = send(sv[1], g.stream + sent, want, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0)
			assert(errno == EAGAIN || errno == EWOULDBLOCK || errno == EPIPE ||
			       errno == ECONNRESET);
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
			break; /* the server hung up (a fatal frame) */
		if (n > 0)
			sent += (size_t)n;
		step();
		if (!lazy_drain || n <= 0)
			drain(sv[1], &eof);
		step();
		if (!stop_first)
			run_deferred();
	}
	/* settle: until nothing moves any more */
	for (unsigned quiet = 0; quiet < 3 && steps++ < STEPS_MAX;) {
		size_t seen = g.seen;
		step();
		size_t got = drain(sv[1], &eof);
		bool moved = (!stop_first && run_deferred()) || got > 0 || g.seen != seen;
		quiet = moved ? 0 : quiet + 1;
	}
	assert(steps < STEPS_MAX);

	/* every whole frame up to a bad header reached the application once */
	bool all_sent = sent == g.len;
	/* requests left waiting (never answered before the stop) are bounded:
	 * past SERVER_WAIT_MAX the server stops reading, so later frames stay
	 * unparsed; otherwise every frame must have been parsed */
	assert(g.ndefer <= SERVER_WAIT_MAX + 1);
	if (all_sent && !(stop_first && g.ndefer >= SERVER_WAIT_MAX)) {
		if (g.seen != g.nwant)
			abort(); /* frames left unparsed in the server's buffer */
		if (g.want_fatal) {
			assert(eof && server_clients(s) == 0);
			assert(g.rx_fatal == 1);
		}
	}
	assert(g.seen <= g.nwant);
	if (!eof && !g.want_fatal && all_sent) {
		/* a live connection answered everything it was asked */
		assert(g.rx_frames == g.replies_owed - g.ndefer);
		assert(g.rxlen == 0);
	}

	if (stop_first) {
		/* requests still hold the connection when the server goes, as
		 * fills in flight do when the daemon stops */
		server_stop(s);
		run_deferred();
	} else {
		run_deferred();
		server_stop(s);
	}
	assert(g.ndefer == 0);
	assert(g.opened == 1 && g.closed == 1 && g.released == 1);
	close(sv[1]);
	/* nothing of this input is left on the loop */
	assert(event_base_get_num_events(g.base,
					 EVENT_BASE_COUNT_ADDED | EVENT_BASE_COUNT_ACTIVE) == 0);
	/* and no descriptor: sockets, and the ones replies carried */
	int probe = fcntl(g.devnull, F_DUPFD_CLOEXEC, 0);
	assert(probe == g.fd_probe);
	close(probe);
	return 0;
}
