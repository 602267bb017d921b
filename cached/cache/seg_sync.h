/*
 * Group commit of segment appends that must be durable before their
 * record is written (the mover's copies: demotions, promotions and
 * reclaim's kept items).
 *
 * A copy into a segment used to fdatasync the segment on its worker, one
 * sync per item: on a 2-core VM with a virtio disk about 0.5 ms each, and
 * while it ran the worker was not filling misses. Then (session 21) the
 * worker only wrote and one sync job per segment covered every copy that
 * finished writing before it started; but a sync started as soon as one
 * copy waited, so under a stream of demotions (one per miss that evicts)
 * groups stayed small: about one fdatasync per 1.5 demotions (session 16).
 *
 * Now copies wait in a window: their syncs start when the copies waiting
 * pass a count or a number of bytes (seg_syncs_set_group), or when the
 * oldest has waited SEG_SYNC_WINDOW_MS, whichever comes first; then one
 * sync job per segment with copies waiting covers all of them. Copies that
 * finish writing while a segment's sync runs wait for a later one. A copy
 * is told how its sync ended and only then rewrites its record (mover.c),
 * so the order "bytes durable, then the record, then the old item dies" is
 * unchanged. The records of the copies one sync covers are written in one
 * index write batch (index_batch_begin/commit), committed before any of
 * them lets its old copy go.
 *
 * The segment stays alive meanwhile: each waiting copy still counts as a
 * writer of it (segment_write_end comes after the sync).
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_SEG_SYNC_H
#define TIERCACHE_SEG_SYNC_H

#include "cache.h"

/* the longest a copy waits for others to share its sync */
#define SEG_SYNC_WINDOW_MS 100

struct seg_syncs;

struct seg_sync_waiter {
	struct seg_sync_waiter *next;
	uint32_t len; /* bytes this copy wrote (the group's byte bound) */
	/* Optional: the sync succeeded; write the copy's index record now.
	 * The records of one sync's waiters are committed in one write batch
	 * before any waiter's done() runs, so done() may let the old copy go
	 * (punch, unlink) without a window in which a kill -9 finds no
	 * record of either copy. */
	void (*record)(struct seg_sync_waiter *w);
	/* the sync that covers this waiter's write ended (err 0 or -errno) */
	void (*done)(struct seg_sync_waiter *w, int err);
};

/* *nsyncs counts the syncs run (a counter of the cache's); the records of
 * one sync's copies go to *ixp in one write batch (*ixp is read at each
 * sync: the index may open after this; NULL: no batch). */
struct seg_syncs *seg_syncs_new(struct event_base *base, struct index **ixp, uint64_t *nsyncs);
/* Nothing may be waiting (every sync job ended: workers stopped). */
void seg_syncs_free(struct seg_syncs *s);
/* Start the syncs once this many copies or bytes wait (across segments).
 * The caller keeps max_items below its own bound of copies waiting. */
void seg_syncs_set_group(struct seg_syncs *s, unsigned max_items, uint64_t max_bytes);
/* w's bytes (w->len) are written into g: call w->done after an fdatasync
 * of g that starts from now (a job on workers), within the window. 0, or
 * -ENOMEM (w->done is not called: sync it yourself). */
int seg_sync_after_write(struct seg_syncs *s, struct workers *workers, struct segment *g,
			 struct seg_sync_waiter *w);
/* Someone waits for the copies waiting now (an admin move, a reclaim):
 * start their syncs without waiting for the group to fill. */
void seg_syncs_start(struct seg_syncs *s);
/* The daemon stops: start every waiting sync now, and each later one at
 * once (the loop's timers no longer run). */
void seg_syncs_stop(struct seg_syncs *s);
/* Copies written and not yet in a sync that started (status, tests). */
unsigned seg_syncs_waiting(const struct seg_syncs *s);

#endif
