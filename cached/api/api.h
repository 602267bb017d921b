/*
 * api/: the protocol's ops (include/tiercache/protocol.h) on top of the
 * daemon's modules. The transport (net/server.h) hands each whole frame to
 * api_server_ops; a connection's session holds what the client made the
 * daemon keep for it (open handles and the chunk files they hold, its job
 * tag). One file per op family: handlers.c (files: open, chunk, read,
 * stat, listdir, status), handlers_admin.c (residency ops), handlers_plan.c,
 * handlers_policy.c, handlers_service.c (config show, reload); target.c
 * parses "DATASET[/PATH]" for all of them.
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_API_H
#define TIERCACHE_API_H

#include <stdint.h>

#include "cache.h"
#include "proto.h"
#include "proto_job.h"
#include "server.h"

struct plans;
struct residency;
struct status;
struct handle;

/* The modules the ops use; built by the root (daemon.c), which outlives it. */
struct api {
	struct cache *cache;
	struct plans *plans;
	struct residency *res;
	struct status *status;
	/* Reload the config file (the root's job: the api cannot call up).
	 * Returns 0 or -errno; *report (malloc'ed) says what changed or why
	 * not. */
	int (*reload)(void *arg, char **report);
	void *reload_arg;
};

/* One connection's state (conn->sess). */
struct session {
	struct api *api;
	struct handle **handles;
	uint32_t nhandles;
	uint32_t handle_gen;
	struct tc_job_tag job; /* TC_OP_CONN_JOB: whose plans its reads advance */
	/* TC_F_CHUNK_RECHECK reports: a token bucket (handlers.c) */
	uint64_t report_ns;
	uint32_t report_tokens;
};

/* The transport's table: arg is the struct api. */
extern const struct server_ops api_server_ops;

static inline struct session *conn_sess(const struct conn *c)
{
	return (struct session *)c->sess;
}

static inline struct api *conn_api(const struct conn *c)
{
	return conn_sess(c)->api;
}

/* Who reads in a request of c: its job tag (untagged if it has none). */
static inline struct read_ctx conn_read_ctx(const struct conn *c)
{
	return (struct read_ctx){.job = &conn_sess(c)->job};
}

#endif
