/*
 * The scrubber: a background walk that re-checks every resident chunk's
 * file against its checksum (verify.h), one chunk at a time on a worker,
 * at [daemon] scrub_rate bytes per second (0: off), read from the running
 * config at every step so a reload takes effect at once. A chunk that does
 * not match is dropped, counted (checksum_errors) and logged; its next
 * read fetches it from the cold store. ZFS's scrub and Ceph's deep scrub
 * do the same for their disks.
 *
 * Chunks being moved (the move checks them), served unkept, or already
 * being checked are skipped for the pass. Loop thread.
 */
#ifndef TIERCACHE_SCRUB_H
#define TIERCACHE_SCRUB_H

#include "cache.h"

/* After cache_start (it uses the workers). 0 or -ENOMEM. */
int scrub_start(struct cache *cache);
/* After cache_stop (a check in flight ends while the workers drain). */
void scrub_free(struct cache *cache);
/* Wall clock of the last finished pass over the whole table (0: none). */
int64_t scrub_last_pass_s(const struct cache *cache);

#endif
