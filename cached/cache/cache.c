/*
 * The engine as a whole: building its tables, the index and the tiers,
 * loading the chunks the index names and reconciling them with the tier
 * files, starting and stopping the threads it uses. Startup order matters:
 * the index is read and reconciled with the tier directories before any
 * client can connect, so a restarted daemon (even after kill -9) serves only
 * chunks whose complete file and index record both exist. Loop thread (or
 * the main thread before the loop runs).
 */
#include "cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "chunk.h"
#include "dataset.h"
#include "durable.h"
#include "fill.h"
#include "index.h"
#include "log.h"
#include "loop.h"
#include "mover.h"
#include "seg_close.h"
#include "policy_glue.h"
#include "seg_punch.h"
#include "stat_ahead.h"
#include "tier_health.h"
#include "trace_rec.h"
#include "verify.h"
#include "workers.h"

uint64_t cache_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t cache_wall_s(void)
{
	return (int64_t)time(NULL);
}

struct dataset *cache_dataset(struct cache *cache, const char *name, size_t n)
{
	for (unsigned i = 0; i < cache->nds; i++)
		if (strlen(cache->ds[i]->name) == n && memcmp(cache->ds[i]->name, name, n) == 0)
			return cache->ds[i];
	return NULL;
}

/* ---- startup: index records + tier files ---- */

struct loaded {
	struct index_chunk ic;
	char *dataset, *path;
};

struct load_ctx {
	struct cache *cache;
	struct loaded *v;
	size_t n, cap;
	unsigned dropped;
};

static int load_one(void *arg, const struct index_chunk *ic)
{
	struct load_ctx *lc = arg;
	struct cache *cache = lc->cache;
	if (ic->tier >= TIER_COUNT || !cache->tiers[ic->tier].present ||
	    !cache_dataset(cache, ic->dataset, strlen(ic->dataset))) {
		/* its tier or dataset left the config: forget it (the file goes
		 * as an orphan) */
		index_chunk_delete(cache->ix, ic->key);
		lc->dropped++;
		return 0;
	}
	if (lc->n == lc->cap) {
		size_t cap = lc->cap ? lc->cap * 2 : 1024;
		struct loaded *v = realloc(lc->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		lc->v = v;
		lc->cap = cap;
	}
	struct loaded *l = &lc->v[lc->n];
	l->ic = *ic;
	l->dataset = strdup(ic->dataset);
	l->path = strdup(ic->path);
	if (!l->dataset || !l->path) {
		free(l->dataset);
		free(l->path);
		return -ENOMEM;
	}
	lc->n++;
	return 0;
}

static int by_atime(const void *a, const void *b)
{
	int64_t x = ((const struct loaded *)a)->ic.atime_s, y = ((const struct loaded *)b)->ic.atime_s;
	return (x > y) - (x < y);
}

struct seg_keep {
	struct load_ctx *lc;
	uint8_t tier;
};

/* A segment file is kept if a record names it (and the record's item fits
 * in it; linking checks each item). */
static bool seg_known(void *arg, uint64_t id, uint64_t size)
{
	struct seg_keep *k = arg;
	(void)size;
	for (size_t i = 0; i < k->lc->n; i++)
		if (k->lc->v[i].ic.seg == id && k->lc->v[i].ic.tier == k->tier)
			return true;
	return false;
}

/* Startup: link each loaded chunk of a segment to it, if its bytes are
 * there; the rest are left unseen and dropped. Then the segments' sizes
 * replace the items' lengths in the tiers' used. */
static int load_segments(struct cache *cache, struct load_ctx *lc, unsigned *removed)
{
	for (int t = 0; t < TIER_COUNT; t++) {
		if (!cache->tiers[t].present)
			continue;
		struct seg_keep k = {.lc = lc, .tier = (uint8_t)t};
		unsigned r = 0;
		int rc = segstore_load(&cache->segs[t], seg_known, &k, &r);
		if (rc < 0)
			return rc;
		*removed += r;
	}
	for (size_t i = 0; i < lc->n; i++) {
		const struct index_chunk *ic = &lc->v[i].ic;
		if (!ic->seg)
			continue;
		struct chunk *c = chunk_find(&cache->chunks, ic->key);
		struct segstore *ss = &cache->segs[ic->tier];
		struct segment *g = segstore_find(ss, ic->seg);
		if (!c || c->file->seg || c->tier != ic->tier || !g || ic->seg_off + ic->len > g->size)
			continue;
		chunk_set_segment(c, g, ic->seg_off);
		segment_adopt_item(ss, g, ic->seg_off, ic->len);
		tier_release(&cache->tiers[ic->tier], ic->len); /* counted with its segment below */
		c->seen = true;
	}
	for (int t = 0; t < TIER_COUNT; t++) {
		segstore_load_done(&cache->segs[t]);
		for (struct segment *g = cache->segs[t].list; g; g = g->next)
			if (g->named)
				tier_adopt(&cache->tiers[t], segment_disk_bytes(g));
	}
	return 0;
}

static bool file_known(void *arg, struct tier *t, uint64_t key, uint64_t size)
{
	struct cache *cache = arg;
	struct chunk *c = chunk_find(&cache->chunks, key);
	if (!c || c->tier != t->id || c->len != size || c->file->seg)
		return false;
	c->seen = true;
	return true;
}

int cache_load(struct cache *cache, char *err, size_t errlen)
{
	struct load_ctx lc = {.cache = cache};
	unsigned bad = 0, orphans_total = 0, missing = 0;
	int rc = index_chunk_scan(cache->ix, load_one, &lc, &bad);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read the index: %s", strerror(-rc));
		goto out;
	}
	/* oldest first, so each policy sees them in the order they were read */
	if (lc.n > 1)
		qsort(lc.v, lc.n, sizeof(*lc.v), by_atime);
	for (size_t i = 0; i < lc.n; i++) {
		struct loaded *l = &lc.v[i];
		struct dataset *ds = cache_dataset(cache, l->dataset, strlen(l->dataset));
		if (chunk_find(&cache->chunks, l->ic.key))
			continue;
		tier_adopt(&cache->tiers[l->ic.tier], l->ic.len);
		struct chunk *c = chunk_publish(cache, ds, l->path, &l->ic.src, l->ic.idx, l->ic.len,
						l->ic.checksum, l->ic.tier, l->ic.atime_s, false);
		if (!c) {
			rc = -ENOMEM;
			snprintf(err, errlen, "out of memory loading the index");
			goto out;
		}
		/* reconcile checks its size only: its bytes are checked before
		 * it is first served (verify.h) */
		c->unverified = true;
	}
	for (int t = 0; t < TIER_COUNT; t++) {
		unsigned orphans;
		rc = tier_reconcile(&cache->tiers[t], file_known, cache, &orphans);
		if (rc < 0) {
			snprintf(err, errlen, "tier %s: cannot scan %s: %s", cache->tiers[t].name,
				 cache->tiers[t].path, strerror(-rc));
			goto out;
		}
		orphans_total += orphans;
	}
	rc = load_segments(cache, &lc, &orphans_total);
	if (rc < 0) {
		snprintf(err, errlen, "cannot scan the segments: %s", strerror(-rc));
		goto out;
	}
	/* records whose file is missing or the wrong size */
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it)) {
		if (!c->seen) {
			chunk_drop(cache, c, "no_file");
			missing++;
		}
	}
	log_info("op=reconcile chunks=%zu orphan_files_removed=%u records_without_file=%u "
		 "undecodable_records=%u records_of_removed_datasets=%u",
		 chunk_table_count(&cache->chunks), orphans_total, missing, bad, lc.dropped);
	rc = 0;
out:
	for (size_t i = 0; i < lc.n; i++) {
		free(lc.v[i].dataset);
		free(lc.v[i].path);
	}
	free(lc.v);
	return rc;
}

struct start_msg {
	char *err;
	size_t errlen;
	bool set;
};

/* The first overlap found refuses the start (the message names both). */
static void start_overlap(void *arg, const char *msg)
{
	struct start_msg *sm = arg;
	if (!sm->set)
		snprintf(sm->err, sm->errlen, "refusing to start: %s", msg);
	sm->set = true;
}

static void start_warning(void *arg, const char *msg)
{
	(void)arg;
	log_warn("op=start warning=\"%s\"", msg);
}

int cache_init(struct cache *cache, const struct config *cfg, struct event_base *base, char *err,
	       size_t errlen)
{
	int rc;
	memset(cache, 0, sizeof(*cache));
	loop_owner_set(); /* the thread that builds the engine runs its loop */
	cache->cfg = cfg;
	cache->base = base;
	if ((rc = chunk_table_init(&cache->chunks)) < 0 || (rc = fill_table_init(&cache->fills)) < 0 ||
	    (rc = chunk_fdcache_init(cache)) < 0 || (rc = mover_init(cache)) < 0 ||
	    (rc = verify_init(cache)) < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	rc = index_open(&cache->ix, cfg->state_dir, err, errlen);
	if (rc < 0)
		return rc;
	if ((rc = policy_glue_init(cache)) < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	/* the config check compared the directories when it ran; the file
	 * system may have changed since (a symlink swapped, a mount): again,
	 * before anything is created or deleted in them */
	struct start_msg sm = {.err = err, .errlen = errlen};
	if (config_check_resolved(cfg, start_overlap, &sm))
		return -EEXIST;
	config_warnings(cfg, start_warning, NULL);
	for (int t = 0; t < TIER_COUNT; t++) {
		char id[TIER_ID_LEN + 1];
		rc = tier_setup(&cache->tiers[t], (enum tier_id)t, &cfg->tiers[t], id, err, errlen);
		if (rc < 0)
			return rc;
		tier_health_record_id(cache, (enum tier_id)t, id, false);
		if (!cache->tiers[t].present)
			continue;
		rc = segstore_init(&cache->segs[t], cache->tiers[t].path, cache->tiers[t].name,
				   segment_size_for(cfg->segment_size, cache->tiers[t].capacity));
		if (rc < 0) {
			snprintf(err, errlen, "tier %s: cannot create %s/" SEGMENT_DIR ": %s",
				 cache->tiers[t].name, cache->tiers[t].path, strerror(-rc));
			return rc;
		}
		if (strcmp(cfg->segment_punch, "yes") != 0) {
			cache->segs[t].punch = false;
			snprintf(cache->segs[t].punch_why, sizeof(cache->segs[t].punch_why),
				 "segment_punch = no");
		}
	}
	cache->seg_threshold = cfg->segment_threshold;
	if ((rc = tier_health_init(cache)) < 0 || (rc = seg_punch_init(cache)) < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	cache->ds = calloc(cfg->ndatasets ? cfg->ndatasets : 1, sizeof(*cache->ds));
	if (!cache->ds) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int cache_start(struct cache *cache, char *err, size_t errlen)
{
	int rc = workers_start(&cache->workers, cache->base, cache->cfg->workers);
	if (rc < 0) {
		snprintf(err, errlen, "cannot start %u worker threads", cache->cfg->workers);
		return rc;
	}
	seg_close_start(cache); /* dropped segments' last close on a worker */
	rc = durable_init(cache);
	if (rc < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	rc = tier_health_start(cache);
	if (rc < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	seg_punch_gaps(cache); /* the holes of segments found at start */
	mover_kick(cache);
	return 0;
}

void cache_stop(struct cache *cache)
{
	cache->stopping = true;
	trace_rec_free(cache); /* the trace file ends complete */
	tier_health_stop(cache);
	/* Cold reads in flight end on a backend thread and go on through the
	 * workers (fill.c): wait for them while the workers still run. */
	for (unsigned i = 0; i < cache->nds; i++)
		if (cache->ds[i]->opened)
			cold_quiesce(&cache->ds[i]->cold);
	mover_stop(cache); /* copies waiting for a grouped sync get it */
	workers_stop(cache->workers); /* runs what is queued, delivers completions */
	cache->workers = NULL;
	for (int t = 0; t < TIER_COUNT; t++)
		segstore_seal_open(&cache->segs[t]);
	durable_flush(cache); /* a graceful stop keeps every chunk: sync and record */
	durable_free(cache);
}

void cache_free(struct cache *cache)
{
	trace_rec_free(cache);
	for (unsigned i = 0; i < cache->nds; i++)
		dataset_flush_manifest(cache, cache->ds[i]);
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it)) {
		free(c->file); /* no client holds anything now */
		free(c->path);
		free(c);
	}
	chunk_table_free(&cache->chunks);
	chunk_fdcache_free(cache);
	fill_table_free(&cache->fills);
	verify_free(cache);
	stat_ahead_free(cache);
	for (unsigned i = 0; i < cache->nds; i++)
		dataset_free(cache, cache->ds[i]);
	free(cache->ds);
	cache->ds = NULL;
	cache->nds = 0;
	policy_glue_free(cache);
	mover_free(cache);
	seg_punch_free(cache);
	tier_health_free(cache);
	for (int t = 0; t < TIER_COUNT; t++)
		segstore_free(&cache->segs[t]);
	index_close(cache->ix);
	cache->ix = NULL;
}
