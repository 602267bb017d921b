/*
 * Whole-job plans shared through Redis (docs/cluster.md, "DDP plans"): a
 * plan registered on any node (plan/job_plans.h) reaches every node that
 * serves a rank of its job, which installs its ranks' slices and prefetches
 * them from the chunks' homes.
 *
 * In Redis, per cluster NAME:
 *   tc:{NAME}:jplans        hash, field "DATASET JOB" -> "GEN NP EXPIRES_MS
 *                           PUBLISHED_MS CLEN RAWLEN HASH" (times: Redis TIME;
 *                           NP 0: a tombstone, the plan was cancelled)
 *   tc:{NAME}:jplan:GEN:I   piece I of version GEN (plan_codec.h), <= 1 MiB,
 *                           with a TTL
 *   tc:{NAME}:jplan_gen     a counter: a version is Redis ms * 1024 + counter
 *                           % 1024, so versions grow across a Redis restart
 * A publish is one script: the old version's pieces go, the new ones are
 * written under a fresh GEN and the field is set, all at once, so a reader
 * never mixes two registrations (it reads GEN's pieces, which only that
 * script wrote). The node that registered the plan refreshes its TTL every
 * heartbeat while the plan lives; a dead job's (or node's) plan lapses.
 * A cancel leaves a tombstone for one TTL, so nodes drop their copies at
 * their next poll. A cancel made while Redis cannot be reached (or whose
 * command got no answer) is kept (at most PLAN_CANCELS_MAX (plan_cancels.h), for at
 * most PLAN_SHARE_CANCEL_AGE_TTLS TTLs) and sent first thing when Redis is
 * back; it then cancels only the registration it was made for (its
 * version, or the same list republished), never a newer one.
 *
 * Every heartbeat each node lists the index (one script, which also drops
 * lapsed fields) and loads, one at a time with MGET, the plans it does not
 * have at that version, of every job whose dataset it has: a node that
 * serves no rank of a job is still home for its share of the job's chunks
 * (its home view, job_plans.h). Nothing here is on a
 * client's path: a read before a plan arrives simply misses. With Redis
 * down, local plans work locally, the copies from the cluster stay, and
 * publishing resumes when Redis is back (a plan missing from an empty
 * Redis is published again at the next refresh: within two heartbeats).
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_PLAN_SHARE_H
#define TIERCACHE_PLAN_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "config.h"
#include "proto.h"

struct redis_conn;
struct plans;
struct plan_share;

#define PLAN_SHARE_INDEX_MAX 1024u /* fields of the index a node takes */
#define PLAN_SHARE_CANCEL_AGE_TTLS 10u /* ... for at most this many plan TTLs */

/* Set up on reg's whole-job plans (sets their hooks) and start the timer.
 * is_home(home_arg, key): is this node key's home (job_plans.h: slices
 * give up copies of chunks homed elsewhere). 0 or -ENOMEM. */
int plan_share_new(struct cache *cache, struct redis_conn *rc, const struct cluster_conf *cc,
		   struct plans *reg, bool (*is_home)(void *home_arg, uint64_t key), void *home_arg,
		   struct plan_share **out);
/* The Redis connection came back: refresh, publish and list now. */
void plan_share_redis_up(struct plan_share *ps);
/* The member list changed (homes moved): the job plans' home views are
 * installed again (job_plans_rehome). */
void plan_share_members_changed(struct plan_share *ps);
/* Status section "cluster_plans". */
void plan_share_report(const struct plan_share *ps, struct proto_rs *rs);
/* Unhooks from the plans; replies still due are dropped. */
void plan_share_free(struct plan_share *ps);

#endif
