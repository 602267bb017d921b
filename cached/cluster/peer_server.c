/*
 * The peer port: see peer_server.h.
 *
 * Each connection walks HELLO -> CHALLENGE -> AUTH -> READY before any
 * request is decoded; a frame out of order, a header that does not decode,
 * a bad proof or a handshake slower than cluster.peer_connect_timeout
 * closes it (after one ERROR frame where there is something to say). Data
 * goes out as a file segment of the chunk's own file (sendfile), holding a
 * reference on the chunk's file until the bytes are sent, so an eviction
 * meanwhile cannot change or free them (tier files are immutable, and
 * unlinked ones are counted until the last reference goes).
 */
#include "peer_server.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "chunk.h"
#include "fill.h"
#include "log.h"
#include "manifest.h"
#include "peer_io.h"

#define PEER_IDLE_S 300         /* an authenticated connection idle this long is closed */
#define PEER_ACCEPT_PAUSE_MS 100 /* after an accept error (out of descriptors) */
#define PEER_LOAD_POLL_MS 50    /* a GET waiting for its dataset's listing looks again */

enum pstate {
	PS_HELLO = 0,
	PS_AUTH = 1,
	PS_READY = 2,
};

struct pconn {
	struct peer_server *ps;
	struct bufferevent *bev;
	struct event *timer;  /* handshake deadline, then the idle limit */
	struct pconn *prev, *next;
	enum pstate state;
	bool busy;            /* a GET waits for its chunk's fill */
	bool parked;          /* a GET waits for its dataset's first listing */
	struct event *load_ev; /* ... polled on this timer */
	uint64_t load_until_ns; /* ... until then (then EAGAIN) */
	bool dead;            /* closed while busy: freed when the fill answers */
	bool closing;         /* close once the output is sent */
	uint32_t req_id;
	struct waiter w;
	struct dataset *ds;
	char addr[64];        /* the client's address, for logs */
	char client_node[PEER_NAME_MAX + 1];
	uint8_t cnonce[PEER_NONCE_LEN];
	uint8_t snonce[PEER_NONCE_LEN];
	struct peer_get get;  /* the request in flight */
};

struct peer_server {
	struct cache *cache;
	const struct cluster_conf *cc;
	const struct peer_keys *keys;
	struct evconnlistener *lis;
	struct event *pause;
	struct pconn *conns;
	struct peer_server_stats st;
};

/* A chunk file's bytes on their way out: the reference that keeps them. */
struct pseg {
	struct cache *cache;
	struct cfile *f;
};

static void pc_free(struct pconn *pc)
{
	if (pc->bev)
		bufferevent_free(pc->bev);
	if (pc->timer)
		event_free(pc->timer);
	if (pc->load_ev)
		event_free(pc->load_ev);
	free(pc);
}

/* Close: at once, or (busy) when the fill it waits for answers. */
static void pc_close(struct pconn *pc)
{
	struct peer_server *ps = pc->ps;
	if (ps) {
		if (pc->prev)
			pc->prev->next = pc->next;
		else
			ps->conns = pc->next;
		if (pc->next)
			pc->next->prev = pc->prev;
		ps->st.conns--;
		pc->ps = NULL;
	}
	if (pc->busy) {
		pc->dead = true;
		if (pc->bev) {
			bufferevent_free(pc->bev);
			pc->bev = NULL;
		}
		if (pc->timer) {
			event_free(pc->timer);
			pc->timer = NULL;
		}
		return;
	}
	pc_free(pc);
}

static void pc_arm(struct pconn *pc, uint64_t ms)
{
	struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
	evtimer_add(pc->timer, &tv);
}

/* Close from within a callback of pc's own: later, from the loop (its
 * timer), once what is queued has been sent or after at most flush_ms. */
static void pc_close_soon(struct pconn *pc, uint64_t flush_ms)
{
	pc->closing = true;
	bufferevent_disable(pc->bev, EV_READ);
	pc_arm(pc, evbuffer_get_length(bufferevent_get_output(pc->bev)) ? flush_ms : 0);
}

/* One ERROR frame; fatal: close once it is sent. */
static void pc_error(struct pconn *pc, uint32_t id, int err, const char *detail, bool fatal)
{
	struct proto_wr w;
	proto_wr_init(&w);
	if (peer_enc_error(&w, id, err, detail) == 0)
		(void)peer_io_send(pc->bev, &w);
	proto_wr_free(&w);
	if (fatal)
		pc_close_soon(pc, 1000);
}

/* Send w's frame (encoded with result rc) and free w; on failure close pc
 * (soon). Returns 0 or the error. */
static int pc_send(struct pconn *pc, struct proto_wr *w, int rc)
{
	if (rc == 0)
		rc = peer_io_send(pc->bev, w);
	proto_wr_free(w);
	if (rc < 0)
		pc_close_soon(pc, 0);
	return rc;
}

static void refuse_handshake(struct pconn *pc, uint32_t id, int err, const char *why)
{
	pc->ps->st.refused_auth++;
	log_warn("op=peer_accept peer=%s node=%s err=\"%s\" action=\"refused: nothing is served "
		 "before a good handshake\"", pc->addr, pc->client_node[0] ? pc->client_node : "?", why);
	pc_error(pc, id, err, why, true);
}

static void pseg_cleanup(struct evbuffer_file_segment const *seg, int flags, void *arg)
{
	(void)seg;
	(void)flags;
	struct pseg *s = arg;
	cfile_unref(s->cache, s->f);
	free(s);
}

/* A draining node handed chunk c over (PEER_GET_KEEP): it is here now;
 * the answer says so with no bytes. */
static void send_kept(struct pconn *pc, const struct chunk *c, uint8_t where)
{
	struct peer_data d = {
		.size = c->src.size,
		.mtime_ns = c->src.mtime_ns,
		.version = c->src.version,
		.checksum = c->checksum,
		.len = 0,
		.where = where,
	};
	struct proto_wr w;
	proto_wr_init(&w);
	if (pc_send(pc, &w, peer_enc_data_head(&w, pc->req_id, &d)) < 0) {
		pc->ps->st.get_errors++;
		return;
	}
	pc->ps->st.takes++;
	pc_arm(pc, (uint64_t)PEER_IDLE_S * 1000u);
}

/* Send chunk c (valid during the call) as the DATA answer. */
static void send_chunk(struct pconn *pc, struct chunk *c, uint8_t where)
{
	struct peer_server *ps = pc->ps;
	struct cache *cache = ps->cache;
	if (pc->get.flags & PEER_GET_KEEP) {
		send_kept(pc, c, where);
		return;
	}
	struct pseg *s = malloc(sizeof(*s));
	int fd = s ? chunk_open_fd(cache, c) : -ENOMEM;
	if (fd < 0) {
		free(s);
		ps->st.get_errors++;
		pc_error(pc, pc->req_id, EIO, "cannot open the chunk's file on this node", false);
		return;
	}
	struct peer_data d = {
		.size = c->src.size,
		.mtime_ns = c->src.mtime_ns,
		.version = c->src.version,
		.checksum = c->checksum,
		.len = c->len,
		.where = where,
	};
	struct proto_wr w;
	proto_wr_init(&w);
	int rc = peer_enc_data_head(&w, pc->req_id, &d);
	if (rc == 0)
		rc = peer_io_send(pc->bev, &w);
	proto_wr_free(&w);
	struct evbuffer_file_segment *seg =
		rc == 0 ? evbuffer_file_segment_new(fd, (ev_off_t)chunk_base(c), (ev_off_t)c->len,
						    EVBUF_FS_CLOSE_ON_FREE)
			: NULL;
	if (!seg) {
		close(fd);
		free(s);
		/* the head may be out already: the stream is broken, close it */
		ps->st.get_errors++;
		pc_close_soon(pc, 0);
		return;
	}
	cfile_ref(c->file);
	*s = (struct pseg){.cache = cache, .f = c->file};
	evbuffer_file_segment_add_cleanup_cb(seg, pseg_cleanup, s);
	rc = evbuffer_add_file_segment(bufferevent_get_output(pc->bev), seg, 0, (ev_off_t)c->len);
	evbuffer_file_segment_free(seg); /* the buffer holds its own reference */
	if (rc < 0) {
		ps->st.get_errors++;
		pc_close_soon(pc, 0);
		return;
	}
	chunk_count_read(cache, c);
	ps->st.gets++;
	if (pc->get.flags & PEER_GET_PREV_HOME)
		ps->st.prev_served++;
	ps->st.bytes_sent += c->len;
	cache->ctr.bytes_to_peers += c->len;
	c->ds->bytes_to_peers += c->len;
	pc_arm(pc, (uint64_t)PEER_IDLE_S * 1000u);
}

/* The fill a GET waited for answered. */
static void on_chunk(struct cache *cache, struct waiter *w, struct chunk *c, int err)
{
	(void)cache;
	struct pconn *pc = (struct pconn *)(void *)((char *)w - offsetof(struct pconn, w));
	pc->busy = false;
	if (pc->dead) {
		pc_free(pc);
		return;
	}
	if (err < 0 || !c) {
		pc->ps->st.get_errors++;
		pc_error(pc, pc->req_id, err < 0 ? -err : EIO, "this node could not read the chunk", false);
		pc_arm(pc, (uint64_t)PEER_IDLE_S * 1000u);
		return;
	}
	send_chunk(pc, c, PEER_WHERE_FILLED);
}

static void get_error(struct pconn *pc, int err, const char *detail)
{
	pc->ps->st.get_errors++;
	pc_error(pc, pc->req_id, err, detail, false);
}

/* A new home asked for a chunk this node does not hold: not an error. */
static void ps_prev_miss(struct pconn *pc)
{
	pc->ps->st.prev_misses++;
	pc_error(pc, pc->req_id, ENODATA, "not resident on this node (its previous home)", false);
}

static void serve_get(struct pconn *pc);

static void on_load_poll(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct pconn *pc = arg;
	pc->parked = false;
	pc_arm(pc, (uint64_t)PEER_IDLE_S * 1000u); /* whatever the answer, the idle limit again */
	serve_get(pc);
}

static void serve_get(struct pconn *pc)
{
	struct cache *cache = pc->ps->cache;
	const struct peer_get *g = &pc->get;
	char why[256];
	struct dataset *ds = cache_dataset(cache, g->dataset, strlen(g->dataset));
	if (!ds || ds->removed) {
		snprintf(why, sizeof(why), "no dataset %s on this node", g->dataset);
		get_error(pc, ENOENT, why);
		return;
	}
	if (g->chunk_size != ds->conf.chunk_size) {
		snprintf(why, sizeof(why), "dataset %s has chunk_size %u here, %u there: configure it alike "
			 "on every node", ds->name, ds->conf.chunk_size, g->chunk_size);
		get_error(pc, EINVAL, why);
		return;
	}
	if (!ds->mf) {
		/* its first listing is on its way (at start-up, a manifest may
		 * wait for its home): wait for it, for half the asker's
		 * first-byte deadline, so that it need not read the cold store */
		uint64_t now = cache_now_ns();
		if (!pc->load_until_ns)
			pc->load_until_ns = now + pc->ps->cc->peer_first_byte_ms * 500000ull;
		if (ds->refreshing && now < pc->load_until_ns &&
		    (pc->load_ev || (pc->load_ev = evtimer_new(bufferevent_get_base(pc->bev), on_load_poll, pc)))) {
			const struct timeval tv = {0, PEER_LOAD_POLL_MS * 1000};
			pc->parked = true;
			evtimer_del(pc->timer);
			evtimer_add(pc->load_ev, &tv);
			return;
		}
		pc->load_until_ns = 0;
		get_error(pc, EAGAIN, "the dataset is not listed on this node yet");
		return;
	}
	pc->load_until_ns = 0;
	struct cold_stat src = {.size = g->size, .mtime_ns = g->mtime_ns, .version = g->version};
	const struct mf_entry *e = manifest_find(ds->mf, g->path);
	if (e && !cold_stat_same(&e->st, &src)) {
		snprintf(why, sizeof(why), "this node has another version of the file (size %llu mtime_ns %lld "
			 "version %llu)", (unsigned long long)e->st.size, (long long)e->st.mtime_ns,
			 (unsigned long long)e->st.version);
		get_error(pc, ESTALE, why);
		return;
	}
	uint64_t off = (uint64_t)g->idx * g->chunk_size;
	if (off >= src.size || (uint64_t)g->len != (src.size - off < g->chunk_size ? src.size - off : g->chunk_size)) {
		get_error(pc, EINVAL, "no such chunk at that version (index or length)");
		return;
	}
	bool prev = g->flags & PEER_GET_PREV_HOME;
	if (prev && !chunk_find(&cache->chunks, chunk_key(ds->name, g->path, &src, g->idx))) {
		ps_prev_miss(pc); /* the new home reads the cold store */
		return;
	}
	const struct read_ctx rc = {.flags = READ_FOR_PEER | (prev ? READ_PREV_HOME : 0)};
	struct chunk *c = NULL;
	pc->ds = ds;
	pc->w.cb = on_chunk;
	int r = fill_get(cache, ds, g->path, &src, g->idx, &rc, &pc->w, &c);
	if (r == 1) {
		send_chunk(pc, c, PEER_WHERE_HIT);
	} else if (r == 0) {
		pc->busy = true;
		evtimer_del(pc->timer);
	} else {
		get_error(pc, -r, "this node could not start reading the chunk");
	}
}

static void on_hello(struct pconn *pc, const struct peer_hdr *h, const uint8_t *p)
{
	struct peer_server *ps = pc->ps;
	struct peer_hello m;
	if (peer_dec_hello(p, h->len, &m) < 0) {
		refuse_handshake(pc, h->id, EBADMSG, "a HELLO that does not decode");
		return;
	}
	snprintf(pc->client_node, sizeof(pc->client_node), "%s", m.node);
	if (strcmp(m.cluster, ps->cc->name) != 0) {
		refuse_handshake(pc, h->id, EACCES, "another cluster's node (cluster.name differs)");
		return;
	}
	memcpy(pc->cnonce, m.nonce, PEER_NONCE_LEN);
	struct peer_challenge ch = {0};
	snprintf(ch.node, sizeof(ch.node), "%s", ps->cc->node_id);
	const struct peer_transcript t = {
		.cluster = ps->cc->name,
		.client_node = pc->client_node,
		.server_node = ps->cc->node_id,
		.client_nonce = pc->cnonce,
		.server_nonce = pc->snonce,
	};
	struct proto_wr w;
	proto_wr_init(&w);
	int rc = peer_nonce(pc->snonce);
	if (rc == 0)
		rc = peer_proof(ps->keys, PEER_ROLE_SERVER, &t, ch.mac);
	memcpy(ch.nonce, pc->snonce, PEER_NONCE_LEN);
	if (rc == 0)
		rc = peer_enc_challenge(&w, h->id, &ch);
	if (pc_send(pc, &w, rc) == 0)
		pc->state = PS_AUTH;
}

static void on_auth(struct pconn *pc, const struct peer_hdr *h, const uint8_t *p)
{
	struct peer_server *ps = pc->ps;
	uint8_t mac[PEER_MAC_LEN];
	if (peer_dec_auth(p, h->len, mac) < 0) {
		refuse_handshake(pc, h->id, EBADMSG, "an AUTH that does not decode");
		return;
	}
	const struct peer_transcript t = {
		.cluster = ps->cc->name,
		.client_node = pc->client_node,
		.server_node = ps->cc->node_id,
		.client_nonce = pc->cnonce,
		.server_nonce = pc->snonce,
	};
	if (peer_proof_check(ps->keys, PEER_ROLE_CLIENT, &t, mac) < 0) {
		refuse_handshake(pc, h->id, EACCES,
				 "handshake failed: the node does not hold this cluster's key (cluster.key_file)");
		return;
	}
	struct proto_wr w;
	proto_wr_init(&w);
	if (pc_send(pc, &w, peer_enc_ready(&w, h->id)) < 0)
		return;
	pc->state = PS_READY;
	pc_arm(pc, (uint64_t)PEER_IDLE_S * 1000u);
	log_debug("op=peer_accept peer=%s node=%s state=ready", pc->addr, pc->client_node);
}

/* One whole frame of pc (header h, payload p). False: pc is gone or closing. */
static bool on_frame(struct pconn *pc, const struct peer_hdr *h, const uint8_t *p)
{
	switch (pc->state) {
	case PS_HELLO:
		if (h->op != PEER_OP_HELLO) {
			refuse_handshake(pc, h->id, EPROTO, "a request before the handshake");
			return false;
		}
		on_hello(pc, h, p);
		break;
	case PS_AUTH:
		if (h->op != PEER_OP_AUTH) {
			refuse_handshake(pc, h->id, EPROTO, "a frame out of order in the handshake");
			return false;
		}
		on_auth(pc, h, p);
		break;
	case PS_READY:
		if (h->op != PEER_OP_GET || pc->busy || pc->parked) {
			pc_error(pc, h->id, EPROTO, pc->busy || pc->parked ? "one request at a time" : "not a request",
				 true);
			return false;
		}
		if (peer_dec_get(p, h->len, &pc->get) < 0) {
			pc_error(pc, h->id, EBADMSG, "a GET that does not decode", true);
			return false;
		}
		pc->req_id = h->id;
		serve_get(pc);
		break;
	}
	return !pc->closing;
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct pconn *pc = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	while (!pc->closing) {
		struct peer_hdr h;
		int rc = peer_io_hdr(in, &h);
		if (rc == 0)
			return;
		if (rc < 0 || h.op == PEER_OP_DATA) {
			if (pc->state != PS_READY)
				refuse_handshake(pc, 0, -rc > 0 ? -rc : EPROTO, "not a peer frame");
			else
				pc_error(pc, 0, rc < 0 ? -rc : EPROTO, "not a peer request", true);
			return;
		}
		const uint8_t *p = peer_io_payload(in, &h);
		if (!p)
			return;
		bool go_on = on_frame(pc, &h, p); /* closes only later (pc_close_soon) */
		peer_io_drain(in, &h);
		if (!go_on)
			return;
	}
}

static void on_write(struct bufferevent *bev, void *arg)
{
	struct pconn *pc = arg;
	if (pc->closing && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		pc_close(pc);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	struct pconn *pc = arg;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (pc->state != PS_READY && !pc->closing)
			pc->ps->st.refused_auth++;
		pc_close(pc);
	}
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct pconn *pc = arg;
	if (!pc->closing && pc->state != PS_READY) {
		refuse_handshake(pc, 0, ETIMEDOUT, "no handshake within cluster.peer_connect_timeout");
		return;
	}
	pc_close(pc); /* closing (flushed or not), or idle too long */
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int salen,
		      void *arg)
{
	(void)lis;
	(void)salen;
	struct peer_server *ps = arg;
	struct event_base *base = ps->cache->base;
	if (ps->st.conns >= ps->cc->peer_max_clients) {
		ps->st.refused_limit++;
		log_warn("op=peer_accept err=\"too many peer connections (cluster.peer_max_clients=%u): "
			 "closing the new one\"", ps->cc->peer_max_clients);
		close(fd);
		return;
	}
	struct pconn *pc = calloc(1, sizeof(*pc));
	if (!pc) {
		close(fd);
		return;
	}
	pc->ps = ps;
	if (evutil_inet_ntop(sa->sa_family,
			     sa->sa_family == AF_INET ? (void *)&((struct sockaddr_in *)(void *)sa)->sin_addr
						      : (void *)&((struct sockaddr_in6 *)(void *)sa)->sin6_addr,
			     pc->addr, sizeof(pc->addr)) == NULL)
		snprintf(pc->addr, sizeof(pc->addr), "?");
	pc->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	pc->timer = evtimer_new(base, on_timer, pc);
	if (!pc->bev || !pc->timer) {
		if (!pc->bev)
			close(fd);
		pc->ps = NULL;
		pc_free(pc);
		return;
	}
	peer_io_tune(pc->bev, 0);
	bufferevent_setcb(pc->bev, on_read, on_write, on_event, pc);
	/* nothing larger than one control frame is read before the handshake */
	bufferevent_setwatermark(pc->bev, EV_READ, 0, PEER_HDR_SIZE + PEER_CTRL_MAX);
	bufferevent_enable(pc->bev, EV_READ | EV_WRITE);
	pc->next = ps->conns;
	if (ps->conns)
		ps->conns->prev = pc;
	ps->conns = pc;
	ps->st.conns++;
	ps->st.accepted++;
	pc_arm(pc, ps->cc->peer_connect_ms);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct peer_server *ps = arg;
	evconnlistener_enable(ps->lis);
}

static void on_accept_error(struct evconnlistener *lis, void *arg)
{
	struct peer_server *ps = arg;
	int e = EVUTIL_SOCKET_ERROR();
	log_warn("op=peer_accept err=\"%s\": pausing %d ms", evutil_socket_error_to_string(e),
		 PEER_ACCEPT_PAUSE_MS);
	evconnlistener_disable(lis);
	struct timeval tv = {.tv_sec = 0, .tv_usec = PEER_ACCEPT_PAUSE_MS * 1000};
	evtimer_add(ps->pause, &tv);
}

int peer_server_start(struct cache *cache, const struct cluster_conf *cc, const struct peer_keys *keys,
		      struct peer_server **out, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	if (peer_io_addr(cc->peer_addr, &ss, &sl) < 0) {
		snprintf(err, errlen, "cluster.peer_listen: %s is not an IP address and port", cc->peer_listen);
		return -EINVAL;
	}
	struct peer_server *ps = calloc(1, sizeof(*ps));
	if (!ps) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ps->cache = cache;
	ps->cc = cc;
	ps->keys = keys;
	ps->pause = evtimer_new(cache->base, on_accept_resume, ps);
	ps->lis = ps->pause ? evconnlistener_new_bind(cache->base, on_accept, ps,
						      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
							      LEV_OPT_CLOSE_ON_EXEC,
						      128, (struct sockaddr *)&ss, (int)sl)
			    : NULL;
	if (!ps->lis) {
		int e = errno ? errno : EADDRINUSE;
		snprintf(err, errlen, "cannot listen for peers on %s: %s (cluster.peer_listen)", cc->peer_listen,
			 strerror(e));
		peer_server_stop(ps);
		return -e;
	}
	evconnlistener_set_error_cb(ps->lis, on_accept_error);
	*out = ps;
	log_info("op=peer_listen addr=%s max_clients=%u", cc->peer_listen, cc->peer_max_clients);
	return 0;
}

void peer_server_stats(const struct peer_server *ps, struct peer_server_stats *out)
{
	if (ps)
		*out = ps->st;
	else
		memset(out, 0, sizeof(*out));
}

void peer_server_stop(struct peer_server *ps)
{
	if (!ps)
		return;
	while (ps->conns)
		pc_close(ps->conns);
	if (ps->lis)
		evconnlistener_free(ps->lis);
	if (ps->pause)
		event_free(ps->pause);
	free(ps);
}
