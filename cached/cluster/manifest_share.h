/*
 * One listing per cluster (docs/cluster.md, "Shared manifests"): the
 * engine's manifest_fetch / manifest_listed hooks (cache.h).
 *
 * A dataset's manifest is published through Redis as generations: the
 * encoded manifest, zstd-compressed, in pieces of at most 1 MiB
 * (manifest_pieces.h) under tc:{NAME}:mf:DATASET:GEN:I, and the meta hash
 * tc:{NAME}:mf:DATASET (gen, pieces, raw, zsize, xxh3, source, node,
 * listed_ms by Redis' clock), written last by one script, so that a
 * reader never mixes two generations; the pieces of the generation it
 * replaces expire a minute later.
 *
 * A load asks Redis first. A current generation of the same source: it
 * is loaded (pieces on the loop with deadlines, decompress, check and
 * decode on a worker). None (or a bad one): the dataset's manifest home
 * (weighted rendezvous over the live members, keyed by the dataset and
 * its source) takes the listing lock tc:{NAME}:mf:DATASET:lock, lists and
 * publishes; every other node polls each heartbeat for the generation
 * and, past its deadline (2 x cluster.lease, pushed back while a live
 * lister holds the lock, at most 30 min), lists the source itself. Redis
 * unreachable: it lists at once. A refresh, on any node, wants the source
 * as of now: it loads only a generation published after it began, else
 * takes the lock, lists and publishes a new generation; the others notice
 * it on their heartbeat and reload from Redis. Loop thread only.
 */
#ifndef TIERCACHE_MANIFEST_SHARE_H
#define TIERCACHE_MANIFEST_SHARE_H

#include <stdint.h>

#include "cache.h"
#include "config.h"
#include "proto.h"

struct redis_conn;
struct members;
struct manifest_share;

int manifest_share_new(struct cache *cache, struct redis_conn *rc, struct members *mem,
		       const struct cluster_conf *cc, struct manifest_share **out);
/* The hooks (cache.h); arg is the manifest_share. */
int manifest_share_fetch(void *arg, struct manifest_fetch *f);
void manifest_share_listed(void *arg, struct manifest_fetch *f, int err);
/* Fail the fetches still waiting (their loads end with -ECANCELED) and
 * stop the timer; before the Redis connection is closed. */
void manifest_share_stop(struct manifest_share *ms);
/* After the Redis connection and the workers are gone. */
void manifest_share_free(struct manifest_share *ms);

/* Counters (status "cluster"): manifests published, loaded from Redis,
 * and loads that listed the source because Redis had none to give. */
void manifest_share_counts(const struct manifest_share *ms, uint64_t *published, uint64_t *loaded,
			   uint64_t *fallbacks);
/* Status section "cluster_manifests": per dataset where its manifest came
 * from. */
void manifest_share_report(const struct manifest_share *ms, struct proto_rs *rs);

#endif
