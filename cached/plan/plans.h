/*
 * The daemon's plan registry: the reads jobs announced (tiercache_plan_*,
 * TC_OP_PLAN_SET / TC_OP_PLAN_CANCEL), one plan per (dataset, job, rank).
 *
 * Each plan is the job's files expanded into chunk keys, registered in the
 * plan store (policy/plan.h: the clairvoyant policy's oracle) under a job
 * id of its own, and followed by a tracker (plan_track.h) from the reads
 * the daemon sees on any connection: a DataLoader's workers read what its
 * main process planned, out of order and with skips. The prefetcher
 * (prefetch.h) reads ahead of each plan's position.
 *
 * A plan ends when cancelled, replaced, or when the connection that
 * registered it has been gone longer than daemon.plan_grace; a connection
 * that registers the same (dataset, job, rank) again takes it over.
 *
 * A plan belongs to the uid that registered it: only that uid or an admin
 * may replace, extend or cancel it (the api checks, with plans_owner_ok).
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_PLANS_H
#define TIERCACHE_PLANS_H

#include "cache.h"
#include "keymap.h"
#include <sys/types.h>

#include "plan_stage.h"
#include "plan_track.h"
#include "proto.h"

struct prefetch;
struct job_plans;

/* Bounds against a client that registers without end. */
#define PLANS_MAX 4096u                /* plans on the node */
#define PLANS_CHUNKS_MAX (1ull << 26)  /* chunk reads ahead in one plan */

/* One file of a plan (deduplicated: a file planned in every epoch is here
 * once). */
struct plan_file {
	char *path;
	struct cold_stat src;
	uint32_t nchunks;
};

/* What one plan's position carries (plan_track aux): its file (an index
 * into files) and chunk; a file's chunk 0 carries instead its sample, the
 * item's number in its epoch's registrations (repeats and empty files,
 * which have no position, counted; modulo 2^31), which open-ahead's
 * stride needs (api/ahead.c). A plan holds at most PLANS_CHUNKS_MAX chunks,
 * so a chunk index never reaches PLAN_AUX_FIRST. */
#define PLAN_AUX_FIRST 0x80000000u
#define PLAN_AUX(file, idx) (((uint64_t)(file) << 32) | (idx))
#define PLAN_AUX0(file, sample) PLAN_AUX(file, PLAN_AUX_FIRST | ((sample) & (PLAN_AUX_FIRST - 1)))
#define PLAN_AUX_FILE(aux) ((uint32_t)((aux) >> 32))
#define PLAN_AUX_IDX(aux) (((uint32_t)(aux) & PLAN_AUX_FIRST) ? 0u : (uint32_t)(aux))
#define PLAN_AUX_SAMPLE(aux) ((uint32_t)(aux) & (PLAN_AUX_FIRST - 1))

struct dplan {
	struct dplan *next;
	struct dataset *ds;
	uint64_t job;
	uint32_t rank, world_size, epoch;
	uint64_t psid;       /* its job id in the plan store */
	const void *owner;   /* the registering connection (a token); NULL once gone */
	uid_t uid;           /* who registered it: only it or an admin may change it */
	uint64_t gone_ns;    /* when the owner went */
	struct plan_track tr;
	struct plan_file *files;
	uint32_t nfiles, capfiles;
	struct keymap file_ids; /* key of the file's chunk 0 -> index in files */
	uint64_t items;      /* files registered, repeats included */
	uint64_t epoch_items; /* items registered before this epoch's first */
	uint64_t late;       /* planned reads whose chunk was not resident */
	uint64_t consumed;   /* bytes of positions passed */
	double rate;         /* bytes/s the job consumes, smoothed */
	uint64_t rate_ns, rate_bytes; /* last rate sample */
	/* prefetcher state (prefetch.c) */
	uint64_t pf;         /* next position to look at */
	uint64_t ahead;      /* bytes of positions [position, pf) */
	uint64_t prefetched; /* bytes prefetched for this plan */
	bool resync;         /* registered with TC_PLAN_RESUME, no read seen yet:
	                      * the first read of it sets the position */
};

struct plans {
	struct cache *cache;
	struct prefetch *pf;  /* the prefetcher filling the plans' windows (prefetch.h) */
	struct dplan *list;
	unsigned n;
	uint64_t next_psid;
	struct plan_stages stages; /* multi-frame registrations in progress */
	struct job_plans *jobs; /* whole-job plans and their slices (job_plans.h) */
	struct event *tick;
};

/* The registry and its prefetcher (prefetch_init). */
int plans_init(struct plans **out, struct cache *cache);
void plans_free(struct plans *reg);

/* Register (flags TC_PLAN_APPEND: extend) (ds, job, rank)'s plan for
 * connection c of uid; TC_PLAN_RESUME on a new plan: its position jumps to
 * the first read of it seen (a client re-registering after a daemon
 * restart, its job part way through). The files are ix[0..n), indices into
 * ds->mf (checked: < mf->n). 0, -EINVAL (world_size 0, rank >= world_size,
 * an index out of range), -ENOSPC (PLANS_MAX plans already), -EFBIG (more
 * than PLANS_CHUNKS_MAX chunk reads ahead) or -ENOMEM; nothing changed on
 * error. The caller checked plans_owner_ok. */
int plans_set(struct plans *reg, const void *c, uid_t uid, struct dataset *ds, uint64_t job,
	      uint32_t rank, uint32_t world_size, uint32_t epoch, uint8_t flags, const uint32_t *ix,
	      size_t n);
/* A whole-job plan's home view (job_plans.h): (ds, job)'s plan of rank
 * TC_JOB_RANK_ANY whose positions are the chunks of files ix[0..n) for
 * which keep(keep_arg, key) is true, in that order, owned by c. Peers'
 * reads (untagged) advance it; a local connection tagged with a rank of
 * the job does not. flags: TC_PLAN_APPEND extends the view (built in
 * steps, job_views.c; not logged) instead of replacing it, TC_PLAN_RESUME
 * as for plans_set. Errors as plans_set. */
int plans_set_view(struct plans *reg, const void *c, uid_t uid, struct dataset *ds, uint64_t job,
		   uint32_t world_size, uint32_t epoch, const uint32_t *ix, size_t n,
		   bool (*keep)(void *arg, uint64_t key), void *keep_arg, uint8_t flags);
/* May a client of uid (admin: an admin's) replace, extend or cancel pl? */
static inline bool plans_owner_ok(const struct dplan *pl, uid_t uid, bool admin)
{
	return !pl || admin || pl->uid == uid;
}
/* 0 or -ENOENT. */
/* Room for n more chunk positions in (ds, job, rank)'s plan (a builder
 * that appends a known total in steps, job_slices.c). 0, -ENOENT or
 * -ENOMEM (it grows as it goes instead). */
int plans_reserve(struct plans *reg, struct dataset *ds, uint64_t job, uint32_t rank, size_t n);
int plans_cancel(struct plans *reg, struct dataset *ds, uint64_t job, uint32_t rank);
struct dplan *plans_find(struct plans *reg, struct dataset *ds, uint64_t job, uint32_t rank);

/* Every read of a chunk (policy_glue_access): follows the plans and
 * returns the plan store job id of the plan the read belongs to, or
 * PLAN_JOB_ANY. A read in a request of a connection tagged with a job
 * (rc->job: a connection's TC_OP_CONN_JOB tag) can only advance that job's
 * plans. */
uint64_t plans_access(struct plans *reg, uint64_t key, const struct read_ctx *rc);
/* true if some plan will read key soon (readahead leaves it to the plan). */
bool plans_hold(struct plans *reg, uint64_t key);

/* The connection closed: its plans start their grace period, its staged
 * frames are dropped. */
void plans_conn_closed(struct plans *reg, const void *c);
/* A dataset left the config (reload): its plans and registrations in
 * progress end; a client's next PLAN_SET of it gets ENOENT. */
void plans_forget_dataset(struct plans *reg, const struct dataset *ds);
/* Plans registered now. */
unsigned plans_count(const struct plans *reg);

/* Bytes of chunk idx of a file (the last chunk may be short). */
uint32_t plans_chunk_len(const struct dataset *ds, const struct plan_file *f, uint32_t idx);

/* Status: section "plans", one record per plan. */
void plans_report(struct plans *reg, struct proto_rs *rs);

/* Staged frames (handlers_plan.c, stored by plan_stage.h): the entries of
 * a registration sent in several frames wait in reg->stages until its last
 * frame. Commit: register st's entries followed by ix[0..n) for uid
 * (plans_set with st's flags) and drop st; *items = entries registered.
 * -ESTALE if the dataset's manifest was replaced since st was started (a
 * refresh: the indices name other files now); else as plans_set. A
 * sequence started with TC_PLAN_JOB registers a whole-job plan
 * (job_plans_set_local). */
int plans_stage_commit(struct plans *reg, struct plan_stage *st, uid_t uid, uint32_t world_size,
		       uint32_t epoch, const uint32_t *ix, size_t n, uint64_t *items);

#endif
