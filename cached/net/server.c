/*
 * Unix socket server: see server.h.
 *
 * The socket file gets its final mode while it cannot yet accept anyone:
 * bind() under a 0177 umask creates it owner-only, chmod() widens it to
 * the configured mode (daemon.socket_mode) and group (daemon.socket_group),
 * and only then listen() opens it for connections.
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "loop.h"

#define IN_MIN 4096

struct out {
	struct out *next;
	uint8_t *buf;
	size_t len, off;
	int fd;
};

struct server {
	struct event_base *base;
	const struct config *cfg;
	const struct server_ops *ops;
	void *arg;
	uint64_t bad_frames;
	int lfd;
	struct event *lev;
	char path[108];
	struct conn *conns;
	unsigned nconns;
	unsigned nmem;  /* connections not freed yet (closed ones held by requests too) */
	bool stopped;   /* server_stop ran: the last conn_free frees the server */
};

static void conn_close(struct conn *c);
static void conn_flush(struct conn *c);

unsigned server_clients(const struct server *s)
{
	return s->nconns;
}

void conn_count_bad_frame(struct conn *c)
{
	c->srv->bad_frames++;
}

uint64_t server_bad_frames(const struct server *s)
{
	return s->bad_frames;
}

void server_set_config(struct server *s, const struct config *cfg)
{
	s->cfg = cfg;
}

static void conn_free(struct conn *c)
{
	struct out *o = c->oq;
	while (o) {
		struct out *n = o->next;
		if (o->fd >= 0)
			close(o->fd);
		free(o->buf);
		free(o);
		o = n;
	}
	free(c->in);
	struct server *s = c->srv;
	if (c->sess)
		s->ops->release(s->arg, c);
	free(c);
	if (--s->nmem == 0 && s->stopped)
		free(s);
}

static void set_reading(struct conn *c, bool on)
{
	if (c->dead || on == c->reading)
		return;
	if (on)
		event_add(c->rev, NULL);
	else
		event_del(c->rev);
	c->reading = on;
}

bool conn_saturated(const struct conn *c)
{
	return c->oqbytes + c->work > SERVER_OUTQ_MAX || c->oqfds > SERVER_OUTQ_FDS ||
	       c->refs - 1 > SERVER_WAIT_MAX;
}

/* Past a bound: stop reading. */
static void check_bound(struct conn *c)
{
	if (!c->dead && conn_saturated(c))
		set_reading(c, false);
}

/* Queue down to half its bounds and waiting requests within theirs (they
 * finish on their own; the queue needs the client to read): read again,
 * and parse the frames that arrived meanwhile at once (the socket may have
 * nothing more to wake on_read with). */
static void check_resume(struct conn *c)
{
	if (c->dead || c->closing || c->reading)
		return;
	if (c->oqbytes + c->work > SERVER_OUTQ_MAX / 2 || c->oqfds > SERVER_OUTQ_FDS / 2 ||
	    c->refs - 1 > SERVER_WAIT_MAX)
		return;
	set_reading(c, true);
	if (c->inlen >= TC_HDR_SIZE)
		event_active(c->rev, EV_READ, 1);
}

void conn_get(struct conn *c)
{
	c->refs++;
	check_bound(c);
}

void conn_put(struct conn *c)
{
	if (--c->refs == 0) {
		conn_free(c);
		return;
	}
	check_resume(c);
}

void conn_work_begin(struct conn *c, size_t bytes)
{
	c->work += bytes;
	check_bound(c);
}

void conn_work_end(struct conn *c, size_t bytes)
{
	c->work -= bytes < c->work ? bytes : c->work;
	check_resume(c);
}

static void queue(struct conn *c, uint8_t *buf, size_t len, int fd)
{
	struct out *o = malloc(sizeof(*o));
	if (!o) {
		free(buf);
		if (fd >= 0)
			close(fd);
		conn_close(c);
		return;
	}
	*o = (struct out){.buf = buf, .len = len, .fd = fd};
	*c->oqtail = o;
	c->oqtail = &o->next;
	c->oqbytes += len;
	if (fd >= 0)
		c->oqfds++;
	conn_flush(c);
	check_bound(c);
}

void conn_reply(struct conn *c, uint8_t op, uint32_t id, struct proto_wr *w, int fd)
{
	loop_assert();
	if (c->dead) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (proto_wr_finish(w, op, id, 0) < 0) {
		if (fd >= 0)
			close(fd);
		conn_reply_err(c, op, id, ENOMEM, "reply too large or out of memory");
		return;
	}
	uint8_t *buf = w->buf;
	size_t len = w->len;
	proto_wr_init(w); /* the queue owns the buffer now */
	queue(c, buf, len, fd);
}

void conn_reply_err(struct conn *c, uint8_t op, uint32_t id, int err, const char *fmt, ...)
{
	char msg[1024];
	struct proto_wr w;
	va_list ap;
	if (c->dead)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, msg);
	if (proto_wr_finish(&w, op, id, (uint32_t)err) < 0) {
		proto_wr_free(&w);
		conn_close(c);
		return;
	}
	queue(c, w.buf, w.len, -1);
}

/* Write as much of the queue as the socket takes. */
static void conn_flush(struct conn *c)
{
	while (c->oq && !c->dead) {
		struct out *o = c->oq;
		ssize_t n;
		if (o->fd >= 0 && o->off == 0) {
			/* the descriptor rides on the frame's first bytes */
			union {
				struct cmsghdr h;
				char b[CMSG_SPACE(sizeof(int))];
			} cm;
			struct iovec iov = {.iov_base = o->buf, .iov_len = o->len};
			struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
					    .msg_controllen = sizeof(cm.b)};
			memset(cm.b, 0, sizeof(cm.b));
			struct cmsghdr *ch = CMSG_FIRSTHDR(&mh);
			ch->cmsg_level = SOL_SOCKET;
			ch->cmsg_type = SCM_RIGHTS;
			ch->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(ch), &o->fd, sizeof(int));
			n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		} else {
			n = send(c->fd, o->buf + o->off, o->len - o->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				event_add(c->wev, NULL);
				return;
			}
			if (errno == EINTR)
				continue;
			conn_close(c);
			return;
		}
		if (o->fd >= 0) {
			close(o->fd); /* the receiver has its own copy now */
			o->fd = -1;
			c->oqfds--;
		}
		o->off += (size_t)n;
		c->oqbytes -= (size_t)n;
		if (o->off < o->len)
			continue;
		c->oq = o->next;
		if (!c->oq)
			c->oqtail = &c->oq;
		free(o->buf);
		free(o);
	}
	if (c->dead)
		return;
	event_del(c->wev);
	if (c->closing) {
		conn_close(c);
		return;
	}
	check_resume(c);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_flush(arg);
}

/* Reply with a protocol error and hang up: the stream cannot be trusted. */
static void conn_fatal(struct conn *c, uint32_t id, int err, const char *msg)
{
	c->srv->bad_frames++;
	log_warn("client_pid=%d op=frame err=\"%s\"", (int)c->pid, msg);
	set_reading(c, false);
	c->closing = true;
	conn_reply_err(c, 0, id, err, "%s", msg);
}

static void conn_parse(struct conn *c)
{
	size_t at = 0;
	while (!c->dead && !c->closing && c->reading && c->inlen - at >= TC_HDR_SIZE) {
		struct tc_hdr h;
		int rc = proto_hdr_decode(c->in + at, &h);
		if (rc == -EPROTO) {
			conn_fatal(c, h.id, EPROTO, "bad frame header: wrong magic or protocol version");
			break;
		}
		if (rc == -EMSGSIZE) {
			conn_fatal(c, h.id, EMSGSIZE, "frame larger than the protocol's limit");
			break;
		}
		if (c->inlen - at < TC_HDR_SIZE + h.len)
			break;
		c->srv->ops->frame(c->srv->arg, c, &h, c->in + at + TC_HDR_SIZE);
		at += TC_HDR_SIZE + h.len;
		/* backpressure (c->reading off): the rest stays buffered */
	}
	if (c->dead)
		return;
	memmove(c->in, c->in + at, c->inlen - at);
	c->inlen -= at;
}

/* Read what the socket has and parse it. */
static void conn_recv(struct conn *c, evutil_socket_t fd)
{
	if (c->inlen == c->incap) {
		size_t need = c->incap * 2;
		if (need > TC_HDR_SIZE + TC_FRAME_MAX)
			need = TC_HDR_SIZE + TC_FRAME_MAX;
		if (need <= c->incap) {
			conn_fatal(c, 0, EMSGSIZE, "input buffer full");
			return;
		}
		uint8_t *in = realloc(c->in, need);
		if (!in) {
			conn_close(c);
			return;
		}
		c->in = in;
		c->incap = need;
	}
	ssize_t n = recv(fd, c->in + c->inlen, c->incap - c->inlen, 0);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		conn_close(c);
		return;
	}
	if (n < 0)
		return;
	c->inlen += (size_t)n;
	conn_parse(c);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	struct conn *c = arg;
	c->refs++; /* not a waiting request: kept off SERVER_WAIT_MAX */
	/* frames left buffered while backpressure paused reading go first
	 * (conn_flush wakes this callback for them) */
	if (c->inlen >= TC_HDR_SIZE)
		conn_parse(c);
	if (!c->dead && c->reading)
		conn_recv(c, fd);
	conn_put(c);
}

static void conn_close(struct conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	struct server *s = c->srv;
	event_free(c->rev);
	event_free(c->wev);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	s->ops->closed(s->arg, c);
	log_debug("client_pid=%d op=disconnect", (int)c->pid);
	conn_put(c);
}

/* Root, the daemon's own user, or a member (primary or supplementary, from
 * SO_PEERGROUPS: the groups the client had when it connected) of the admin
 * group. */
static bool peer_is_admin(int fd, uid_t uid, gid_t gid, gid_t admin_gid)
{
	if (uid == 0 || uid == geteuid())
		return true;
	if (admin_gid == (gid_t)-1 || uid == (uid_t)-1)
		return false;
	if (gid == admin_gid)
		return true;
	gid_t groups[256];
	socklen_t len = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false; /* more groups than we look at, or an old kernel: not proven */
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == admin_gid)
			return true;
	return false;
}

bool conn_require_admin(struct conn *c, const struct tc_hdr *h)
{
	if (c->admin)
		return true;
	if (c->srv->cfg->admin_gid != (gid_t)-1)
		conn_reply_err(c, h->op, h->id, EPERM,
			       "an admin operation: run it as root or as a member of group %s "
			       "(daemon.admin_group)", c->srv->cfg->admin_group);
	else
		conn_reply_err(c, h->op, h->id, EPERM,
			       "an admin operation: run it as root (or set daemon.admin_group "
			       "in the daemon's config to allow a group)");
	log_info("client_pid=%d uid=%u op=%u err=\"not an admin\"", (int)c->pid, (unsigned)c->uid,
		 (unsigned)h->op);
	return false;
}

int server_adopt(struct server *s, int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	if (s->nconns >= s->cfg->max_clients) {
		struct proto_wr w;
		proto_wr_init(&w);
		proto_wr_begin(&w);
		proto_wr_str(&w, "too many clients (daemon.max_clients); try again later");
		if (proto_wr_finish(&w, 0, 0, EBUSY) == 0 && send(fd, w.buf, w.len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			log_debug("op=accept err=\"cannot tell a refused client why\"");
		proto_wr_free(&w);
		close(fd);
		log_warn("op=accept err=\"too many clients\" max_clients=%u", s->cfg->max_clients);
		return -EBUSY;
	}
	struct conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) == 0) {
		c->uid = cr.uid;
		c->gid = cr.gid;
		c->pid = cr.pid;
	} else {
		c->uid = (uid_t)-1;
		c->gid = (gid_t)-1;
	}
	c->admin = peer_is_admin(fd, c->uid, c->gid, s->cfg->admin_gid);
	c->srv = s;
	c->fd = fd;
	c->refs = 1;
	c->oqtail = &c->oq;
	c->in = malloc(IN_MIN);
	c->incap = IN_MIN;
	c->rev = event_new(s->base, fd, EV_READ | EV_PERSIST, on_read, c);
	c->wev = event_new(s->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
	if (!c->in || !c->rev || !c->wev) {
		if (c->rev)
			event_free(c->rev);
		if (c->wev)
			event_free(c->wev);
		free(c->in);
		free(c);
		close(fd);
		return -ENOMEM;
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	s->nmem++;
	c->sess = s->ops->opened(s->arg, c);
	if (!c->sess) {
		log_warn("op=accept err=\"out of memory\" client_pid=%d", (int)c->pid);
		conn_close(c);
		return -ENOMEM;
	}
	set_reading(c, true);
	log_debug("client_pid=%d client_uid=%d op=connect", (int)c->pid, (int)c->uid);
	return 0;
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	(void)what;
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0)
		(void)server_adopt(arg, fd); /* it logs and closes what it refuses */
}

static int mkdir_parent(const char *path)
{
	char dir[108];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* A socket file left by a daemon that died is removed; one that a live
 * daemon answers on is not. */
static int claim_path(const char *path, char *err, size_t n)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, n, "socket path %s exists and is not a socket; remove it or change daemon.socket", path);
		return -EEXIST;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (rc == 0) {
		snprintf(err, n, "another tiercached is listening on %s", path);
		return -EADDRINUSE;
	}
	unlink(path);
	return 0;
}

int server_new(struct event_base *base, const struct config *cfg, const struct server_ops *ops,
	       void *arg, struct server **out)
{
	struct server *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base = base;
	s->cfg = cfg;
	s->ops = ops;
	s->arg = arg;
	s->lfd = -1;
	*out = s;
	return 0;
}

int server_start(struct event_base *base, const struct config *cfg, const struct server_ops *ops,
		 void *arg, struct server **out, char *err, size_t n)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = cfg->socket;
	struct server *s;
	int rc = server_new(base, cfg, ops, arg, &s);
	if (rc < 0) {
		snprintf(err, n, "out of memory");
		return rc;
	}
	snprintf(s->path, sizeof(s->path), "%s", path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	rc = mkdir_parent(path);
	if (rc < 0) {
		snprintf(err, n, "cannot create the directory of %s: %s", path, strerror(-rc));
		goto fail;
	}
	rc = claim_path(path, err, n);
	if (rc < 0)
		goto fail;
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0) {
		rc = -errno;
		snprintf(err, n, "socket: %s", strerror(errno));
		goto fail;
	}
	mode_t old = umask(0177);
	rc = bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0) {
		rc = -errno;
		snprintf(err, n, "cannot bind %s: %s", path, strerror(errno));
		goto fail;
	}
	if (cfg->socket_gid != (gid_t)-1 && chown(path, (uid_t)-1, cfg->socket_gid) < 0) {
		rc = -errno;
		snprintf(err, n, "cannot give %s to group %s: %s (daemon.socket_group)", path,
			 cfg->socket_group, strerror(errno));
		unlink(path);
		goto fail;
	}
	if (chmod(path, (mode_t)cfg->socket_mode) < 0 || listen(s->lfd, 128) < 0) {
		rc = -errno;
		snprintf(err, n, "cannot listen on %s: %s", path, strerror(errno));
		unlink(path);
		goto fail;
	}
	s->lev = event_new(base, s->lfd, EV_READ | EV_PERSIST, on_accept, s);
	if (!s->lev || event_add(s->lev, NULL) < 0) {
		rc = -ENOMEM;
		snprintf(err, n, "cannot watch the listening socket");
		unlink(path);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	free(s);
	return rc;
}

void server_stop(struct server *s)
{
	if (!s)
		return;
	while (s->conns)
		conn_close(s->conns);
	if (s->lev)
		event_free(s->lev);
	if (s->lfd >= 0) {
		close(s->lfd);
		unlink(s->path);
		s->lfd = -1;
	}
	/* a request still waiting (a fill the workers finish later) holds its
	 * connection, whose last conn_put() reaches the server: it goes with
	 * the last such connection */
	s->stopped = true;
	if (s->nmem == 0)
		free(s);
}
