/*
 * Whole-job plans (TC_PLAN_JOB, docs/plans.md): one list that is a DDP
 * job's whole sample order, registered once by any rank. Rank r of
 * world_size reads entries i with i % world_size == r (torch's
 * DistributedSampler interleave).
 *
 * This node follows the ranks it *serves*: a rank is served here once a
 * local connection is tagged with (job, rank) (TC_OP_CONN_JOB) or
 * registers the job's plan as that rank. For every served rank of a job
 * that has a whole-job plan, the rank's slice is installed as an ordinary
 * plan (plans.h) owned by this registry (not by a connection: it lives as
 * long as the job plan) with the job plan's uid, and the prefetcher fills
 * it like any other. A new registration replaces the slices; a cancel or
 * the end of the job plan ends them.
 *
 * In a cluster (hooks.is_home set) the node also installs the job plan's
 * *home view*: one more plan (rank TC_JOB_RANK_ANY) of the chunks homed
 * here among the entries of the ranks it does not serve, in the job's
 * order. Other nodes' ranks ask this node for those chunks; the view
 * prefetches them from the cold store ahead of the asks (peers' reads
 * advance it) and tells the policy (the plan store) when each is read
 * next, so a node keeps its home share even if it serves no rank.
 *
 * A job plan is *local* (registered by a connection here; it ends like a
 * connection's plan, daemon.plan_grace after the connection went) or
 * *remote* (given by the cluster's plan sharing, cluster/plan_share.h,
 * which learns of local ones through the hooks; this layer knows nothing
 * of Redis). Entries are kept as paths, not manifest indices: indices
 * differ between nodes whose manifests differ.
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_JOB_PLANS_H
#define TIERCACHE_JOB_PLANS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

struct plans;
struct dataset;
struct event;
struct view_build;
struct slice_build;

#define JOB_PLANS_MAX 1024u        /* whole-job plans and per-rank copies on the node */
#define JOB_SERVED_MAX 256u        /* (job, rank) pairs served here, oldest forgotten */
#define JOB_PLAN_BLOB_MAX (256u << 20) /* bytes of paths (+ NULs) of one job plan */
#define JOB_DROP_QUEUE 1024u       /* copies waiting to be given up */

struct job_plan {
	struct job_plan *next;
	struct dataset *ds;
	uint64_t job;
	uint32_t world_size, epoch;
	uint32_t reg_rank;     /* the rank that registered it */
	uid_t uid;             /* its owner (the slices' uid) */
	char *blob;            /* the paths, NUL-terminated, one after the other */
	size_t bloblen;
	uint32_t *off;         /* entry i is blob + off[i] */
	uint32_t n;
	bool remote;           /* from the cluster, not a connection here */
	const void *owner;     /* local: the registering connection, NULL once gone */
	uint64_t gone_ns;
	uint64_t missing;      /* entries of served slices not in this node's manifest */
	uint64_t serial;       /* a new one per registration on this node */
	/* the plan sharing's (cluster/plan_share.c) */
	uint64_t share_gen;    /* Redis version it is published as / was loaded from (0: none) */
	uint64_t share_ms;     /* Redis time it was published at */
	uint64_t share_hash;   /* hash of its encoded form (0: not computed) */
	uint64_t share_absent_ns; /* remote: since when the Redis index lacks it (0: listed) */
	bool share_republish;  /* local: Redis lost it, it is published again */
	uint32_t only_rank;    /* TC_JOB_RANK_ANY: a whole-job plan; else a per-rank
	                        * plan's copy (that rank's order only, no slices:
	                        * used for the home views, job_views.h) */
};

struct job_plans_hooks {
	void *arg;
	/* a local registration (new or replacing): publish it */
	void (*registered)(void *arg, struct job_plan *jp);
	/* a local cancel: cancel it everywhere (jp is freed after the call) */
	void (*cancelled)(void *arg, const struct job_plan *jp);
	/* this node now serves a rank of job it did not serve before */
	void (*serving)(void *arg, uint64_t job);
	/* is this node key's home (cluster)? A slice's chunks homed elsewhere
	 * are given up once the slice has read them, unless their tier is
	 * below half its low watermark: each node keeps its share of the
	 * job's data, not copies of its peers'. NULL: keep everything. */
	bool (*is_home)(void *arg, uint64_t key);
};

struct job_served {
	uint64_t job;
	uint32_t rank;
	uint64_t seen_ns;
};

struct job_plans {
	struct plans *reg;
	struct job_plan *list;
	unsigned n;
	struct job_served served[JOB_SERVED_MAX];
	unsigned nserved;
	struct job_plans_hooks hooks;
	uint64_t next_serial;
	struct event *drop_ev;  /* gives up the queued copies (not inside a read) */
	uint64_t drop_q[JOB_DROP_QUEUE];
	unsigned ndrop;
	uint64_t dropped_copies; /* peers' chunks given up after the slice read them */
	uint64_t installed;    /* slices installed */
	uint64_t views_installed; /* home views installed */
	bool views_dirty;      /* per-rank copies changed: rebuild the views at the tick */
	struct view_build *builds; /* home views being built, in steps (job_views.c) */
	struct slice_build *slice_builds; /* slices being installed, in steps (job_slices.c) */
	uint64_t view_slice_max_us; /* the longest loop slice a build step took */
	uint64_t install_errors;
};

int job_plans_new(struct job_plans **out, struct plans *reg);
void job_plans_free(struct job_plans *jps);
void job_plans_set_hooks(struct job_plans *jps, const struct job_plans_hooks *h);

/* A connection c of uid registers ds's whole-job plan: the files
 * a[0..na) then b[0..nb) (indices into ds->mf, checked by the caller);
 * rank is the registering rank (served here from now on). flags:
 * TC_PLAN_RESUME passes to the slices. 0, -EINVAL, -ENOSPC, -EFBIG or
 * -ENOMEM (nothing changed). */
int job_plans_set_local(struct job_plans *jps, const void *c, uid_t uid, struct dataset *ds,
			uint64_t job, uint32_t rank, uint32_t world_size, uint32_t epoch, uint8_t flags,
			const uint32_t *a, size_t na, const uint32_t *b, size_t nb);
/* The cluster gives ds's job plan (blob/off/n as in struct job_plan, taken
 * over: freed here, also on error). Replaces what this node had. 0 or
 * -errno. */
int job_plans_set_remote(struct job_plans *jps, struct dataset *ds, uint64_t job, uint32_t only_rank,
			 uint32_t world_size, uint32_t epoch, uint32_t reg_rank, uid_t uid, char *blob,
			 size_t bloblen, uint32_t *off, uint32_t n, uint64_t gen, uint64_t published_ms,
			 uint64_t hash);
/* ds's whole-job plan of job (job_plans_find), or the per-rank copy of
 * rank only_rank (job_plans_get). */
struct job_plan *job_plans_find(struct job_plans *jps, const struct dataset *ds, uint64_t job);
struct job_plan *job_plans_get(struct job_plans *jps, const struct dataset *ds, uint64_t job,
			       uint32_t only_rank);
/* End ds's job plan and its slices. local: a client's cancel here (the
 * cancelled hook tells the cluster). 0 or -ENOENT. */
int job_plans_cancel(struct job_plans *jps, struct dataset *ds, uint64_t job, bool local);
/* The same for a whole-job plan (only_rank TC_JOB_RANK_ANY) or a per-rank
 * copy. */
int job_plans_end(struct job_plans *jps, struct dataset *ds, uint64_t job, uint32_t only_rank, bool local);

/* Per-rank plans in a cluster (plans.c calls these for the plans clients
 * register without TC_PLAN_JOB): a copy of the rank's order (with append,
 * the copy's entries then these) is kept here and shared (hooks.registered)
 * so that the homes of its chunks build their home views from it; no-op
 * without plan sharing. 0 or -errno (the plan itself stands). */
int job_plans_rank_local(struct job_plans *jps, const void *c, uid_t uid, struct dataset *ds, uint64_t job,
			 uint32_t rank, uint32_t world_size, uint32_t epoch, bool append, const uint32_t *a,
			 size_t na, const uint32_t *b, size_t nb);
/* That plan ended (cancelled: by a client; else replaced, expired or its
 * dataset removed): its copy goes (a cancel is shared). */
void job_plans_rank_ended(struct job_plans *jps, struct dataset *ds, uint64_t job, uint32_t rank,
			  bool cancelled);
/* A connection here is tagged with (job, rank): serve that rank. */
void job_plans_serve(struct job_plans *jps, uint64_t job, uint32_t rank);
bool job_plans_serves(const struct job_plans *jps, uint64_t job);

/* The cluster's homes moved (a member joined, left or drains): install
 * every job plan's home view again. */
void job_plans_rehome(struct job_plans *jps);

/* A slice of this registry's, or a client's plan of world_size > 1 (a DDP
 * rank's, plans.c), passed key: queue the copy to be given up if another
 * node is its home (hooks.is_home). */
void job_plans_passed(struct job_plans *jps, uint64_t key);

void job_plans_conn_closed(struct job_plans *jps, const void *c);
void job_plans_forget_dataset(struct job_plans *jps, const struct dataset *ds);
/* Once a second (plans' tick): local job plans whose connection has been
 * gone longer than grace_ns end. */
void job_plans_tick(struct job_plans *jps, uint64_t now_ns, uint64_t grace_ns);

/* Status: section "job_plans", one record per job plan. */
void job_plans_report(struct job_plans *jps, struct proto_rs *rs);

#endif
