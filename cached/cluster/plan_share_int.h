/*
 * plan_share's private parts, shared by its two files: plan_share.c
 * (requests, publishing, refreshing, cancels, hooks, life) and
 * plan_share_load.c (listing the index and loading other nodes' plans).
 * Loop thread only.
 */
#ifndef TIERCACHE_CLUSTER_PLAN_SHARE_INT_H
#define TIERCACHE_CLUSTER_PLAN_SHARE_INT_H

#include "plan_share.h"

#include <stdbool.h>
#include <stdint.h>

#include "plan_cancels.h"
#include "redis_conn.h"

#define BAD_GENS_MAX 16u
#define FIELD_MAX (CONFIG_NAME_MAX + 24)
#define GEN_UNPUBLISHABLE UINT64_MAX /* share_gen of a plan too large to publish */

enum req_kind { REQ_PUBLISH, REQ_REFRESH, REQ_CANCEL, REQ_LIST, REQ_LOAD };

struct ps_entry {
	char dataset[CONFIG_NAME_MAX + 1];
	uint64_t job, gen, np, expires, published, clen, rawlen, hash;
	uint32_t rank; /* TC_JOB_RANK_ANY: a whole-job plan; else a per-rank plan's copy */
};

struct ps_req {
	struct ps_req *next;
	struct plan_share *ps; /* NULL once plan_share_free ran */
	enum req_kind kind;
	char dataset[CONFIG_NAME_MAX + 1];
	uint64_t job, serial, gen, hash;
	uint32_t rank;	     /* as in struct ps_entry */
	uint64_t since_ns;   /* REQ_CANCEL: when it was made */
	struct ps_entry ent; /* REQ_LOAD: what is loaded */
};

struct plan_share {
	struct cache *cache;
	struct redis_conn *rc;
	struct job_plans *jps;
	char index_key[CONFIG_NAME_MAX + 32]; /* tc:{NAME}:jplans */
	char gen_key[CONFIG_NAME_MAX + 32];   /* tc:{NAME}:jplan_gen */
	char prefix[CONFIG_NAME_MAX + 32];    /* tc:{NAME}:jplan: */
	uint64_t ttl_ms, period_ms;
	bool (*is_home)(void *arg, uint64_t key);
	void *home_arg;
	struct event *timer;
	struct ps_req *reqs; /* in flight */
	bool listing, loading, publishing, list_again;
	struct ps_entry *idx;
	size_t nidx;
	uint64_t bad_gens[BAD_GENS_MAX];
	unsigned nbad;
	struct plan_cancels pend; /* cancels waiting for Redis (plan_cancels.h) */
	uint64_t cancels_kept, cancels_resent, cancels_lost;
	/* counters */
	uint64_t published, publish_failures, republished, refreshes, refresh_failures, superseded;
	uint64_t loaded, load_failures, cancels_sent, dropped, lists, list_failures;
	unsigned codec_busy;	 /* encodes and decodes on a worker */
	uint64_t codec_dropped;	 /* their results overtaken meanwhile (a newer plan, a cancel) */
	unsigned codec_delay_ms; /* TIERCACHE_PLAN_CODEC_DELAY_MS: tests only */
};

struct plan_codec_job;

/* Requests (plan_share.c). */
struct ps_req *ps_req_new(struct plan_share *ps, enum req_kind kind);
/* Send q's command; on failure q is freed and -errno returned. */
int ps_req_send(struct ps_req *q, redis_reply_fn fn, int argc, const char **argv,
		const size_t *lens);
/* q waits for a worker: kept in the list, cut loose by plan_share_free. */
void ps_req_track(struct ps_req *q);
/* A reply came: unlink q; its plan_share, or NULL when freed meanwhile. */
struct plan_share *ps_req_done(struct ps_req *q);
/* A worker's encode or decode for cj->arg (a request) came back: unlink
 * it and count the worker free; NULL, with the request and cj freed, when
 * plan_share_free ran meanwhile. */
struct plan_share *ps_codec_done(struct plan_codec_job *cj);
/* The local dataset named name, if it has a manifest. */
struct dataset *ps_dataset_named(struct plan_share *ps, const char *name);

/* Listing and loading (plan_share_load.c). */
/* List the index now (or once more after the list in flight). */
void ps_list_now(struct plan_share *ps);
/* Load the next wanted plan of the last list (one at a time). */
void ps_load_next(struct plan_share *ps);

#endif
