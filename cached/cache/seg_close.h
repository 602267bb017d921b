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
 * Loop thread only.
 */
#ifndef TIERCACHE_SEG_CLOSE_H
#define TIERCACHE_SEG_CLOSE_H

#include "cache.h"

/* The workers run: the tiers' segment stores close on them from now on
 * (on the loop again once the daemon stops). */
void seg_close_start(struct cache *cache);

#endif
