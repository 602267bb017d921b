/*
 * The last close of a segment that is gone, on a worker.
 *
 * When a dropped segment's last descriptor closes, the kernel frees its
 * page cache and blocks (ext4_evict_inode -> truncate_inode_pages_range):
 * tens of microseconds for a segment of tens of MiB, on whichever thread
 * closes it. Under misses that evict that was the loop, about 15 us per
 * miss (docs/ceph.md, session 16). Each tier's segment store hands such
 * descriptors here (segstore.close_fd) and a worker closes them. Nothing
 * reads through them any more: the segment is unlinked and no chunk or
 * client holds it (a client's own descriptor is its own).
 *
 * And the tiers' spare segment files (store/segment.h "spare"): a worker
 * creates the next segment file of a tier ahead (open O_CREAT|O_EXCL, on
 * ext4 after a mass delete ~0.7 ms of inode search), so that the loop,
 * when a segment seals, takes it instead of creating one while every
 * reader waits. A spare that could not be created leaves the next
 * segment to the loop, whose creation error goes to the tier's health as
 * before.
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_SEG_CLOSE_H
#define TIERCACHE_SEG_CLOSE_H

#include "cache.h"

/* The workers run: the tiers' segment stores close, and create their
 * spares, on them from now on (on the loop again once the daemon stops). */
void seg_close_start(struct cache *cache);

#endif
