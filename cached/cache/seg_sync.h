/*
 * Group commit of segment appends that must be durable before their
 * record is written (the mover's copies: demotions, promotions and
 * reclaim's kept items).
 *
 * A copy into a segment used to fdatasync the segment on its worker, one
 * sync per item: on a 2-core VM with a virtio disk about 0.5 ms each, and
 * while it ran the worker was not filling misses. Now the worker only
 * writes; the loop queues the copy here, and one sync job per segment
 * covers every copy that finished writing before it started. Copies that
 * finish while a sync runs wait for the next one. A copy is told how its
 * sync ended and only then rewrites its record (mover.c), so the order
 * "bytes durable, then the record, then the old item dies" is unchanged.
 *
 * The segment stays alive meanwhile: each waiting copy still counts as a
 * writer of it (segment_write_end comes after the sync).
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_SEG_SYNC_H
#define TIERCACHE_SEG_SYNC_H

#include "cache.h"

struct seg_syncs;

struct seg_sync_waiter {
	struct seg_sync_waiter *next;
	/* the sync that covers this waiter's write ended (err 0 or -errno) */
	void (*done)(struct seg_sync_waiter *w, int err);
};

/* *nsyncs counts the syncs run (a counter of the cache's). */
struct seg_syncs *seg_syncs_new(uint64_t *nsyncs);
/* Nothing may be waiting (every sync job ended: workers stopped). */
void seg_syncs_free(struct seg_syncs *s);
/* w's bytes are written into g: call w->done after an fdatasync of g that
 * starts from now (a job on workers). 0, or -ENOMEM (w->done is not
 * called: sync it yourself). */
int seg_sync_after_write(struct seg_syncs *s, struct workers *workers, struct segment *g,
			 struct seg_sync_waiter *w);

#endif
