/*
 * Segment reclaim that keeps what the policy keeps: see reclaim.h.
 *
 * The state of a tier's reclaim is the segment's id (never a pointer kept
 * across turns: a segment whose last item died is unlinked and may be
 * freed at once) and the keys of its live items taken when it started.
 * Each step looks the keys up again: an item evicted, moved or dropped
 * meanwhile is simply skipped.
 */
#include "reclaim.h"

#include <errno.h>
#include <stdlib.h>

#include <event2/event.h>

#include "chunk.h"
#include "log.h"
#include "loop.h"
#include "mover.h"
#include "policy_glue.h"
#include "reclaim_rank.h"
#include "seg_punch.h"

struct tier_reclaim {
	uint64_t id;    /* the segment being reclaimed, 0: none */
	uint64_t size;  /* its size */
	uint64_t *keys; /* its live items when it started */
	size_t n, next;
	unsigned copies; /* in flight */
};

struct reclaim {
	struct tier_reclaim t[TIER_COUNT];
	/* the next step, after the loop has polled its sockets again (an
	 * event made active from a callback would run before them) */
	struct event *again;
};

static void reclaim_again(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	mover_kick(arg);
}

int reclaim_init(struct cache *cache)
{
	cache->reclaim = calloc(1, sizeof(*cache->reclaim));
	if (!cache->reclaim)
		return -ENOMEM;
	cache->reclaim->again = evtimer_new(cache->base, reclaim_again, cache);
	return cache->reclaim->again ? 0 : -ENOMEM;
}

/* The spare: what copying one segment's live items could take, while the
 * tier holds segments (a tier of chunk files keeps none). */
static void spare_update(struct cache *cache, enum tier_id t)
{
	const struct segstore *ss = &cache->segs[t];
	uint64_t in_segs = ss->bytes_live + ss->bytes_dead;
	/* a tier that punches dead items' blocks compacts only the little
	 * they leave: no room held back for it */
	if (seg_punch_on(cache, t))
		in_segs = 0;
	cache->tiers[t].spare = in_segs < ss->seg_size ? in_segs : ss->seg_size;
}

void reclaim_size_tier(struct cache *cache, enum tier_id t, uint64_t configured)
{
	struct tier *tr = &cache->tiers[t];
	uint64_t size = segment_size_for(configured, tr->capacity);
	segstore_set_size(&cache->segs[t], size);
	spare_update(cache, t);
}

static void step_later(struct cache *cache)
{
	static const struct timeval zero = {0, 0};
	if (!evtimer_pending(cache->reclaim->again, NULL))
		evtimer_add(cache->reclaim->again, &zero);
}

static void tr_end(struct tier_reclaim *r)
{
	free(r->keys);
	r->keys = NULL;
	r->id = 0;
	r->n = r->next = 0;
}

void reclaim_free(struct cache *cache)
{
	if (!cache->reclaim)
		return;
	for (int t = 0; t < TIER_COUNT; t++)
		tr_end(&cache->reclaim->t[t]);
	if (cache->reclaim->again)
		event_free(cache->reclaim->again);
	free(cache->reclaim);
	cache->reclaim = NULL;
}

/* Start reclaiming g: note the keys of its live items. */
static int tr_start(enum tier_id t, struct tier_reclaim *r, struct segment *g)
{
	size_t cap = g->items ? g->items : 1;
	r->keys = calloc(cap, sizeof(*r->keys));
	if (!r->keys)
		return -ENOMEM;
	r->n = r->next = 0;
	for (struct seg_link *l = g->items_live.next; l != &g->items_live && r->n < cap; l = l->next) {
		struct chunk *c = chunk_of_seg_link(l);
		if (c && c->tier == t && c->state == CHUNK_RESIDENT)
			r->keys[r->n++] = c->key;
	}
	r->id = g->id;
	r->size = g->size;
	return 0;
}

/* The bytes of g's live items the policy keeps on tier t: what reclaiming
 * g would copy into t (the others are demoted or dropped, as the policy
 * would give them up anyway). */
static uint64_t kept_bytes(struct cache *cache, enum tier_id t, struct segment *g,
			   const struct reclaim_rank *rk, bool *stuck)
{
	uint64_t kept = 0;
	*stuck = false;
	for (struct seg_link *l = g->items_live.next; l != &g->items_live; l = l->next) {
		struct chunk *c = chunk_of_seg_link(l);
		if (!c || c->tier != t || c->state != CHUNK_RESIDENT)
			*stuck = true; /* being moved, pinned: it keeps g named */
		else if (policy_glue_reclaim_keeps(cache, c, g->size, rk))
			kept += c->len;
	}
	return kept;
}

bool reclaim_reap_empty(struct cache *cache, enum tier_id t, struct segment *g)
{
	if (!g->named || !g->sealed || g->writers || g->items)
		return false;
	uint64_t size = segment_disk_bytes(g);
	uint32_t refs = g->refs;
	segment_unlink(&cache->segs[t], g);
	chunk_segment_gone(cache, t, size, refs);
	return true;
}

struct segment *reclaim_choose(struct cache *cache, enum tier_id t, unsigned max_live_pct)
{
	struct segment *cand[RECLAIM_CHOICES];
	size_t n = segstore_reclaim_candidates(&cache->segs[t], max_live_pct, cand, RECLAIM_CHOICES);
	struct segment *best = NULL;
	uint64_t best_kept = 0, max_size = 0;
	struct reclaim_rank rk;
	for (size_t i = 0; i < n; i++)
		max_size = cand[i]->size > max_size ? cand[i]->size : max_size;
	if (n)
		reclaim_rank_begin(&rk, cache, t, max_size);
	for (size_t i = 0; i < n; i++) {
		bool stuck;
		uint64_t kept = kept_bytes(cache, t, cand[i], &rk, &stuck);
		if (stuck)
			continue; /* a reclaim could not empty it now */
		/* the fewest bytes copied per byte given back (its size);
		 * ties: the deadest, first in cand */
		if (!best || (unsigned __int128)kept * best->size < (unsigned __int128)best_kept * cand[i]->size) {
			best = cand[i];
			best_kept = kept;
		}
		if (!kept)
			break; /* nothing to copy: the deadest of those */
	}
	if (n)
		reclaim_rank_end(&rk);
	if (best)
		segment_seal(&cache->segs[t], best);
	return best;
}

struct copy_arg {
	enum tier_id tier; /* whose reclaim */
	uint32_t len;
	bool same;         /* kept on its tier (else demoted) */
};

static void copy_done(struct cache *cache, void *arg, int err)
{
	struct copy_arg *a = arg;
	if (cache->reclaim) {
		cache->reclaim->t[a->tier].copies--;
		/* a failed copy: dropped by the mover (a bad checksum counts
		 * in checksum_errors) or, if only the target could not be
		 * written, left for drop_rest */
		if (!err) {
			cache->ctr.segment_items_kept++;
			if (a->same) /* a demotion counts in demotions */
				cache->ctr.segment_reclaim_copied_bytes += a->len;
		}
	}
	free(a);
	/* move_done kicks the mover: the reclaim goes on in its pass */
}

static void drop_item(struct cache *cache, struct chunk *c, const char *why)
{
	cache->ctr.evictions++;
	cache->ctr.segment_items_dropped++;
	cache->ctr.segment_reclaim_dropped_bytes += c->len;
	chunk_drop(cache, c, why);
}

/* Copy c to tier `to` (its own: into the open segment), or drop it if
 * that cannot start. */
static void copy_item(struct cache *cache, enum tier_id t, struct chunk *c, enum tier_id to)
{
	struct copy_arg *a = malloc(sizeof(*a));
	if (!a) {
		drop_item(cache, c, "segment_reclaim_oom");
		return;
	}
	a->tier = t;
	a->len = c->len;
	a->same = to == t;
	/* its own tier: only into room it has (the band under the high
	 * watermark); warm: room made as for a demotion */
	int rc = mover_copy(cache, c, to, to != t, copy_done, a);
	if (rc < 0) {
		free(a);
		drop_item(cache, c, to == t ? "segment_reclaim_no_room" : "segment_reclaim_no_room_below");
		return;
	}
	cache->reclaim->t[t].copies++;
}

/* The rest of g's items (pinned ones excepted) go: the reclaim is done
 * with its copies and the segment must go whole. */
static void drop_rest(struct cache *cache, enum tier_id t, struct segment *g)
{
	for (struct seg_link *l = g->items_live.next, *nx; l != &g->items_live; l = nx) {
		nx = l->next;
		struct chunk *c = chunk_of_seg_link(l);
		if (!c || c->tier != t || c->state != CHUNK_RESIDENT)
			continue;
		bool last = g->items == 1;
		drop_item(cache, c, "segment_reclaim_rest");
		if (last)
			return; /* g is unlinked (and maybe freed) */
	}
}

/* How live a segment of tier t may be to be reclaimed now. */
static unsigned reclaim_live_pct(const struct cache *cache, enum tier_id t)
{
	const struct tier *tr = &cache->tiers[t];
	/* less than a segment left for new bytes: any segment that gives
	 * back a tenth of itself (its copies go into the spare) */
	if (tier_free(tr) < cache->segs[t].seg_size)
		return RECLAIM_LIVE_PCT_TIGHT;
	return tier_over_high(tr) ? RECLAIM_LIVE_PCT_OVER : RECLAIM_LIVE_PCT;
}

void reclaim_step(struct cache *cache, enum tier_id t)
{
	loop_assert();
	struct tier_reclaim *r = &cache->reclaim->t[t];
	struct segstore *ss = &cache->segs[t];
	struct segment *g;
	spare_update(cache, t);
	if (!r->id) {
		/* a tier over its high mark (dead bytes count in its used:
		 * they are disk space) reclaims fuller segments too; each
		 * still gives back at least a quarter of itself */
		g = reclaim_choose(cache, t, reclaim_live_pct(cache, t));
		if (!g)
			return;
		if (reclaim_reap_empty(cache, t, g)) {
			step_later(cache); /* the next one, if any, next turn */
			return;
		}
		if (tr_start(t, r, g) < 0)
			return;
		log_debug("tier=%s op=segment_reclaim segment=%llx live=%llu size=%llu items=%zu",
			  cache->tiers[t].name, (unsigned long long)g->id,
			  (unsigned long long)g->live, (unsigned long long)g->size, r->n);
	}
	g = segstore_find(ss, r->id);
	if (!g) { /* unlinked: its last item died */
		if (!r->copies)
			tr_end(r);
		return;
	}
	struct reclaim_rank rk;
	reclaim_rank_begin(&rk, cache, t, r->size);
	for (unsigned n = 0; n < RECLAIM_STEP && r->next < r->n && r->copies < RECLAIM_COPIES; n++) {
		struct chunk *c = chunk_find(&cache->chunks, r->keys[r->next++]);
		if (!c || c->file->seg != g || c->tier != t || c->state != CHUNK_RESIDENT)
			continue;
		bool last = g->items == 1;
		int to = policy_glue_reclaim(cache, c, r->size, &rk);
		if (to == TIER_NONE)
			drop_item(cache, c, "segment_reclaim_policy");
		else
			copy_item(cache, t, c, (enum tier_id)to);
		if (last && !segstore_find(ss, r->id))
			break; /* dropped the last one: g is gone */
	}
	reclaim_rank_end(&rk);
	if (r->next < r->n) {
		if (r->copies < RECLAIM_COPIES)
			step_later(cache); /* bounded step done: more next turn */
		return;
	}
	if (r->copies)
		return; /* a finished copy kicks the mover */
	g = segstore_find(ss, r->id);
	if (g)
		drop_rest(cache, t, g);
	tr_end(r);
}
