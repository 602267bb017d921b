/*
 * Leaving the cluster promptly when the daemon stops (docs/cluster.md,
 * "Join, drain and leave"): remove this node's lease and hash from Redis
 * and wait for the answer, running the loop, at most the Redis command
 * deadline (cluster.redis_timeout), so that the other nodes drop it at
 * their next heartbeat instead of when its lease runs out. With Redis
 * down nothing is sent and the lease ends as it would have.
 *
 * Loop thread only; for the daemon's stop.
 */
#ifndef TIERCACHE_LEAVE_H
#define TIERCACHE_LEAVE_H

#include <stdint.h>

#include "members.h"

struct event_base;

/* 0: removed; -errno: not (down, timed out, refused), logged. */
int leave_now(struct event_base *base, struct members *m, const char *self, uint64_t timeout_ms);

#endif
