/*
 * What a segment reclaim keeps, in the policy's own order.
 *
 * A reclaim (reclaim.c, mover.c) must decide for each live item of the
 * segment whether to copy it or let it go. The simulator has no segments:
 * its policy gives up exactly its victims, in its order, as fills need
 * room. So the daemon lets an item go only if the tier's policies would
 * give it up anyway within the bytes the tier must soon give up: what its
 * policies hold plus the segment's bytes again, less their budget. Which
 * entries those are is the policies' next victims (policy.h,
 * next_victims), merged across datasets as the mover merges them (the one
 * read longest ago first, mover_victim).
 *
 * A rank is taken once for a batch of decisions (candidates of a choice,
 * a step's items) and looked up per item: no walk per item. A tier with a
 * policy that cannot say its order (epoch, clairvoyant) gets no rank; the
 * caller then falls back to the rule by last access (policy_glue.c).
 *
 * Loop thread only; valid until the policies change (the caller's batch).
 */
#ifndef TIERCACHE_RECLAIM_RANK_H
#define TIERCACHE_RECLAIM_RANK_H

#include "cache.h"

/* Entries a rank lists at most: beyond them an item counts as kept. */
#define RECLAIM_RANK_MAX (1u << 16)

struct rank_item {
	const struct pol_entry *e;
	uint64_t before; /* bytes the policies give up before this entry */
};

struct reclaim_rank {
	bool ordered;     /* every policy on the tier says its order */
	int tier;
	uint64_t room;    /* the tier's policies' budget less what they hold */
	size_t n;
	struct rank_item *v; /* sorted by entry address */
};

/* Rank tier t's entries for reclaims of segments of up to seg_size
 * bytes. On no memory or a policy without order, rk->ordered is false. */
void reclaim_rank_begin(struct reclaim_rank *rk, struct cache *cache, enum tier_id t,
			uint64_t seg_size);
/* Does c's tier let c go when a segment of seg_size bytes is reclaimed?
 * 1: yes (among the victims of the next bytes the tier gives up), 0: no,
 * -1: the rank cannot say (not ordered, another tier). */
int reclaim_rank_goes(const struct reclaim_rank *rk, const struct chunk *c, uint64_t seg_size);
void reclaim_rank_end(struct reclaim_rank *rk);

#endif
