/*
 * Unix socket server: see server.h.
 *
 * The socket file is made by sock_path.c (bound in a private directory,
 * renamed into place).
 *
 * Limits at accept (server_adopt): max_clients, of which the last
 * SERVER_ADMIN_RESERVE_MAX are kept for admins, and max_clients_per_uid
 * for everyone but admins; a refused client gets an EBUSY error frame
 * naming the limit. Out of descriptors (EMFILE/ENFILE), accept() would
 * fail on every wakeup of a level-triggered listener: the server gives up
 * a reserve descriptor to accept and hang up on who waits (with an error
 * frame saying why), logs once per episode and stops accepting for
 * ACCEPT_PAUSE_MS. One periodic timer closes connections idle past
 * daemon.idle_timeout that hold nothing.
 */
#include "server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "loop.h"
#include "sock_path.h"

#define IN_MIN 4096
/* Out of descriptors: how long accepting pauses, and how many waiting
 * clients one pause turns away (the listen backlog is 128). */
#define ACCEPT_PAUSE_MS 100
#define ACCEPT_DRAIN_MAX 128
/* Connections one accept wakeup takes. */
#define ACCEPT_BATCH 32
/* Refusals are logged at most this often (a client retrying in a loop
 * must not flood the log); the line counts those not logged. */
#define REFUSE_LOG_NS (10ull * 1000000000ull)
#define UID_BUCKETS 256u

/* Connections per uid (max_clients_per_uid). */
struct uid_count {
	struct uid_count *next;
	uid_t uid;
	unsigned n;
};

struct out {
	struct out *next;
	uint8_t *buf;
	size_t len, off;
	unsigned nfds; /* descriptors riding on the frame's first bytes */
	int fds[];
};

struct server {
	struct event_base *base;
	const struct config *cfg;
	const struct server_ops *ops;
	void *arg;
	uint64_t bad_frames;
	uint64_t frames; /* parsed, for the loop's busy poll */
	uint64_t awaited; /* parsed frames that want a reply (no TC_F_NOREPLY) */
	uint64_t replies; /* frames queued to clients */
	int lfd;
	struct event *lev;
	char path[108];
	struct conn *conns;
	unsigned nconns;
	unsigned nmem;  /* connections not freed yet (closed ones held by requests too) */
	bool stopped;   /* server_stop ran: the last conn_free frees the server */
	struct uid_count *uids[UID_BUCKETS];
	/* out of descriptors */
	int reserve_fd;          /* /dev/null, given up to turn waiting clients away */
	bool starved;            /* in an EMFILE/ENFILE episode (logged at its start) */
	uint64_t starved_refused; /* clients turned away in this episode */
	struct event *accept_pause; /* re-arms the listener after a pause */
	uint64_t accept_errors;
	/* limits */
	uint64_t refused;
	uint64_t refuse_log_ns;  /* when a refusal was last logged */
	uint64_t refused_unlogged;
	struct event *idle_tick;
	uint64_t idle_closed;
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

uint64_t server_frames(const struct server *s)
{
	return s->frames;
}

uint64_t server_awaited(const struct server *s)
{
	return s->awaited;
}

uint64_t server_replies(const struct server *s)
{
	return s->replies;
}

uint64_t server_bad_frames(const struct server *s)
{
	return s->bad_frames;
}

uint64_t server_accept_errors(const struct server *s)
{
	return s->accept_errors;
}

uint64_t server_idle_closed(const struct server *s)
{
	return s->idle_closed;
}

uint64_t server_refused(const struct server *s)
{
	return s->refused;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- connections per uid ---- */

static struct uid_count **uid_slot(struct server *s, uid_t uid)
{
	struct uid_count **p = &s->uids[(unsigned)uid % UID_BUCKETS];
	while (*p && (*p)->uid != uid)
		p = &(*p)->next;
	return p;
}

static unsigned uid_connections(struct server *s, uid_t uid)
{
	struct uid_count *u = *uid_slot(s, uid);
	return u ? u->n : 0;
}

static int uid_add(struct server *s, uid_t uid)
{
	struct uid_count **p = uid_slot(s, uid);
	if (!*p) {
		struct uid_count *u = calloc(1, sizeof(*u));
		if (!u)
			return -ENOMEM;
		u->uid = uid;
		*p = u;
	}
	(*p)->n++;
	return 0;
}

static void uid_remove(struct server *s, uid_t uid)
{
	struct uid_count **p = uid_slot(s, uid);
	struct uid_count *u = *p;
	if (!u)
		return;
	if (--u->n == 0) {
		*p = u->next;
		free(u);
	}
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
		for (unsigned i = 0; i < o->nfds; i++)
			close(o->fds[i]);
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

static void close_fds(const int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Queue buf (owned from here) with the descriptors in fds (owned from
 * here; -1 entries skipped). */
static void queue(struct conn *c, uint8_t *buf, size_t len, const int *fds, unsigned nfds)
{
	unsigned n = 0;
	for (unsigned i = 0; i < nfds; i++)
		n += fds[i] >= 0;
	struct out *o = malloc(sizeof(*o) + n * sizeof(int));
	if (!o) {
		free(buf);
		close_fds(fds, nfds);
		conn_close(c);
		return;
	}
	*o = (struct out){.buf = buf, .len = len, .nfds = n};
	n = 0;
	for (unsigned i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			o->fds[n++] = fds[i];
	*c->oqtail = o;
	c->oqtail = &o->next;
	c->srv->replies++;
	c->oqbytes += len;
	c->oqfds += n;
	conn_flush(c);
	check_bound(c);
}

void conn_reply_fds(struct conn *c, uint8_t op, uint32_t id, struct proto_wr *w, const int *fds,
		    unsigned nfds)
{
	loop_assert();
	if (c->dead || nfds > TC_REPLY_FDS_MAX) {
		close_fds(fds, nfds);
		if (!c->dead)
			conn_reply_err(c, op, id, EOVERFLOW, "reply with too many descriptors");
		return;
	}
	if (proto_wr_finish(w, op, id, 0) < 0) {
		close_fds(fds, nfds);
		conn_reply_err(c, op, id, ENOMEM, "reply too large or out of memory");
		return;
	}
	uint8_t *buf = w->buf;
	size_t len = w->len;
	proto_wr_init(w); /* the queue owns the buffer now */
	queue(c, buf, len, fds, nfds);
}

void conn_reply(struct conn *c, uint8_t op, uint32_t id, struct proto_wr *w, int fd)
{
	conn_reply_fds(c, op, id, w, &fd, 1);
}

void conn_reply_err(struct conn *c, uint8_t op, uint32_t id, int err, const char *fmt, ...)
{
	char msg[1024];
	struct proto_wr w;
	va_list ap;
	if (c->err_sink) {
		if (!c->err_sink->err) {
			va_start(ap, fmt);
			vsnprintf(c->err_sink->msg, sizeof(c->err_sink->msg), fmt, ap);
			va_end(ap);
			c->err_sink->err = err ? err : EIO;
		}
		return;
	}
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
	queue(c, w.buf, w.len, NULL, 0);
}

/* Write as much of the queue as the socket takes. */
static void conn_flush(struct conn *c)
{
	while (c->oq && !c->dead) {
		struct out *o = c->oq;
		ssize_t n;
		if (o->nfds && o->off == 0) {
			/* the descriptors ride on the frame's first bytes */
			union {
				struct cmsghdr h;
				char b[CMSG_SPACE(sizeof(int) * TC_REPLY_FDS_MAX)];
			} cm;
			struct iovec iov = {.iov_base = o->buf, .iov_len = o->len};
			struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
					    .msg_controllen = CMSG_SPACE(sizeof(int) * o->nfds)};
			memset(cm.b, 0, sizeof(cm.b));
			struct cmsghdr *ch = CMSG_FIRSTHDR(&mh);
			ch->cmsg_level = SOL_SOCKET;
			ch->cmsg_type = SCM_RIGHTS;
			ch->cmsg_len = CMSG_LEN(sizeof(int) * o->nfds);
			memcpy(CMSG_DATA(ch), o->fds, sizeof(int) * o->nfds);
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
		if (o->nfds) {
			close_fds(o->fds, o->nfds); /* the receiver has its own copies now */
			c->oqfds -= o->nfds;
			o->nfds = 0;
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
		c->srv->frames++;
		if (!(h.aux & TC_F_NOREPLY))
			c->srv->awaited++;
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
	c->last_rx_ns = now_ns();
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
	uid_remove(s, c->uid);
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

/* Tell a client it is not served (an error frame, id 0) and hang up.
 * Never blocks: a client that does not read gets the hangup alone. */
static void refuse_fd(int fd, int err, const char *msg)
{
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, msg);
	if (proto_wr_finish(&w, 0, 0, (uint32_t)err) == 0 &&
	    send(fd, w.buf, w.len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("op=accept err=\"cannot tell a refused client why\"");
	proto_wr_free(&w);
	close(fd);
}

/* A client refused by a limit: told why; logged at most every
 * REFUSE_LOG_NS (with the count of refusals not logged). */
static int refuse_limit(struct server *s, int fd, const char *msg, uid_t uid, pid_t pid)
{
	s->refused++;
	refuse_fd(fd, EBUSY, msg);
	uint64_t now = now_ns();
	if (s->refuse_log_ns && now - s->refuse_log_ns < REFUSE_LOG_NS) {
		s->refused_unlogged++;
		return -EBUSY;
	}
	log_warn("op=accept client_uid=%d client_pid=%d refused_since_last_log=%llu err=\"%s\"",
		 (int)uid, (int)pid, (unsigned long long)s->refused_unlogged, msg);
	s->refuse_log_ns = now;
	s->refused_unlogged = 0;
	return -EBUSY;
}

static unsigned admin_reserve(unsigned max_clients)
{
	unsigned r = max_clients / 4;
	return r < SERVER_ADMIN_RESERVE_MAX ? r : SERVER_ADMIN_RESERVE_MAX;
}

/* The limits a new client meets, in order: max_clients for everyone; the
 * admin reserve and max_clients_per_uid for everyone but admins. */
static int check_limits(struct server *s, int fd, uid_t uid, pid_t pid, bool admin)
{
	const struct config *cfg = s->cfg;
	char msg[256];
	if (s->nconns >= cfg->max_clients) {
		snprintf(msg, sizeof(msg),
			 "too many clients (daemon.max_clients = %u); try again later", cfg->max_clients);
		return refuse_limit(s, fd, msg, uid, pid);
	}
	if (admin)
		return 0;
	unsigned reserve = admin_reserve(cfg->max_clients);
	if (s->nconns + reserve >= cfg->max_clients) {
		snprintf(msg, sizeof(msg),
			 "too many clients (daemon.max_clients = %u, of which the last %u are kept for "
			 "admins); try again later", cfg->max_clients, reserve);
		return refuse_limit(s, fd, msg, uid, pid);
	}
	if (uid_connections(s, uid) >= cfg->max_clients_per_uid) {
		snprintf(msg, sizeof(msg),
			 "too many connections for uid %u (daemon.max_clients_per_uid = %u); close idle ones",
			 (unsigned)uid, cfg->max_clients_per_uid);
		return refuse_limit(s, fd, msg, uid, pid);
	}
	return 0;
}

int server_adopt(struct server *s, int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	pid_t pid = 0;
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) == 0) {
		uid = cr.uid;
		gid = cr.gid;
		pid = cr.pid;
	}
	bool admin = peer_is_admin(fd, uid, gid, s->cfg->admin_gid);
	int rc = check_limits(s, fd, uid, pid, admin);
	if (rc < 0)
		return rc;
	struct conn *c = calloc(1, sizeof(*c));
	if (!c || uid_add(s, uid) < 0) {
		free(c);
		close(fd);
		return -ENOMEM;
	}
	c->uid = uid;
	c->gid = gid;
	c->pid = pid;
	c->admin = admin;
	c->srv = s;
	c->fd = fd;
	c->refs = 1;
	c->oqtail = &c->oq;
	c->last_rx_ns = now_ns();
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
		uid_remove(s, uid);
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

/* ---- accepting, and running out of descriptors ---- */

/* Descriptors open in this process (needs one free itself). */
static int count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

static void accept_pause(struct server *s)
{
	struct timeval tv = {.tv_sec = 0, .tv_usec = ACCEPT_PAUSE_MS * 1000};
	event_del(s->lev);
	evtimer_add(s->accept_pause, &tv);
}

static void on_accept_pause(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct server *s = arg;
	if (s->reserve_fd < 0)
		s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (s->lfd >= 0)
		event_add(s->lev, NULL);
}

/* accept() failed with EMFILE/ENFILE: the listener would wake the loop
 * at once again (level-triggered) and spin. Give up the reserve
 * descriptor to accept and hang up on the clients that wait (they get an
 * error frame saying why, not a hang), take it back, log once per
 * episode, and pause accepting for ACCEPT_PAUSE_MS. */
static void accept_starved(struct server *s, int err)
{
	if (s->reserve_fd >= 0) {
		close(s->reserve_fd);
		s->reserve_fd = -1;
	}
	if (!s->starved) {
		struct rlimit rl = {0};
		getrlimit(RLIMIT_NOFILE, &rl);
		int open_fds = count_open_fds();
		log_warn("op=accept err=\"%s\" nofile=%llu open_fds=%d clients=%u: turning new clients "
			 "away until descriptors are free; raise the limit (LimitNOFILE= in the unit, "
			 "ulimit -n) or lower daemon.max_clients", strerror(err),
			 (unsigned long long)rl.rlim_cur, open_fds, s->nconns);
		s->starved = true;
		s->starved_refused = 0;
	}
	char msg[160];
	snprintf(msg, sizeof(msg), "tiercached is out of file descriptors (%s); try again later, "
		 "and tell its admin (see the daemon's log)", strerror(err));
	for (int i = 0; i < ACCEPT_DRAIN_MAX; i++) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			break;
		refuse_fd(fd, err, msg);
		s->starved_refused++;
	}
	s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	accept_pause(s);
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	(void)what;
	struct server *s = arg;
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			if (s->starved) {
				log_info("op=accept descriptors=available refused_while_out=%llu",
					 (unsigned long long)s->starved_refused);
				s->starved = false;
			}
			(void)server_adopt(s, fd); /* it logs and closes what it refuses */
			continue;
		}
		int e = errno;
		if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == ECONNABORTED)
			return;
		s->accept_errors++;
		if (e == EMFILE || e == ENFILE) {
			accept_starved(s, e);
			return;
		}
		/* ENOBUFS, ENOMEM, ...: pause too rather than spin */
		log_warn("op=accept err=\"%s\": pausing accepts for %d ms", strerror(e), ACCEPT_PAUSE_MS);
		accept_pause(s);
		return;
	}
}

/* ---- the idle timeout ---- */

static void idle_arm(struct server *s)
{
	uint64_t t = s->cfg->idle_timeout_s;
	uint64_t ms = t ? t * 1000 / 4 : 10000;
	if (ms < 250)
		ms = 250;
	if (ms > 10000)
		ms = 10000;
	struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
	evtimer_add(s->idle_tick, &tv);
}

/* Nothing in flight, nothing queued either way, and the session holds
 * nothing (the application's idle()). */
static bool conn_holds_nothing(struct conn *c)
{
	return c->refs == 1 && !c->oq && c->work == 0 && !c->closing &&
	       c->srv->ops->idle(c->srv->arg, c);
}

/* One timer for every connection: every quarter of idle_timeout (0.25 s to
 * 10 s), close the connections that received nothing for idle_timeout and
 * hold nothing. Re-reads the config each time (reload). */
static void on_idle_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct server *s = arg;
	uint64_t t = s->cfg->idle_timeout_s;
	if (t) {
		uint64_t now = now_ns(), limit = t * 1000000000ull;
		struct conn *c = s->conns, *next;
		for (; c; c = next) {
			next = c->next;
			if (now - c->last_rx_ns < limit || !conn_holds_nothing(c))
				continue;
			log_debug("client_pid=%d client_uid=%d op=idle_close idle_timeout_s=%llu", (int)c->pid,
				  (int)c->uid, (unsigned long long)t);
			s->idle_closed++;
			conn_close(c);
		}
	}
	idle_arm(s);
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
	s->reserve_fd = -1;
	s->idle_tick = evtimer_new(base, on_idle_tick, s);
	if (!s->idle_tick) {
		free(s);
		return -ENOMEM;
	}
	idle_arm(s);
	*out = s;
	return 0;
}

int server_start(struct event_base *base, const struct config *cfg, const struct server_ops *ops,
		 void *arg, struct server **out, char *err, size_t n)
{
	const char *path = cfg->socket;
	struct server *s;
	int rc = server_new(base, cfg, ops, arg, &s);
	if (rc < 0) {
		snprintf(err, n, "out of memory");
		return rc;
	}
	snprintf(s->path, sizeof(s->path), "%s", path);
	rc = sock_path_mkdir_parent(path);
	if (rc < 0) {
		snprintf(err, n, "cannot create the directory of %s: %s", path, strerror(-rc));
		goto fail;
	}
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0) {
		rc = -errno;
		snprintf(err, n, "socket: %s", strerror(errno));
		goto fail;
	}
	rc = sock_path_bind(s->lfd, cfg, path, err, n);
	if (rc < 0)
		goto fail;
	if (listen(s->lfd, 128) < 0) {
		rc = -errno;
		snprintf(err, n, "cannot listen on %s: %s", path, strerror(errno));
		unlink(path);
		goto fail;
	}
	/* kept to turn clients away when out of descriptors (on_accept) */
	s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	s->lev = event_new(base, s->lfd, EV_READ | EV_PERSIST, on_accept, s);
	s->accept_pause = evtimer_new(base, on_accept_pause, s);
	if (s->reserve_fd < 0 || !s->lev || !s->accept_pause || event_add(s->lev, NULL) < 0) {
		rc = -ENOMEM;
		snprintf(err, n, "cannot watch the listening socket");
		unlink(path);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (s->lev)
		event_free(s->lev);
	if (s->accept_pause)
		event_free(s->accept_pause);
	if (s->reserve_fd >= 0)
		close(s->reserve_fd);
	if (s->lfd >= 0)
		close(s->lfd);
	event_free(s->idle_tick);
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
	s->lev = NULL;
	if (s->accept_pause)
		event_free(s->accept_pause);
	s->accept_pause = NULL;
	if (s->idle_tick)
		event_free(s->idle_tick);
	s->idle_tick = NULL;
	if (s->reserve_fd >= 0)
		close(s->reserve_fd);
	s->reserve_fd = -1;
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
