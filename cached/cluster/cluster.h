/*
 * The cluster (docs/cluster.md): this daemon as one node of many that
 * share one cache. It ties together the Redis connection (redis_conn.h),
 * membership (members.h), chunk homes (home.h), the peer port
 * (peer_server.h) and the peer requests (peer_client.h), and answers the
 * engine's remote_read hook: a miss whose chunk's home is another live,
 * trusted node is asked of that node; everything else reads the cold
 * store as before. Nothing here blocks a client on Redis or on a peer.
 *
 * Absent ([cluster] not in the config) the daemon has no cluster and the
 * engine no remote_read hook: it behaves exactly as a single node.
 * Loop thread only.
 */
#ifndef TIERCACHE_CLUSTER_H
#define TIERCACHE_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "config.h"
#include "proto.h"

struct cluster;
struct broadcast;
struct plans;

/* Load the key file (and Redis password file), set up (nothing is
 * started). 0, or -errno with the reason in err. */
int cluster_new(struct cache *cache, const struct cluster_conf *cc, struct cluster **out, char *err,
		size_t errlen);
/* The daemon's plans: whole-job plans are shared through Redis
 * (plan_share.h). Before cluster_start. */
void cluster_set_plans(struct cluster *cl, struct plans *reg);
/* Bind the peer port, connect to Redis, start heartbeats. */
int cluster_start(struct cluster *cl, char *err, size_t errlen);
/* Is this node key's home now (any node is while no member list is
 * known)? arg: the cluster. */
bool cluster_is_home(void *arg, uint64_t key);
/* The engine's remote_read hook (cache.h). */
int cluster_remote_read(void *arg, struct remote_read *rr);
/* The engine's manifest_fetch / manifest_listed hooks (cache.h): one
 * listing per cluster (manifest_share.h). */
int cluster_manifest_fetch(void *arg, struct manifest_fetch *f);
void cluster_manifest_listed(void *arg, struct manifest_fetch *f, int err);
/* Manifests published, loaded from Redis, listed here as a fallback. */
void cluster_manifest_counts(const struct cluster *cl, uint64_t out[3]);
/* Stop: fail the peer requests in flight (their fills read the cold
 * store or end), close the peer port, leave the member list. Before the
 * engine stops. */
void cluster_stop(struct cluster *cl);
void cluster_free(struct cluster *cl);

/* Status sections "cluster" (this node), "cluster_members" (every live
 * member) and "cluster_egress" (per member and dataset, as each last
 * reported through Redis), and the admin broadcast's "cluster_admin" and
 * "cluster_admin_results" (broadcast.h). */
void cluster_report(struct cluster *cl, struct proto_rs *rs);
/* Fills that fell back to the cold store, by reason (metrics). */
size_t cluster_fallback_reasons(void);
const char *cluster_fallback_reason(size_t i);
uint64_t cluster_fallbacks(const struct cluster *cl, size_t i);
/* Is the coordination (Redis) reachable now? For cluster commands, which
 * fail at once when it is not. */
bool cluster_coordinated(const struct cluster *cl);
/* tierctl cluster drain / undrain (drain.h): 0, or -ENOTCONN (not
 * started) or -ENOMEM. */
int cluster_drain(struct cluster *cl, bool on);
/* The admin broadcast (broadcast.h) once started, else NULL: the root
 * sets its apply hook, the api publishes through it. */
struct broadcast *cluster_broadcast(const struct cluster *cl);

#endif
