/*
 * The scrubber: see scrub.h.
 *
 * Pacing: after checking a chunk of n bytes the next step waits n /
 * scrub_rate seconds, so the disk sees at most scrub_rate bytes per second
 * from it on average (the check itself takes time too, so a little less).
 * With scrub_rate = 0 it looks at the config again once a second. After a
 * pass over every chunk it rests a minute before the next.
 */
#include "scrub.h"

#include <errno.h>
#include <stdlib.h>

#include <event2/event.h>

#include "chunk.h"
#include "log.h"
#include "loop.h"
#include "verify.h"

#define SCRUB_IDLE_NS 1000000000ull /* off, or nothing to check: look again in 1 s */
#define SCRUB_PASS_GAP_NS (60ull * 1000000000ull) /* between two passes, at least */

struct scrub {
	struct cache *cache;
	struct event *ev;
	struct chunk_cursor cur;
	bool busy;             /* a check is in flight */
	uint64_t pass_chunks;  /* chunks checked this pass */
	int64_t last_pass_s;
};

static void arm(struct scrub *s, uint64_t ns)
{
	if (s->cache->stopping)
		return;
	struct timeval tv = {.tv_sec = (time_t)(ns / 1000000000ull),
			     .tv_usec = (suseconds_t)(ns % 1000000000ull / 1000)};
	event_add(s->ev, &tv);
}

static void scrub_checked(struct cache *cache, void *arg, uint64_t bytes, int err)
{
	struct scrub *s = arg;
	(void)err; /* a mismatch is counted and logged by verify.c */
	s->busy = false;
	s->pass_chunks++;
	uint64_t rate = cache->cfg->scrub_rate;
	if (!rate) {
		arm(s, SCRUB_IDLE_NS);
		return;
	}
	/* bytes / rate seconds, without overflow for any chunk size */
	uint64_t ns = bytes / rate * 1000000000ull + bytes % rate * 1000000000ull / rate;
	arm(s, ns);
}

/* A chunk worth checking now: resident, not being moved or checked. */
static bool scrub_wants(const struct cache *cache, const struct chunk *c)
{
	return (c->state == CHUNK_RESIDENT || c->state == CHUNK_PINNED) && !c->doomed &&
	       !verify_inflight(cache, c->key);
}

static void scrub_step(evutil_socket_t fd, short what, void *arg)
{
	struct scrub *s = arg;
	struct cache *cache = s->cache;
	(void)fd;
	(void)what;
	loop_assert();
	if (cache->stopping || s->busy)
		return;
	if (!cache->cfg->scrub_rate) {
		arm(s, SCRUB_IDLE_NS);
		return;
	}
	/* a few candidates per step: skip what is busy elsewhere */
	for (int tries = 0; tries < 64; tries++) {
		bool wrapped = false;
		struct chunk *c = chunk_cursor_next(&cache->chunks, &s->cur, &wrapped);
		if (wrapped && s->pass_chunks) {
			/* a pass ended: the next one starts after a pause, so a
			 * small cache is not re-read over and over */
			cache->ctr.scrub_passes++;
			s->last_pass_s = cache_wall_s();
			log_debug("op=scrub pass_done chunks=%llu", (unsigned long long)s->pass_chunks);
			s->pass_chunks = 0;
			s->cur = (struct chunk_cursor){0, 0}; /* c is the next pass's first */
			arm(s, SCRUB_PASS_GAP_NS);
			return;
		}
		if (!c)
			break;
		if (!scrub_wants(cache, c))
			continue;
		int rc = verify_join(cache, c, VERIFY_SCRUB, NULL, scrub_checked, s);
		if (rc == 0) {
			s->busy = true;
			return;
		}
		/* 1: its file was gone (dropped); < 0: try the next one */
	}
	arm(s, SCRUB_IDLE_NS);
}

int scrub_start(struct cache *cache)
{
	struct scrub *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cache = cache;
	s->ev = evtimer_new(cache->base, scrub_step, s);
	if (!s->ev) {
		free(s);
		return -ENOMEM;
	}
	cache->scrub = s;
	arm(s, SCRUB_IDLE_NS);
	return 0;
}

void scrub_free(struct cache *cache)
{
	struct scrub *s = cache->scrub;
	if (!s)
		return;
	event_free(s->ev);
	free(s);
	cache->scrub = NULL;
}

int64_t scrub_last_pass_s(const struct cache *cache)
{
	return cache->scrub ? cache->scrub->last_pass_s : 0;
}
