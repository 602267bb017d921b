/*
 * tierctl warm, pin and unpin (residency.h): build the op from the
 * manifest, refuse what cannot fit before filling anything, then run it
 * (residency_run.c). Unpin answers at once. Loop thread only.
 */
#include "residency_op.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tiercache/protocol.h"

int residency_warm(struct residency *res, struct dataset *ds, const char *path, uint32_t first,
		   uint32_t nchunks, int tier, unsigned flags, const struct res_cb *cb,
		   struct res_result *r)
{
	struct cache *cache = res->cache;
	struct mf_entry *e = manifest_find(ds->mf, path);
	if (!e)
		return res_fail(r, -ENOENT, "no file \"%s\" in dataset %s", path, ds->name);
	if (tier != TIER_COUNT && !cache->tiers[tier].present)
		return res_fail(r, -ENODEV, "there is no %s tier in this daemon's config",
			    tier == TIER_HOT ? "hot" : "warm");
	struct rop *op = rop_new(res, ROP_WARM, cb);
	if (!op)
		return res_fail(r, -ENOMEM, "out of memory");
	op->tier = tier;
	op->flags = flags;
	int rc = rop_add_chunks(op, ds, e, first, nchunks);
	if (rc < 0)
		return rop_build_failed(op, r, rc);
	rop_pump(op);
	return 0;
}

int residency_pin(struct residency *res, struct dataset *ds, const char *rest, const struct res_cb *cb,
		  struct res_result *r)
{
	struct cache *cache = res->cache;
	char spec[TC_PATH_MAX + TC_DATASET_NAME_MAX + 2];
	snprintf(spec, sizeof(spec), "%s%s%s", ds->name, *rest ? "/" : "", rest);
	if (res_check_selection(ds, rest, r) < 0)
		return r->err;
	struct rop *op = rop_new(res, ROP_PIN, cb);
	if (!op || !(op->pin_spec = strdup(spec))) {
		if (op)
			rop_free(op);
		return res_fail(r, -ENOMEM, "out of memory");
	}
	int rc = rop_add_manifest(op, ds, rest);
	if (rc < 0)
		return rop_build_failed(op, r, rc);
	/* pins count against capacity: refuse before filling anything */
	uint64_t need = 0, room = 0;
	for (size_t i = 0; i < op->n; i++) {
		struct chunk *c = chunk_find(&cache->chunks, op->items[i].key);
		if (!c || c->state != CHUNK_PINNED)
			need += op->items[i].len;
	}
	for (int t = 0; t < TIER_COUNT; t++)
		room += pin_room(cache, t);
	if (need > room) {
		char a[32], b[32];
		snprintf(a, sizeof(a), "%" PRIu64, need);
		snprintf(b, sizeof(b), "%" PRIu64, room);
		rop_free(op);
		return res_fail(r, -ENOSPC,
			    "%s does not fit: pinning it needs %s more bytes, the tiers can pin %s more "
			    "(pins may take each tier up to its low watermark; %" PRIu64 " bytes pinned "
			    "now); pinned nothing",
			    spec, a, b, cache->pinned[TIER_HOT] + cache->pinned[TIER_WARM]);
	}
	rop_pump(op);
	return 0;
}

int residency_unpin(struct residency *res, struct dataset *ds, const char *rest, struct res_result *r)
{
	struct cache *cache = res->cache;
	char spec[TC_PATH_MAX + TC_DATASET_NAME_MAX + 2];
	snprintf(spec, sizeof(spec), "%s%s%s", ds->name, *rest ? "/" : "", rest);
	/* a pin above the selection: unpinning part of it is ambiguous */
	for (size_t i = 0; i < res->pins.n; i++) {
		const char *pin = res->pins.specs[i], *prest;
		if (pin_in(pin, ds, &prest) && strlen(prest) < strlen(rest) && path_under(rest, prest))
			return res_fail(r, -EBUSY,
				    "%s is inside the pin on %s: unpin %s (then pin what should stay)",
				    spec, pin, pin);
	}
	size_t removed = pin_set_remove_under(&res->pins, cache, ds, rest);
	if (!removed)
		return res_fail(r, -ENOENT, "nothing is pinned at or under %s (tierctl status shows pinned bytes)",
			    spec);
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it))
		if ((c->state == CHUNK_PINNED || c->pin_after_move) && res_chunk_in(c, ds, rest) &&
		    !pin_set_covers(&res->pins, c)) {
			res_count_add(&r->pinned, c->len);
			unpin_chunk(cache, c);
		}
	return 0;
}
