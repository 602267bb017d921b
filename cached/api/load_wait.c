/*
 * Requests parked until their dataset's first listing ends: see
 * load_wait.h. Loop thread only.
 */
#include "load_wait.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "dataset.h"
#include "handlers.h"
#include "log.h"
#include "target.h"

#define LOAD_WAIT_TICK_MS 50

struct parked {
	struct parked *next;
	struct conn *c;
	struct event *tick;
	struct tc_hdr h;
	uint8_t *payload;
	uint64_t deadline_ns;
	char dsname[TC_DATASET_NAME_MAX + 1]; /* looked up again each tick (a reload) */
};

static bool op_waits(uint8_t op)
{
	return op == TC_OP_OPEN || op == TC_OP_STAT || op == TC_OP_LISTDIR || op == TC_OP_OPEN_MANY;
}

/* The dataset a "DATASET[/PATH]" string names, if it is still doing its
 * first listing with no manifest to serve from. */
static struct dataset *loading_dataset(struct cache *cache, const char *s, size_t n)
{
	const char *slash = memchr(s, '/', n);
	size_t dn = slash ? (size_t)(slash - s) : n;
	if (dn == 0 || dn > TC_DATASET_NAME_MAX)
		return NULL;
	struct dataset *ds = cache_dataset(cache, s, dn);
	return ds && !ds->mf && ds->first_load && !ds->removed ? ds : NULL;
}

/* The first dataset the request names that is loading, or NULL. A
 * malformed payload is left to the handler to refuse. */
static struct dataset *request_loading(struct cache *cache, const struct tc_hdr *h,
				       const uint8_t *payload)
{
	struct proto_rd r;
	uint32_t count = 1;
	proto_rd_init(&r, payload, h->len);
	if (h->op == TC_OP_OPEN_MANY) {
		count = proto_rd_u32(&r);
		if (!proto_rd_ok(&r) || count > TC_OPEN_MANY_MAX)
			return NULL;
	}
	for (uint32_t i = 0; i < count; i++) {
		size_t n;
		const char *s = proto_rd_str(&r, TC_PATH_MAX, &n);
		if (!s)
			return NULL;
		struct dataset *ds = loading_dataset(cache, s, n);
		if (ds)
			return ds;
	}
	return NULL;
}

static void parked_free(struct parked *p)
{
	struct session *s = conn_sess(p->c);
	for (struct parked **pp = &s->parked; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	s->nparked--;
	event_free(p->tick);
	conn_work_end(p->c, p->h.len);
	free(p->payload);
	struct conn *c = p->c;
	free(p);
	conn_put(c);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct parked *p = arg;
	struct conn *c = p->c;
	struct cache *cache = conn_api(c)->cache;
	struct dataset *ds = cache_dataset(cache, p->dsname, strlen(p->dsname));
	bool loading = ds && !ds->mf && ds->first_load && !ds->removed && !cache->stopping;
	if (loading && cache_now_ns() < p->deadline_ns)
		return;
	if (loading) {
		uint64_t listed = dataset_load_progress(ds);
		log_info("client_pid=%d dataset=%s op=%u err=\"still loading after the client's wait\" "
			 "listed=%llu", (int)c->pid, ds->name, (unsigned)p->h.op,
			 (unsigned long long)listed);
		conn_reply_err(c, p->h.op, p->h.id, ETIMEDOUT,
			       "dataset %s is still loading after waiting %u s (%llu files listed so "
			       "far); wait longer (tiercache_set_wait(), $TIERCACHE_LOAD_TIMEOUT, "
			       "tiercache-mount -o load_timeout=SECONDS) or see tierctl status",
			       ds->name, TC_F_WAIT_S(p->h.aux), (unsigned long long)listed);
	} else {
		/* over: run it as if it came now, with no wait left so that it
		 * cannot park again */
		struct tc_hdr h = p->h;
		h.aux &= ~(TC_F_WAIT_MAX_S << TC_F_WAIT_SHIFT);
		handlers_dispatch(c, &h, p->payload);
	}
	parked_free(p);
}

bool load_wait_park(struct conn *c, const struct tc_hdr *h, const uint8_t *payload)
{
	if (!op_waits(h->op) || TC_F_WAIT_S(h->aux) == 0)
		return false;
	struct session *s = conn_sess(c);
	struct cache *cache = conn_api(c)->cache;
	struct dataset *ds = request_loading(cache, h, payload);
	if (!ds || cache->stopping)
		return false;
	if (s->nparked >= SERVER_WAIT_MAX)
		return false; /* answered now: still loading */
	struct parked *p = calloc(1, sizeof(*p));
	if (!p)
		return false;
	p->payload = malloc(h->len ? h->len : 1);
	p->tick = event_new(cache->base, -1, EV_PERSIST, tick_cb, p);
	if (!p->payload || !p->tick) {
		if (p->tick)
			event_free(p->tick);
		free(p->payload);
		free(p);
		return false;
	}
	memcpy(p->payload, payload, h->len);
	p->h = *h;
	p->c = c;
	p->deadline_ns = cache_now_ns() + (uint64_t)TC_F_WAIT_S(h->aux) * 1000000000ull;
	snprintf(p->dsname, sizeof(p->dsname), "%s", ds->name);
	conn_get(c);
	conn_work_begin(c, h->len);
	p->next = s->parked;
	s->parked = p;
	s->nparked++;
	struct timeval tv = {.tv_sec = 0, .tv_usec = LOAD_WAIT_TICK_MS * 1000};
	event_add(p->tick, &tv);
	return true;
}

void load_wait_conn_closed(struct conn *c)
{
	struct session *s = conn_sess(c);
	while (s->parked)
		parked_free(s->parked);
}
