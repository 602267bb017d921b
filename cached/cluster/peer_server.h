/*
 * The peer port: other daemons of the cluster ask this node for chunks it
 * is home for (peer_proto.h has the exchange). A connection is served
 * nothing until its handshake has proved it holds the cluster key; then
 * each GET is answered from this node's tiers, or by a fill from the cold
 * store (single flight with this node's own readers, READ_FOR_PEER so it
 * is never passed on to another peer), the bytes sent with sendfile from
 * the chunk's file. Bounded: cluster.peer_max_clients connections, one
 * request in flight per connection, a handshake deadline
 * (cluster.peer_connect_timeout) and an idle limit. Loop thread only.
 */
#ifndef TIERCACHE_PEER_SERVER_H
#define TIERCACHE_PEER_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "config.h"
#include "peer_auth.h"

struct peer_server;

struct peer_server_stats {
	uint64_t accepted;      /* connections taken */
	uint64_t refused_limit; /* closed at once: peer_max_clients */
	uint64_t refused_auth;  /* handshakes that failed (bad proof, garbage, timeout) */
	uint64_t gets;          /* requests answered with data */
	uint64_t get_errors;    /* requests answered with an error */
	uint64_t bytes_sent;    /* chunk bytes sent */
	uint64_t prev_served;   /* of gets: asked by a chunk's new home (PEER_GET_PREV_HOME) */
	uint64_t prev_misses;   /* such asks for a chunk not resident here (ENODATA) */
	uint64_t takes;         /* chunks a draining node handed over, kept here (PEER_GET_KEEP) */
	unsigned conns;         /* connections open now */
};

/* Bind cc->peer_host:peer_port and serve. keys must outlive the server.
 * 0, or -errno with the reason in err. */
int peer_server_start(struct cache *cache, const struct cluster_conf *cc, const struct peer_keys *keys,
		      struct peer_server **out, char *err, size_t errlen);
void peer_server_stats(const struct peer_server *ps, struct peer_server_stats *out);
/* Close every connection and the port. Requests waiting for a fill end
 * when it does (the fill's waiter is freed then). */
void peer_server_stop(struct peer_server *ps);

#endif
