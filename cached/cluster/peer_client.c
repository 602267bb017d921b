/*
 * Asking peers for chunks: see peer_client.h.
 *
 * peer_client_get only queues the request and wakes the pump (an event
 * made active), so done() is never called from within it. The pump hands
 * queued requests to idle authenticated connections and opens new ones up
 * to cluster.peer_conns. Each connection has one timer: the connect and
 * handshake deadline while it starts, the first-byte and then the transfer
 * deadline while a request is in flight. The reply's bytes go straight
 * into the fill's buffer: once a DATA reply's head is in, the connection's
 * bufferevent stops reading and the rest of the body is recv()ed off the
 * socket into rr->buf (no copy through libevent's buffer, whose fresh
 * chains and the copy out of them cost the loop thread more than the
 * socket read itself); the bufferevent reads again once the body is in.
 * The bytes are not checksummed here but by the fill's worker: the loop
 * thread is the path's one serial stage (docs/cluster.md "Measured",
 * session 17: summing on arrival added 0.04 s per GB to it and saved no
 * time, since a body is mostly queued whole when it is read).
 */
#include "peer_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "drain.h"
#include "log.h"
#include "peer_io.h"

#define PEER_QUEUE_MAX 4096u /* requests waiting for a connection to one peer */
#define PEER_CONNS_MAX 16u
#define PEER_HEAD_READ 16384u /* bytes per bufferevent read: frame heads (bodies go direct) */

enum cstate {
	C_CONNECTING = 0, /* TCP connect in progress */
	C_CHALLENGE,      /* HELLO sent, waiting for CHALLENGE */
	C_AUTH,           /* AUTH sent, waiting for READY */
	C_IDLE,           /* ready, no request */
	C_BUSY,           /* a request in flight */
};

struct preq {
	struct preq *next;
	struct remote_read *rr;
};

struct ppeer;

struct cconn {
	struct ppeer *peer;
	struct bufferevent *bev;
	struct event *timer;
	struct event *body;     /* the socket, while a body is read straight into rr->buf */
	enum cstate state;
	struct preq *req;       /* in flight (C_BUSY) */
	uint32_t next_id;
	uint8_t cnonce[PEER_NONCE_LEN];
	/* the reply in flight */
	bool first_byte;
	bool have_head;
	struct peer_data d;
	uint32_t got;
	uint64_t sent_ns;
	uint64_t first_ns; /* its first reply byte */
	uint32_t wakes, recvs; /* the body's readable events and recv() calls (stage log) */
};

struct ppeer {
	struct ppeer *next;
	struct peer_client *pc;
	char id[PEER_NAME_MAX + 1];
	char addr[128];
	struct cconn *conns[PEER_CONNS_MAX];
	unsigned nconns;
	struct preq *qhead, **qtail;
	unsigned nq;
	uint64_t suspect_until_ns;
};

struct peer_client {
	struct event_base *base;
	const struct cluster_conf *cc;
	const struct peer_keys *keys;
	peer_done_fn done;
	void *arg;
	struct ppeer *peers;
	struct event *pump;
	uint64_t gets, bytes;
};

static const char *const fail_names[PEER_FAIL_COUNT] = {
	[PEER_FAIL_NONE] = "none",
	[PEER_FAIL_CONNECT] = "connect",
	[PEER_FAIL_AUTH] = "auth",
	[PEER_FAIL_FIRST_BYTE] = "first_byte_timeout",
	[PEER_FAIL_TRANSFER] = "transfer_timeout",
	[PEER_FAIL_CLOSED] = "closed",
	[PEER_FAIL_STALE] = "stale",
	[PEER_FAIL_ERROR] = "peer_error",
	[PEER_FAIL_BAD] = "bad_reply",
	[PEER_FAIL_SUSPECT] = "suspect",
	[PEER_FAIL_BUSY] = "busy",
	[PEER_FAIL_CANCELED] = "canceled",
};

const char *peer_fail_name(enum peer_fail f)
{
	return (unsigned)f < PEER_FAIL_COUNT ? fail_names[f] : "?";
}

static int fail_errno(enum peer_fail why)
{
	switch (why) {
	case PEER_FAIL_FIRST_BYTE:
	case PEER_FAIL_TRANSFER:
	case PEER_FAIL_CONNECT:
		return -ETIMEDOUT;
	case PEER_FAIL_AUTH:
		return -EACCES;
	case PEER_FAIL_STALE:
		return -ESTALE;
	case PEER_FAIL_BAD:
		return -EBADMSG;
	case PEER_FAIL_SUSPECT:
		return -EHOSTDOWN;
	case PEER_FAIL_BUSY:
		return -EBUSY;
	case PEER_FAIL_CANCELED:
		return -ECANCELED;
	default:
		return -EIO;
	}
}

static uint64_t now_ns(void)
{
	return cache_now_ns();
}

static void req_finish(struct peer_client *pc, struct preq *q, enum peer_fail why)
{
	struct remote_read *rr = q->rr;
	free(q);
	if (why != PEER_FAIL_NONE)
		rr->result = fail_errno(why);
	pc->done(pc->arg, rr, why);
}

static void arm(struct cconn *c, uint64_t ms)
{
	struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
	evtimer_add(c->timer, &tv);
}

static void conn_free(struct cconn *c)
{
	struct ppeer *p = c->peer;
	for (unsigned i = 0; i < p->nconns; i++) {
		if (p->conns[i] == c) {
			p->conns[i] = p->conns[--p->nconns];
			break;
		}
	}
	if (c->body)
		event_free(c->body); /* before the bufferevent closes the socket */
	if (c->bev)
		bufferevent_free(c->bev);
	if (c->timer)
		event_free(c->timer);
	free(c);
}

static void fail_queue(struct peer_client *pc, struct ppeer *p, enum peer_fail why)
{
	while (p->qhead) {
		struct preq *q = p->qhead;
		p->qhead = q->next;
		p->nq--;
		req_finish(pc, q, why);
	}
	p->qtail = &p->qhead;
}

static struct peer_client *conn_client(struct cconn *c)
{
	return c->peer->pc;
}

/* The connection failed: its request fails with why; with suspect, the
 * peer is skipped for cluster.peer_suspect and its queue fails too. */
static void conn_fail(struct cconn *c, enum peer_fail why, bool suspect, const char *detail)
{
	struct peer_client *pc = conn_client(c);
	struct ppeer *p = c->peer;
	struct preq *q = c->req;
	c->req = NULL;
	conn_free(c);
	if (suspect) {
		bool was = p->suspect_until_ns > now_ns();
		p->suspect_until_ns = now_ns() + pc->cc->peer_suspect_ms * 1000000ull;
		if (!was)
			log_warn("op=peer node=%s addr=%s err=\"%s: %s\" action=\"reading from the cold "
				 "store instead; the node is skipped for %llu ms\"", p->id, p->addr,
				 peer_fail_name(why), detail, (unsigned long long)pc->cc->peer_suspect_ms);
	}
	if (q)
		req_finish(pc, q, why);
	if (suspect)
		fail_queue(pc, p, why);
	else if (p->qhead)
		event_active(pc->pump, EV_TIMEOUT, 0);
}

/* ---- sending ---- */

static int send_wr(struct cconn *c, struct proto_wr *w, int rc)
{
	if (rc == 0)
		rc = peer_io_send(c->bev, w);
	proto_wr_free(w);
	return rc;
}

static void conn_send_get(struct cconn *c, struct preq *q)
{
	struct peer_client *pc = conn_client(c);
	struct remote_read *rr = q->rr;
	struct peer_get g = {
		.size = rr->src.size,
		.mtime_ns = rr->src.mtime_ns,
		.version = rr->src.version,
		.chunk_size = rr->ds->conf.chunk_size,
		.idx = rr->idx,
		.len = rr->len,
		.flags = ((rr->flags & READ_PREV_HOME) ? PEER_GET_PREV_HOME : 0) |
			 ((rr->flags & READ_DRAIN_TAKE) ? PEER_GET_KEEP : 0),
	};
	snprintf(g.dataset, sizeof(g.dataset), "%s", rr->ds->name);
	snprintf(g.path, sizeof(g.path), "%s", rr->path);
	struct proto_wr w;
	proto_wr_init(&w);
	c->req = q;
	c->state = C_BUSY;
	c->first_byte = false;
	c->have_head = false;
	c->got = 0;
	c->wakes = c->recvs = 0;
	c->sent_ns = now_ns();
	if (send_wr(c, &w, peer_enc_get(&w, ++c->next_id, &g)) < 0) {
		conn_fail(c, PEER_FAIL_CLOSED, false, "cannot queue the request");
		return;
	}
	pc->gets++;
	arm(c, pc->cc->peer_first_byte_ms);
}

static void conn_setup(struct cconn *c);
static void on_timer(evutil_socket_t fd, short what, void *arg);

/* Hand queued requests of p to its idle connections; open more. */
static void peer_pump(struct peer_client *pc, struct ppeer *p)
{
	while (p->qhead) {
		struct cconn *idle = NULL;
		for (unsigned i = 0; i < p->nconns && !idle; i++)
			if (p->conns[i]->state == C_IDLE)
				idle = p->conns[i];
		if (!idle)
			break;
		struct preq *q = p->qhead;
		p->qhead = q->next;
		if (!p->qhead)
			p->qtail = &p->qhead;
		p->nq--;
		conn_send_get(idle, q); /* on failure the connection is freed */
	}
	unsigned starting = 0;
	for (unsigned i = 0; i < p->nconns; i++)
		starting += p->conns[i]->state < C_IDLE;
	unsigned max = pc->cc->peer_conns < PEER_CONNS_MAX ? pc->cc->peer_conns : PEER_CONNS_MAX;
	while (p->nq > starting && p->nconns < max) {
		struct cconn *c = calloc(1, sizeof(*c));
		struct sockaddr_storage ss;
		socklen_t sl;
		if (!c)
			return;
		c->peer = p;
		c->bev = bufferevent_socket_new(pc->base, -1, BEV_OPT_CLOSE_ON_FREE);
		c->timer = c->bev ? evtimer_new(pc->base, on_timer, c) : NULL;
		p->conns[p->nconns++] = c;
		if (!c->timer || peer_io_addr(p->addr, &ss, &sl) < 0) {
			conn_fail(c, PEER_FAIL_CONNECT, true, "cannot resolve its address or no memory");
			return;
		}
		conn_setup(c);
		if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&ss, (int)sl) < 0) {
			conn_fail(c, PEER_FAIL_CONNECT, true, "connect failed");
			return;
		}
		peer_io_tune(c->bev, PEER_HEAD_READ);
		arm(c, pc->cc->peer_connect_ms);
		starting++;
	}
}

static void on_pump(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct peer_client *pc = arg;
	for (struct ppeer *p = pc->peers; p; p = p->next)
		if (p->qhead)
			peer_pump(pc, p);
}

/* ---- receiving ---- */

static void on_challenge(struct cconn *c, const struct peer_hdr *h, const uint8_t *payload)
{
	struct peer_client *pc = conn_client(c);
	struct ppeer *p = c->peer;
	struct peer_challenge ch;
	if (peer_dec_challenge(payload, h->len, &ch) < 0) {
		conn_fail(c, PEER_FAIL_AUTH, true, "a CHALLENGE that does not decode");
		return;
	}
	if (strcmp(ch.node, p->id) != 0) {
		conn_fail(c, PEER_FAIL_AUTH, true, "another node answers at its address");
		return;
	}
	const struct peer_transcript t = {
		.cluster = pc->cc->name,
		.client_node = pc->cc->node_id,
		.server_node = p->id,
		.client_nonce = c->cnonce,
		.server_nonce = ch.nonce,
	};
	if (peer_proof_check(pc->keys, PEER_ROLE_SERVER, &t, ch.mac) < 0) {
		conn_fail(c, PEER_FAIL_AUTH, true,
			  "its proof does not match this node's key: the cluster keys differ (cluster.key_file)");
		return;
	}
	uint8_t mac[PEER_MAC_LEN];
	struct proto_wr w;
	proto_wr_init(&w);
	int rc = peer_proof(pc->keys, PEER_ROLE_CLIENT, &t, mac);
	if (rc == 0)
		rc = peer_enc_auth(&w, ++c->next_id, mac);
	if (send_wr(c, &w, rc) < 0) {
		conn_fail(c, PEER_FAIL_CONNECT, false, "cannot send AUTH");
		return;
	}
	c->state = C_AUTH;
}

/* A whole control frame while starting (CHALLENGE, READY, ERROR). False:
 * c is gone. */
static bool on_handshake_frame(struct cconn *c, const struct peer_hdr *h, const uint8_t *p)
{
	struct peer_client *pc = conn_client(c);
	if (h->op == PEER_OP_ERROR) {
		char detail[256];
		if (peer_dec_error(p, h->len, detail, sizeof(detail)) < 0)
			snprintf(detail, sizeof(detail), "(undecodable)");
		conn_fail(c, PEER_FAIL_AUTH, true, detail);
		return false;
	}
	if (c->state == C_CHALLENGE && h->op == PEER_OP_CHALLENGE) {
		on_challenge(c, h, p);
		return c->state == C_AUTH;
	}
	if (c->state == C_AUTH && h->op == PEER_OP_READY) {
		c->state = C_IDLE;
		evtimer_del(c->timer);
		event_active(pc->pump, EV_TIMEOUT, 0);
		return true;
	}
	conn_fail(c, PEER_FAIL_AUTH, true, "a frame out of order in the handshake");
	return false;
}

/* The request in flight got its last byte. */
static void reply_done(struct cconn *c)
{
	struct peer_client *pc = conn_client(c);
	struct preq *q = c->req;
	c->req = NULL;
	c->state = C_IDLE;
	evtimer_del(c->timer);
	q->rr->checksum = c->d.checksum;
	q->rr->result = 0;
	pc->bytes += c->d.len;
	if (LOG_DEBUG <= log_current_level) { /* stage times (docs/cluster.md "Measured") */
		unsigned busy = 0;
		for (unsigned i = 0; i < c->peer->nconns; i++)
			busy += c->peer->conns[i]->state == C_BUSY;
		log_debug("op=peer_got node=%s key=%016llx sent_ns=%llu first_ns=%llu end_ns=%llu busy=%u queued=%u "
			  "body_wakes=%u body_recvs=%u",
			  c->peer->id, (unsigned long long)q->rr->key, (unsigned long long)c->sent_ns,
			  (unsigned long long)c->first_ns, (unsigned long long)now_ns(), busy, c->peer->nq,
			  c->wakes, c->recvs);
	}
	req_finish(pc, q, PEER_FAIL_NONE);
	event_active(pc->pump, EV_TIMEOUT, 0);
}

/* The socket is readable while a body goes straight into rr->buf: take
 * what is there, up to the body's end (never a byte of the next frame). */
static void on_body(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	struct cconn *c = arg;
	char *buf = c->req->rr->buf;
	c->wakes++;
	while (c->got < c->d.len) {
		ssize_t r = recv(fd, buf + c->got, c->d.len - c->got, 0);
		c->recvs++;
		if (r > 0) {
			c->got += (uint32_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return; /* more later; the transfer deadline is armed */
		conn_fail(c, PEER_FAIL_CLOSED, true, r == 0 ? "the peer closed the connection" : strerror(errno));
		return;
	}
	event_del(c->body);
	if (bufferevent_enable(c->bev, EV_READ) < 0) {
		conn_fail(c, PEER_FAIL_CLOSED, false, "cannot read the connection again");
		return;
	}
	reply_done(c);
}

/* The rest of the body in flight is read by on_body. False: it cannot be
 * (no memory): the bufferevent keeps reading it. */
static bool body_direct(struct cconn *c)
{
	if (!c->body) {
		evutil_socket_t fd = bufferevent_getfd(c->bev);
		if (fd < 0)
			return false;
		c->body = event_new(c->peer->pc->base, fd, EV_READ | EV_PERSIST, on_body, c);
		if (!c->body)
			return false;
	}
	if (event_add(c->body, NULL) < 0)
		return false;
	if (bufferevent_disable(c->bev, EV_READ) < 0) {
		event_del(c->body);
		return false;
	}
	return true;
}

/* Bytes of the reply in flight. False: c is gone or waits for more. */
static bool on_reply(struct cconn *c, struct evbuffer *in)
{
	struct peer_client *pc = conn_client(c);
	struct remote_read *rr = c->req->rr;
	if (!c->first_byte && evbuffer_get_length(in)) {
		c->first_byte = true;
		c->first_ns = now_ns();
		uint64_t spent = (now_ns() - c->sent_ns) / 1000000ull;
		uint64_t left = pc->cc->peer_transfer_ms > spent ? pc->cc->peer_transfer_ms - spent : 0;
		arm(c, left);
	}
	if (!c->have_head) {
		struct peer_hdr h;
		int rc = peer_io_hdr(in, &h);
		if (rc == 0)
			return false;
		if (rc < 0 || (h.op != PEER_OP_DATA && h.op != PEER_OP_ERROR)) {
			conn_fail(c, PEER_FAIL_BAD, true, "a reply that is not DATA or ERROR");
			return false;
		}
		if (h.op == PEER_OP_ERROR) {
			const uint8_t *p = peer_io_payload(in, &h);
			if (!p)
				return false;
			char detail[256];
			if (peer_dec_error(p, h.len, detail, sizeof(detail)) < 0)
				snprintf(detail, sizeof(detail), "(undecodable)");
			peer_io_drain(in, &h);
			struct preq *q = c->req;
			c->req = NULL;
			c->state = C_IDLE;
			evtimer_del(c->timer);
			enum peer_fail why = h.aux == ESTALE ? PEER_FAIL_STALE : PEER_FAIL_ERROR;
			if (!(h.aux == ENODATA && (rr->flags & READ_PREV_HOME))) /* "not here": expected */
				log_info("op=peer_get node=%s dataset=%s path=%s chunk=%u err=\"%s: %s\" "
				 "action=\"reading the cold store instead\"", c->peer->id, rr->ds->name, rr->path,
				 rr->idx, strerror((int)h.aux), detail);
			req_finish(pc, q, why);
			event_active(pc->pump, EV_TIMEOUT, 0);
			return true;
		}
		if (evbuffer_get_length(in) < PEER_HDR_SIZE + PEER_DATA_META)
			return false;
		const uint8_t *p = evbuffer_pullup(in, PEER_HDR_SIZE + PEER_DATA_META);
		/* a hand-over (PEER_GET_KEEP) gets no bytes back (a node from
		 * before the flag sends them: they are dropped) */
		bool take = rr->flags & READ_DRAIN_TAKE;
		if (!p || peer_dec_data_head(p + PEER_HDR_SIZE, h.len, &c->d) < 0 ||
		    (c->d.len != rr->len && !(take && c->d.len == 0)) ||
		    c->d.size != rr->src.size || c->d.mtime_ns != rr->src.mtime_ns ||
		    c->d.version != rr->src.version) {
			conn_fail(c, PEER_FAIL_BAD, true, "a DATA reply for another version or length");
			return false;
		}
		evbuffer_drain(in, PEER_HDR_SIZE + PEER_DATA_META);
		c->have_head = true;
		c->got = 0;
	}
	size_t want = c->d.len - c->got;
	size_t have = evbuffer_get_length(in);
	size_t n = have < want ? have : want;
	if (n && !rr->buf) {
		if (evbuffer_drain(in, n) < 0) {
			conn_fail(c, PEER_FAIL_CLOSED, false, "cannot drop the reply's bytes");
			return false;
		}
	} else if (n && evbuffer_remove(in, (char *)rr->buf + c->got, n) != (int)n) {
		conn_fail(c, PEER_FAIL_CLOSED, false, "cannot take the reply's bytes");
		return false;
	}
	c->got += (uint32_t)n;
	if (c->got < c->d.len) {
		if (rr->buf)
			(void)body_direct(c); /* else the bufferevent reads on */
		return false;
	}
	reply_done(c);
	return true;
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct cconn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	for (;;) {
		if (c->state == C_BUSY) {
			if (!on_reply(c, in))
				return;
			continue;
		}
		struct peer_hdr h;
		int rc = peer_io_hdr(in, &h);
		if (rc == 0)
			return;
		if (rc < 0 || c->state == C_IDLE || c->state == C_CONNECTING) {
			conn_fail(c, c->state == C_IDLE ? PEER_FAIL_BAD : PEER_FAIL_AUTH, true,
				  "a frame nobody asked for");
			return;
		}
		const uint8_t *p = peer_io_payload(in, &h);
		if (!p)
			return;
		struct peer_hdr hh = h;
		if (!on_handshake_frame(c, &hh, p))
			return;
		peer_io_drain(in, &hh);
	}
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	struct cconn *c = arg;
	struct peer_client *pc = conn_client(c);
	if (what & BEV_EVENT_CONNECTED) {
		struct peer_hello m = {.version = PEER_PROTO_VERSION};
		snprintf(m.cluster, sizeof(m.cluster), "%s", pc->cc->name);
		snprintf(m.node, sizeof(m.node), "%s", pc->cc->node_id);
		struct proto_wr w;
		proto_wr_init(&w);
		int rc = peer_nonce(c->cnonce);
		memcpy(m.nonce, c->cnonce, PEER_NONCE_LEN);
		if (rc == 0)
			rc = peer_enc_hello(&w, ++c->next_id, &m);
		if (send_wr(c, &w, rc) < 0) {
			conn_fail(c, PEER_FAIL_CONNECT, true, "cannot send HELLO");
			return;
		}
		c->state = C_CHALLENGE;
		return;
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		bool starting = c->state < C_IDLE;
		int e = EVUTIL_SOCKET_ERROR();
		conn_fail(c, starting ? PEER_FAIL_CONNECT : PEER_FAIL_CLOSED, starting || c->req,
			  (what & BEV_EVENT_EOF) ? "the peer closed the connection" : evutil_socket_error_to_string(e));
	}
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct cconn *c = arg;
	if (c->state < C_IDLE)
		conn_fail(c, PEER_FAIL_CONNECT, true, "no connection and handshake within cluster.peer_connect_timeout");
	else if (c->state == C_BUSY)
		conn_fail(c, c->first_byte ? PEER_FAIL_TRANSFER : PEER_FAIL_FIRST_BYTE, true,
			  c->first_byte ? "the reply did not end within cluster.peer_transfer_timeout"
					: "no reply within cluster.peer_first_byte_timeout");
}

static void conn_setup(struct cconn *c)
{
	bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* ---- the client ---- */

int peer_client_new(struct event_base *base, const struct cluster_conf *cc, const struct peer_keys *keys,
		    peer_done_fn done, void *arg, struct peer_client **out)
{
	struct peer_client *pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	*pc = (struct peer_client){.base = base, .cc = cc, .keys = keys, .done = done, .arg = arg};
	pc->pump = event_new(base, -1, 0, on_pump, pc);
	if (!pc->pump) {
		free(pc);
		return -ENOMEM;
	}
	*out = pc;
	return 0;
}

static struct ppeer *peer_find(struct peer_client *pc, const char *id)
{
	for (struct ppeer *p = pc->peers; p; p = p->next)
		if (strcmp(p->id, id) == 0)
			return p;
	return NULL;
}

bool peer_client_suspect(struct peer_client *pc, const char *id)
{
	struct ppeer *p = peer_find(pc, id);
	return p && p->suspect_until_ns > now_ns();
}

int peer_client_get(struct peer_client *pc, const char *id, const char *addr, struct remote_read *rr)
{
	struct ppeer *p = peer_find(pc, id);
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -1;
		snprintf(p->id, sizeof(p->id), "%s", id);
		p->pc = pc;
		p->qtail = &p->qhead;
		p->next = pc->peers;
		pc->peers = p;
	}
	if (strcmp(p->addr, addr) != 0) {
		/* a new address (the node restarted elsewhere): new connections */
		for (unsigned i = p->nconns; i-- > 0;)
			if (p->conns[i]->state != C_BUSY)
				conn_free(p->conns[i]); /* moves the last into i: already seen */
		snprintf(p->addr, sizeof(p->addr), "%s", addr);
	}
	if (p->suspect_until_ns > now_ns())
		return PEER_FAIL_SUSPECT;
	if (p->nq >= PEER_QUEUE_MAX)
		return PEER_FAIL_BUSY;
	struct preq *q = calloc(1, sizeof(*q));
	if (!q)
		return -1;
	q->rr = rr;
	*p->qtail = q;
	p->qtail = &q->next;
	p->nq++;
	event_active(pc->pump, EV_TIMEOUT, 0);
	return 0;
}

static void peer_drop(struct peer_client *pc, struct ppeer *p, enum peer_fail why)
{
	unsigned busy = p->nq;
	for (unsigned i = 0; i < p->nconns; i++)
		busy += p->conns[i]->req != NULL;
	if (busy && why != PEER_FAIL_CANCELED)
		log_warn("op=peer node=%s addr=%s err=\"left the cluster with %u requests waiting\" "
			 "action=\"reading them from the cold store instead\"", p->id, p->addr, busy);
	while (p->nconns) {
		struct cconn *c = p->conns[0];
		struct preq *q = c->req;
		c->req = NULL;
		conn_free(c);
		if (q)
			req_finish(pc, q, why);
	}
	fail_queue(pc, p, why);
}

void peer_client_keep(struct peer_client *pc, const char *const *ids, size_t n)
{
	struct ppeer **pp = &pc->peers;
	while (*pp) {
		struct ppeer *p = *pp;
		bool keep = false;
		for (size_t i = 0; i < n && !keep; i++)
			keep = strcmp(ids[i], p->id) == 0;
		if (keep) {
			pp = &p->next;
			continue;
		}
		peer_drop(pc, p, PEER_FAIL_CLOSED);
		*pp = p->next;
		free(p);
	}
}

void peer_client_counts(const struct peer_client *pc, uint64_t *gets, uint64_t *bytes)
{
	*gets = pc ? pc->gets : 0;
	*bytes = pc ? pc->bytes : 0;
}

void peer_client_cancel_all(struct peer_client *pc)
{
	if (!pc)
		return;
	for (struct ppeer *p = pc->peers; p; p = p->next)
		peer_drop(pc, p, PEER_FAIL_CANCELED);
}

void peer_client_free(struct peer_client *pc)
{
	if (!pc)
		return;
	peer_client_cancel_all(pc);
	while (pc->peers) {
		struct ppeer *p = pc->peers;
		pc->peers = p->next;
		free(p);
	}
	event_free(pc->pump);
	free(pc);
}
