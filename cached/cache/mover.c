/*
 * Tier maintenance: see mover.h.
 *
 * Two reasons to give chunks up, checked on every pass:
 *   - the policies' budget (policy_glue.h): after a fill, a move or a
 *     promotion the chunks in a tier's policies may exceed its low
 *     watermark; victims go until they do not;
 *   - the backstop: bytes no policy controls (fills and copies in flight,
 *     pinned chunks; on hot, files clients hold after their chunk left)
 *     pushed the tier past its high watermark; it drains to the low one,
 *     with hysteresis (cachefilesd style), so such moves come in batches.
 *     What it counts is tier_load's: not dead segment bytes, and on a tier
 *     whose victims are dropped not the bytes clients hold either.
 * A hot victim is demoted to warm when the placement says so (warm's
 * policy admits it), else dropped; a warm victim is dropped.
 */
#include "mover.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "chunk.h"
#include "index.h"
#include "log.h"
#include "loop.h"
#include "policy_glue.h"
#include "reclaim_rank.h"
#include "seg_place.h"
#include "seg_sync.h"
#include "reclaim.h"
#include "seg_punch.h"
#include "tier_health.h"
#include "workers.h"

#define MOVES_MAX 4
/* Copies of the mover's own (demotions: no cb) may start together: one
 * worker job runs up to COPY_BATCH_MAX of them, started at most
 * COPY_BATCH_US after the first, so a stream of demotions (one per miss
 * that evicts) wakes a worker and the loop once per batch instead of once
 * per copy. Off (1): batches of 8 with MOVES_MAX 16 took 17-41 us off a
 * miss that evicts, but hot then drained faster than the simulator models
 * (docs/simulator.md, --hot-max), and bench/epochs.sh's replay agreement
 * fell from 1.00 / 0.99 to 0.93-0.94 / 0.84-0.92 (lru / arc); batches of
 * 8 with MOVES_MAX 4 held hot past the model (1.63 / 1.31). Session 17. */
#define COPY_BATCH_MAX 1
#define COPY_BATCH_US 2000
/* ... not counting copies written and waiting for their segment's sync
 * (seg_sync.h), of which there may be this many more: the longer a sync
 * group, the fewer syncs. A group's sync starts at half of it (so copies
 * go on while it runs), at SYNC_GROUP_BYTES_MAX, at 1/32 of the source
 * tier's capacity (the copies' source bytes stay in it until their sync),
 * or after the window (SEG_SYNC_WINDOW_MS), whichever comes first. */
#define MOVES_SYNCING_MAX 128
#define SYNC_GROUP_BYTES_MAX (8u << 20)
/* 64K, not 256K: on a 2M hot tier 256K of demotions waiting for their
 * sync was 40 % of the band above the policies' budget, the room the plan
 * prefetcher loads into (t_trace_replay_ddp: 90-150 waits for room per run,
 * lru 0.85-0.89 of the simulator, where 64K gave 0.94-0.96). A tier of 8M
 * or more is unchanged (1/32 of its capacity). Session 27. */
#define SYNC_GROUP_BYTES_MIN (64u << 10)

struct move {
	struct job job;
	struct move *bnext;   /* in its copy batch */
	struct cache *cache;
	struct chunk *c;
	uint8_t from, to;
	uint32_t len;
	uint64_t checksum;
	int err;
	bool write_failed; /* err is the target tier's: the source is intact */
	mover_done_fn cb; /* mover_move(): told how it ended */
	void *arg;
	char src[PATH_MAX + 96];
	uint64_t src_off;  /* the chunk's offset in src (a segment) */
	bool src_seg;
	struct segment *dseg; /* a small chunk goes into the target's segment ... */
	uint64_t doff;        /* ... at this offset */
	int dwfd;
	bool need_sync;       /* written into dseg, not yet synced (seg_sync.h) */
	bool waited_on;       /* has a cb and counts in mover.waited_writing */
	struct seg_sync_waiter sw;
	char tmp[PATH_MAX + 96];
	char dst[PATH_MAX + 96];
};

/* The mover's own state (cache->mover). */
struct mover {
	struct event *ev;      /* a pass, coalesced */
	unsigned moves_inflight;
	unsigned moves_syncing;  /* ... of which written, waiting for a sync */
	/* moves someone waits for (admin moves, reclaim copies: they have a
	 * cb) still writing: when the last is written, their group's sync
	 * starts at once, without the window (the demotions' stream has no
	 * cb and waits for its group) */
	unsigned waited_writing;
	uint64_t moving_bytes[TIER_COUNT]; /* bytes of this tier being moved out */
	bool draining[TIER_COUNT];          /* past high water, until low water */
	struct seg_syncs *syncs;            /* copies into segments: one sync covers many */
	struct copy_batch *batch;           /* copies waiting to start together */
	struct event *batch_ev;             /* ... until COPY_BATCH_US */
};

struct copy_batch {
	struct job job; /* first: the job is the batch */
	struct move *head, **tail;
	unsigned n;
};

static void mover_run(evutil_socket_t fd, short what, void *arg);
static void batch_fire(evutil_socket_t fd, short what, void *arg);

/* No room for another demotion or promotion now. */
static bool moves_full(const struct mover *mv)
{
	return mv->moves_inflight - mv->moves_syncing >= MOVES_MAX ||
	       mv->moves_syncing >= MOVES_SYNCING_MAX;
}

int mover_init(struct cache *cache)
{
	struct mover *mv = calloc(1, sizeof(*mv));
	if (!mv)
		return -ENOMEM;
	cache->mover = mv;
	mv->ev = event_new(cache->base, -1, 0, mover_run, cache);
	mv->batch_ev = evtimer_new(cache->base, batch_fire, cache);
	mv->syncs = seg_syncs_new(cache->base, &cache->ix, &cache->ctr.segment_copy_syncs);
	if (!mv->ev || !mv->syncs || !mv->batch_ev)
		return -ENOMEM;
	return reclaim_init(cache);
}

static void batch_flush(struct cache *cache);

void mover_stop(struct cache *cache)
{
	if (!cache->mover)
		return;
	batch_flush(cache);
	seg_syncs_stop(cache->mover->syncs);
}

void mover_free(struct cache *cache)
{
	struct mover *mv = cache->mover;
	if (!mv)
		return;
	reclaim_free(cache);
	seg_syncs_free(mv->syncs);
	free(mv->batch); /* only if the loop stopped before it ran */
	if (mv->batch_ev)
		event_free(mv->batch_ev);
	if (mv->ev)
		event_free(mv->ev);
	free(mv);
	cache->mover = NULL;
}

unsigned mover_inflight(const struct cache *cache)
{
	return cache->mover ? cache->mover->moves_inflight : 0;
}

unsigned mover_syncing(const struct cache *cache)
{
	return cache->mover ? cache->mover->moves_syncing : 0;
}

void mover_kick(struct cache *cache)
{
	loop_assert();
	struct mover *mv = cache->mover;
	if (mv && mv->ev && !cache->stopping && !event_pending(mv->ev, EV_TIMEOUT, NULL))
		event_active(mv->ev, EV_TIMEOUT, 0);
}

struct chunk *mover_victim(struct cache *cache, enum tier_id t)
{
	struct chunk *best = NULL;
	uint64_t now = cache_now_ns();
	for (unsigned i = 0; i < cache->nds; i++) {
		struct policy *p = cache->ds[i]->pol[t];
		if (!p || !p->entries)
			continue;
		struct pol_entry *e = policy_victim(p, now);
		/* across datasets: give up the one whose candidate was read
		 * longest ago */
		if (e && (!best || e->atime < best->pe.atime))
			best = chunk_of_entry(e);
	}
	return best;
}

void mover_evict(struct cache *cache, struct chunk *c)
{
	cache->ctr.evictions++;
	chunk_drop(cache, c, "evict");
}

/* Reclaim segment g of tier t now, for a fill that needs the room: its
 * live items are dropped (the cold store has them), which unlinks it; its
 * bytes leave the tier once no client holds it. Unless the policy keeps
 * some of them (policy_glue_reclaim_keeps): then only the others go, the
 * background reclaim copies the kept ones (reclaim.c), and the fill is
 * served without being kept meanwhile, as when the policy keeps every
 * chunk of a full tier. Items being moved or pinned keep g named too:
 * false then. */
static bool reclaim_drop(struct cache *cache, enum tier_id t, struct segment *g)
{
	uint64_t id = g->id, size = g->size;
	bool kept = false, gone = false;
	if (reclaim_reap_empty(cache, t, g))
		return true;
	struct reclaim_rank rk;
	reclaim_rank_begin(&rk, cache, t, size);
	/* its own list of live items: no walk of the chunk table */
	for (struct seg_link *l = g->items_live.next; l != &g->items_live && !kept; l = l->next) {
		struct chunk *c = chunk_of_seg_link(l);
		kept = c && c->tier == t && c->state == CHUNK_RESIDENT &&
		       policy_glue_reclaim_keeps(cache, c, size, &rk);
	}
	for (struct seg_link *l = g->items_live.next, *nx; l != &g->items_live; l = nx) {
		nx = l->next;
		struct chunk *c = chunk_of_seg_link(l);
		if (!c || c->tier != t || c->state != CHUNK_RESIDENT)
			continue;
		if (kept && policy_glue_reclaim_keeps(cache, c, size, &rk))
			continue;
		cache->ctr.evictions++;
		cache->ctr.segment_items_dropped++;
		cache->ctr.segment_reclaim_dropped_bytes += c->len;
		bool last = g->items == 1;
		chunk_drop(cache, c, "segment_reclaim_for_room");
		if (last) {
			gone = true; /* g is unlinked (and maybe freed) */
			break;
		}
	}
	reclaim_rank_end(&rk);
	if (gone)
		return true;
	if (kept)
		mover_kick(cache);
	return segstore_find(&cache->segs[t], id) == NULL;
}

bool mover_reclaim(struct cache *cache, enum tier_id t, uint64_t len)
{
	struct tier *tr = &cache->tiers[t];
	struct segment *g;
	/* where dead items' blocks are punched, the dead bytes left are held
	 * by clients (they come back when let go) or the edges of items of
	 * segments found at start: not worth live items dropped now */
	if (seg_punch_on(cache, t))
		return tier_free(tr) >= len;
	/* dead bytes in segments come back only with their segment: reclaim
	 * the deadest before giving up any live chunk */
	while (tier_free(tr) < len && cache->segs[t].bytes_dead &&
	       (g = reclaim_choose(cache, t, 100)) && reclaim_drop(cache, t, g))
		;
	return tier_free(tr) >= len;
}

/* What the tier's policies may hold: their budget less pinned chunks,
 * which are in no policy but take their room all the same */
static uint64_t room_budget(const struct cache *cache, enum tier_id t)
{
	uint64_t budget = policy_glue_hold(cache, t);
	return budget > cache->pinned[t] ? budget - cache->pinned[t] : 0;
}

int mover_make_room(struct cache *cache, enum tier_id t, uint64_t len)
{
	struct tier *tr = &cache->tiers[t];
	if (!tr->present || tr->failed || len > tier_capacity_now(tr))
		return -ENOSPC;
	mover_reclaim(cache, t, len);
	while (tier_free(tr) < len) {
		struct chunk *v = mover_victim(cache, t);
		if (!v)
			return -ENOSPC;
		if (v->file->seg) {
			/* an item's bytes stay until its segment goes (or, where
			 * holes are punched, until the clients holding it let
			 * go): giving it up may make no room now. Give up only
			 * what the policies would to take len bytes within
			 * their budget, never more (evicting on until a chunk
			 * file came up emptied warm to half its budget with
			 * arc: docs/simulator.md "Replay agreement"). Where
			 * holes are punched an item no client holds gives its
			 * blocks back at once, one a client holds when it lets
			 * go, as a chunk file does: the victims go as chunk
			 * files would. Under a DDP job whose ranks' open-ahead
			 * handles held a third of warm, the rule above dropped
			 * hot's demotions (prefetched chunks not yet read among
			 * them) while warm's policies were within their budget
			 * (t_trace_replay_ddp, session 27) */
			if (policy_glue_tier_bytes(cache, t) + len <= room_budget(cache, t) &&
			    !seg_punch_on(cache, t))
				return -ENOSPC;
			mover_evict(cache, v);
			mover_reclaim(cache, t, len);
			continue;
		}
		mover_evict(cache, v);
	}
	return 0;
}

#define MAKE_ROOM_NOW_MAX 64 /* victims one fill may give up */

int mover_make_room_now(struct cache *cache, enum tier_id t, uint64_t len)
{
	struct tier *tr = &cache->tiers[t];
	if (!tr->present || tr->failed || len > tier_capacity_now(tr))
		return -ENOSPC;
	for (int n = 0; tier_free(tr) < len; n++) {
		struct chunk *v = mover_victim(cache, t);
		/* refs 1: only the chunk itself holds its file */
		/* not a segment item: a fill of a chunk many times an
		 * item's size would give up MAKE_ROOM_NOW_MAX items for
		 * nothing, over and over (warm emptied in t_segments_budget) */
		if (!v || n >= MAKE_ROOM_NOW_MAX || v->file->refs > 1 || v->file->seg)
			return -ENOSPC;
		mover_evict(cache, v);
	}
	return 0;
}

/* Worker: copy a chunk file between tiers, verifying its checksum. */
static void move_work(struct job *j)
{
	struct move *m = (struct move *)j;
	int fd = -1;
	void *buf = malloc(m->len ? m->len : 1);
	if (!buf) {
		m->err = -ENOMEM;
		return;
	}
	m->err = tier_file_pread(m->src, buf, m->len, m->src_seg ? m->src_off : 0);
	if (!m->err && chunk_checksum(buf, m->len) != m->checksum)
		m->err = -EBADMSG;
	if (!m->err && m->dseg) {
		/* synced before the record names it, as a chunk file is: by
		 * the sync the loop starts for this segment's copies
		 * (move_done, seg_sync.h) */
		m->err = segment_pwrite(m->dwfd, buf, m->len, m->doff);
		m->need_sync = !m->err;
		m->write_failed = m->err < 0;
	} else if (!m->err) {
		m->err = tier_file_write(m->tmp, m->dst, buf, m->len, &fd);
		m->write_failed = m->err < 0;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
}

static void move_done(struct job *j);

/* m is written (or ended): if it was the last copy someone waits for
 * still writing, the copies waiting get their sync now. */
static void move_written(struct mover *mv, struct move *m)
{
	if (!m->waited_on)
		return;
	m->waited_on = false;
	if (--mv->waited_writing == 0)
		seg_syncs_start(mv->syncs);
}

/* The sync that covers a copy's bytes in its segment succeeded: record
 * the chunk at its new place now (seg_sync.h commits these records
 * before move_done lets the old item go; move_done's chunk_move_commit
 * then writes the same record once more, in the next batch). A chunk
 * doomed meanwhile is dropped by move_done, which deletes the record. */
static void move_record(struct seg_sync_waiter *w)
{
	struct move *m = (struct move *)((char *)w - offsetof(struct move, sw));
	struct chunk *c = m->c;
	if (m->err || c->doomed || !m->dseg)
		return;
	chunk_persist_at(m->cache, c, m->to, m->dseg->id, m->doff);
}

/* The sync that covers a copy's bytes in its segment ended. */
static void move_synced(struct seg_sync_waiter *w, int err)
{
	struct move *m = (struct move *)((char *)w - offsetof(struct move, sw));
	m->cache->mover->moves_syncing--;
	m->err = err;
	m->write_failed = err < 0;
	move_done(&m->job);
}

static void move_done(struct job *j)
{
	struct move *m = (struct move *)j;
	struct cache *cache = m->cache;
	struct chunk *c = m->c;
	if (m->need_sync) {
		m->need_sync = false;
		m->sw.done = move_synced;
		m->sw.record = move_record;
		m->sw.len = m->len;
		uint64_t gb = tier_capacity_now(&cache->tiers[m->from]) / 32;
		gb = gb > SYNC_GROUP_BYTES_MAX ? SYNC_GROUP_BYTES_MAX
		   : gb < SYNC_GROUP_BYTES_MIN ? SYNC_GROUP_BYTES_MIN : gb;
		seg_syncs_set_group(cache->mover->syncs, MOVES_SYNCING_MAX / 2, gb);
		if (!c->doomed &&
		    seg_sync_after_write(cache->mover->syncs, cache->workers, m->dseg, &m->sw) == 0) {
			cache->mover->moves_syncing++;
			move_written(cache->mover, m);
			mover_kick(cache); /* room for another copy to write */
			return; /* move_synced goes on */
		}
		if (!c->doomed) { /* no memory for a batch: sync here */
			m->err = segment_sync(m->dst);
			m->write_failed = m->err < 0;
		}
	}
	int err = m->err ? m->err : c->doomed ? -ENOENT : 0;
	move_written(cache->mover, m);
	cache->mover->moves_inflight--;
	cache->mover->moving_bytes[m->from] -= m->len;
	policy_glue_arrived(c->ds, m->to, m->len);
	c->state = CHUNK_RESIDENT;
	struct segment *dseg = m->dseg;
	if (dseg && err) {
		/* its place in the target's segment is dead bytes from now */
		uint64_t size = segment_disk_bytes(dseg);
		uint32_t refs = dseg->refs;
		tier_adopt(&cache->tiers[m->to], m->len);
		if (segment_write_end(&cache->segs[m->to], dseg, m->len, false))
			chunk_segment_gone(cache, m->to, size, refs);
		m->dseg = NULL;
	}
	if (m->write_failed && !c->doomed && tier_health_is_tier_error(m->err)) {
		/* the target tier could not take it (full, read-only, failing,
		 * removed): the tier hears of it, the chunk stays where it is */
		tier_unreserve(&cache->tiers[m->to], m->len);
		log_warn("dataset=%s path=%s chunk=%u op=move from=%s to=%s err=\"%s\" action=\"kept "
			 "on %s\"", c->ds->name, c->path, c->idx, cache->tiers[m->from].name,
			 cache->tiers[m->to].name, strerror(-m->err), cache->tiers[m->from].name);
		tier_health_write_error(cache, (enum tier_id)m->to, m->err, m->dst);
		chunk_policy_reinsert(cache, c, cache_now_ns());
	} else if (m->err || c->doomed) {
		tier_unreserve(&cache->tiers[m->to], m->len);
		if (!m->err && !dseg)
			unlink(m->dst);
		chunk_policy_reinsert(cache, c, cache_now_ns());
		if (m->err == -EBADMSG) {
			cache->ctr.checksum_errors++;
			log_err("dataset=%s path=%s chunk=%u tier=%s op=move err=\"checksum mismatch: "
				"dropping the chunk; it will be read from the cold store again\"",
				c->ds->name, c->path, c->idx, cache->tiers[m->from].name);
		} else if (m->err) {
			log_warn("dataset=%s path=%s chunk=%u op=move from=%s to=%s err=\"%s\"",
				 c->ds->name, c->path, c->idx, cache->tiers[m->from].name,
				 cache->tiers[m->to].name, strerror(-m->err));
		}
		chunk_drop(cache, c, m->err == -EBADMSG ? "checksum" : "move_failed");
	} else {
		tier_commit(&cache->tiers[m->to], m->len);
		chunk_move_commit(cache, c, m->to, m->dseg, m->doff);
		if (m->dseg)
			segment_write_end(&cache->segs[m->to], m->dseg, m->len, true);
		c->unverified = false; /* its bytes were checked on the way */
		if (m->to == m->from)
			chunk_policy_reinsert(cache, c, cache_now_ns()); /* kept in place by a reclaim */
		else
			chunk_policy_moved_in(cache, c, m->from, cache_now_ns());
		if (m->to > m->from)
			cache->ctr.demotions++;
		else if (m->to < m->from)
			cache->ctr.promotions++;
		/* to == from: a segment item kept by a reclaim (reclaim.c) */
		if (cache->hooks.chunk_moved)
			cache->hooks.chunk_moved(cache->hooks.arg, c);
	}
	if (m->cb)
		m->cb(cache, m->arg, err);
	free(m);
	mover_kick(cache);
}

/* Worker: a batch's copies, one after the other. */
static void batch_work(struct job *j)
{
	for (struct move *m = ((struct copy_batch *)j)->head; m; m = m->bnext)
		move_work(&m->job);
}

static void batch_done(struct job *j)
{
	struct copy_batch *b = (struct copy_batch *)j;
	struct move *m = b->head;
	free(b);
	while (m) {
		struct move *next = m->bnext; /* move_done frees m */
		move_done(&m->job);
		m = next;
	}
}

/* Start the waiting batch's copies now. */
static void batch_flush(struct cache *cache)
{
	struct mover *mv = cache->mover;
	struct copy_batch *b = mv->batch;
	if (!b)
		return;
	mv->batch = NULL;
	evtimer_del(mv->batch_ev);
	workers_submit(cache->workers, &b->job);
}

static void batch_fire(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	batch_flush(arg);
}

/* Start m's copy: now if someone waits for it (cb), else with others. */
static void copy_submit(struct cache *cache, struct move *m)
{
	struct mover *mv = cache->mover;
	if (!m->cb && !mv->batch && !cache->stopping) {
		mv->batch = calloc(1, sizeof(*mv->batch));
		if (mv->batch) {
			mv->batch->job = (struct job){.work = batch_work, .done = batch_done};
			mv->batch->tail = &mv->batch->head;
			struct timeval tv = {0, COPY_BATCH_US};
			evtimer_add(mv->batch_ev, &tv);
		}
	}
	if (m->cb || !mv->batch) {
		workers_submit(cache->workers, &m->job);
		return;
	}
	*mv->batch->tail = m;
	mv->batch->tail = &m->bnext;
	if (++mv->batch->n >= COPY_BATCH_MAX)
		batch_flush(cache);
}

/* Start copying c to tier `to`, whose space is already reserved. */
static int move_start(struct cache *cache, struct chunk *c, uint8_t to, mover_done_fn cb, void *arg)
{
	struct move *m = calloc(1, sizeof(*m));
	if (!m) {
		tier_unreserve(&cache->tiers[to], c->len);
		return -ENOMEM;
	}
	m->cb = cb;
	m->arg = arg;
	chunk_policy_remove(cache, c);
	c->state = CHUNK_MOVING;
	m->cache = cache;
	m->c = c;
	m->from = c->tier;
	m->to = to;
	m->len = c->len;
	m->checksum = c->checksum;
	chunk_loc_path(cache, c, m->src, sizeof(m->src));
	m->src_off = chunk_base(c);
	m->src_seg = c->file->seg != NULL;
	tier_tmp_path(&cache->tiers[to], c->key, m->tmp, sizeof(m->tmp));
	tier_chunk_path(&cache->tiers[to], c->key, m->dst, sizeof(m->dst));
	if (seg_place(cache, c->ds, to, c->len, &m->dseg, &m->doff)) {
		m->dwfd = m->dseg->wfd;
		snprintf(m->dst, sizeof(m->dst), "%s", m->dseg->path);
	}
	m->job.work = move_work;
	m->job.done = move_done;
	if (cb) {
		m->waited_on = true;
		cache->mover->waited_writing++;
	}
	cache->mover->moves_inflight++;
	cache->mover->moving_bytes[m->from] += m->len;
	policy_glue_arriving(c->ds, to, m->len);
	copy_submit(cache, m);
	return 0;
}

int mover_move(struct cache *cache, struct chunk *c, enum tier_id to, bool make_room, mover_done_fn cb,
	       void *arg)
{
	/* mover_copy says -EALREADY for a chunk file on to; a segment item
	 * there would be copied (a reclaim's compaction), which a move is not */
	if (c->tier == to && c->file->seg && cache->tiers[to].present &&
	    c->state == CHUNK_RESIDENT && !cache->stopping)
		return -EALREADY;
	return mover_copy(cache, c, to, make_room, cb, arg);
}

int mover_copy(struct cache *cache, struct chunk *c, enum tier_id to, bool make_room, mover_done_fn cb,
	       void *arg)
{
	struct tier *t = &cache->tiers[to];
	if (!t->present)
		return -ENODEV;
	if (c->state != CHUNK_RESIDENT || cache->stopping)
		return -EBUSY;
	if (c->tier == to && !c->file->seg)
		return -EALREADY; /* a chunk file is never rewritten in place */
	/* a reclaim's copy into its own tier may take the spare it is kept
	 * for (the segment it empties gives back more) */
	if (c->tier == to ? !tier_reserve_spare(t, c->len)
			  : !tier_reserve(t, c->len) &&
				    !(make_room && mover_make_room(cache, to, c->len) == 0 &&
				      tier_reserve(t, c->len)))
		return -ENOSPC;
	return move_start(cache, c, (uint8_t)to, cb, arg);
}

void mover_promote(struct cache *cache, struct chunk *c)
{
	struct tier *hot = &cache->tiers[TIER_HOT];
	if (c->tier != TIER_WARM || c->state != CHUNK_RESIDENT || cache->stopping)
		return;
	if (moves_full(cache->mover) || !tier_reserve(hot, c->len))
		return;
	move_start(cache, c, TIER_HOT, NULL, NULL);
}

/* What the backstop measures. Not the dead bytes of segments (punching or
 * the reclaim returns them). Bytes clients hold after their chunk left the
 * tier (held_dead: a file or segment unlinked but still open, a chunk
 * served unkept) come back only when the client lets go; giving chunks up
 * frees none of them. Hot, above warm, counts them all the same: its
 * victims are demoted, not lost, and its band above the budget is where
 * the prefetcher's loads and the fills land, so held bytes there are made
 * up by demoting (without that, t_trace_replay_ddp's prefetcher waited
 * for room on hot 100-150 times a run and lru fell to 0.85-0.94 of the
 * simulator). A tier whose victims are dropped does not: under a DDP job
 * the ranks' open-ahead handles held up to 2.9M of warm's 4M, and warm's
 * drain dropped its policies' chunks down to 99K for room it could not
 * make, hot's demotions of prefetched chunks not yet read among them (19-71
 * of 470 given up before their read; session 27). */
static uint64_t tier_load(const struct cache *cache, enum tier_id t)
{
	const struct tier *tr = &cache->tiers[t];
	uint64_t load = tr->used + tr->reserved - cache->mover->moving_bytes[t];
	uint64_t gone = cache->segs[t].bytes_dead;
	if (!(t == TIER_HOT && cache->tiers[TIER_WARM].present))
		gone += tr->held_dead;
	return load > gone ? load - gone : 0;
}

enum give_up {
	GAVE_UP,   /* one chunk left (or is leaving) the tier */
	GIVE_WAIT, /* copies are saturated: go on when one finishes */
	GIVE_NONE, /* no policy of the tier holds anything */
};

/* Give up the tier's next victim: demote it or drop it. */
static enum give_up give_up_one(struct cache *cache, enum tier_id t)
{
	bool warm = t == TIER_HOT && cache->tiers[TIER_WARM].present;
	if (warm && moves_full(cache->mover))
		return GIVE_WAIT; /* before asking warm's policy: it counts the ask */
	struct chunk *v = mover_victim(cache, t);
	if (!v)
		return GIVE_NONE;
	if (warm && policy_glue_demote(cache, v) == TIER_WARM) {
		struct tier *wt = &cache->tiers[TIER_WARM];
		if (tier_reserve(wt, v->len) ||
		    (mover_make_room(cache, TIER_WARM, v->len) == 0 && tier_reserve(wt, v->len))) {
			move_start(cache, v, TIER_WARM, NULL, NULL);
			return GAVE_UP;
		}
		/* warm cannot take it: drop it */
	}
	mover_evict(cache, v);
	return GAVE_UP;
}

static void drain(struct cache *cache, enum tier_id t)
{
	struct tier *tr = &cache->tiers[t];
	enum give_up g = GAVE_UP;
	if (!tr->present)
		return;
	uint64_t hold = policy_glue_hold(cache, t);
	/* pinned chunks are in no policy but take their room all the same */
	uint64_t budget = hold > cache->pinned[t] ? hold - cache->pinned[t] : 0;
	/* demote=flat on hot: held to its high mark, drained back to it */
	uint64_t low = hold > policy_glue_budget(cache, t) ? hold : tr->low_bytes;
	while (policy_glue_tier_bytes(cache, t) > budget) {
		g = give_up_one(cache, t);
		if (g != GAVE_UP)
			break;
	}
	if (g == GIVE_WAIT)
		return;
	/* the same measure starts the drain as ends it (used + reserved also
	 * counts dead bytes, copies into segments in flight among them, and
	 * on warm held ones: drains started on those then ran to the low mark
	 * on what the policies keep) */
	if (!cache->mover->draining[t] && tier_load(cache, t) > tr->high_bytes)
		cache->mover->draining[t] = true;
	while (cache->mover->draining[t] && tier_load(cache, t) > low) {
		g = give_up_one(cache, t);
		if (g == GIVE_WAIT)
			return; /* continue when a move finishes */
		if (g == GIVE_NONE)
			break;
	}
	if (tier_load(cache, t) <= low)
		cache->mover->draining[t] = false;
}

static void mover_run(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct cache *cache = arg;
	if (cache->stopping)
		return;
	drain(cache, TIER_WARM);
	drain(cache, TIER_HOT);
	for (int t = 0; t < TIER_COUNT; t++)
		if (cache->tiers[t].present)
			reclaim_step(cache, (enum tier_id)t);
}
