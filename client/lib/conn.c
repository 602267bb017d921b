/*
 * libtiercache transport: the Unix socket to tiercached, one request at a
 * time, replies read with recvmsg so descriptors passed with SCM_RIGHTS are
 * collected; reconnect-and-retry when the daemon restarts; a fresh
 * connection in a forked child; tiercache_connect/disconnect/call.
 *
 * Threads: every request holds tc->io_lock from send to reply (lock-step,
 * so ids only guard against a desynchronised stream). Fork: tc_enter()
 * compares getpid() with the owner on every public call; the first call in
 * a child resets the connection without touching the parent's socket
 * (close of the child's copy only, never shutdown).
 */
#include "libtc_private.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define TC_RECONNECT_DEFAULT 10.0
#define TC_BACKOFF_FIRST_MS 10
#define TC_BACKOFF_MAX_MS 250
#define TC_POLL_US_DEFAULT 50u
#define TC_POLL_US_MAX 1000u

void tc_io_lock(struct tiercache *tc)
{
	pthread_mutex_lock(&tc->io_lock);
}

void tc_io_unlock(struct tiercache *tc)
{
	pthread_mutex_unlock(&tc->io_lock);
}

int tc_path_check(const char *path)
{
	if (!path)
		return -EINVAL;
	if (strnlen(path, TC_PATH_MAX) >= TC_PATH_MAX) {
		tc_err_detail("path longer than %u bytes", TC_PATH_MAX - 1);
		return -ENAMETOOLONG;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(double ms)
{
	long whole = (long)ms;
	struct timespec ts = {
		.tv_sec = whole / 1000,
		.tv_nsec = (whole % 1000) * 1000000L,
	};
	nanosleep(&ts, NULL); /* EINTR: the caller's loop checks the clock */
}

void tc_msg_free(struct tc_msg *m)
{
	for (int i = 0; i < m->nfds; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	m->nfds = 0;
	free(m->payload);
	m->payload = NULL;
	m->len = 0;
}

void tc_chunk_rec_get(struct proto_rd *r, struct tc_chunk_rec *c)
{
	c->idx = proto_rd_u32(r);
	c->off = proto_rd_u64(r);
	c->len = proto_rd_u32(r);
	c->base = proto_rd_u64(r);
	c->tier = proto_rd_u8(r); /* informational */
}

int tc_msg_take_fd(struct tc_msg *m)
{
	if (m->nfds != 1)
		return -1;
	int fd = m->fds[0];
	m->nfds = 0;
	return fd;
}

/* Close the socket (our copy only: never shutdown, a forked parent or
 * child may share it). Handles notice via gen on the next connection. */
static void conn_drop(struct tiercache *tc)
{
	if (tc->fd >= 0)
		close(tc->fd);
	tc->fd = -1;
	tc->ahead_pending = false; /* its reply went with the socket */
}

static int conn_broken(struct tiercache *tc, int err)
{
	tc->last_conn_err = err;
	tc_log(1, "socket=%s err=\"%s\": connection to tiercached lost", tc->path,
	       tiercache_strerror(err));
	conn_drop(tc);
	return TC_ERETRY;
}

int tc_bad_reply(struct tiercache *tc, const char *what)
{
	tc_err_detail("malformed reply from tiercached: %s", what);
	tc_log(0, "socket=%s err=\"malformed reply: %s\"", tc->path, what);
	conn_drop(tc);
	return -EPROTO;
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Read into buf until at least min bytes (at most cap) have arrived,
 * collecting any descriptors that ride along. EOF is -ECONNRESET: for us a
 * daemon that hung up is a broken connection. */
static int recv_atleast(int fd, void *buf, size_t min, size_t cap, size_t *got, struct tc_msg *m,
			uint64_t poll_ns)
{
	uint8_t *p = buf;
	uint64_t poll_until = poll_ns ? mono_ns() + poll_ns : 0;
	*got = 0;
	while (*got < min) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int) * TC_MSG_MAXFDS)];
		} cbuf;
		struct iovec iov = {.iov_base = p + *got, .iov_len = cap - *got};
		struct msghdr mh = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = cbuf.b,
			.msg_controllen = sizeof(cbuf.b),
		};
		ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | (poll_until ? MSG_DONTWAIT : 0));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN && poll_until) {
				if (mono_ns() >= poll_until)
					poll_until = 0; /* block from now on */
				else
					sched_yield();
				continue;
			}
			return -errno;
		}
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < nfd; i++) {
				int rfd;
				memcpy(&rfd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				if (m->nfds < TC_MSG_MAXFDS)
					m->fds[m->nfds++] = rfd;
				else
					close(rfd);
			}
		}
		if (r == 0)
			return -ECONNRESET;
		*got += (size_t)r;
	}
	return 0;
}

static int recv_exact(int fd, void *buf, size_t n, struct tc_msg *m)
{
	size_t got;
	return recv_atleast(fd, buf, n, n, &got, m, 0);
}

/* Read the reply to request (op, id) and check it is that reply. Requests
 * are lock-step, so nothing but this reply can be in the stream: the first
 * recvmsg takes the header and, for small replies, the whole payload. */
static int recv_reply(struct tiercache *tc, uint8_t op, uint32_t id, struct tc_msg *m)
{
	uint8_t first[4096];
	size_t got;
	int rc = recv_atleast(tc->fd, first, TC_HDR_SIZE, sizeof(first), &got, m, tc->poll_ns);
	if (rc < 0)
		return conn_broken(tc, -rc);
	rc = proto_hdr_decode(first, &m->hdr);
	if (rc < 0) {
		tc_err_detail("bad reply header from tiercached (%s)",
			      rc == -EMSGSIZE ? "frame too large" : "bad magic or version");
		conn_drop(tc);
		return rc;
	}
	if (m->hdr.id != id || m->hdr.op != op) {
		char what[96];
		snprintf(what, sizeof(what), "reply op %u id %u to request op %u id %u",
			 m->hdr.op, m->hdr.id, op, id);
		return tc_bad_reply(tc, what);
	}
	size_t have = got - TC_HDR_SIZE;
	if (have > m->hdr.len)
		return tc_bad_reply(tc, "bytes beyond the reply (unsolicited frame)");
	if (m->hdr.len) {
		m->payload = malloc(m->hdr.len);
		if (!m->payload) {
			/* the stream is now mid-frame: it cannot be reused */
			conn_drop(tc);
			return -ENOMEM;
		}
		memcpy(m->payload, first + TC_HDR_SIZE, have);
		if (have < m->hdr.len) {
			rc = recv_exact(tc->fd, (uint8_t *)m->payload + have, m->hdr.len - have, m);
			if (rc < 0)
				return conn_broken(tc, -rc);
		}
		m->len = m->hdr.len;
	}
	/* only the batched replies carry several (one per record with a chunk) */
	if (m->nfds > 1 && m->hdr.op != TC_OP_OPEN_MANY && m->hdr.op != TC_OP_OPEN_AHEAD)
		return tc_bad_reply(tc, "more than one descriptor in a reply");
	return 0;
}

/* An error reply: errno in aux, one str of detail as payload. */
static int error_reply(struct tiercache *tc, struct tc_msg *m)
{
	uint32_t err = m->hdr.aux;
	struct proto_rd r;
	size_t n;
	proto_rd_init(&r, m->payload, m->len);
	const char *s = proto_rd_str(&r, TC_FRAME_MAX, &n);
	if (err >= 4096 || !proto_rd_done(&r))
		return tc_bad_reply(tc, "error reply");
	const char *nul = memchr(s, '\0', n);
	if (nul)
		n = (size_t)(nul - s);
	tc_err_detail("%.*s", (int)n, s);
	return -(int)err;
}

int tc_xfer_send(struct tiercache *tc, uint8_t op, uint32_t flags, struct proto_wr *w, uint32_t *id)
{
	if (tc->fd < 0) {
		tc->last_conn_err = ENOTCONN;
		return TC_ERETRY;
	}
	*id = tc->next_id++;
	if (tc->next_id == 0)
		tc->next_id = 1;
	int rc = proto_wr_finish(w, op, *id, flags | tc_wait_flags(tc, op));
	if (rc < 0) {
		if (rc == -EMSGSIZE)
			tc_err_detail("request larger than %u bytes", TC_FRAME_MAX);
		return rc;
	}
	rc = send_all(tc->fd, w->buf, w->len);
	return rc < 0 ? conn_broken(tc, -rc) : 0;
}

int tc_xfer_recv(struct tiercache *tc, uint8_t op, uint32_t id, struct tc_msg *rep)
{
	memset(rep, 0, sizeof(*rep));
	if (tc->fd < 0) {
		tc->last_conn_err = ENOTCONN;
		return TC_ERETRY;
	}
	int rc = recv_reply(tc, op, id, rep);
	if (rc == 0 && rep->hdr.aux != 0)
		rc = error_reply(tc, rep);
	if (rc < 0)
		tc_msg_free(rep);
	return rc;
}

int tc_xfer(struct tiercache *tc, uint8_t op, uint32_t flags, struct proto_wr *w,
	    struct tc_msg *rep)
{
	if (rep)
		memset(rep, 0, sizeof(*rep));
	/* replies come in request order: an open-ahead reply still on its
	 * way is read first; so it is before a frame with no reply, which may
	 * be the program's last (a CLOSE before exit): a reply left unread
	 * when the socket closes resets the connection, and the daemon may
	 * then lose the frames it has not read yet */
	if (tc->ahead_pending)
		tc_ahead_collect(tc);
	uint32_t id;
	int rc = tc_xfer_send(tc, op, flags, w, &id);
	if (rc < 0 || (flags & TC_F_NOREPLY))
		return rc;
	return tc_xfer_recv(tc, op, id, rep);
}

int tc_xfer_noreply_u64s(struct tiercache *tc, uint8_t op, const uint64_t *vals, size_t n)
{
	if (n == 0)
		return 0;
	if (tc->fd < 0) {
		tc->last_conn_err = ENOTCONN;
		return TC_ERETRY;
	}
	if (tc->ahead_pending) /* as in tc_xfer */
		tc_ahead_collect(tc);
	if (tc->fd < 0)
		return TC_ERETRY;
	struct proto_wr one, all;
	proto_wr_init(&one);
	proto_wr_init(&all);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		uint32_t id = tc->next_id++;
		if (tc->next_id == 0)
			tc->next_id = 1;
		proto_wr_begin(&one);
		proto_wr_u64(&one, vals[i]);
		rc = proto_wr_finish(&one, op, id, TC_F_NOREPLY | tc_wait_flags(tc, op));
		uint8_t *p = rc == 0 ? proto_wr_reserve(&all, one.len) : NULL;
		if (p)
			memcpy(p, one.buf, one.len);
		else if (rc == 0)
			rc = -ENOMEM;
	}
	if (rc == 0) {
		rc = send_all(tc->fd, all.buf, all.len);
		if (rc < 0)
			rc = conn_broken(tc, -rc);
	}
	proto_wr_free(&one);
	proto_wr_free(&all);
	return rc;
}

static void connect_detail(struct tiercache *tc, int err)
{
	switch (err) {
	case ENOENT:
		tc_err_detail("tiercached is not running (no socket at %s)", tc->path);
		break;
	case ECONNREFUSED:
		tc_err_detail("tiercached is not running (nothing listens on %s)", tc->path);
		break;
	case EACCES:
	case EPERM:
		tc_err_detail("no permission to connect to %s", tc->path);
		break;
	default:
		tc_err_detail("cannot connect to tiercached at %s: %s", tc->path, tiercache_strerror(err));
	}
}

static int hello(struct tiercache *tc)
{
	struct proto_wr w;
	struct tc_msg m;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u32(&w, TC_PROTO_VERSION);
	int rc = tc_xfer(tc, TC_OP_HELLO, 0, &w, &m);
	proto_wr_free(&w);
	if (rc < 0)
		return rc;
	struct proto_rd r;
	size_t vlen;
	proto_rd_init(&r, m.payload, m.len);
	uint32_t version = proto_rd_u32(&r);
	uint32_t frame_max = proto_rd_u32(&r);
	const char *v = proto_rd_str(&r, 256, &vlen);
	if (!proto_rd_done(&r) || m.nfds) {
		rc = tc_bad_reply(tc, "HELLO");
	} else if (version != TC_PROTO_VERSION) {
		tc_err_detail("tiercached speaks protocol version %u, this library %u", version,
			      TC_PROTO_VERSION);
		conn_drop(tc);
		rc = -EPROTO;
	} else if (frame_max < 4096) {
		rc = tc_bad_reply(tc, "HELLO frame_max below 4096");
	} else {
		uint32_t fm = frame_max < TC_FRAME_MAX ? frame_max : TC_FRAME_MAX;
		tc->read_max = fm - 64 < TC_READ_MAX ? fm - 64 : TC_READ_MAX;
		tc_log(2, "socket=%s daemon_version=\"%.*s\" connected", tc->path, (int)vlen, v);
	}
	tc_msg_free(&m);
	return rc;
}

/* One attempt to connect and say HELLO. */
static int conn_open(struct tiercache *tc)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t plen = strlen(tc->path);
	if (plen == 0 || plen >= sizeof(sa.sun_path)) {
		tc_err_detail("socket path \"%s\" is empty or longer than %zu bytes", tc->path,
			      sizeof(sa.sun_path) - 1);
		return plen ? -ENAMETOOLONG : -EINVAL;
	}
	memcpy(sa.sun_path, tc->path, plen + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		int err = errno;
		connect_detail(tc, err);
		return -err;
	}
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = errno;
		if (err == EINTR)
			continue;
		if (err == EISCONN)
			break;
		close(fd);
		connect_detail(tc, err);
		tc->last_conn_err = err;
		return -err;
	}
	tc->fd = fd;
	if (++tc->gen == 0)
		tc->gen = 1;
	int rc = hello(tc);
	if (rc == 0)
		rc = tc_act_send(tc);
	if (rc == 0)
		rc = tc_conn_restore(tc);
	if (rc == TC_ERETRY) {
		tc_err_detail("tiercached at %s closed the connection", tc->path);
		rc = -tc->last_conn_err;
	}
	if (rc < 0)
		conn_drop(tc);
	else
		tc->gave_up = false; /* the daemon answers: requests wait again */
	return rc;
}

/* Errors that mean "the daemon is not there yet": worth waiting for. */
static bool conn_err_retryable(int rc)
{
	switch (-rc) {
	case ENOENT:
	case ECONNREFUSED:
	case ECONNRESET:
	case EPIPE:
	case ENOTCONN:
	case EAGAIN:
	case ETIMEDOUT:
		return true;
	default:
		return false;
	}
}

/*
 * The reconnect policy. A request that finds the connection broken is
 * retried at once on a new connection (the usual case: the daemon was
 * restarted while we were idle); after that, attempts back off from 10 ms
 * to 250 ms until $TIERCACHE_RECONNECT_TIMEOUT seconds have passed since
 * the first failure, and the request fails with the last errno.
 *
 * The window is the connection's, not each request's: once a request has
 * waited all of it in vain, the requests queued behind it on io_lock make
 * one connect attempt each and fail at once, until a connect succeeds.
 * Otherwise N threads sharing a connection during an outage would wait N
 * windows in turn.
 */
int tc_request_locked(struct tiercache *tc, const struct tc_req *rq, struct tc_msg *rep)
{
	struct proto_wr w;
	double deadline = 0;
	bool have_deadline = false, retried_at_once = false;
	double backoff = TC_BACKOFF_FIRST_MS;
	int rc;

	memset(rep, 0, sizeof(*rep));
	proto_wr_init(&w);
	for (;;) {
		bool broke = false;
		rc = 0;
		if (tc->fd < 0) {
			rc = conn_open(tc);
			if (rc < 0 && !conn_err_retryable(rc))
				goto out;
		}
		if (rc == 0 && rq->hd) {
			rc = tc_handle_ensure(tc, rq->hd);
			if (rc == TC_ERETRY)
				broke = true;
			else if (rc < 0)
				goto out;
		}
		if (rc == 0) {
			proto_wr_begin(&w);
			rc = rq->build(tc, &w, rq->arg);
			if (rc != 0)
				goto out;
			rc = tc_xfer(tc, rq->op, rq->flags, &w, rep);
			if (rc != TC_ERETRY)
				goto out;
			broke = true;
		}
		if (broke) {
			rc = -tc->last_conn_err;
			tc_err_detail("connection to tiercached at %s lost", tc->path);
			if (!retried_at_once) {
				retried_at_once = true;
				continue;
			}
		}
		double now = now_s();
		if (!have_deadline) {
			if (tc->gave_up)
				goto out; /* an earlier request waited the window */
			deadline = now + tc->reconnect_timeout;
			have_deadline = true;
		}
		if (now >= deadline) {
			tc->gave_up = true;
			goto out;
		}
		double left_ms = (deadline - now) * 1000;
		sleep_ms(backoff < left_ms ? backoff : left_ms);
		backoff = backoff * 2 < TC_BACKOFF_MAX_MS ? backoff * 2 : TC_BACKOFF_MAX_MS;
	}
out:
	proto_wr_free(&w);
	if (rc == TC_ERETRY)
		rc = -ECONNRESET;
	return rc;
}

int tc_request(struct tiercache *tc, const struct tc_req *rq, struct tc_msg *rep)
{
	tc_io_lock(tc);
	int rc = tc_request_locked(tc, rq, rep);
	tc_io_unlock(tc);
	return rc;
}

/* First call in a forked child. No other thread of the child can hold our
 * locks (they all wait in tc_enter), but a parent thread may have held them
 * at fork time: re-initialise them rather than trust their state. The
 * socket copy is closed, not shut down: the parent keeps using it. */
static void fork_reset(struct tiercache *tc)
{
	pthread_mutex_init(&tc->io_lock, NULL);
	pthread_mutex_init(&tc->tbl_lock, NULL);
	if (tc->fd >= 0)
		close(tc->fd);
	tc->fd = -1;
	/* handles re-open lazily: their gen no longer matches any connection */
	if (++tc->gen == 0)
		tc->gen = 1;
	tc_handles_forget_fds(tc);
	tc_ahead_forget(tc); /* the parent's handles */
	tc_plans_forget(tc); /* the parent's; the job tag follows the child */
}

/* The calling process's pid without a syscall per call: refreshed in a
 * forked child by an atfork handler (fork() runs it; a vfork child may only
 * exec). */
static pid_t pid_cache;
static pthread_once_t pid_once = PTHREAD_ONCE_INIT;

static void pid_refresh(void)
{
	pid_cache = getpid();
}

static void pid_init(void)
{
	pid_refresh();
	pthread_atfork(NULL, NULL, pid_refresh);
}

static pid_t tc_self(void)
{
	pthread_once(&pid_once, pid_init);
	return pid_cache;
}

void tc_enter(struct tiercache *tc)
{
	pid_t me = tc_self();
	if (atomic_load_explicit(&tc->owner, memory_order_acquire) == me)
		return;
	pid_t seen = atomic_load(&tc->resetter);
	if (seen != me && atomic_compare_exchange_strong(&tc->resetter, &seen, me)) {
		fork_reset(tc);
		tc_log(2, "socket=%s pid=%d forked child: new connection on next request",
		       tc->path, (int)me);
		atomic_store_explicit(&tc->owner, me, memory_order_release);
		return;
	}
	while (atomic_load_explicit(&tc->owner, memory_order_acquire) != me)
		sched_yield();
}

static double env_timeout(void)
{
	const char *s = getenv("TIERCACHE_RECONNECT_TIMEOUT");
	if (!s || !*s)
		return TC_RECONNECT_DEFAULT;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !(v >= 0 && v <= 86400)) {
		tc_log(1, "TIERCACHE_RECONNECT_TIMEOUT=\"%s\" is not 0..86400 seconds; using %g", s,
		       TC_RECONNECT_DEFAULT);
		return TC_RECONNECT_DEFAULT;
	}
	return v;
}

/* $TIERCACHE_POLL_US: how long a request polls for its reply before it
 * sleeps (the reply to a hit usually comes within tens of microseconds,
 * and a sleeping thread's CPU may be slow to wake, above all on a VM). */
static uint64_t env_poll_ns(void)
{
	const char *s = getenv("TIERCACHE_POLL_US");
	unsigned long v = TC_POLL_US_DEFAULT;
	if (s && *s) {
		char *end;
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || *end || v > TC_POLL_US_MAX) {
			tc_log(1, "TIERCACHE_POLL_US=\"%s\" is not 0..%u microseconds; using %u", s, TC_POLL_US_MAX,
			       TC_POLL_US_DEFAULT);
			v = TC_POLL_US_DEFAULT;
		}
	}
	return (uint64_t)v * 1000u;
}

static bool env_no_fd_passing(void)
{
	const char *s = getenv("TIERCACHE_NO_FD_PASSING");
	return s && *s && strcmp(s, "0") != 0;
}

struct tiercache *tiercache_connect(const char *socket_path)
{
	tc_err_begin();
	const char *path = socket_path;
	if (!path || !*path)
		path = getenv(TIERCACHE_SOCKET_ENV);
	if (!path || !*path)
		path = TIERCACHE_DEFAULT_SOCKET;

	struct tiercache *tc = calloc(1, sizeof(*tc));
	if (!tc) {
		tc_err_fail(-ENOMEM);
		return NULL;
	}
	tc->fd = -1;
	tc->next_id = 1;
	tc->read_max = TC_READ_MAX;
	tc->path = strdup(path);
	if (!tc->path) {
		free(tc);
		tc_err_fail(-ENOMEM);
		return NULL;
	}
	pthread_mutex_init(&tc->io_lock, NULL);
	pthread_mutex_init(&tc->tbl_lock, NULL);
	atomic_init(&tc->owner, tc_self());
	atomic_init(&tc->resetter, 0);
	tc->no_fd_passing = env_no_fd_passing();
	tc->reconnect_timeout = env_timeout();
	tc->poll_ns = env_poll_ns();
	tc->load_wait_s = tc_wait_from_env();
	int rc = tc_job_from_env(tc);
	if (rc < 0) {
		tiercache_disconnect(tc);
		tc_err_fail(rc);
		return NULL;
	}

	rc = conn_open(tc); /* fail fast: no retry on the first connect */
	if (rc < 0) {
		tiercache_disconnect(tc);
		tc_err_fail(rc);
		return NULL;
	}
	return tc;
}

void tiercache_disconnect(struct tiercache *tc)
{
	if (!tc)
		return;
	tc_handles_free_all(tc);
	tc_ahead_free(tc); /* the daemon frees the handles with the connection */
	tc_plans_forget(tc);
	conn_drop(tc);
	free(tc->act_groups);
	pthread_mutex_destroy(&tc->io_lock);
	pthread_mutex_destroy(&tc->tbl_lock);
	free(tc->path);
	free(tc);
}

struct call_arg {
	const void *req;
	size_t len;
};

static int call_build(struct tiercache *tc, struct proto_wr *w, void *arg)
{
	(void)tc;
	const struct call_arg *a = arg;
	proto_wr_bytes(w, a->req, a->len);
	return 0;
}

int tiercache_call(struct tiercache *tc, unsigned op, const void *req, size_t reqlen, void **rep,
		   size_t *replen)
{
	return tiercache_call_flags(tc, op, 0, req, reqlen, rep, replen);
}

int tiercache_call_flags(struct tiercache *tc, unsigned op, uint32_t flags, const void *req, size_t reqlen,
			 void **rep, size_t *replen)
{
	tc_err_begin();
	if (flags & (TC_F_NOREPLY | TC_F_WAIT(TC_F_WAIT_MAX_S)))
		return tc_err_fail(-EINVAL); /* a generic call always waits for its reply */
	if (!tc || !rep || !replen || op == 0 || op > UINT8_MAX || (reqlen && !req))
		return tc_err_fail(-EINVAL);
	*rep = NULL;
	*replen = 0;
	if (reqlen > TC_FRAME_MAX) {
		tc_err_detail("request larger than %u bytes", TC_FRAME_MAX);
		return tc_err_fail(-EMSGSIZE);
	}
	tc_enter(tc);
	struct call_arg a = {.req = req, .len = reqlen};
	struct tc_req rq = {.op = (uint8_t)op, .flags = flags, .build = call_build, .arg = &a};
	struct tc_msg m;
	int rc = tc_request(tc, &rq, &m);
	if (rc < 0)
		return tc_err_fail(rc);
	/* a generic caller never expects a descriptor: tc_msg_free closes it */
	void *p = m.payload ? m.payload : malloc(1);
	if (!p) {
		tc_msg_free(&m);
		return tc_err_fail(-ENOMEM);
	}
	*rep = p;
	*replen = m.len;
	m.payload = NULL;
	tc_msg_free(&m);
	return 0;
}
