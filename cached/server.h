/*
 * The Unix socket server: accepts clients, cuts the byte stream into frames
 * (hard limits from protocol.h), queues replies, and passes chunk file
 * descriptors with SCM_RIGHTS. Loop thread only.
 *
 * A connection whose client does not read its replies stops being read
 * once SERVER_OUTQ_MAX bytes are queued: one slow client cannot make the
 * daemon buffer without bound, and others are unaffected.
 */
#ifndef TIERCACHE_SERVER_H
#define TIERCACHE_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon.h"
#include "proto.h"
#include "proto_job.h"

#define SERVER_OUTQ_MAX (8u << 20)
#define SERVER_HANDLES_MAX 65536u

struct out;
struct handle;

struct conn {
	struct daemon *d;
	struct server *srv;
	int fd;
	struct event *rev, *wev;
	uint8_t *in;
	size_t inlen, incap;
	struct out *oq, **oqtail;
	size_t oqbytes;
	bool reading;      /* EV_READ armed */
	bool closing;      /* close once the queue is flushed */
	bool dead;         /* closed: replies are dropped */
	unsigned refs;     /* requests still waiting on this connection + 1 */
	uid_t uid;
	gid_t gid;
	pid_t pid;
	bool admin;        /* root, the daemon's user or in daemon.admin_group */
	struct handle **handles;
	uint32_t nhandles;
	uint32_t handle_gen;
	struct tc_job_tag job; /* TC_OP_CONN_JOB: whose plans its reads advance */
	struct conn *prev, *next;
};

int server_start(struct daemon *d, struct server **out, char *err, size_t errlen);
/* Close every connection and the listener, remove the socket file. */
void server_stop(struct server *s);
unsigned server_clients(const struct server *s);

/* Admin ops call this first: true if the peer may run them; otherwise it
 * answers EPERM (saying who may) and returns false. */
bool conn_require_admin(struct conn *c, const struct tc_hdr *h);

/* Send a reply whose payload the caller wrote into w after
 * proto_wr_begin(w). fd >= 0 travels with it (ownership passes to the
 * server, which closes it once sent). */
void conn_reply(struct conn *c, uint8_t op, uint32_t id, struct proto_wr *w, int fd);
/* Send an error reply: errno value and a detail line. */
void conn_reply_err(struct conn *c, uint8_t op, uint32_t id, int err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Requests that wait (fills) hold the connection so its memory outlives a
 * disconnect; conn_put() frees it once closed and unreferenced. */
static inline void conn_get(struct conn *c)
{
	c->refs++;
}
void conn_put(struct conn *c);

/* handlers.c: one complete, header-checked frame. */
void handlers_dispatch(struct conn *c, const struct tc_hdr *h, const uint8_t *payload);
/* handlers_policy.c: TC_OP_POLICY_GET / TC_OP_POLICY_SET. */
void handlers_policy_get(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
void handlers_policy_set(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* handlers_service.c: TC_OP_CONFIG_SHOW / TC_OP_RELOAD. */
void handlers_config_show(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
void handlers_reload(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* handlers_admin.c: TC_OP_WARM .. TC_OP_LIFECYCLE (residency ops). */
void handlers_admin(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* handlers_plan.c: TC_OP_PLAN_SET / TC_OP_PLAN_CANCEL. */
void handlers_plan_set(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
void handlers_plan_cancel(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* TC_OP_CONN_JOB: tag the connection's reads with a job. */
void handlers_conn_job(struct conn *c, const struct tc_hdr *h, struct proto_rd *r);
/* handlers.c: release everything a connection holds (it is closing). */
void handlers_conn_closed(struct conn *c);

#endif
