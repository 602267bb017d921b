/*
 * Stat-ahead: revalidate the entries a reader is about to open before it
 * opens them, many stats in flight, so that their opens find them fresh.
 *
 * A file older than its dataset's revalidate_after is confirmed against
 * the source before it is served (dataset.h). On a store without a cheap
 * stat (RADOS) that is one round trip per open, one at a time per reader:
 * an epoch in which every entry is due waits for a stat per file. When a
 * request finds its entry due, the entries of the same directory around it
 * that are due, or will be within a quarter of revalidate_after, are
 * stat'd ahead, at most daemon.stat_ahead_inflight at once (0: off). Loop
 * thread only.
 */
#ifndef TIERCACHE_STAT_AHEAD_H
#define TIERCACHE_STAT_AHEAD_H

#include "cache.h"
#include "dataset.h"
#include "manifest.h"

/* A request found e due and asks the store about it itself: stat its
 * directory's neighbours ahead (not e). by_read: the request started the
 * read of e's one chunk beside its revalidation, which may answer for the
 * stat (open-ahead). Does nothing for a store with a cheap stat, a store
 * failing, revalidate_after 0, or the key at 0. */
void stat_ahead_trigger(struct cache *cache, struct dataset *ds, const struct mf_entry *e,
			bool by_read);

/* A request found e due (any cold store without a cheap stat): e is
 * opened, so it may be stat'd ahead again. If a stat ahead of it is in
 * flight: wait for that answer, cb
 * then runs on the loop with what dataset_revalidate_async's cb would get.
 * Returns 0 if joined, -ENOENT if no stat ahead of e is in flight (the
 * caller revalidates as usual), -ENOMEM. */
int stat_ahead_join(struct cache *cache, struct dataset *ds, struct mf_entry *e,
		    dataset_reval_cb cb, void *arg);

/* A request found e fresh: count it if a stat ahead confirmed it. */
static inline void stat_ahead_seen(struct cache *cache, struct mf_entry *e)
{
	if (e->ahead_ok) {
		e->ahead_ok = false;
		cache->ctr.stat_ahead_used++;
	}
	e->ahead_lapsed = false;
}

/* Stats ahead in flight (status, metrics). */
unsigned stat_ahead_inflight(const struct cache *cache);

/* After the workers stopped (no stat ahead is in flight then). */
void stat_ahead_free(struct cache *cache);

#endif
