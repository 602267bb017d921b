/*
 * The glue between the daemon and policy/: for each dataset, one policy
 * instance per tier and the placement that asks them (policy/placement.h);
 * the daemon-wide plan store that plan-aware policies read; the calls the
 * read path, the fill path and the mover make (docs/policies.md, "What the
 * daemon calls"); switching a dataset's policy at run time, and keeping
 * that choice across restarts (policy_spec.h has the precedence rule).
 *
 * Budget: a tier's policy instances manage its low watermark
 * (tier.low_bytes; high_bytes when low_water is 0): the policies keep the
 * tier at or below it, choosing what stays. The band above is for bytes no
 * policy controls: fills and copies in flight, chunks served without being
 * kept, files clients still hold after eviction. Past the high watermark
 * the mover drains the tier back to the low one as a backstop. With
 * several datasets on a tier each one's instance sees the whole budget and
 * the mover keeps their sum within it, giving up the candidate read
 * longest ago across datasets.
 *
 * Loop thread only (the policies, the plan store and the index are the
 * loop's).
 */
#ifndef TIERCACHE_POLICY_GLUE_H
#define TIERCACHE_POLICY_GLUE_H

#include "cache.h"
#include "proto.h"

/* The plan store (empty until the plan API feeds it). */
int policy_glue_init(struct cache *cache);
void policy_glue_free(struct cache *cache);

/* Startup (the index is open): create ds's instances from the persisted
 * runtime choice if it still applies, else from the config file. On error
 * (the file's policy cannot be created) a message in err. */
int policy_glue_setup(struct cache *cache, struct dataset *ds, char *err, size_t errlen);
void policy_glue_teardown(struct dataset *ds);

/* The byte budget of tier t's policies (see above). */
uint64_t policy_glue_budget(const struct cache *cache, enum tier_id t);
/* Bytes tier t's policies hold before the mover gives their victims up:
 * the budget; on hot when every dataset on it uses demote=flat and no
 * plan is registered, the high watermark (the band demote=1's trailing
 * demotions fill; policy_glue.c). The mover's backstop then drains hot
 * back to it, not to the low mark. With a plan the band stays the
 * prefetcher's, as with demote=1. */
uint64_t policy_glue_hold(const struct cache *cache, enum tier_id t);
/* Bytes the policies of tier t hold now, over every dataset (chunks being
 * moved are in none). */
uint64_t policy_glue_tier_bytes(const struct cache *cache, enum tier_id t);

/* Every read of a chunk, before any policy hears of it: the plan store's
 * clock and its jobs' cursors. */
void policy_glue_access(struct cache *cache, uint64_t key, const struct read_ctx *rc);
/* A read missed every tier and starts a fill: TIER_HOT, TIER_WARM, or
 * TIER_NONE (serve it, keep nothing). Never a failed tier: the other one
 * instead, or TIER_NONE. */
int policy_glue_fill(struct cache *cache, struct dataset *ds, uint64_t key, uint32_t len);
/* Where policy_glue_fill would put a fill of len bytes first, asking no
 * policy and counting nothing (placement_fill_first): the same tiers. */
int policy_glue_fill_first(struct cache *cache, struct dataset *ds, uint32_t len);
/* The tier `refused` (returned by one of these) has no room now that the
 * fill may take (placement_fill_instead): the next tier that admits it, or
 * TIER_NONE. Never a failed tier. */
int policy_glue_fill_instead(struct cache *cache, struct dataset *ds, int refused, uint64_t key,
			     uint32_t len);
/* A prefetch no plan asked for (readahead, open-ahead) would displace
 * hot's victim: may it (placement_ahead_hot)? */
bool policy_glue_ahead_hot(struct cache *cache, struct dataset *ds, uint64_t key, uint32_t len);
/* Bytes tier t's policies could still take within their budget: the
 * hold (policy_glue_hold) less what they hold, what is arriving (fills and moves in
 * flight, every dataset) and what is pinned; 0 for a missing or failed
 * tier, or one whose disk has no room left. A chunk of len bytes served
 * unkept while this is >= len for some tier is one the daemon lost, not
 * one the policies gave up (counted as served_unkept_room). */
uint64_t policy_glue_room(const struct cache *cache, enum tier_id t);
/* A read hit resident chunk c (state CHUNK_RESIDENT): tells its policy;
 * returns TIER_HOT when a warm chunk should be promoted, else its tier. */
int policy_glue_hit(struct cache *cache, struct chunk *c);
/* c was named by hot's victim(): TIER_WARM to demote it, TIER_NONE to
 * drop it. */
int policy_glue_demote(struct cache *cache, struct chunk *c);

struct reclaim_rank;

/* c is a live item of a segment its tier reclaims (mover.c): where should
 * it go? Its own tier (copied into the tier's open segment), TIER_WARM
 * (demoted, as the placement says for a hot chunk the hot policy does not
 * keep), or TIER_NONE (dropped; the cold store has it). seg_size: the
 * reclaimed segment's size; rk: the tier's rank for this batch
 * (reclaim_rank.h), or NULL. See policy_glue.c for the rule. */
int policy_glue_reclaim(struct cache *cache, struct chunk *c, uint64_t seg_size,
			const struct reclaim_rank *rk);
/* The first half of that: does c's own tier keep it? No side effect (the
 * demotion's question counts as an access for warm's policy). */
bool policy_glue_reclaim_keeps(struct cache *cache, struct chunk *c, uint64_t seg_size,
			       const struct reclaim_rank *rk);
#define RECLAIM_OLDEST_PART 4

/* A fill or a move of len bytes into tier t of ds started / ended (either
 * way): the placement counts bytes in flight as held when it asks the
 * tier's policy to admit more (placement.h, inflight). */
void policy_glue_arriving(struct dataset *ds, int t, uint32_t len);
void policy_glue_arrived(struct dataset *ds, int t, uint32_t len);

/* Switch ds to spec (tierctl), or back to the config file's choice (spec
 * NULL). All or nothing: on an unknown policy, a bad tunable or a failed
 * index write the old policy stays, -EINVAL / -EIO / -ENOMEM and a message
 * in err. Resident chunks stay; they move to the new instances in the
 * order they were read. The learnt state of the old instances is gone. */
int policy_glue_set(struct cache *cache, struct dataset *ds, const struct policy_spec *spec,
		    char *err, size_t errlen);

/* One record of fields about ds's policy (tierctl policy show). */
void policy_glue_report(struct cache *cache, struct dataset *ds, struct proto_rs *rs);
/* One record per known policy: name, summary, tunables. */
void policy_glue_report_known(struct proto_rs *rs);

#endif
