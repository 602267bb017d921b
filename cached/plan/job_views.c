/*
 * Home views of the job plans: see job_views.h. Loop thread only.
 */
#include "job_views.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "job_plans.h"
#include "keymap.h"
#include "log.h"
#include "manifest.h"
#include "plans.h"

/* One build's keep(): is key homed here? Memoised for the build: the
 * next-epoch pass asks again for every chunk of this epoch's pass, and a
 * home is a rendezvous over every member. */
struct view_ctx {
	struct job_plans *jps;
	struct keymap memo; /* key -> 1 + is_home */
};

static bool view_keep(void *arg, uint64_t key)
{
	struct view_ctx *vc = arg;
	uint64_t *v = keymap_get(&vc->memo, key);
	if (v)
		return *v == 2;
	bool home = vc->jps->hooks.is_home(vc->jps->hooks.arg, key);
	(void)keymap_put(&vc->memo, key, home ? 2 : 1); /* out of memory: asked again */
	return home;
}

void job_view_end(struct job_plans *jps, struct dataset *ds, uint64_t job)
{
	struct dplan *pl = plans_find(jps->reg, ds, job, TC_JOB_RANK_ANY);
	if (pl && pl->owner == jps)
		(void)plans_cancel(jps->reg, ds, job, TC_JOB_RANK_ANY);
}

static bool rank_served(const struct job_plans *jps, uint64_t job, uint32_t rank)
{
	for (unsigned i = 0; i < jps->nserved; i++)
		if (jps->served[i].job == job && jps->served[i].rank == rank)
			return true;
	return false;
}

/* Add entry i of jp (its manifest index) to ix, if this node lists it. */
static void add_entry(const struct dataset *ds, const struct job_plan *jp, uint32_t i, uint32_t *ix,
		      size_t *k)
{
	const struct mf_entry *e = manifest_find(ds->mf, jp->blob + jp->off[i]);
	if (e)
		ix[(*k)++] = (uint32_t)(e - ds->mf->v);
}

void job_view_build(struct job_plans *jps, struct dataset *ds, uint64_t job)
{
	uint64_t t0 = cache_now_ns();
	job_view_end(jps, ds, job);
	if (!jps->hooks.is_home || !ds->mf)
		return;
	/* what this node knows of the job: its whole-job plan, or its per-rank plans */
	const struct job_plan *whole = job_plans_get(jps, ds, job, TC_JOB_RANK_ANY), *first = whole;
	uint32_t ws = whole ? whole->world_size : 0, epoch = whole ? whole->epoch : 0;
	size_t total = whole ? whole->n : 0;
	if (!whole) {
		/* the view's epoch: the oldest of the other ranks' plans (it is of
		 * epoch E once every rank read elsewhere registered E) */
		epoch = UINT32_MAX;
		for (const struct job_plan *jp = jps->list; jp; jp = jp->next) {
			if (jp->ds != ds || jp->job != job || jp->only_rank == TC_JOB_RANK_ANY)
				continue;
			first = first ? first : jp;
			ws = jp->world_size > ws ? jp->world_size : ws;
			if (!rank_served(jps, job, jp->only_rank) && jp->epoch < epoch)
				epoch = jp->epoch;
			total += jp->n;
		}
		if (epoch == UINT32_MAX)
			epoch = first ? first->epoch : 0;
	}
	if (!first || ws == 0 || ws > JOB_VIEW_RANKS_MAX)
		return;
	bool *served = calloc(ws, sizeof(*served));
	const struct job_plan **rp = whole ? NULL : calloc(ws, sizeof(*rp));
	uint32_t *ix = malloc((2 * total + 1) * sizeof(*ix));
	size_t k = 0;
	if (!served || !ix || (!whole && !rp)) {
		jps->install_errors++;
		goto out;
	}
	for (uint32_t r = 0; r < ws; r++)
		served[r] = rank_served(jps, job, r);
	uint32_t len = 0;
	if (!whole) {
		for (const struct job_plan *jp = jps->list; jp; jp = jp->next) {
			if (jp->ds == ds && jp->job == job && jp->only_rank < ws) {
				rp[jp->only_rank] = jp;
				len = jp->n > len ? jp->n : len;
			}
		}
	}
	/* pass 0: this epoch, the ranks read elsewhere (those read here have
	 * their own plans); pass 1: the next epoch, every rank, as a guess in
	 * this epoch's order (its real order comes with its registration):
	 * once a chunk was read this epoch it still has a next use, far away,
	 * so the policy keeps the home share through the end of the epoch and
	 * the gap to the next one rather than what nobody planned */
	for (int pass = 0; pass < 2; pass++) {
		if (whole) {
			for (uint32_t i = 0; i < whole->n; i++)
				if (pass || !served[i % ws])
					add_entry(ds, whole, i, ix, &k);
			continue;
		}
		for (uint32_t j = 0; j < len; j++)
			for (uint32_t r = 0; r < ws; r++)
				if (rp[r] && j < rp[r]->n && (pass || !served[r]))
					add_entry(ds, rp[r], j, ix, &k);
	}
	struct view_ctx vc = {.jps = jps};
	keymap_init(&vc.memo);
	int rc = plans_set_view(jps->reg, jps, first->uid, ds, job, ws, epoch, ix, k, view_keep,
				&vc);
	keymap_free(&vc.memo);
	if (rc < 0) {
		jps->install_errors++;
		log_warn("dataset=%s job=%llu op=job_plan_home_view err=\"%s\"", ds->name,
			 (unsigned long long)job, strerror(-rc));
		goto out;
	}
	struct dplan *pl = plans_find(jps->reg, ds, job, TC_JOB_RANK_ANY);
	uint64_t chunks = pl ? plan_track_end(&pl->tr) : 0;
	if (chunks == 0) {
		job_view_end(jps, ds, job); /* nothing of it is homed here */
		goto out;
	}
	jps->views_installed++;
	log_info("dataset=%s job=%llu world_size=%u epoch=%u op=job_plan_home_view files=%zu "
		 "chunks=%llu from=%s build_us=%llu",
		 ds->name, (unsigned long long)job, ws, epoch, k, (unsigned long long)chunks,
		 whole ? "whole_job_plan" : "rank_plans", (unsigned long long)((cache_now_ns() - t0) / 1000));
out:
	free(served);
	free(rp);
	free(ix);
}

void job_views_rebuild(struct job_plans *jps)
{
	/* the views of jobs this node no longer knows of (their last per-rank
	 * copy went) end */
	for (struct dplan *pl = jps ? jps->reg->list : NULL, *next; pl; pl = next) {
		next = pl->next;
		if (pl->owner != jps || pl->rank != TC_JOB_RANK_ANY)
			continue;
		bool known = false;
		for (const struct job_plan *jp = jps->list; jp && !known; jp = jp->next)
			known = jp->ds == pl->ds && jp->job == pl->job;
		if (!known)
			(void)plans_cancel(jps->reg, pl->ds, pl->job, TC_JOB_RANK_ANY);
	}
	for (const struct job_plan *jp = jps ? jps->list : NULL; jp; jp = jp->next) {
		bool seen = false; /* one build per (ds, job) */
		for (const struct job_plan *q = jps->list; q != jp && !seen; q = q->next)
			seen = q->ds == jp->ds && q->job == jp->job;
		if (!seen)
			job_view_build(jps, jp->ds, jp->job);
	}
}
