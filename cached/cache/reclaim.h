/*
 * Reclaiming mostly dead segments, keeping what the policy keeps.
 *
 * A sealed segment with at most RECLAIM_LIVE_PCT % of its bytes live
 * (RECLAIM_LIVE_PCT_OVER % while the tier's used bytes, dead ones
 * included, are over its high mark; RECLAIM_LIVE_PCT_TIGHT % while less
 * than a segment is left for new bytes) is reclaimed whole: each live
 * item is either copied into the open segment
 * of the tier the policy glue names (policy_glue_reclaim: its own tier,
 * or warm for a hot item the placement demotes) or dropped (the cold store
 * has it). Copies are the mover's (mover_copy): read, checksum checked (a
 * bad item is dropped and counted in checksum_errors), written, synced,
 * then the item's record is rewritten to name the copy, and only then does
 * the old item die; the segment is unlinked when its last item died.
 * Descriptors clients hold into it keep reading its bytes. Copies into
 * its own tier may use the tier's spare (tier.spare, one segment): the
 * room new bytes do not take, so that a tier full of live and dead bytes
 * can always compact instead of dropping what its policies keep.
 *
 * Bounded per loop turn: a pass looks at RECLAIM_STEP items and keeps at
 * most RECLAIM_COPIES copies in flight per tier; a finished copy asks the
 * mover for another pass. One segment per tier at a time.
 *
 * A fill that finds no room (mover_reclaim) still drops the live items of
 * the segments it reclaims: it needs the room now, and a copy needs room
 * first.
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_RECLAIM_H
#define TIERCACHE_RECLAIM_H

#include "cache.h"

#define RECLAIM_LIVE_PCT 25u
#define RECLAIM_LIVE_PCT_OVER 75u /* while the tier is over its high mark */
#define RECLAIM_LIVE_PCT_TIGHT 90u /* while less than a segment is free */
#define RECLAIM_STEP 32u
#define RECLAIM_COPIES 8u

#define RECLAIM_CHOICES 8u /* segments ranked per choice (reclaim_choose) */

int reclaim_init(struct cache *cache);
/* Size tier t's segments for its capacity (segment_size_for, the
 * configured segment_size) when a reload changes the tier's capacity
 * (cache_init sizes them at start). The tier keeps one segment's worth spare for the reclaim's
 * copies (tier.spare) while it holds segments; each reclaim step updates
 * it (at most the bytes its segments take: a tier of chunk files keeps
 * none). */
void reclaim_size_tier(struct cache *cache, enum tier_id t, uint64_t configured);
/* The segment of tier t to reclaim next, sealed: of the RECLAIM_CHOICES
 * deadest with at most max_live_pct % live, the one whose live items the
 * policy keeps least (fewest bytes a reclaim would copy into t per byte it
 * gives back), then the deadest; none with an item being moved or
 * pinned (it would stay named). NULL if none. */
struct segment *reclaim_choose(struct cache *cache, enum tier_id t, unsigned max_live_pct);
/* Unlink g if it is sealed with no item and no writer (an open segment
 * whose items all died is sealed so when the next item does not fit):
 * its bytes leave tier t (or wait for the descriptors clients hold).
 * True if it did. */
bool reclaim_reap_empty(struct cache *cache, enum tier_id t, struct segment *g);
void reclaim_free(struct cache *cache);
/* One bounded step of tier t's reclaim (the mover's pass calls it). */
void reclaim_step(struct cache *cache, enum tier_id t);

#endif
