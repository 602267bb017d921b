/*
 * Counting what a client's reads were (counts.h): hits per tier, misses,
 * trace rows. Loop thread.
 */
#include "counts.h"

#include "chunk.h"
#include "handlers.h"
#include "mover.h"
#include "policy_glue.h"

/* An access served to c, for a trace that records (trace_rec.h). */
void counts_trace(struct conn *c, const struct chunk *ch, enum trace_result res)
{
	if (trace_rec_on(conn_api(c)->cache))
		trace_rec_note(conn_api(c)->cache, ch->ds->name, ch->path, ch->idx, ch->len, res,
			       &conn_sess(c)->job);
}

/* A hit on tier of chunk idx (len bytes) of ds/path: counted and traced. */
static void note_hit(struct conn *c, struct dataset *ds, const char *path, uint32_t idx, uint32_t len,
		     uint8_t tier)
{
	struct cache *cache = conn_api(c)->cache;
	if (trace_rec_on(cache))
		trace_rec_note(cache, ds->name, path, idx, len, tier == TIER_HOT ? TRACE_HOT : TRACE_WARM,
			       &conn_sess(c)->job);
	if (tier == TIER_HOT)
		cache->ctr.hits_hot++;
	else
		cache->ctr.hits_warm++;
	ds->hits++;
}

void counts_hit(struct conn *c, struct chunk *ch)
{
	struct cache *cache = conn_api(c)->cache;
	note_hit(c, ch->ds, ch->path, ch->idx, ch->len, ch->tier);
	ch->atime_s = cache_wall_s();
	/* a chunk being moved is in no policy until the move ends */
	if (ch->state != CHUNK_RESIDENT)
		return;
	/* only a real hit promotes, and only if hot's policy wants it: a fill
	 * that landed on warm is not evidence that the chunk is hot */
	if (policy_glue_hit(cache, ch) == TIER_HOT && ch->tier == TIER_WARM)
		mover_promote(cache, ch);
}

void counts_miss(struct cache *cache, struct dataset *ds)
{
	cache->ctr.misses++;
	ds->misses++;
}

/* Chunk idx of hd found resident for a read: a hit, unless its open
 * started this very fill (own_fill0), which makes it the open's miss. */
void counts_resident(struct conn *c, struct handle *hd, uint32_t idx, struct chunk *ch)
{
	if (idx == 0 && hd->own_fill0) {
		hd->own_fill0 = false;
		counts_miss(conn_api(c)->cache, hd->ds);
		counts_trace(c, ch, TRACE_MISS);
		return;
	}
	counts_hit(c, ch);
}

/* Chunk idx of hd is being read from the cold store for a read: a miss. */
void counts_filling(struct conn *c, struct handle *hd, uint32_t idx)
{
	if (idx == 0)
		hd->own_fill0 = false;
	counts_miss(conn_api(c)->cache, hd->ds);
}

void handlers_count_access(struct conn *c, struct handle *hd)
{
	struct cache *cache = conn_api(c)->cache;
	uint64_t key = chunk_key(hd->ds->name, hd->path, &hd->src, 0);
	const struct read_ctx rc_open = conn_read_ctx(c);
	policy_glue_access(cache, key, &rc_open);
	struct chunk *ch = chunk_find(&cache->chunks, key);
	if (ch) {
		counts_hit(c, ch);
		return;
	}
	/* evicted since the record was handed (open-ahead counts at close):
	 * the client read it through the descriptor it held, a hit on the
	 * tier it was on (an unkept chunk's miss was counted at its fill) */
	const struct cfile *f = hd->nheld && hd->held[0].idx == 0 ? hd->held[0].f : NULL;
	if (f && f->fd < 0)
		note_hit(c, hd->ds, hd->path, 0, f->len, f->tier);
}
