/*
 * The Unix socket server: accepts clients, cuts the byte stream into frames
 * (hard limits from protocol.h), queues replies, and passes chunk file
 * descriptors with SCM_RIGHTS. Loop thread only.
 *
 * A connection whose client does not read its replies stops being read
 * once SERVER_OUTQ_MAX bytes (with the work it has in flight, see
 * conn_work_begin) or SERVER_OUTQ_FDS descriptors are queued, or
 * SERVER_WAIT_MAX of its requests wait: one client cannot make the daemon
 * hold memory or descriptors without bound by pipelining, and others are
 * unaffected. Frames already received are parsed as soon as it drains.
 *
 * The transport knows no dataset, chunk or op: it hands whole frames to the
 * application through a struct server_ops table, with a session pointer per
 * connection that the application owns (api/session.h).
 */
#ifndef TIERCACHE_SERVER_H
#define TIERCACHE_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "proto.h"

/* tests/fuzz/build.sh builds server.c with a small SERVER_OUTQ_MAX so that
 * inputs of a few KiB reach the backpressure paths. */
#ifndef SERVER_OUTQ_MAX
#define SERVER_OUTQ_MAX (8u << 20)
#endif
#define SERVER_HANDLES_MAX 65536u
/* Descriptors queued for one connection (each pins a chunk file and a slot
 * of the daemon's descriptor table) and requests it may have waiting (a
 * fill, a revalidation) before the server stops reading from it. */
#ifndef SERVER_OUTQ_FDS
#define SERVER_OUTQ_FDS 64u
#endif
#ifndef SERVER_WAIT_MAX
#define SERVER_WAIT_MAX 256u
#endif

struct out;
struct event_base;
struct conn;

/* What the application does with connections; every member is required.
 * All are called on the loop thread. */
struct server_ops {
	/* A client connected: its session, or NULL to refuse it (out of memory). */
	void *(*opened)(void *arg, struct conn *c);
	/* One complete, header-checked frame of c. */
	void (*frame)(void *arg, struct conn *c, const struct tc_hdr *h, const uint8_t *payload);
	/* c closed: release what its session holds. Requests still in flight
	 * keep the connection (conn_get) and find it dead. */
	void (*closed)(void *arg, struct conn *c);
	/* The connection's memory goes (closed and no request holds it): free
	 * the session. */
	void (*release)(void *arg, struct conn *c);
	/* true if c's session holds nothing (no open handle, so no chunk file,
	 * and no plan): the idle timeout may close it. */
	bool (*idle)(void *arg, struct conn *c);
};

struct conn {
	struct server *srv;
	void *sess;        /* the application's (server_ops.opened) */
	int fd;
	struct event *rev, *wev;
	uint8_t *in;
	size_t inlen, incap;
	struct out *oq, **oqtail;
	size_t oqbytes;
	unsigned oqfds;    /* descriptors in the queue */
	size_t work;       /* bytes of work in flight (conn_work_begin) */
	bool reading;      /* EV_READ armed */
	bool closing;      /* close once the queue is flushed */
	bool dead;         /* closed: replies are dropped */
	unsigned refs;     /* requests still waiting on this connection + 1 */
	uid_t uid;
	gid_t gid;
	pid_t pid;
	bool admin;        /* root, the daemon's user or in daemon.admin_group */
	uint64_t last_rx_ns; /* CLOCK_MONOTONIC of the last bytes received (idle timeout) */
	struct conn_err *err_sink; /* set: conn_reply_err records here, sends nothing */
	struct conn *prev, *next;
};

/* Connections of max_clients that only admins may take (so that
 * `tierctl status` works while users hold every other slot): 8, or a
 * quarter of a smaller max_clients. */
#define SERVER_ADMIN_RESERVE_MAX 8u

/* Listen on cfg->socket (socket_mode, socket_group, max_clients,
 * max_clients_per_uid, idle_timeout_s, admin_gid are read from cfg, which
 * must outlive the server). The socket's directory must not be writable
 * by other users: it is created 0755 if missing, refused otherwise (err
 * says why and what to do). */
int server_start(struct event_base *base, const struct config *cfg, const struct server_ops *ops,
		 void *arg, struct server **out, char *err, size_t errlen);
/* A server with no listening socket: clients come only through
 * server_adopt() (tests and fuzzing drive the connection code this way). */
int server_new(struct event_base *base, const struct config *cfg, const struct server_ops *ops,
	       void *arg, struct server **out);
/* Take a connected Unix stream socket as a client, exactly as if it had
 * been accepted: credentials from SO_PEERCRED, the max_clients,
 * admin-reserve and max_clients_per_uid limits, the application's
 * opened(). The fd becomes the server's in every case (made non-blocking;
 * closed on failure). 0, -EBUSY (a limit: the peer is told which) or
 * -errno. */
int server_adopt(struct server *s, int fd);
/* Close every connection and the listener, remove the socket file. A
 * connection a request still holds (conn_get) outlives it: its conn_put()
 * may come later, and the application's release() with it. */
void server_stop(struct server *s);
unsigned server_clients(const struct server *s);
/* Frames refused as malformed (the connection was closed). */
uint64_t server_bad_frames(const struct server *s);
/* Frames parsed so far (all connections). */
uint64_t server_frames(const struct server *s);
/* Of those, frames that want a reply (requests without TC_F_NOREPLY). */
uint64_t server_awaited(const struct server *s);
/* Frames queued to clients so far (replies and errors). */
uint64_t server_replies(const struct server *s);
/* accept() failures (out of descriptors above all: the pending clients
 * were turned away and accepting paused, see on_accept). */
uint64_t server_accept_errors(const struct server *s);
/* Connections closed by the idle timeout (daemon.idle_timeout). */
uint64_t server_idle_closed(const struct server *s);
/* Connections refused by a limit (max_clients, the admin reserve,
 * max_clients_per_uid). */
uint64_t server_refused(const struct server *s);
/* Swap the config the server reads its limits from (reload). */
void server_set_config(struct server *s, const struct config *cfg);

/* Admin ops call this first: true if the peer may run them; otherwise it
 * answers EPERM (saying who may) and returns false. */
bool conn_require_admin(struct conn *c, const struct tc_hdr *h);

/* Send a reply whose payload the caller wrote into w after
 * proto_wr_begin(w). fd >= 0 travels with it (ownership passes to the
 * server, which closes it once sent). */
void conn_reply(struct conn *c, uint8_t op, uint32_t id, struct proto_wr *w, int fd);
/* The same with up to TC_REPLY_FDS_MAX descriptors (-1 entries skipped),
 * sent in one message with the frame's first bytes; all are owned by the
 * call, whatever happens. */
void conn_reply_fds(struct conn *c, uint8_t op, uint32_t id, struct proto_wr *w, const int *fds,
		    unsigned nfds);
/* An error conn_reply_err recorded instead of sending it (a batched
 * request answers each item's error inside its one reply). */
struct conn_err {
	int err;       /* 0: none recorded */
	char msg[512];
};
/* Send an error reply: errno value and a detail line. While c->err_sink
 * is set (the caller sets and clears it around one item of a batch), the
 * first error is recorded there instead and nothing is sent. */
void conn_reply_err(struct conn *c, uint8_t op, uint32_t id, int err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Requests that wait (fills) hold the connection so its memory outlives a
 * disconnect; conn_put() frees it once closed and unreferenced. Each
 * waiting request counts against SERVER_WAIT_MAX. */
void conn_get(struct conn *c);
void conn_put(struct conn *c);
/* Memory the application commits for a request of c before its reply is
 * queued (a READ's buffer): counted with the queued bytes against
 * SERVER_OUTQ_MAX, so that pipelined requests cannot make the daemon
 * allocate more than that per connection. Every begin is paired with an
 * end of the same size, also after c closed. */
void conn_work_begin(struct conn *c, size_t bytes);
void conn_work_end(struct conn *c, size_t bytes);
/* Whether c's work in flight and queue are at their bound (the caller may
 * defer work it could start now). */
bool conn_saturated(const struct conn *c);
/* Count a frame the application could not use (status bad_frames). */
void conn_count_bad_frame(struct conn *c);

#endif
