/*
 * Watching the tier disks: a tier whose file system has less room than its
 * capacity, that went read-only, that returns I/O errors or whose directory
 * was removed degrades the cache, never fails a read.
 *
 *   - Every TIER_CHECK_MS (and at start, and at once after a write error) a
 *     worker looks at each tier: statvfs (free space, read-only flag), its
 *     marker and layout, and for a failed tier a probe write (create, write,
 *     fsync, unlink a small file in TIER/tmp). Back on the loop: the tier's
 *     room becomes used + free (tier_set_room: the effective capacity and
 *     the watermarks follow), a read-only tier is marked failed, a tier
 *     whose directory is gone is marked failed and its chunks are dropped
 *     (table, index, accounting), a failed tier whose probe succeeds is
 *     taken back. A removed tier directory that an admin recreated (empty,
 *     on the same file system as at start) gets its layout and a new marker.
 *   - Fills and moves report their write errors (tier_health_write_error):
 *     ENOSPC/EDQUOT shrink the room to what is on the tier now; any other
 *     error marks the tier failed. The fill then goes elsewhere (fill.c).
 * Every state change is logged once. Loop thread.
 */
#ifndef TIERCACHE_TIER_HEALTH_H
#define TIERCACHE_TIER_HEALTH_H

#include "cache.h"

#define TIER_CHECK_MS 2000u

int tier_health_init(struct cache *cache);
/* Start: one check now, synchronously (before clients), then periodic. */
int tier_health_start(struct cache *cache);
void tier_health_stop(struct cache *cache);
void tier_health_free(struct cache *cache);

/* Record the marker id of a tier in the index (start, re-init); at start
 * (expected false) warn when the index knew another one. */
void tier_health_record_id(struct cache *cache, enum tier_id t, const char *id, bool expected);

/* A write to tier t failed with err (-errno) on `path`: shrink or fail the
 * tier (see above) and check it soon. The caller has already given back
 * its reservation. */
void tier_health_write_error(struct cache *cache, enum tier_id t, int err, const char *path);

/* Is err a failure to write the tier (not of the data or of memory)? */
bool tier_health_is_tier_error(int err);

#endif
