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

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "access.h"
#include "cache.h"
#include "proto.h"
#include "proto_job.h"
#include "server.h"

struct plans;
struct residency;
struct status;
struct user_held;
struct mf_entry;
struct parked;
struct ahead_conn;
struct broadcast;
struct cluster;

/* What one connection may make the daemon keep for it (session.c). A
 * handle costs about 64 bytes plus its path; at the limits a connection
 * costs at most SESSION_MEM_MAX plus its slot table (8 bytes a handle). */
#define SESSION_HANDLES_MAX 16384u      /* files open at once */
#define SESSION_MEM_MAX (4u << 20)      /* bytes of handles, paths, held lists */
#define SESSION_HELD_PER_HANDLE 64u     /* chunk files one handle may hold */

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
	struct user_held *users; /* held bytes per connected uid (session.c) */
	struct broadcast *bcast; /* the cluster's admin broadcast, NULL without [cluster] */
	struct cluster *cluster; /* NULL without [cluster] (tierctl cluster drain) */
	uint32_t ahead_askers;   /* connections that asked OPEN_AHEAD for records (ahead.c) */
};

/* Open-ahead's bounds now, for status and metrics (the root installs it as
 * the status's ahead_info; arg: the struct api). Loop thread. */
struct status_ahead;
void api_ahead_info(const void *arg, struct status_ahead *out);

/* The admin broadcast's apply hook (broadcast.h; arg: the struct api):
 * run PIN, UNPIN, EVICT, DEMOTE, POLICY_SET or RELOAD from its request
 * payload as root, on this node, with no client (handlers_cluster.c).
 * Async ops (pin, demote) count as done when they started. */
int api_cluster_apply(void *arg, uint8_t op, const void *payload, size_t len, char *result, size_t rn);

/* A chunk file a handle handed out and the client has not released. */
struct held {
	uint32_t idx;
	struct cfile *f;
};

/* An open file (TC_OP_OPEN): one version of one file of a dataset, and the
 * chunk files handed out on it. Variable length: the path follows. */
struct handle {
	uint32_t gen;
	uint32_t chunk_size;
	uint32_t nchunks;
	uint16_t nheld, capheld;
	bool ahead;        /* handed by OPEN_AHEAD, not yet used or released (ahead.c) */
	bool own_fill0;    /* its open started chunk 0's fill (HANDLERS_OPEN_OWN_FILL) and
	                    * answered without it: chunk 0's first read is that miss */
	struct dataset *ds;
	struct cold_stat src;
	struct held *held; /* capheld entries, nheld used */
	char path[];
};

/* One connection's state (conn->sess). */
struct session {
	struct api *api;
	struct handle **handles; /* nhandles slots, NULL where free */
	uint32_t nhandles;
	uint32_t nopen;          /* handles open */
	uint32_t free_hint;      /* no free slot below it */
	uint32_t handle_gen;
	size_t mem;              /* bytes of handles, paths and held lists */
	uint64_t held_bytes;     /* chunk bytes held through passed descriptors */
	struct user_held *user;  /* the same for every connection of its uid */
	bool refused_own;        /* the last ENOBUFS: max_held_per_client (else per user) */
	struct tc_job_tag job;   /* TC_OP_CONN_JOB: whose plans its reads advance */
	struct access_cred cred; /* whose rights its requests have (access.h) */
	/* TC_F_CHUNK_RECHECK reports: a token bucket (handlers.c) */
	uint64_t report_ns;
	uint32_t report_tokens;
	/* requests waiting for a dataset's first listing (load_wait.c) */
	struct parked *parked;
	unsigned nparked;
	struct ahead_conn *ahead; /* TC_OP_OPEN_AHEAD's cursors and handed handles (ahead.c) */
	unsigned nopen_filling;   /* OPENs waiting for chunk 0's fill (open_fill.c) */
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

/* ---- handles (session.c) ---- */

/* A handle id: slot + 1 in the low half, the handle's generation above,
 * so a closed handle's id never names its slot's next handle. */
static inline uint64_t session_handle_id(uint32_t slot, uint32_t gen)
{
	return ((uint64_t)gen << 32) | (slot + 1);
}
/* The open handle hid names, or NULL. */
struct handle *session_handle_get(struct conn *c, uint64_t hid);
/* Open a handle on e of ds. 0, -EMFILE (SESSION_HANDLES_MAX or
 * SESSION_MEM_MAX reached: session_reply_full says so) or -ENOMEM. */
int session_handle_new(struct conn *c, struct dataset *ds, const struct mf_entry *e, uint64_t *hid);
/* Close hid: every chunk file it holds is released. */
void session_handle_free(struct conn *c, uint64_t hid);
/* Every handle (the connection closed). */
void session_handles_free_all(struct conn *c);
/* The client is given a descriptor of chunk idx's file f on hd: hold f
 * until RELEASE, CLOSE or disconnect. 0; -ENOBUFS past max_held_per_client
 * or max_held_per_user (counted in held_refusals; session_reply_full says
 * which); -EMFILE (SESSION_HELD_PER_HANDLE or SESSION_MEM_MAX); -ENOMEM. */
int session_hold(struct conn *c, struct handle *hd, uint32_t idx, struct cfile *f);
/* RELEASE of chunk idx on hd (nothing if it is not held). */
void session_release(struct conn *c, struct handle *hd, uint32_t idx);
/* Reply to op id with err (-ENOBUFS or -EMFILE from the calls above): a
 * message naming the limit and what to do. */
void session_reply_full(struct conn *c, uint8_t op, uint32_t id, int err);

#endif
