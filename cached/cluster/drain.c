/*
 * Draining a node: see drain.h.
 *
 * drain_set(on) sends the state (members_set_state) and takes a snapshot
 * of the resident chunks' keys; a timer then waits until this node's own
 * list (read back from Redis) shows it draining and two heartbeats more
 * have passed, so that every node reads a list with it draining before a
 * chunk is handed over (a node that still took this one for home would
 * read the cold store instead of asking it). Then, DRAIN_INFLIGHT at a
 * time, each chunk whose home this node was is handed to its new home:
 * a GET with PEER_GET_KEEP, which the new home answers by fetching the
 * chunk from here (its previous home) and keeping it, with no bytes back.
 *
 * A request in flight points at the drain; drain_free() only marks it,
 * and the last request to end frees it.
 */
#include "drain.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chunk.h"
#include "handover.h"
#include "index.h"
#include "log.h"

enum drain_phase {
	DRAIN_NONE = 0, /* up (or joining): not draining */
	DRAIN_WAITING,  /* the state is sent; waiting for every node to see it */
	DRAIN_HANDING,  /* asking the new homes */
	DRAIN_DONE,     /* every chunk handed over, failed or gone */
};

static const char *const phase_names[] = {"none", "waiting", "handing", "done"};

struct take {
	struct remote_read rr;
	struct drain *d;
	char *path;
};

struct drain {
	struct drain_env env;
	enum drain_phase phase;
	struct event *timer;
	uint64_t seen_ms;       /* monotonic: when the own list first showed it draining */
	uint64_t *keys;         /* the snapshot */
	size_t nkeys, next;
	unsigned inflight;
	bool closing;
	bool restored;          /* the drain was recorded before this start */
	uint64_t handed, failed, skipped;
	char error[160];
	struct home_node nodes[MEMBERS_MAX];
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void arm(struct drain *d, uint64_t ms)
{
	struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
	evtimer_add(d->timer, &tv);
}

static void drain_destroy(struct drain *d)
{
	event_free(d->timer);
	free(d->keys);
	free(d);
}

static void finish(struct drain *d)
{
	d->phase = DRAIN_DONE;
	log_info("op=drain_done node=%s chunks=%zu handed=%" PRIu64 " failed=%" PRIu64 " skipped=%" PRIu64
		 "%s%s%s", d->env.self, d->nkeys, d->handed, d->failed, d->skipped, d->error[0] ? " err=\"" : "",
		 d->error, d->error[0] ? "\"" : "");
}

static void pump(struct drain *d);

static void on_take(struct remote_read *rr)
{
	struct take *t = rr->arg;
	struct drain *d = t->d;
	if (rr->result == 0) {
		d->handed++;
	} else {
		d->failed++;
		log_info("op=drain_take dataset=%s path=%s chunk=%u err=\"%s\" (the new home reads it from the "
			 "cold store when it is read)", rr->ds->name, t->path, rr->idx, strerror(-rr->result));
	}
	free(t->path);
	free(t);
	d->inflight--;
	if (d->closing) {
		if (!d->inflight)
			drain_destroy(d);
		return;
	}
	if (d->phase == DRAIN_HANDING)
		pump(d);
}

/* Hand chunk c over: 1 asked, 0 not ours to hand over, -1 failed. */
static int take(struct drain *d, struct chunk *c)
{
	size_t n;
	const struct member *m = members_list(d->env.mem, &n);
	if (n > MEMBERS_MAX)
		n = MEMBERS_MAX;
	/* was this node its home (among the members that may hold chunks)? */
	for (size_t i = 0; i < n; i++)
		d->nodes[i] = (struct home_node){
			.id = m[i].id,
			.weight = m[i].capacity,
			.skip = m[i].state != MEMBER_UP && strcmp(m[i].id, d->env.self) != 0,
		};
	int was, unused;
	home_pick(d->nodes, n, c->key, &was, &unused);
	if (was < 0 || strcmp(m[was].id, d->env.self) != 0)
		return 0;
	struct home_choice hc;
	handover_choose(m, n, d->env.self, c->key, d->nodes, &hc);
	if (hc.home < 0) {
		snprintf(d->error, sizeof(d->error), "no other node is up to take the chunks");
		return -2;
	}
	if (strcmp(m[hc.home].id, d->env.self) == 0)
		return 0;
	struct take *t = calloc(1, sizeof(*t));
	char *path = strdup(c->path);
	if (!t || !path) {
		free(t);
		free(path);
		return -1;
	}
	/* no buffer: the new home answers with no bytes (PEER_GET_KEEP) */
	*t = (struct take){
		.rr = {.ds = c->ds, .path = path, .src = c->src, .idx = c->idx, .len = c->len, .key = c->key,
		       .flags = READ_DRAIN_TAKE, .done = on_take},
		.d = d,
		.path = path,
	};
	t->rr.arg = t;
	int r = peer_client_get(d->env.cli, m[hc.home].id, m[hc.home].addr, &t->rr);
	if (r != 0) {
		free(t);
		free(path);
		return -1;
	}
	d->inflight++;
	return 1;
}

static void pump(struct drain *d)
{
	struct cache *cache = d->env.cache;
	while (d->inflight < DRAIN_INFLIGHT && d->next < d->nkeys && !cache->stopping) {
		struct chunk *c = chunk_find(&cache->chunks, d->keys[d->next++]);
		if (!c || c->state == CHUNK_UNKEPT) {
			d->skipped++; /* gone meanwhile */
			continue;
		}
		int r = take(d, c);
		if (r == 0)
			d->skipped++;
		else if (r == -1)
			d->failed++;
		else if (r == -2) {
			d->failed += d->nkeys - d->next + 1;
			d->next = d->nkeys;
		}
	}
	if (d->next >= d->nkeys && !d->inflight && d->phase == DRAIN_HANDING)
		finish(d);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct drain *d = arg;
	if (d->phase != DRAIN_WAITING)
		return;
	if (!d->seen_ms) {
		size_t n;
		const struct member *m = members_list(d->env.mem, &n);
		for (size_t i = 0; i < n; i++)
			if (strcmp(m[i].id, d->env.self) == 0 && m[i].state == MEMBER_DRAINING)
				d->seen_ms = now_ms();
	}
	if (d->seen_ms && now_ms() - d->seen_ms >= 2 * d->env.heartbeat_ms + 100) {
		d->phase = DRAIN_HANDING;
		log_info("op=drain_handing node=%s chunks=%zu", d->env.self, d->nkeys);
		pump(d);
		return;
	}
	arm(d, 100);
}

int drain_new(const struct drain_env *env, struct drain **out)
{
	struct drain *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->env = *env;
	if (!d->env.heartbeat_ms)
		d->env.heartbeat_ms = 1000;
	d->timer = evtimer_new(env->cache->base, on_timer, d);
	if (!d->timer) {
		free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

/* Record (on) or forget (!on) the drain in the index, so that a restart
 * keeps it. A failure is logged: the drain goes on, but a restart would
 * bring the node back joining, then up (a home again). */
static void persist(struct drain *d, bool on)
{
	struct index *ix = d->env.cache->ix;
	const char *key = d->env.cluster ? d->env.cluster : "";
	int rc = on ? index_kv_put(ix, DRAIN_INDEX_NS, key, "draining", 8)
		    : index_kv_delete(ix, DRAIN_INDEX_NS, key);
	if (rc < 0 && !(rc == -ENOENT && !on))
		log_warn("op=%s node=%s err=\"the index did not take the drain's record: %s\": a restart "
			 "would make this node a home again; run tierctl cluster drain after a restart",
			 on ? "drain" : "undrain", d->env.self, strerror(-rc));
}

int drain_restore(struct drain *d)
{
	void *v = NULL;
	size_t n = 0;
	int rc = index_kv_get(d->env.cache->ix, DRAIN_INDEX_NS, d->env.cluster ? d->env.cluster : "", &v, &n);
	free(v);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0) {
		log_warn("op=drain_restore node=%s err=\"cannot read the drain's record from the index: %s\": "
			 "the node starts as a home; run tierctl cluster drain if it was draining",
			 d->env.self, strerror(-rc));
		return rc;
	}
	log_info("op=drain_restore node=%s msg=\"drained before the restart: draining again (not a home); "
		 "tierctl cluster undrain makes it a home\"", d->env.self);
	rc = drain_set(d, true);
	if (rc == 0)
		d->restored = true;
	return rc < 0 ? rc : 1;
}

int drain_set(struct drain *d, bool on)
{
	if (!on) {
		if (d->phase != DRAIN_NONE)
			log_info("op=undrain node=%s handed=%" PRIu64, d->env.self, d->handed);
		persist(d, false);
		d->restored = false;
		evtimer_del(d->timer);
		d->phase = DRAIN_NONE;
		d->next = d->nkeys; /* requests in flight end on their own */
		members_set_state(d->env.mem, MEMBER_UP);
		return 0;
	}
	if (d->phase != DRAIN_NONE)
		return 0;
	persist(d, true);
	struct cache *cache = d->env.cache;
	size_t n = chunk_table_count(&cache->chunks);
	uint64_t *keys = malloc((n ? n : 1) * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	size_t k = 0;
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c && k < n; c = chunk_iter_next(&it))
		keys[k++] = c->key;
	free(d->keys);
	d->keys = keys;
	d->nkeys = k;
	d->next = 0;
	d->handed = d->failed = d->skipped = 0;
	d->error[0] = '\0';
	d->seen_ms = 0;
	d->phase = DRAIN_WAITING;
	members_set_state(d->env.mem, MEMBER_DRAINING);
	log_info("op=drain node=%s chunks=%zu", d->env.self, k);
	arm(d, 100);
	return 0;
}

bool drain_done(const struct drain *d)
{
	return d && d->phase == DRAIN_DONE;
}

void drain_report(const struct drain *d, struct proto_rs *rs)
{
	enum drain_phase ph = d ? d->phase : DRAIN_NONE;
	uint64_t total = d ? d->nkeys : 0, handed = d ? d->handed : 0, failed = d ? d->failed : 0,
		 skipped = d ? d->skipped : 0;
	uint64_t ended = handed + failed + skipped;
	proto_rs_str(rs, "drain", phase_names[ph]);
	proto_rs_u64(rs, "drain_chunks", total);
	proto_rs_u64(rs, "drain_chunks_handed", handed);
	proto_rs_u64(rs, "drain_chunks_failed", failed);
	proto_rs_u64(rs, "drain_chunks_skipped", skipped);
	proto_rs_u64(rs, "drain_chunks_left", ph == DRAIN_NONE || ended >= total ? 0 : total - ended);
	proto_rs_str(rs, "drain_error", d ? d->error : "");
	proto_rs_bool(rs, "drain_restored", d && d->restored);
}

void drain_free(struct drain *d)
{
	if (!d)
		return;
	evtimer_del(d->timer);
	d->closing = true;
	if (!d->inflight)
		drain_destroy(d);
}
