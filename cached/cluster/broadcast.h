/*
 * The admin broadcast (docs/cluster.md): `tierctl --cluster pin|unpin|
 * evict|demote|policy set|reload` goes to every node through one Redis
 * Stream, tc:{name}:admin, not pub/sub (which loses what a node that is
 * down, or a connection that drops, misses).
 *
 * Publishing: Redis' TIME, then one EVAL that XADDs the command (op, the
 * request's payload, the node it came from) only if Redis' clock is still
 * before TIME + redis_timeout / 2: a command left in the socket of a
 * stopped Redis is refused when it resumes instead of reaching the nodes
 * after the client was told it failed (error reply "STALE": -ESTALE).
 * Fails at once with -ENOTCONN while Redis is down, so the command
 * reaches every node or none.
 *
 * Consuming: every cluster.heartbeat while Redis is up, a non-blocking
 * XREAD COUNT 64 from this node's position (BLOCK never: the connection is
 * shared with membership). Each entry is checked (an allowed op, a payload
 * of at most TC_FRAME_MAX bytes; a malformed one is logged, skipped and
 * counted), applied through the layer above's hook, and then its id is
 * stored in the index (namespace "cluster_admin", key the cluster's name)
 * before the next entry: apply-then-persist. A crash between the two
 * applies that one entry once more after the restart; every op allowed is
 * idempotent (pin, unpin, evict, demote, policy set, reload), so the state
 * is as if it was applied once. A node with no stored position (its first
 * start in this cluster) starts at the stream's end, found with XREVRANGE
 * COUNT 1 and stored at once, and never replays history it did not know;
 * a node with one reads from there: a node that was down when a command
 * was sent applies it when it comes back.
 *
 * Ops that finish asynchronously (pin, demote: they may fill or move
 * chunks) count as applied when they started. Loop thread only.
 */
#ifndef TIERCACHE_BROADCAST_H
#define TIERCACHE_BROADCAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "proto.h"

struct event_base;
struct index;
struct redis_conn;
struct redisReply;
struct broadcast;

#define BROADCAST_ID_MAX 47u      /* a stream id "MS-SEQ" (two u64s) */
#define BROADCAST_READ_COUNT 64u  /* entries one XREAD asks for */
#define BROADCAST_RESULTS 32u     /* last applied entries kept for status */
#define BROADCAST_RESULT_MAX 200u /* bytes of one result text */
#define BROADCAST_INDEX_NS "cluster_admin"

/* Run one op (a protocol request's op and payload, include/tiercache/
 * protocol.h) on this node as an admin; result: "ok ..." or the error
 * text. 0 or -errno. Set by the layer above (api/). */
struct broadcast_hooks {
	void *arg;
	int (*apply)(void *arg, uint8_t op, const void *payload, size_t len, char *result, size_t rn);
};

/* XADD's outcome: err 0 and the entry's id, or -errno (id ""). */
typedef void (*broadcast_done_fn)(void *arg, int err, const char *id);

/* May op go through the stream? PIN, UNPIN, EVICT, DEMOTE, POLICY_SET,
 * RELOAD. */
bool broadcast_op_allowed(uint8_t op);

/* One stream entry as XREAD gives it: [id, [field, value, ...]]. */
struct broadcast_entry {
	char id[BROADCAST_ID_MAX + 1];
	uint8_t op;
	const void *payload; /* in the reply: valid while it is */
	size_t len;
	char from[CONFIG_NAME_MAX + 1];
};
/* 0; -EINVAL with why: the entry is malformed and is skipped, but its id
 * (when readable, else id "") still moves the position; -EPROTO: not even
 * an id (the reply is not a stream's). */
int broadcast_entry_parse(const struct redisReply *e, struct broadcast_entry *out, char *why,
			  size_t whylen);
/* From XINFO STREAM's reply: was the stream trimmed past pos (entries
 * after it gone unread)? 1 yes, 0 no, -EPROTO an unexpected reply; first
 * gets the stream's first id ("" if none). broadcast_trim.c. */
int broadcast_trim_check(const struct redisReply *r, const char *pos, char *first, size_t fn);
/* Is s a stream id "MS-SEQ"? */
bool broadcast_id_valid(const char *s, size_t n);

/* Set up (reading its position from the index) and start the timer;
 * strings of cc are copied. Entries are read once hooks are set. */
int broadcast_new(struct event_base *base, struct redis_conn *rc, const struct cluster_conf *cc,
		  struct index *ix, struct broadcast **out);
void broadcast_set_hooks(struct broadcast *b, const struct broadcast_hooks *hooks);
/* Redis came (back) up: read at once (a position not yet known is found). */
void broadcast_redis_up(struct broadcast *b);
/* Publish op + payload (copied). 0: done is called exactly once, with 0
 * and the id, -ENOTCONN (not sent: Redis did not answer TIME), -ESTALE
 * (refused past its deadline: on no node), -ETIMEDOUT / -ECONNRESET (the
 * EVAL's reply did not come: it ran or will never run, see above),
 * -ECANCELED; returns -ENOTCONN (Redis is down), -EINVAL (op not allowed,
 * payload too long), -ENOMEM: done is never called. */
int broadcast_publish(struct broadcast *b, uint8_t op, const void *payload, size_t len,
		      broadcast_done_fn done, void *arg);
/* Status section "cluster_admin" (position, counts) and
 * "cluster_admin_results" (the last BROADCAST_RESULTS applied). */
void broadcast_report(struct broadcast *b, struct proto_rs *rs);
/* Stop the timer; replies pending are dropped (their callbacks, called by
 * redis_conn_free later, see the broadcast gone). */
void broadcast_free(struct broadcast *b);

#endif
