/*
 * Home views of the job plans: see job_views.h. Loop thread only.
 */
#include "job_views.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "cache.h"
#include "job_plans.h"
#include "keymap.h"
#include "log.h"
#include "manifest.h"
#include "plans.h"

/* A view is built in steps, one per loop turn (a zero timer, so the
 * loop polls its sockets between them): each step resolves the next
 * entries of the job's order (manifest_find) and extends the view with
 * their chunks homed here (plans_set_view, which computes each chunk's key
 * and asks keep()). The step's size adapts so that a step takes about
 * VIEW_STEP_NS: a job of a million entries no longer holds the loop for
 * seconds (bench/plan_view.sh). The first step replaces the previous view;
 * until the last one the view is the job's order up to where the build
 * is, which is where its readers are.
 *
 * A build reads the job's plans (struct job_plan) across turns: whatever
 * unlinks one of them (a new registration, a cancel, its end, the
 * dataset's removal) drops the build first (job_views_drop), and a
 * rebuild starts over. Memory: the step's indices (VIEW_STEP_MAX) and the
 * memo (a slot per chunk of the job), bounded by the plan bounds. */
#define VIEW_STEP_NS 1000000ull /* about 1 ms of loop per step */
#define VIEW_STEP_MIN 64u
#define VIEW_STEP_MAX 65536u

struct view_build {
	struct view_build *next;
	struct job_plans *jps;
	struct dataset *ds;
	uint64_t job;
	const struct job_plan *whole; /* the whole-job plan, or */
	const struct job_plan **rp;   /* the per-rank plans, by rank */
	bool *served;                 /* by rank: served here (their entries skipped in pass 0) */
	uint32_t ws, epoch;
	uid_t uid;
	unsigned pass;                /* 0: this epoch, 1: the next as a guess, 2: done */
	uint64_t pos, end;            /* whole: entry; per-rank: j * ws + r */
	bool started;                 /* the first step replaced the previous view */
	bool resume;                  /* ... resuming where its readers are */
	size_t step;                  /* entries resolved per step */
	uint32_t *ix;                 /* the step's manifest indices */
	size_t files;
	struct keymap memo;           /* key -> 1 + is_home (pass 1 asks again) */
	struct event *ev;
	uint64_t t0_ns, slice_max_ns, cpu_max_ns;
	unsigned steps, cpu_max_at; /* cpu_max_at: which step (0: the first) was longest */
};

/* keep(): is key homed here? Memoised for the build: the next-epoch pass
 * asks again for every chunk of this epoch's pass, and a home is a
 * rendezvous over every member. */
static bool view_keep(void *arg, uint64_t key)
{
	struct view_build *b = arg;
	uint64_t *v = keymap_get(&b->memo, key);
	if (v)
		return *v == 2;
	bool home = b->jps->hooks.is_home(b->jps->hooks.arg, key);
	(void)keymap_put(&b->memo, key, home ? 2 : 1); /* out of memory: asked again */
	return home;
}

static void build_free(struct view_build *b)
{
	for (struct view_build **p = &b->jps->builds; *p; p = &(*p)->next) {
		if (*p == b) {
			*p = b->next;
			break;
		}
	}
	if (b->ev)
		event_free(b->ev);
	keymap_free(&b->memo);
	free(b->served);
	free(b->rp);
	free(b->ix);
	free(b);
}

void job_views_drop(struct job_plans *jps, const struct dataset *ds, uint64_t job)
{
	for (struct view_build *b = jps ? jps->builds : NULL, *next; b; b = next) {
		next = b->next;
		if (b->ds == ds && b->job == job)
			build_free(b);
	}
}

void job_views_free(struct job_plans *jps)
{
	while (jps && jps->builds)
		build_free(jps->builds);
}

unsigned job_views_building(const struct job_plans *jps)
{
	unsigned n = 0;
	for (const struct view_build *b = jps ? jps->builds : NULL; b; b = b->next)
		n++;
	return n;
}

void job_view_end(struct job_plans *jps, struct dataset *ds, uint64_t job)
{
	job_views_drop(jps, ds, job);
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

/* The next entries of b's walk, as indices into ds->mf (resolved now: a
 * manifest replaced between steps is never read through an old index). */
static size_t build_resolve(struct view_build *b)
{
	const struct manifest *mf = b->ds->mf;
	size_t k = 0;
	while (b->pass < 2 && k < b->step) {
		if (b->pos >= b->end) {
			b->pass++;
			b->pos = 0;
			continue;
		}
		uint64_t p = b->pos++;
		const struct job_plan *jp = b->whole;
		uint32_t i = (uint32_t)p, r = (uint32_t)(p % b->ws);
		/* pass 0: the ranks read elsewhere (those read here have their
		 * own plans); pass 1: every rank, the next epoch as a guess in
		 * this epoch's order: a chunk read this epoch keeps a (far) next
		 * use, so the policy keeps the home share between epochs */
		if (b->pass == 0 && b->served[r])
			continue;
		if (!jp) {
			jp = b->rp[r];
			i = (uint32_t)(p / b->ws);
			if (!jp || i >= jp->n)
				continue;
		}
		const struct mf_entry *e = manifest_find(mf, jp->blob + jp->off[i]);
		if (e)
			b->ix[k++] = (uint32_t)(e - mf->v);
	}
	return k;
}

/* This thread's CPU time (ns): a step's cost without the time the loop
 * thread was not on a CPU (a loaded machine). */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void build_step(evutil_socket_t fd, short what, void *arg)
{
	struct view_build *b = arg;
	struct job_plans *jps = b->jps;
	struct dataset *ds = b->ds;
	uint64_t job = b->job, t0 = cache_now_ns(), c0 = thread_cpu_ns();
	(void)fd;
	(void)what;
	struct dplan *pl = plans_find(jps->reg, ds, job, TC_JOB_RANK_ANY);
	if (!ds->mf || !jps->hooks.is_home || jps->reg->cache->stopping ||
	    (b->started && (!pl || pl->owner != jps))) {
		/* no listing any more, no cluster (cluster_stop cleared the
		 * hooks and runs the loop while it leaves), or the view was
		 * cancelled */
		job_view_end(jps, ds, job);
		return;
	}
	size_t k = build_resolve(b);
	int rc = plans_set_view(jps->reg, jps, b->uid, ds, job, b->ws, b->epoch, b->ix, k, view_keep, b,
				b->started ? TC_PLAN_APPEND : b->resume ? TC_PLAN_RESUME : 0);
	if (rc < 0) {
		jps->install_errors++;
		log_warn("dataset=%s job=%llu op=job_plan_home_view err=\"%s\" (no home view: this node's "
			 "share is read from the cold store when asked)",
			 ds->name, (unsigned long long)job, strerror(-rc));
		job_view_end(jps, ds, job);
		return;
	}
	b->started = true;
	b->files += k;
	b->steps++;
	uint64_t dt = cache_now_ns() - t0, cpu = thread_cpu_ns() - c0;
	b->slice_max_ns = dt > b->slice_max_ns ? dt : b->slice_max_ns;
	if (cpu > b->cpu_max_ns) {
		b->cpu_max_ns = cpu;
		b->cpu_max_at = b->steps - 1;
	}
	/* sized by CPU time: the wall time also counts the loop thread's
	 * waits for a CPU, which a smaller step would not shorten */
	if (cpu > VIEW_STEP_NS && b->step > VIEW_STEP_MIN)
		b->step /= 2;
	else if (cpu < VIEW_STEP_NS / 2 && b->step < VIEW_STEP_MAX)
		b->step *= 2;
	if (b->pass < 2) {
		static const struct timeval zero = {0, 0};
		evtimer_add(b->ev, &zero);
		return;
	}
	pl = plans_find(jps->reg, ds, job, TC_JOB_RANK_ANY);
	uint64_t chunks = pl ? plan_track_end(&pl->tr) : 0;
	uint64_t build_us = (cache_now_ns() - b->t0_ns) / 1000, slice_us = b->slice_max_ns / 1000,
		 cpu_us = b->cpu_max_ns / 1000;
	jps->view_slice_max_us = slice_us > jps->view_slice_max_us ? slice_us : jps->view_slice_max_us;
	if (chunks == 0) {
		job_view_end(jps, ds, job); /* nothing of it is homed here (frees b) */
		return;
	}
	jps->views_installed++;
	log_info("dataset=%s job=%llu world_size=%u epoch=%u op=job_plan_home_view files=%zu "
		 "chunks=%llu from=%s build_us=%llu steps=%u view_slice_max_us=%llu "
		 "view_step_cpu_max_us=%llu view_step_cpu_max_at=%u",
		 ds->name, (unsigned long long)job, b->ws, b->epoch, b->files, (unsigned long long)chunks,
		 b->whole ? "whole_job_plan" : "rank_plans", (unsigned long long)build_us, b->steps,
		 (unsigned long long)slice_us, (unsigned long long)cpu_us, b->cpu_max_at);
	build_free(b);
}

void job_view_build(struct job_plans *jps, struct dataset *ds, uint64_t job, bool resume)
{
	job_views_drop(jps, ds, job); /* a build in progress starts over */
	if (!jps->hooks.is_home || !ds->mf) {
		job_view_end(jps, ds, job);
		return;
	}
	/* what this node knows of the job: its whole-job plan, or its per-rank plans */
	const struct job_plan *whole = job_plans_get(jps, ds, job, TC_JOB_RANK_ANY), *first = whole;
	uint32_t ws = whole ? whole->world_size : 0, epoch = whole ? whole->epoch : 0, len = 0;
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
		}
		if (epoch == UINT32_MAX)
			epoch = first ? first->epoch : 0;
	}
	if (!first || ws == 0 || ws > JOB_VIEW_RANKS_MAX) {
		job_view_end(jps, ds, job);
		return;
	}
	struct view_build *b = calloc(1, sizeof(*b));
	if (!b)
		goto nomem;
	*b = (struct view_build){.jps = jps, .ds = ds, .job = job, .whole = whole, .ws = ws,
				 .epoch = epoch, .uid = first->uid, .step = 1024, .t0_ns = cache_now_ns()};
	keymap_init(&b->memo);
	/* sized once for the job's files (a chunk each, most often): a memo
	 * that grows rehashes every slot in one step (~10 ms at 500k) */
	size_t expect = whole ? whole->n : 0;
	if (ds->mf && expect > ds->mf->n)
		expect = ds->mf->n;
	(void)keymap_reserve(&b->memo, expect); /* out of memory: it grows instead */
	b->next = jps->builds;
	jps->builds = b;
	b->served = calloc(ws, sizeof(*b->served));
	b->rp = whole ? NULL : calloc(ws, sizeof(*b->rp));
	b->ix = malloc(VIEW_STEP_MAX * sizeof(*b->ix));
	b->ev = evtimer_new(jps->reg->cache->base, build_step, b);
	if (!b->served || (!whole && !b->rp) || !b->ix || !b->ev)
		goto nomem;
	for (uint32_t r = 0; r < ws; r++)
		b->served[r] = rank_served(jps, job, r);
	if (!whole) {
		for (const struct job_plan *jp = jps->list; jp; jp = jp->next) {
			if (jp->ds == ds && jp->job == job && jp->only_rank < ws) {
				b->rp[jp->only_rank] = jp;
				len = jp->n > len ? jp->n : len;
			}
		}
	}
	b->end = whole ? whole->n : (uint64_t)len * ws;
	/* an append: the view readers advanced picks up where they are (from
	 * their next ask) rather than from the job's first entry */
	const struct dplan *cur = plans_find(jps->reg, ds, job, TC_JOB_RANK_ANY);
	b->resume = resume && cur && cur->owner == jps && plan_track_pos(&cur->tr) > 0;
	static const struct timeval zero = {0, 0};
	evtimer_add(b->ev, &zero);
	return;
nomem:
	jps->install_errors++;
	log_warn("dataset=%s job=%llu op=job_plan_home_view err=\"%s\"", ds->name, (unsigned long long)job,
		 strerror(ENOMEM));
	job_view_end(jps, ds, job); /* frees b */
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
			job_view_build(jps, jp->ds, jp->job, false);
	}
}
