/*
 * Giving back the blocks of dead segment items (store/segment.h,
 * "Punching"), so that a tier of small chunks needs no copying reclaim to
 * get its dead bytes back.
 *
 * An item's blocks go when it is dead and no one holds it: the last
 * reference to its file (cfile) went, so no client, check or copy reads
 * its bytes again. The loop counts them off the segment and the tier at
 * once and queues the punch; a worker punches a batch (fallocate
 * PUNCH_HOLE, the file keeps its size). A punch that fails puts the bytes
 * back on the tier as dead (the reclaim returns them); a file system that
 * says it cannot punch (EOPNOTSUPP) turns punching off for that tier.
 *
 * A record of an item whose blocks were punched can outlive the item only
 * if the machine crashed before the index's delete reached the disk (its
 * WAL is not synced): every chunk found at start is checked against its
 * checksum before it is first served (verify.h), so such an item is found
 * bad and read again, never served as zeros.
 *
 * At most SEG_PUNCH_QUEUED punches wait; past that a dead item's bytes
 * stay, as dead bytes, for the reclaim. A batch starts SEG_PUNCH_DELAY_US
 * after its first request, at once when SEG_PUNCH_BATCH wait, or when the
 * job before it ends: a job per batch, not per item. The index's deferred deletes of dropped chunks
 * (index_chunk_delete_later) are committed before each batch starts, so
 * no record names blocks being punched; the same timer commits them when
 * nothing is punched (chunk files).
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_SEG_PUNCH_H
#define TIERCACHE_SEG_PUNCH_H

#include "cache.h"

#define SEG_PUNCH_QUEUED 4096u
/* A punch job waits this long for more requests, unless this many wait. */
#define SEG_PUNCH_DELAY_US 5000
#define SEG_PUNCH_BATCH 64u

int seg_punch_init(struct cache *cache);
/* Workers are stopped: no job is in flight. */
void seg_punch_free(struct cache *cache);
/* The item of segment g (named) of tier t at off, len bytes long, is dead
 * and unheld: give its blocks back. */
void seg_punch_item(struct cache *cache, enum tier_id t, struct segment *g, uint64_t off, uint32_t len);
/* Within SEG_PUNCH_DELAY_US: the index's deferred deletes are committed
 * (index_chunk_delete_later) and the waiting punches start. */
void seg_punch_flush_later(struct cache *cache);
/* Start (workers running): give back the blocks between the live items of
 * the segments found at start (segment.gaps): the holes of the last run,
 * which their file's size still counts, and dead items whose punch did not
 * happen. As many segments as the queue takes; the others after each
 * batch. */
void seg_punch_gaps(struct cache *cache);
/* Whether tier t's dead items are punched (its file system can, and
 * punching was not turned off by a failure). */
bool seg_punch_on(const struct cache *cache, enum tier_id t);

#endif
