/*
 * The IPC floor's server and reader: see lib_ipcfloor.h. The server keeps
 * nothing but a segment file per connection: what it costs beyond
 * `rados_direct --through --segment` is the socket round trip, the
 * descriptor passing and the hand-offs between its threads.
 */
#include "lib_ipcfloor.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

uint64_t ipcfloor_sum(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int ipcfloor_mode_parse(const char *name, enum ipcfloor_mode *mode)
{
	if (strcmp(name, "aio") == 0)
		*mode = IPCFLOOR_AIO;
	else if (strcmp(name, "inline") == 0)
		*mode = IPCFLOOR_INLINE;
	else if (strcmp(name, "sync") == 0)
		*mode = IPCFLOOR_SYNC;
	else
		return -EINVAL;
	return 0;
}

/* ---- server ---- */

struct server;

struct sconn {
	struct server *srv;
	int fd, seg;
	unsigned id;
	bool sent_fd;
	bool busy;    /* a read is in flight (srv->lock) */
	bool closing; /* the peer left while busy: the completion frees it (srv->lock) */
	uint64_t wpos, kept;
	char in[sizeof(struct ipcfloor_req) + IPCFLOOR_OID_MAX + 1];
	size_t in_len;
	struct ipcfloor_req req;
	char *buf;
	size_t buf_cap;
	rados_completion_t comp; /* the last read's, released at the next or at free */
	struct ipcfloor_rep rep;
	struct sconn *next_done;
};

struct server {
	rados_ioctx_t io;
	const char *dir;
	enum ipcfloor_mode mode;
	uint32_t max_len;
	int epfd, evfd;
	pthread_mutex_t lock;
	struct sconn *done; /* aio: completed reads for the loop to answer (lock) */
	unsigned next_id;
};

static int full_pio(int fd, char *buf, size_t len, uint64_t off, bool write)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = write ? pwrite(fd, buf + done, len - done, (off_t)(off + done))
				  : pread(fd, buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

static void sconn_free(struct sconn *c)
{
	if (c->comp)
		rados_aio_release(c->comp);
	if (c->seg >= 0)
		close(c->seg);
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	free(c);
}

/* Segment file of the connection, made at its first read (unlinked at
 * once: the descriptors keep it). 0 or -errno. */
static int sconn_segment(struct sconn *c)
{
	if (c->seg >= 0)
		return 0;
	char path[4096];
	snprintf(path, sizeof(path), "%s/ipcseg.%d.%u", c->srv->dir, (int)getpid(), c->id);
	c->seg = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (c->seg < 0)
		return -errno;
	(void)unlink(path);
	return 0;
}

/* A complete request in c->in? 1 yes (c->req set, oid NUL-terminated),
 * 0 not yet, -EBADMSG malformed. */
static int sconn_parse(struct sconn *c)
{
	if (c->in_len < sizeof(c->req))
		return 0;
	memcpy(&c->req, c->in, sizeof(c->req));
	if (c->req.magic != IPCFLOOR_MAGIC || c->req.len == 0 || c->req.len > c->srv->max_len ||
	    c->req.oid_len == 0 || c->req.oid_len > IPCFLOOR_OID_MAX)
		return -EBADMSG;
	if (c->in_len < sizeof(c->req) + c->req.oid_len)
		return 0;
	if (c->in_len > sizeof(c->req) + c->req.oid_len)
		return -EBADMSG; /* one request at a time */
	c->in[sizeof(c->req) + c->req.oid_len] = '\0';
	return 1;
}

static const char *sconn_oid(const struct sconn *c)
{
	return c->in + sizeof(c->req);
}

/* The read ended with r: append the bytes to the segment, punch what is
 * over the share, fill c->rep. Any thread (one per connection at a time). */
static void sconn_piece_done(struct sconn *c, int r)
{
	uint32_t len = c->req.len;
	c->in_len = 0;
	c->rep = (struct ipcfloor_rep){.status = r < 0 ? r : (r == (int)len ? r : -EIO)};
	if (c->rep.status < 0)
		return;
	uint64_t at = c->wpos;
	int rc = full_pio(c->seg, c->buf, len, at, true);
	if (rc < 0) {
		c->rep.status = rc;
		return;
	}
	c->wpos += len;
	c->rep.seg_off = at;
	if (c->req.flags & IPCFLOOR_VERIFY)
		c->rep.sum = ipcfloor_sum(c->buf, len);
	uint64_t share = c->req.share;
	if (share && c->wpos - c->kept > share) {
		uint64_t to = (c->wpos - share) & ~(uint64_t)4095;
		if (to > c->kept) {
			if (fallocate(c->seg, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)c->kept,
				      (off_t)(to - c->kept)) < 0) {
				c->rep.status = -errno;
				return;
			}
			c->kept = to;
		}
	}
}

/* Send c->rep, with the segment's fd the first time. 0 or -errno. */
static int sconn_reply(struct sconn *c)
{
	struct iovec iov = {.iov_base = &c->rep, .iov_len = sizeof(c->rep)};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cm;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	bool with_fd = !c->sent_fd && c->rep.status >= 0;
	if (with_fd) {
		memset(&cm, 0, sizeof(cm));
		m.msg_control = cm.b;
		m.msg_controllen = sizeof(cm.b);
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &c->seg, sizeof(int));
	}
	ssize_t n;
	do
		n = sendmsg(c->fd, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(c->rep))
		return n < 0 ? -errno : -EIO; /* the reply fits an empty socket buffer */
	if (with_fd)
		c->sent_fd = true;
	return 0;
}

/* Buffer and segment for c->req. 0 or -errno. */
static int sconn_prepare(struct sconn *c)
{
	if (c->buf_cap < c->req.len) {
		char *b = realloc(c->buf, c->req.len);
		if (!b)
			return -ENOMEM;
		c->buf = b;
		c->buf_cap = c->req.len;
	}
	return sconn_segment(c);
}

/* aio / inline: librados' completion thread. */
static void sconn_read_done(rados_completion_t comp, void *arg)
{
	struct sconn *c = arg;
	struct server *s = c->srv;
	sconn_piece_done(c, rados_aio_get_return_value(comp));
	pthread_mutex_lock(&s->lock);
	if (s->mode == IPCFLOOR_INLINE) {
		/* under the lock: the loop frees a connection whose peer left
		 * only when it is not busy */
		c->busy = false;
		if (c->closing) {
			pthread_mutex_unlock(&s->lock);
			sconn_free(c);
			return;
		}
		if (sconn_reply(c) < 0)
			shutdown(c->fd, SHUT_RDWR); /* the loop sees the end and frees it */
		pthread_mutex_unlock(&s->lock);
		return;
	}
	c->next_done = s->done;
	s->done = c;
	pthread_mutex_unlock(&s->lock);
	uint64_t one = 1;
	if (write(s->evfd, &one, sizeof(one)) < 0) {
		/* cannot fail on an eventfd that is read by the loop */
	}
}

/* The loop: submit the read of the request parsed in c. 0 or -errno
 * (then the caller replies with the error). */
static int sconn_submit(struct sconn *c)
{
	struct server *s = c->srv;
	int rc = sconn_prepare(c);
	if (rc < 0)
		return rc;
	if (c->comp) {
		rados_aio_release(c->comp);
		c->comp = NULL;
	}
	rc = rados_aio_create_completion2(c, sconn_read_done, &c->comp);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->lock);
	c->busy = true;
	pthread_mutex_unlock(&s->lock);
	rc = rados_aio_read(s->io, sconn_oid(c), c->comp, c->buf, c->req.len, c->req.off);
	if (rc < 0) {
		pthread_mutex_lock(&s->lock);
		c->busy = false;
		pthread_mutex_unlock(&s->lock);
	}
	return rc;
}

/* The loop: the peer left or misbehaved. */
static void sconn_drop(struct sconn *c)
{
	struct server *s = c->srv;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	pthread_mutex_lock(&s->lock);
	bool busy = c->busy;
	if (busy)
		c->closing = true;
	pthread_mutex_unlock(&s->lock);
	if (!busy)
		sconn_free(c);
}

/* The loop: bytes on c's socket. */
static void sconn_readable(struct sconn *c)
{
	for (;;) {
		size_t room = sizeof(c->in) - 1 - c->in_len;
		ssize_t n = recv(c->fd, c->in + c->in_len, room, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			sconn_drop(c);
			return;
		}
		c->in_len += (size_t)n;
		int p = sconn_parse(c);
		if (p < 0) {
			sconn_drop(c);
			return;
		}
		if (p == 0)
			continue;
		int rc = sconn_submit(c);
		if (rc < 0) {
			sconn_piece_done(c, rc);
			if (sconn_reply(c) < 0) {
				sconn_drop(c);
				return;
			}
		}
		return; /* the reader sends its next request after the reply */
	}
}

/* sync: one connection's thread. */
static void *sconn_sync_thread(void *arg)
{
	struct sconn *c = arg;
	for (;;) {
		int p = 0;
		while (p == 0) {
			ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				goto out;
			c->in_len += (size_t)n;
			p = sconn_parse(c);
		}
		if (p < 0)
			goto out;
		int r = sconn_prepare(c);
		if (r == 0)
			r = rados_read(c->srv->io, sconn_oid(c), c->buf, c->req.len, c->req.off);
		sconn_piece_done(c, r);
		if (sconn_reply(c) < 0)
			goto out;
	}
out:
	sconn_free(c);
	return NULL;
}

static int listen_on(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	(void)unlink(path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

int ipcfloor_serve(rados_ioctx_t io, const char *sock, const char *dir, enum ipcfloor_mode mode,
		   uint32_t max_len)
{
	struct server s = {.io = io, .dir = dir, .mode = mode, .max_len = max_len, .epfd = -1, .evfd = -1};
	pthread_mutex_init(&s.lock, NULL);
	int lfd = listen_on(sock);
	if (lfd < 0)
		return lfd;
	int rc = 0;
	if (mode == IPCFLOOR_SYNC) {
		for (;;) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0) {
				if (errno == EINTR || errno == ECONNABORTED)
					continue;
				rc = -errno;
				break;
			}
			struct sconn *c = calloc(1, sizeof(*c));
			pthread_t t;
			if (!c) {
				close(fd);
				continue;
			}
			*c = (struct sconn){.srv = &s, .fd = fd, .seg = -1, .id = s.next_id++};
			if (pthread_create(&t, NULL, sconn_sync_thread, c) != 0) {
				sconn_free(c);
				continue;
			}
			pthread_detach(t);
		}
		close(lfd);
		return rc;
	}
	s.epfd = epoll_create1(EPOLL_CLOEXEC);
	s.evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (s.epfd < 0 || s.evfd < 0 || epoll_ctl(s.epfd, EPOLL_CTL_ADD, lfd, &ev) < 0) {
		rc = -errno;
		goto out;
	}
	ev.data.ptr = &s; /* the eventfd */
	if (epoll_ctl(s.epfd, EPOLL_CTL_ADD, s.evfd, &ev) < 0) {
		rc = -errno;
		goto out;
	}
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(s.epfd, evs, 64, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			if (p == NULL) {
				int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
				if (fd < 0)
					continue;
				struct sconn *c = calloc(1, sizeof(*c));
				if (!c) {
					close(fd);
					continue;
				}
				*c = (struct sconn){.srv = &s, .fd = fd, .seg = -1, .id = s.next_id++};
				struct epoll_event cev = {.events = EPOLLIN, .data.ptr = c};
				if (epoll_ctl(s.epfd, EPOLL_CTL_ADD, fd, &cev) < 0)
					sconn_free(c);
			} else if (p == &s) {
				uint64_t v;
				if (read(s.evfd, &v, sizeof(v)) < 0) {
					/* EAGAIN: drained by an earlier event */
				}
				pthread_mutex_lock(&s.lock);
				struct sconn *d = s.done;
				s.done = NULL;
				for (struct sconn *c = d; c; c = c->next_done)
					c->busy = false;
				pthread_mutex_unlock(&s.lock);
				while (d) {
					struct sconn *c = d;
					d = c->next_done;
					if (c->closing)
						sconn_free(c);
					else if (sconn_reply(c) < 0)
						sconn_drop(c);
				}
			} else {
				sconn_readable(p);
			}
		}
	}
out:
	if (s.evfd >= 0)
		close(s.evfd);
	if (s.epfd >= 0)
		close(s.epfd);
	close(lfd);
	return rc;
}

/* ---- reader ---- */

int ipcfloor_connect(struct ipcfloor_conn *c, const char *sock)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	c->sock = c->seg = -1;
	if (strlen(sock) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, sock);
	c->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->sock < 0)
		return -errno;
	if (connect(c->sock, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = -errno;
		close(c->sock);
		c->sock = -1;
		return e;
	}
	return 0;
}

void ipcfloor_close(struct ipcfloor_conn *c)
{
	if (c->seg >= 0)
		close(c->seg);
	if (c->sock >= 0)
		close(c->sock);
	c->seg = c->sock = -1;
}

/* The reply into *rep, taking a passed descriptor if there is one. 0 or -errno. */
static int recv_reply(struct ipcfloor_conn *c, struct ipcfloor_rep *rep)
{
	size_t got = 0;
	while (got < sizeof(*rep)) {
		struct iovec iov = {.iov_base = (char *)rep + got, .iov_len = sizeof(*rep) - got};
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int))];
		} cm;
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
				   .msg_controllen = sizeof(cm.b)};
		ssize_t n = recvmsg(c->sock, &m, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
			if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS ||
			    h->cmsg_len != CMSG_LEN(sizeof(int)))
				continue;
			int fd;
			memcpy(&fd, CMSG_DATA(h), sizeof(fd));
			if (c->seg < 0)
				c->seg = fd;
			else
				close(fd); /* one segment per connection */
		}
		if (m.msg_flags & MSG_CTRUNC)
			return -EPROTO;
		got += (size_t)n;
	}
	return 0;
}

int64_t ipcfloor_get(struct ipcfloor_conn *c, const char *oid, uint64_t off, uint32_t len,
		     uint64_t share, bool verify, char *buf, uint64_t *sum)
{
	size_t oid_len = strlen(oid);
	*sum = 0;
	if (oid_len == 0 || oid_len > IPCFLOOR_OID_MAX || len == 0 || len > IPCFLOOR_LEN_MAX)
		return -EINVAL;
	struct ipcfloor_req req = {.magic = IPCFLOOR_MAGIC,
				   .flags = verify ? IPCFLOOR_VERIFY : 0,
				   .len = len,
				   .oid_len = (uint32_t)oid_len,
				   .off = off,
				   .share = share};
	struct iovec iov[2] = {{.iov_base = &req, .iov_len = sizeof(req)},
			       {.iov_base = (void *)oid, .iov_len = oid_len}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
	ssize_t n = sendmsg(c->sock, &m, MSG_NOSIGNAL);
	if (n != (ssize_t)(sizeof(req) + oid_len))
		return n < 0 ? -errno : -EIO; /* a small request fits the empty socket buffer */
	struct ipcfloor_rep rep;
	int rc = recv_reply(c, &rep);
	if (rc < 0)
		return rc;
	if (rep.status < 0)
		return rep.status;
	if (rep.status != (int32_t)len || c->seg < 0)
		return -EIO;
	rc = full_pio(c->seg, buf, len, rep.seg_off, false);
	if (rc < 0)
		return rc;
	if (verify) {
		*sum = ipcfloor_sum(buf, len);
		if (*sum != rep.sum)
			return -EBADMSG;
	}
	return len;
}
