/*
 * Keeping tiers within their watermarks: past a tier's high watermark the
 * mover demotes hot chunks to warm (or, for the last tier, evicts them; the
 * cold store still has the data) until the low watermark; a warm hit
 * promotes its chunk back to hot. Copies between tiers run on workers and
 * verify the chunk's checksum on the way. Loop thread only.
 */
#ifndef TIERCACHE_MOVER_H
#define TIERCACHE_MOVER_H

#include "cache.h"

int mover_init(struct cache *cache);
/* The daemon stops (before the workers): copies waiting for a grouped
 * sync get it now (seg_sync.h). */
void mover_stop(struct cache *cache);
void mover_free(struct cache *cache);
/* Moves between tiers in flight (status, metrics). */
unsigned mover_inflight(const struct cache *cache);
/* ... of which copies written into segments, waiting for their sync. */
unsigned mover_syncing(const struct cache *cache);
/* Ask for a maintenance pass soon (coalesced). */
void mover_kick(struct cache *cache);
/* The chunk the tier should give up next across all datasets, or NULL. */
struct chunk *mover_victim(struct cache *cache, enum tier_id t);
/* Evict at once until `len` bytes fit on the tier. 0 or -ENOSPC. */
int mover_make_room(struct cache *cache, enum tier_id t, uint64_t len);
/* Like mover_make_room, for a fill: gives up the tier's victims only
 * while each one's bytes leave the tier at once (no client holds its file,
 * not an item of a segment), at most a few: it never empties a tier whose
 * room clients hold. 0 or -ENOSPC (some victims may be gone then). */
int mover_make_room_now(struct cache *cache, enum tier_id t, uint64_t len);
/* A warm chunk was read: copy it up to hot if hot has room. */
void mover_promote(struct cache *cache, struct chunk *c);
/* Evict one chunk (counted as an eviction). */
void mover_evict(struct cache *cache, struct chunk *c);

/* How a mover_move() ended: 0 (the chunk now lives on the new tier), or
 * -errno (a failed copy drops the chunk: -EBADMSG for a bad checksum;
 * except when the target tier could not be written: the chunk stays where
 * it was and the tier is marked, tier_health.h).
 * Loop thread; the chunk may be gone: look it up by key. */
typedef void (*mover_done_fn)(struct cache *cache, void *arg, int err);
/* Admin moves (admin/residency*.c): copy resident chunk c to tier `to` now,
 * regardless of MOVES_MAX (the caller bounds its own moves). make_room:
 * evict `to`'s policy victims if it has no room. Returns 0 (cb follows),
 * -ENODEV (no such tier), -EBUSY (not in state CHUNK_RESIDENT), -EALREADY
 * (already there), -ENOSPC, -ENOMEM. */
int mover_move(struct cache *cache, struct chunk *c, enum tier_id to, bool make_room, mover_done_fn cb,
	       void *arg);

/* As mover_move, and also to the chunk's own tier (a segment reclaim keeps
 * an item: it is copied into the tier's open segment, reclaim.c). */
int mover_copy(struct cache *cache, struct chunk *c, enum tier_id to, bool make_room, mover_done_fn cb,
	       void *arg);

/* Reclaim segments of tier t, deadest first (their live items dropped),
 * until len bytes are free or none is left: true if they are. */
bool mover_reclaim(struct cache *cache, enum tier_id t, uint64_t len);

#endif
