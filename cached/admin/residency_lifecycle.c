/*
 * Lifecycle (residency.h): demote hot chunks not read for demote_after to
 * warm on the mover, drop warm ones (or hot ones with no warm tier) not
 * read for evict_after at once; a dry run only counts. Loop thread only.
 */
#include "residency_op.h"

/* A dataset's lifecycle thresholds for this run, seconds (0: never). */
static void lc_thresholds(const struct dataset *ds, const struct res_lifecycle *lc,
			  uint64_t *demote, uint64_t *evict)
{
	if (lc->older_than_s >= 0) {
		*demote = *evict = (uint64_t)lc->older_than_s;
		return;
	}
	*demote = ds->conf.demote_after_s;
	*evict = ds->conf.evict_after_s;
}

int residency_lifecycle(struct residency *res, struct dataset *ds, const struct res_lifecycle *lc,
			const struct res_cb *cb, struct res_result *r)
{
	struct cache *cache = res->cache;
	bool warm = cache->tiers[TIER_WARM].present;
	struct rop *op = rop_new(res, ROP_DEMOTE, cb);
	if (!op)
		return res_fail(r, -ENOMEM, "out of memory");
	op->make_room = true; /* warm's own policy picks what leaves for it */
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it)) {
		uint64_t demote, evict;
		if (ds && c->ds != ds) {
			continue;
		}
		lc_thresholds(c->ds, lc, &demote, &evict);
		int64_t age = lc->as_of_s - c->atime_s;
		if (c->state == CHUNK_PINNED) {
			if ((demote && age > (int64_t)demote) || (evict && age > (int64_t)evict))
				res_count_add(&op->r.skipped_pinned, c->len);
		} else if (c->state == CHUNK_RESIDENT) {
			bool hot = c->tier == TIER_HOT;
			if (hot && warm && demote && age > (int64_t)demote) {
				int rc = rop_add_chunk(op, c);
				if (rc < 0)
					return rop_build_failed(op, r, rc);
				res_count_add(&op->r.selected, c->len);
			} else if ((!hot || !warm) && evict && age > (int64_t)evict) {
				/* warm data, or hot data with no warm tier below */
				res_count_add(&op->r.dropped, c->len);
				if (!lc->dry_run) {
					cache->ctr.evictions++;
					chunk_drop(cache, c, "lifecycle");
				}
			}
		}
	}
	if (lc->dry_run) {
		/* what would move: the chunks selected for demotion */
		op->r.moved = op->r.selected;
		op->n = 0;
	} else {
		op->r.selected = (struct res_count){0}; /* counted again as they start */
	}
	rop_pump(op);
	return 0;
}
