/*
 * The prefetcher: see prefetch.h. Loop thread only.
 */
#include "prefetch.h"
#include "prefetch_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "chunk.h"
#include "keymap.h"
#include "fill.h"
#include "log.h"
#include "mover.h"
#include "plan.h"
#include "plans.h"
#include "policy_glue.h"
#include "trace_rec.h"

#define RA_SLOTS 64u /* files followed for sequential readahead at once */
#define WAITED_MAX 65536u
#define HELD_MAX 65536u
/* A window's entries that wait for free room on hot are stepped past, at
 * most this many of them and this many entries looked at past the first
 * (each pump comes back to the first: it stays the window's cursor); the
 * loads past it take at most its own size while it waits (then the window
 * waits with it, so that the room it needs can come free) */
#define PF_PASS_HELD 16u
#define PF_PASS_SCAN 512u
/* Read-ahead of small files (one chunk each: open-ahead, dir_ahead.c) is
 * bounded by bytes in flight, daemon.prefetch_inflight x the dataset's
 * chunk_size (the pipeline the count was sized for: 8 x 4 MiB), and by
 * daemon.prefetch_small_inflight reads in flight (32; or prefetch_inflight,
 * if larger). 8 reads of 100 KB files keep 0.8 MB in flight: too few for a
 * store that answers many reads at once, and each side handles more per
 * wake-up with more in flight (docs/ceph.md). Chunks of large files keep
 * the count bound. */

/* What pf_fit says of one more chunk on hot (a guess: on the tier its
 * placement picks). */
enum pf_fit {
	PF_GO,      /* load it: it lands on hot (or on warm, where warm's policies have room) */
	PF_STALL,   /* not now: it would displace a chunk needed sooner (counted: stalls) */
	PF_NO_ROOM, /* not now: neither tier has the free bytes yet (counted: room_waits) */
	PF_OFF,     /* no hot tier */
};

struct ra_slot {
	uint64_t fkey;   /* key of the file's chunk 0 */
	uint32_t next;   /* the chunk a sequential reader reads next */
	uint32_t run;    /* consecutive chunks read from chunk 0 (0: not from 0) */
	uint32_t issued; /* highest chunk read ahead (0: none) */
};

struct prefetch {
	struct cache *cache;
	struct plans *reg;         /* the plans whose windows it fills */
	unsigned inflight;
	uint64_t inflight_bytes;   /* their lengths */
	unsigned inflight_peak;    /* most in flight at once */
	uint64_t inflight_bytes_peak;
	double lat_ns;             /* smoothed latency of one prefetch cold read */
	uint64_t issued, bytes;    /* prefetch fills started; bytes they brought */
	uint64_t open_ahead;       /* of issued: one-chunk files during their open's stat */
	uint64_t dir_ahead;        /* of issued: next files of a directory (dir_ahead.c) */
	struct dir_ahead da;       /* its depth, from how much of it was used */
	uint64_t readahead_bytes;  /* of which by readahead without a plan */
	uint64_t hits, hit_bytes;  /* prefetched chunks then read */
	uint64_t unused, unused_bytes; /* prefetched chunks evicted before a read */
	uint64_t stalls;           /* windows stopped: the victim was needed sooner */
	uint64_t room_waits;       /* chunks held back: no free bytes on hot (nor room on warm) */
	uint64_t passed;           /* of those, loads started past them meanwhile */
	uint64_t reclaims;         /* reclaims of hot's dead segment bytes asked for loads */
	struct event *room_ev;     /* that reclaim, run from the loop (pf_room_reclaim) */
	uint32_t room_len;         /* the largest load it is for */
	uint64_t room_dead;        /* hot's dead bytes after one that freed too little */
	struct keymap held;        /* keys held back for room now (room_waits counts each once):
				    * bytes loaded past each while it waited */
	uint64_t errors;
	uint64_t late;             /* reads that found their chunk's prefetch in flight */
	struct keymap waited;      /* keys read while not resident, prefetches in flight */
	struct ra_slot ra[RA_SLOTS];
};

struct pf_req {
	struct waiter w;
	struct prefetch *pf;
	uint64_t psid; /* the plan it is for (0: readahead) */
	uint64_t t0;
	uint32_t len;
	/* for the trace's load rows when a load ends without a chunk (NULL:
	 * not tracing when it was issued) */
	struct dataset *ds;
	char *path;
	uint32_t idx;
};

/* A trace row for a prefetch load's event (trace_rec.h): of c when there
 * is one, else of what r was issued for. */
static void pf_trace(struct cache *cache, const struct pf_req *r, const struct chunk *c,
		     enum trace_result what)
{
	if (c)
		trace_rec_note(cache, c->ds->name, c->path, c->idx, c->len, what, NULL);
	else if (r->path)
		trace_rec_note(cache, r->ds->name, r->path, r->idx, r->len, what, NULL);
}

/* Hot's disk is taken by items its policies gave up, in segments not yet
 * reclaimed (the mover's reclaim trails; a window that waits for it reads
 * its chunks as misses): reclaim them now, from the loop itself, not from
 * the pump (which runs inside a read's handler: a reclaim drops chunks),
 * then fill the windows again. */
static void pf_room_reclaim(evutil_socket_t fd, short what, void *arg)
{
	struct prefetch *pf = arg;
	struct cache *cache = pf->cache;
	(void)fd;
	(void)what;
	uint32_t len = pf->room_len;
	pf->room_len = 0;
	if (cache->stopping)
		return;
	pf->reclaims++;
	if (!mover_reclaim(cache, TIER_HOT, len)) {
		/* not asked again before hot's dead bytes change */
		pf->room_dead = cache->segs[TIER_HOT].bytes_dead;
		return;
	}
	prefetch_pump_all(pf);
}

int prefetch_init(struct prefetch **out, struct cache *cache, struct plans *reg)
{
	struct prefetch *pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	pf->cache = cache;
	pf->reg = reg;
	keymap_init(&pf->waited);
	keymap_init(&pf->held);
	pf->room_ev = evtimer_new(cache->base, pf_room_reclaim, pf);
	if (!pf->room_ev) {
		free(pf);
		return -ENOMEM;
	}
	*out = pf;
	return 0;
}

void prefetch_counts(const struct prefetch *pf, struct prefetch_counts *out)
{
	*out = (struct prefetch_counts){
		.issued = pf->issued,
		.bytes = pf->bytes,
		.readahead_bytes = pf->readahead_bytes,
		.hits = pf->hits,
		.hit_bytes = pf->hit_bytes,
		.unused = pf->unused,
		.unused_bytes = pf->unused_bytes,
		.late = pf->late,
		.stalls = pf->stalls,
		.room_waits = pf->room_waits,
		.errors = pf->errors,
		.inflight = pf->inflight,
	};
}

void prefetch_free(struct prefetch *pf)
{
	if (pf) {
		if (pf->room_ev)
			event_free(pf->room_ev);
		keymap_free(&pf->waited);
		keymap_free(&pf->held);
	}
	free(pf);
}

/* Plans whose job has reads left: they share hot's half between them. */
static unsigned pf_reading_plans(const struct prefetch *pf)
{
	unsigned n = 0;
	for (const struct dplan *pl = pf->reg ? pf->reg->list : NULL; pl; pl = pl->next)
		n += plan_track_pos(&pl->tr) < plan_track_end(&pl->tr);
	return n;
}

uint64_t prefetch_window(const struct prefetch *pf, const struct dplan *pl)
{
	const struct tier *hot = &pf->cache->tiers[TIER_HOT];
	uint64_t cap = pf->cache->cfg->prefetch_max_bytes;
	if (!hot->present || !cap)
		return 0;
	/* every window together at most half of hot's budget: chunks loaded
	 * ahead then wait for their reads beside what the policy keeps, and
	 * are not given up unread for one another (a DDP job's R ranks are
	 * R plans, R windows) */
	uint64_t half = policy_glue_budget(pf->cache, TIER_HOT) / 2;
	unsigned n = pf_reading_plans(pf);
	if (n > 1)
		half /= n;
	if (cap > half)
		cap = half;
	uint64_t cs = pl->ds->conf.chunk_size;
	uint64_t pipe = (uint64_t)pf->cache->cfg->prefetch_inflight * cs;
	/* before anything is measured: a full pipeline of reads */
	uint64_t want = pipe;
	if (pl->rate > 0 && pf->lat_ns > 0)
		want += (uint64_t)(4.0 * pl->rate * pf->lat_ns / 1e9);
	if (want < cs)
		want = cs;
	return want < cap ? want : cap;
}

/* May v be evicted to make room for a chunk next used at `use`? */
static bool pf_may_evict(struct prefetch *pf, const struct chunk *v, uint64_t use)
{
	return plan_use_displaces(plan_store_next_use(pf->cache->plans, v->key), use);
}

/* Room for len more bytes within what hot's policies hold (their budget;
 * under demote=flat hot's high watermark, policy_glue_hold): nothing is
 * evicted for them (free bytes on its disk aside). */
static bool pf_budget_free(struct prefetch *pf, uint32_t len)
{
	uint64_t arriving = 0;
	for (unsigned i = 0; i < pf->cache->nds; i++)
		arriving += pf->cache->ds[i]->pl.inflight[TIER_HOT];
	return policy_glue_tier_bytes(pf->cache, TIER_HOT) + arriving + len <=
	       policy_glue_hold(pf->cache, TIER_HOT);
}

/* Room on hot for len bytes below its policies' budget, free on its disk
 * now: nothing is evicted for them. */
static bool pf_room_free(struct prefetch *pf, uint32_t len)
{
	struct tier *hot = &pf->cache->tiers[TIER_HOT];
	return hot->present && tier_free(hot) >= len && pf_budget_free(pf, len);
}

/* Free bytes for len more: hot's; for a chunk a plan names, also room
 * warm's policies have to spare (where the fill then lands,
 * fill_prefetch_instead). When hot's dead segment bytes would make room,
 * ask for their reclaim (pf_room_reclaim) and wait: the fill's placement
 * would reclaim them itself, but in the read handler the pump runs in. A
 * guess (readahead, open-ahead) placed on hot only takes hot's free bytes:
 * sent to warm when hot was full, guessed chunks cost arc's warm a third
 * of its hits (plain bench, segments off: 591 and 703 against 997 and
 * 972). A guess the placement itself puts on warm (pf_fit) is another
 * matter: a miss of it would land there too. */
static bool pf_bytes_free(struct prefetch *pf, uint32_t len, bool planned)
{
	struct cache *cache = pf->cache;
	struct tier *hot = &cache->tiers[TIER_HOT];
	if (tier_free(hot) >= len)
		return true;
	if (!planned)
		return false;
	uint64_t dead = cache->segs[TIER_HOT].bytes_dead;
	if (dead >= len) {
		if (dead != pf->room_dead) {
			if (len > pf->room_len)
				pf->room_len = len;
			if (!evtimer_pending(pf->room_ev, NULL)) {
				static const struct timeval now = {0, 0};
				evtimer_add(pf->room_ev, &now);
			}
		}
		return false;
	}
	return policy_glue_room(cache, TIER_WARM) >= len;
}

/* key waits for free bytes: counted once (room_waits) while it waits. */
static enum pf_fit pf_no_room(struct prefetch *pf, uint64_t key)
{
	if (!keymap_get(&pf->held, key)) {
		if (pf->held.count >= HELD_MAX)
			keymap_clear(&pf->held); /* bounded; at worst a chunk counted twice */
		if (keymap_put(&pf->held, key, 0) == 0)
			pf->room_waits++;
	}
	return PF_NO_ROOM;
}

static enum pf_fit pf_go(struct prefetch *pf, uint64_t key)
{
	if (pf->held.count)
		(void)keymap_del(&pf->held, key);
	return PF_GO;
}

/* May a chunk of len bytes, key of ds, be loaded now? Not if it would
 * displace anything needed sooner, nor, for a chunk no plan names
 * (readahead, open-ahead), anything hot's policy would rather keep
 * (policy_glue_ahead_hot); and not before there are free bytes for it
 * (the mover makes room past the low watermark, reclaims dead bytes).
 * placed: a guess (READ_PLACED: readahead, open-ahead), which lands where
 * the placement puts a miss (fill_first_tier): on warm (demote=flat, hot
 * at its room), it goes if warm's policies have room for it, displacing
 * nothing there either; else it is judged as any guess, on hot's room. */
static enum pf_fit pf_fit(struct prefetch *pf, struct dataset *ds, uint64_t key, uint32_t len,
			  bool placed)
{
	struct tier *hot = &pf->cache->tiers[TIER_HOT];
	if (!hot->present)
		return PF_OFF;
	if (placed) {
		const struct read_ctx rc = {.flags = READ_PREFETCH | READ_PLACED};
		int to = fill_first_tier(pf->cache, ds, len, &rc);
		/* a full warm does not refuse it: judged on hot's room as
		 * before, which lets an open-ahead (the open's own miss,
		 * started beside its stat) go; refusing it made every due
		 * open of a miss under flat stat on its own (session 21:
		 * revalidations answered by the read fell from 3,578 to about
		 * 980 in a due epoch, the epoch 0.63 of epoch 1) */
		if (to == TIER_WARM && policy_glue_room(pf->cache, TIER_WARM) >= len)
			return pf_go(pf, key);
	}
	uint64_t use = plan_store_next_use(pf->cache->plans, key);
	if (!pf_budget_free(pf, len)) {
		struct chunk *v = mover_victim(pf->cache, TIER_HOT);
		if (v && !(pf_may_evict(pf, v, use) &&
			   (use != PLAN_NONE || policy_glue_ahead_hot(pf->cache, ds, key, len)))) {
			pf->stalls++;
			return PF_STALL;
		}
	}
	if (pf_bytes_free(pf, len, use != PLAN_NONE))
		return pf_go(pf, key);
	return pf_no_room(pf, key);
}

/* For a guess (psid 0, issued READ_PLACED by pf_issue). */
static bool pf_room(struct prefetch *pf, struct dataset *ds, uint64_t key, uint32_t len)
{
	return pf_fit(pf, ds, key, len, true) == PF_GO;
}

static void pf_done(struct cache *cache, struct waiter *w, struct chunk *c, int err)
{
	(void)cache;
	struct pf_req *r = (struct pf_req *)w;
	struct prefetch *pf = r->pf;
	pf->inflight--;
	pf->inflight_bytes -= r->len;
	if (err < 0) {
		pf->errors++;
		if (trace_rec_on(pf->cache))
			pf_trace(pf->cache, r, c, TRACE_LOAD_LOST);
	} else if (c && c->state != CHUNK_UNKEPT) {
		double lat = (double)(cache_now_ns() - r->t0);
		pf->lat_ns = pf->lat_ns > 0 ? 0.8 * pf->lat_ns + 0.2 * lat : lat;
		/* a client that asked before it arrived waited: its read was a miss */
		bool late = keymap_del(&pf->waited, c->key);
		if (late)
			pf->late++;
		if (trace_rec_on(pf->cache))
			pf_trace(pf->cache, r, c, late ? TRACE_LANDED_LATE : TRACE_LANDED);
		if (!c->prefetched) {
			c->prefetched = !late;
			/* its read is coming: a policy that gives up its newest
			 * entry first (epoch) must not give this one up for it */
			if (c->prefetched && c->state == CHUNK_RESIDENT && c->ds->pol[c->tier])
				policy_loaded_ahead(c->ds->pol[c->tier], &c->pe);
			pf->bytes += c->len;
			if (!r->psid)
				pf->readahead_bytes += c->len;
			for (struct dplan *pl = pf->reg->list; pl; pl = pl->next)
				if (pl->psid == r->psid)
					pl->prefetched += c->len;
		}
	} else if (trace_rec_on(pf->cache)) {
		pf_trace(pf->cache, r, c, TRACE_LOAD_LOST); /* served to its waiters unkept */
	}
	free(r->path);
	free(r);
	if (!pf->inflight)
		keymap_clear(&pf->waited); /* keys of misses no prefetch was reading */
	if (!pf->cache->stopping)
		prefetch_pump_all(pf);
}

/* Start a prefetch fill of chunk idx. 1: started (or joined a fill in
 * flight), 0: already resident, -errno: cannot. */
static int pf_issue(struct prefetch *pf, struct dataset *ds, const char *path,
		    const struct cold_stat *src, uint32_t idx, uint32_t len, uint64_t psid)
{
	struct pf_req *r = calloc(1, sizeof(*r));
	struct chunk *c = NULL;
	if (!r)
		return -ENOMEM;
	r->w.cb = pf_done;
	r->pf = pf;
	r->psid = psid;
	r->t0 = cache_now_ns();
	r->len = len;
	/* not a read. A plan's load lands on hot (pf_fit checked it
	 * displaces nothing needed sooner); a guess (psid 0: open-ahead,
	 * dir-ahead, readahead) stands for the miss it runs ahead of and is
	 * placed as that miss would be: with demote=flat, on hot only while
	 * hot has room, else where the one LRU's next victim is, so it costs
	 * no copy of hot's victim to warm (fill_place) */
	const struct read_ctx rc_pf = {.flags = READ_PREFETCH | (psid ? 0u : READ_PLACED)};
	if (trace_rec_on(pf->cache)) {
		r->ds = ds;
		r->idx = idx;
		r->path = strdup(path); /* NULL: no row if it ends without a chunk */
	}
	int rc = fill_get(pf->cache, ds, path, src, idx, &rc_pf, &r->w, &c);
	if (rc != 0) {
		free(r->path);
		free(r);
		if (rc < 0)
			pf->errors++;
		return rc == 1 ? 0 : rc;
	}
	pf->inflight++;
	pf->inflight_bytes += len;
	if (pf->inflight > pf->inflight_peak)
		pf->inflight_peak = pf->inflight;
	if (pf->inflight_bytes > pf->inflight_bytes_peak)
		pf->inflight_bytes_peak = pf->inflight_bytes;
	pf->issued++;
	if (trace_rec_on(pf->cache))
		trace_rec_note(pf->cache, ds->name, path, idx, len, TRACE_LOAD, NULL);
	return 1;
}

/* Room for one more small-file read-ahead of len bytes of ds in flight
 * (daemon.prefetch_small_inflight, read each time: live on reload), and
 * not stopping. */
static bool pf_small_room(const struct prefetch *pf, const struct dataset *ds, uint32_t len)
{
	unsigned n = pf->cache->cfg->prefetch_inflight;
	unsigned small = pf->cache->cfg->prefetch_small_inflight;
	uint64_t bytes = (uint64_t)n * ds->conf.chunk_size;
	unsigned cap = n > small ? n : small;
	return !pf->cache->stopping && pf->inflight < cap && pf->inflight_bytes + len <= bytes;
}

/* Entry q of pl's window: its chunk's key and length; true if it is to be
 * loaded (not read yet, not resident, no fill bringing it). */
static bool pf_entry(struct prefetch *pf, struct dplan *pl, uint64_t q, uint64_t *key, uint32_t *len)
{
	uint64_t aux = plan_track_aux(&pl->tr, q);
	const struct plan_file *f = &pl->files[PLAN_AUX_FILE(aux)];
	*len = plans_chunk_len(pl->ds, f, PLAN_AUX_IDX(aux));
	*key = plan_track_key(&pl->tr, q);
	return !plan_track_done(&pl->tr, q) && !chunk_find(&pf->cache->chunks, *key) &&
	       !fill_pending(pf->cache, *key);
}

static int pf_issue_entry(struct prefetch *pf, struct dplan *pl, uint64_t q, uint32_t len)
{
	uint64_t aux = plan_track_aux(&pl->tr, q);
	const struct plan_file *f = &pl->files[PLAN_AUX_FILE(aux)];
	return pf_issue(pf, pl->ds, f->path, &f->src, PLAN_AUX_IDX(aux), len, pl->psid);
}

/* The window's cursor waits at entry q for free bytes: load what fits of
 * the entries past it, within the window (ahead: bytes up to q's end), so
 * that one large chunk does not hold back the small ones behind it. The
 * cursor stays at q: the next pump comes back to it, and passes these
 * (resident or in flight by then) as it goes. */
static void pf_pass(struct prefetch *pf, struct dplan *pl, uint64_t q, uint64_t ahead, uint64_t want)
{
	uint64_t end = plan_track_end(&pl->tr), key0;
	uint32_t len0;
	unsigned held = 1, scanned = 0;
	(void)pf_entry(pf, pl, q, &key0, &len0);
	uint64_t *past; /* looked up each time: a put or del (pf_fit) moves it */
	for (q++; q < end && ahead < want && scanned < PF_PASS_SCAN &&
		  (past = keymap_get(&pf->held, key0)) && *past < len0 &&
		  pf->inflight < pf->cache->cfg->prefetch_inflight;
	     q++, scanned++) {
		uint64_t key;
		uint32_t len;
		if (pf_entry(pf, pl, q, &key, &len)) {
			enum pf_fit fit = pf_fit(pf, pl->ds, key, len, false);
			if (fit == PF_NO_ROOM && ++held <= PF_PASS_HELD) {
				ahead += len;
				continue;
			}
			if (fit != PF_GO || pf_issue_entry(pf, pl, q, len) < 0)
				return;
			pf->passed++;
			if ((past = keymap_get(&pf->held, key0)))
				*past += len;
		}
		ahead += len;
	}
}

void prefetch_pump(struct prefetch *pf, struct dplan *pl)
{
	if (pf->cache->stopping || !pf || pl->resync)
		return; /* a resuming plan does not know where its job is yet */
	uint64_t want = prefetch_window(pf, pl);
	uint64_t end = plan_track_end(&pl->tr);
	if (pl->pf < plan_track_pos(&pl->tr)) {
		pl->pf = plan_track_pos(&pl->tr);
		pl->ahead = 0;
	}
	while (pl->pf < end && pl->ahead < want && pf->inflight < pf->cache->cfg->prefetch_inflight) {
		uint64_t q = pl->pf, key;
		uint32_t len;
		if (pf_entry(pf, pl, q, &key, &len)) {
			enum pf_fit fit = pf_fit(pf, pl->ds, key, len, false);
			if (fit == PF_NO_ROOM)
				pf_pass(pf, pl, q, pl->ahead + len, want);
			if (fit != PF_GO || pf_issue_entry(pf, pl, q, len) < 0)
				break;
		}
		pl->ahead += len;
		pl->pf++;
	}
}

void prefetch_pump_all(struct prefetch *pf)
{
	for (struct dplan *pl = pf->reg ? pf->reg->list : NULL; pl; pl = pl->next)
		prefetch_pump(pf, pl);
}

void prefetch_note_read(struct prefetch *pf, uint64_t key)
{
	if (!pf || (!pf->bytes && !pf->inflight))
		return;
	if (pf->held.count)
		(void)keymap_del(&pf->held, key); /* read: held for room no longer */
	struct chunk *c = chunk_find(&pf->cache->chunks, key);
	if (!c && pf->inflight) {
		if (pf->waited.count >= WAITED_MAX)
			keymap_clear(&pf->waited); /* bounded; at worst a few late reads count as hits */
		(void)keymap_put(&pf->waited, key, 1); /* if a prefetch brings it, not a hit */
		return;
	}
	if (c && c->prefetched) {
		c->prefetched = false;
		pf->hits++;
		pf->hit_bytes += c->len;
	}
}

void prefetch_chunk_dropped(struct prefetch *pf, const struct chunk *c)
{
	if (!pf || !c->prefetched)
		return;
	pf->unused++;
	pf->unused_bytes += c->len;
}

/* In a cluster, is a chunk idx..last of the file homed on another node (a miss
 * would ask it over the peer port)? Then a file read from its first chunk
 * is read ahead at once: a chunk-at-a-time round trip to a peer is what a
 * single reader waits for. A wrong guess (a reader that stops after the
 * first chunk) costs the chunks read ahead: peer transfers, and cold reads
 * of those homed here or not held by their homes. */
static bool next_from_peer(struct prefetch *pf, struct dataset *ds, const char *path,
			   const struct cold_stat *src, uint32_t idx, uint32_t last)
{
	const struct cache_hooks *h = &pf->cache->hooks;
	/* any chunk of the window, not just the next: a next chunk homed
	 * here (a hit) must not leave the peer chunks after it to be asked
	 * one at a time, each once the read before it has landed */
	for (uint32_t j = idx; h->remote_home && j <= last; j++)
		if (h->remote_home(h->arg, chunk_key(ds->name, path, src, j)))
			return true;
	return false;
}

void prefetch_readahead(struct prefetch *pf, struct dataset *ds, const char *path,
			const struct cold_stat *src, uint32_t idx, uint32_t nchunks)
{
	if (pf && nchunks == 1)
		dir_ahead_read(pf, ds, path, src); /* a small file: its neighbours */
	unsigned depth = pf->cache->cfg->readahead_chunks;
	if (!pf || !depth || nchunks < 3 || pf->cache->stopping)
		return;
	uint64_t fkey = chunk_key(ds->name, path, src, 0);
	struct ra_slot *s = &pf->ra[fkey % RA_SLOTS];
	if (s->fkey == fkey && idx + 1 == s->next)
		return; /* the same chunk again */
	/* only a file read front to back from its first chunk (a shard being
	 * streamed): a partial or random read fetches just what it covers */
	if (s->fkey == fkey && idx == s->next && s->run) {
		s->run++;
	} else {
		*s = (struct ra_slot){.fkey = fkey, .run = idx == 0};
	}
	s->next = idx + 1;
	uint32_t last = idx + depth < nchunks - 1 ? idx + depth : nchunks - 1;
	if (s->run < 2 && !(s->run == 1 && next_from_peer(pf, ds, path, src, idx + 1, last)))
		return;
	for (uint32_t j = s->issued > idx ? s->issued + 1 : idx + 1; j <= last; j++) {
		if (pf->inflight >= pf->cache->cfg->prefetch_inflight)
			break;
		uint64_t key = chunk_key(ds->name, path, src, j);
		if (!chunk_find(&pf->cache->chunks, key) && !plans_hold(pf->reg, key)) {
			uint64_t off = (uint64_t)j * ds->conf.chunk_size;
			uint32_t len = (uint32_t)(src->size - off < ds->conf.chunk_size ? src->size - off
											  : ds->conf.chunk_size);
			if (!pf_room(pf, ds, key, len) || pf_issue(pf, ds, path, src, j, len, 0) < 0)
				break;
		}
		s->issued = j;
	}
}

bool prefetch_open_ahead(struct prefetch *pf, struct dataset *ds, const char *path,
			 const struct cold_stat *src)
{
	/* a file of one chunk only: any read of it needs that chunk, while a
	 * larger file may be read anywhere (only the chunks asked for) */
	if (!pf || !pf->cache->cfg->readahead_chunks || src->size == 0 ||
	    src->size > ds->conf.chunk_size || !pf_small_room(pf, ds, (uint32_t)src->size))
		return false;
	uint64_t key = chunk_key(ds->name, path, src, 0);
	if (chunk_find(&pf->cache->chunks, key) || plans_hold(pf->reg, key) ||
	    fill_pending(pf->cache, key)) /* a read-ahead is reading it: the read joins that */
		return false;
	if (!pf_room(pf, ds, key, (uint32_t)src->size) ||
	    pf_issue(pf, ds, path, src, 0, (uint32_t)src->size, 0) != 1)
		return false;
	pf->open_ahead++;
	dir_ahead_read(pf, ds, path, src); /* a miss: its neighbours too */
	return true;
}

void prefetch_report(struct prefetch *pf, struct proto_rs *rs)
{
	proto_rs_section(rs, "prefetch", TC_SHAPE_OBJECT);
	proto_rs_record(rs);
	proto_rs_u64(rs, "inflight", pf->inflight);
	proto_rs_u64(rs, "inflight_bytes", pf->inflight_bytes);
	proto_rs_u64(rs, "inflight_peak", pf->inflight_peak);
	proto_rs_u64(rs, "inflight_bytes_peak", pf->inflight_bytes_peak);
	proto_rs_u64(rs, "issued", pf->issued);
	proto_rs_u64(rs, "open_ahead", pf->open_ahead);
	proto_rs_u64(rs, "dir_ahead", pf->dir_ahead);
	proto_rs_u64(rs, "dir_ahead_depth", pf->da.depth);
	proto_rs_u64(rs, "prefetched_bytes", pf->bytes);
	proto_rs_u64(rs, "readahead_bytes", pf->readahead_bytes);
	proto_rs_u64(rs, "hits", pf->hits);
	proto_rs_u64(rs, "hit_bytes", pf->hit_bytes);
	proto_rs_u64(rs, "evicted_unused", pf->unused);
	proto_rs_u64(rs, "evicted_unused_bytes", pf->unused_bytes);
	proto_rs_u64(rs, "late", pf->late);
	proto_rs_u64(rs, "stalls", pf->stalls);
	proto_rs_u64(rs, "room_waits", pf->room_waits);
	proto_rs_u64(rs, "passed", pf->passed);
	proto_rs_u64(rs, "reclaims", pf->reclaims);
	proto_rs_u64(rs, "errors", pf->errors);
	proto_rs_u64(rs, "latency_us", (uint64_t)(pf->lat_ns / 1000));
	proto_rs_u64(rs, "plans", plans_count(pf->reg));
}

/* For dir_ahead.c (prefetch_int.h). */
struct cache *prefetch_cache(const struct prefetch *pf)
{
	return pf->cache;
}

struct dir_ahead *prefetch_dir_ahead(struct prefetch *pf, uint64_t *hits, uint64_t *unused)
{
	*hits = pf->hits;
	*unused = pf->unused;
	return &pf->da;
}

bool prefetch_may_issue(const struct prefetch *pf, const struct dataset *ds, uint32_t len)
{
	return pf_small_room(pf, ds, len);
}

int prefetch_issue_ahead(struct prefetch *pf, struct dataset *ds, const char *path,
			 const struct cold_stat *src, uint32_t len)
{
	uint64_t key = chunk_key(ds->name, path, src, 0);
	if (plans_hold(pf->reg, key))
		return 0; /* a plan brings it, in its own order */
	if (!pf_room_free(pf, len))
		return -ENOSPC;
	int rc = pf_issue(pf, ds, path, src, 0, len, 0);
	if (rc == 1)
		pf->dir_ahead++;
	return rc;
}
