/*
 * Membership through Redis: each daemon registers itself with a lease and
 * learns the live members (docs/cluster.md, "What lives in Redis").
 *
 * Every heartbeat (cluster.heartbeat) is one script run on Redis (EVAL:
 * the script is small, and nothing depends on a SCRIPT LOAD having
 * survived a Redis restart) that, with the time taken from Redis
 * (TIME: no two nodes' clocks are compared), records this node's lease in
 * tc:{cluster}:members (a sorted set scored by Redis milliseconds), writes
 * its fields in tc:{cluster}:node:{id} (addr, capacity, state,
 * incarnation, stats), removes members whose lease is older than
 * cluster.lease, and returns every live member with its lease age. The
 * list kept here is the last one Redis gave; while Redis cannot be reached
 * it stays as it was (members_age_ms says how old it is), so peers are
 * still asked. An empty Redis (restarted) is simply written again by the
 * next heartbeat of every node.
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_MEMBERS_H
#define TIERCACHE_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "redis_conn.h"

struct event_base;
struct redis_conn;

#define MEMBERS_MAX 256u        /* members a reply may list; more is refused */
#define MEMBER_STATS_MAX 4096u  /* bytes of one member's stats (JSON) */
#define MEMBERS_JOIN_LISTS 2u   /* a new node is "joining" (not a home) until
				 * it has read this many member lists */

enum member_state {
	MEMBER_UP = 0,
	MEMBER_JOINING = 1,
	MEMBER_DRAINING = 2,
};

struct member {
	char id[CONFIG_NAME_MAX + 1];
	char addr[128];          /* its peer port, "HOST:PORT" */
	uint64_t capacity;       /* hot + warm bytes: its weight for homes */
	uint8_t state;           /* enum member_state */
	uint64_t incarnation;    /* a new one every start */
	uint64_t lease_age_ms;   /* since its last heartbeat, by Redis' clock,
				  * when the list was read */
	char stats[MEMBER_STATS_MAX]; /* what its stats hook wrote (JSON object), or "" */
};

/* What this node says of itself. */
struct members_self {
	const char *id;
	const char *addr;
	uint64_t capacity;
	uint64_t incarnation;
};

struct members_hooks {
	void *arg;
	/* the live list changed (a member came, went, or changed state) */
	void (*changed)(void *arg);
	/* this node's stats for its next heartbeat: a JSON object of at most
	 * n - 1 bytes written into buf (NUL-terminated); NULL: none */
	void (*stats)(void *arg, char *buf, size_t n);
};

struct members;

/* Set up (nothing is sent yet). 0 or -ENOMEM. */
int members_new(struct event_base *base, struct redis_conn *rc, const struct cluster_conf *cc,
		const struct members_self *self, const struct members_hooks *hooks, struct members **out);
/* Heartbeat now and then every cluster.heartbeat (and at once whenever
 * the Redis connection comes back: call members_redis_up). */
int members_start(struct members *m);
void members_redis_up(struct members *m);
/* Sent with the next heartbeat, which is sent at once. */
void members_set_state(struct members *m, enum member_state st);
enum member_state members_self_state(const struct members *m);
/* The live members as Redis last listed them, this node included, sorted
 * by id; *n gets how many. Before the first answer: only this node. */
const struct member *members_list(const struct members *m, size_t *n);
/* Milliseconds since that list was read (UINT64_MAX: never). */
uint64_t members_age_ms(const struct members *m);
/* Heartbeats that failed (status). */
uint64_t members_failures(const struct members *m);
/* Stop heartbeats and remove this node from Redis now (one script): done
 * follows (redis_conn.h) once Redis answered or the command's deadline
 * passed. 0, or -ENOTCONN (down: nothing is sent, the lease ends). */
int members_leave(struct members *m, redis_reply_fn done, void *arg);
/* Stop heartbeats and remove this node from Redis if it is connected
 * (best effort: nothing is waited for), then free. */
void members_free(struct members *m);

/* "up", "joining", "draining" */
const char *member_state_name(enum member_state st);

#endif
