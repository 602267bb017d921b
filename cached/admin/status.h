/*
 * What `tierctl status` and `tierctl datasets` show, as protocol record
 * sets, and what the daemon as a whole counts (uptime, reloads). The
 * metrics endpoint (metrics.h) renders the same sources. Loop thread.
 */
#ifndef TIERCACHE_STATUS_H
#define TIERCACHE_STATUS_H

#include <stdbool.h>

#include "cache.h"
#include "counters.h"
#include "proto.h"

struct plans;
struct server;
struct cluster;
struct status_rates;

/* Open-ahead's bounds now (TC_OP_OPEN_AHEAD). The api layer above this one
 * computes them (api/ahead.c); the root installs the getter. */
struct status_ahead {
	uint64_t bound_bytes;      /* all connections together: the tiers' share */
	uint64_t conn_bound_bytes; /* one connection's share (a job's rank may get
	                            * less: the share is over its world_size if larger) */
	uint32_t askers;           /* connections that have asked for records */
};

/* Shared by status.c and metrics.c (this folder only). */
struct status {
	struct cache *cache;
	struct plans *plans;
	struct server *srv;   /* NULL until the socket is up */
	struct cluster *cluster; /* NULL without [cluster] */
	int64_t start_s;      /* wall clock at status_init */
	uint64_t reloads, reload_failures;
	struct status_rates *rates;
	/* open-ahead's bounds (NULL until the api is up: all 0) */
	void (*ahead_info)(const void *arg, struct status_ahead *out);
	const void *ahead_arg;
};

/* A 1 s timer samples each tier's read bytes: status shows the read rate
 * over the last 10 s. */
int status_init(struct status **out, struct cache *cache, struct plans *plans);
void status_free(struct status *st);
/* A reload was applied (ok) or rejected. */
void status_note_reload(struct status *st, bool ok);

void status_fill(struct status *st, struct proto_rs *rs);
/* The counter table's rows for one status section (counters.h), as
 * u64 fields of the current record. */
void status_counters(const struct status *st, struct proto_rs *rs, enum counter_section sec);
void status_datasets(struct status *st, struct proto_rs *rs);

#endif
