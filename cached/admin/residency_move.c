/*
 * tierctl evict and demote (residency.h): evict drops the selection's
 * unpinned chunks at once; demote copies its unpinned hot chunks to warm on
 * the mover (residency_run.c). Loop thread only.
 */
#include "residency_op.h"

#include <errno.h>
#include <inttypes.h>

int residency_evict(struct residency *res, struct dataset *ds, const char *rest, struct res_result *r)
{
	struct cache *cache = res->cache;
	if (res_check_selection(ds, rest, r) < 0)
		return r->err;
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it)) {
		if (res_chunk_in(c, ds, rest)) {
			res_count_add(&r->selected, c->len);
			if (c->state == CHUNK_PINNED || c->pin_after_move) {
				res_count_add(&r->skipped_pinned, c->len);
			} else {
				res_count_add(&r->dropped, c->len);
				cache->ctr.evictions++;
				chunk_drop(cache, c, "admin_evict"); /* a moving one goes when its copy ends */
			}
		}
	}
	return 0;
}

int residency_demote(struct residency *res, struct dataset *ds, const char *rest,
		     const struct res_cb *cb, struct res_result *r)
{
	struct cache *cache = res->cache;
	struct tier *warm = &cache->tiers[TIER_WARM];
	if (!warm->present)
		return res_fail(r, -ENODEV, "there is no warm tier in this daemon's config: nothing to demote to");
	if (res_check_selection(ds, rest, r) < 0)
		return r->err;
	struct rop *op = rop_new(res, ROP_DEMOTE, cb);
	if (!op)
		return res_fail(r, -ENOMEM, "out of memory");
	uint64_t need = 0;
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it)) {
		if (!res_chunk_in(c, ds, rest) || c->tier != TIER_HOT)
			continue;
		if (c->state == CHUNK_PINNED) {
			res_count_add(&op->r.skipped_pinned, c->len);
			continue;
		}
		int rc = rop_add_chunk(op, c);
		if (rc < 0)
			return rop_build_failed(op, r, rc);
		need += c->len;
	}
	if (need > 0 && warm->failed) {
		/* its health probe found it unwritable: say so, not "0 bytes free" */
		rop_free(op);
		return res_fail(r, -EIO,
				"warm cannot be written (%s): nothing was moved; the daemon takes it back "
				"when a probe write succeeds",
				warm->fail_reason);
	}
	if (need > tier_free(warm)) {
		uint64_t room = tier_free(warm);
		rop_free(op);
		return res_fail(r, -ENOSPC,
			    "warm has %" PRIu64 " bytes free, demoting needs %" PRIu64 ": evict from "
			    "warm (tierctl evict) or demote less; nothing was moved",
			    room, need);
	}
	rop_pump(op);
	return 0;
}
