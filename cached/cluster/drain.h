/*
 * Draining a node (`tierctl cluster drain`, docs/cluster.md "Join, drain
 * and leave"): the node goes to state draining, so that every node stops
 * choosing it as a home (handover.h), and hands its chunks over: once
 * every node has had time to see the new state (this node's list shows
 * it draining, then two more heartbeats), it walks the chunks resident
 * here whose home it was and asks each chunk's new home for it, as any
 * peer would. The new home misses, asks its previous home -- this node --
 * (PEER_GET_PREV_HOME), and keeps the copy, so no chunk is read from the
 * cold store again. Progress (chunks handed over, failed, left) is in
 * the status section "cluster". Undrain (state up again) stops the walk.
 *
 * A drain outlives a restart: it is recorded in the index (namespace
 * DRAIN_INDEX_NS, keyed by the cluster's name) until undrain, and a node
 * that starts with the record comes back draining, never a home, and walks
 * its chunks again (those already handed over are hits at their new homes).
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_DRAIN_H
#define TIERCACHE_DRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "members.h"
#include "peer_client.h"
#include "proto.h"

/* remote_read.flags of a hand-over request (not a read: its failures are
 * no fallbacks). Above every READ_* bit. */
#define READ_DRAIN_TAKE 0x10000u
#define DRAIN_INFLIGHT 2u /* hand-over requests at once */
#define DRAIN_INDEX_NS "cluster_drain"

struct drain_env {
	struct cache *cache;
	struct members *mem;
	struct peer_client *cli;
	const char *self;      /* this node's id */
	const char *cluster;   /* the cluster's name: the drain's index key */
	uint64_t heartbeat_ms;
};

struct drain;

int drain_new(const struct drain_env *env, struct drain **out);
/* Drain (on) or undrain (!on). 0, or -ENOMEM. Draining again while
 * draining changes nothing. */
int drain_set(struct drain *d, bool on);
/* At start: drain again if a drain was recorded before a restart (and
 * not undone). 1: draining, 0: no record, -errno: could not start it. */
int drain_restore(struct drain *d);
/* Has the walk ended (every chunk handed over, failed or gone)? */
bool drain_done(const struct drain *d);
/* Fields of the "cluster" record: drain, drain_chunks_*, drain_error. */
void drain_report(const struct drain *d, struct proto_rs *rs);
/* Stop the walk (requests in flight end through the peer client). */
void drain_free(struct drain *d);

#endif
