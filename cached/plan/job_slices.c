/*
 * A whole-job plan's slices installed in steps: see job_slices.h. Loop
 * thread only.
 */
#include "job_slices.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "cache.h"
#include "job_plans.h"
#include "log.h"
#include "manifest.h"
#include "plans.h"

#define SLICE_STEP_NS 1000000ull /* about 1 ms of loop CPU per step */
#define SLICE_STEP_MIN 64u
#define SLICE_STEP_MAX 65536u

struct slice_build {
	struct slice_build *next;
	struct job_plans *jps;
	struct job_plan *jp;
	uint32_t rank;
	uint8_t flags; /* the first step's: TC_PLAN_RESUME, TC_PLAN_APPEND (from > 0) */
	bool started;  /* the first step is in: later ones append */
	uint64_t pos;  /* the next entry of jp to resolve (rank's: pos % ws == rank) */
	size_t step;   /* entries resolved per step */
	uint32_t *ix;
	size_t files;
	uint64_t missing;
	struct event *ev;
	uint64_t t0_ns, cpu_max_ns, cpu_first_ns;
	unsigned steps, cpu_max_at; /* cpu_max_at: which step (0: the first) was longest */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void build_free(struct slice_build *b)
{
	for (struct slice_build **p = &b->jps->slice_builds; *p; p = &(*p)->next) {
		if (*p == b) {
			*p = b->next;
			break;
		}
	}
	if (b->ev)
		event_free(b->ev);
	free(b->ix);
	free(b);
}

void job_slices_drop(struct job_plans *jps, const struct job_plan *jp, const struct dataset *ds,
		     uint64_t job)
{
	for (struct slice_build *b = jps ? jps->slice_builds : NULL, *next; b; b = next) {
		next = b->next;
		if (jp ? b->jp == jp : b->jp->ds == ds && b->jp->job == job)
			build_free(b);
	}
}

bool job_slices_pending(const struct job_plans *jps, const struct job_plan *jp)
{
	for (const struct slice_build *b = jps ? jps->slice_builds : NULL; b; b = b->next)
		if (b->jp == jp)
			return true;
	return false;
}

unsigned job_slices_building(const struct job_plans *jps)
{
	unsigned n = 0;
	for (const struct slice_build *b = jps ? jps->slice_builds : NULL; b; b = b->next)
		n++;
	return n;
}

void job_slices_free(struct job_plans *jps)
{
	while (jps && jps->slice_builds)
		build_free(jps->slice_builds);
}

/* The next entries of b's rank, as indices into ds->mf (resolved now: a
 * manifest replaced between steps is never read through an old index). */
static size_t build_resolve(struct slice_build *b)
{
	const struct job_plan *jp = b->jp;
	const struct manifest *mf = jp->ds->mf;
	size_t k = 0;
	for (size_t s = 0; s < b->step && b->pos < jp->n; s++, b->pos += jp->world_size) {
		const struct mf_entry *e = manifest_find(mf, jp->blob + jp->off[b->pos]);
		if (!e) {
			b->missing++; /* not (or no longer) in this node's listing of the source */
			continue;
		}
		b->ix[k++] = (uint32_t)(e - mf->v);
	}
	return k;
}

static void build_step(evutil_socket_t fd, short what, void *arg)
{
	struct slice_build *b = arg;
	struct job_plans *jps = b->jps;
	struct job_plan *jp = b->jp;
	struct dataset *ds = jp->ds;
	uint64_t c0 = thread_cpu_ns();
	(void)fd;
	(void)what;
	const struct dplan *cur = plans_find(jps->reg, ds, jp->job, b->rank);
	if (!ds->mf || jps->reg->cache->stopping || (b->started && (!cur || cur->owner != jps))) {
		build_free(b); /* no listing any more, stopping, or the slice was cancelled */
		return;
	}
	uint64_t missing0 = b->missing;
	size_t k = build_resolve(b);
	jp->missing += b->missing - missing0;
	int rc = plans_set(jps->reg, jps, jp->uid, ds, jp->job, b->rank, jp->world_size, jp->epoch,
			   b->started ? TC_PLAN_APPEND : b->flags, b->ix, k);
	if (rc < 0) {
		jps->install_errors++;
		log_warn("dataset=%s job=%llu rank=%u op=job_plan_slice err=\"%s\"", ds->name,
			 (unsigned long long)jp->job, b->rank, strerror(-rc));
		build_free(b);
		return;
	}
	if (!b->started && b->pos < jp->n)
		/* the rest at once (a chunk an entry, most often): the
		 * slice's maps get their final tables now (zeroed pages, no
		 * wipe) and later steps move the first step's keys over a few
		 * at a time (policy/keymap.c), so no step rehashes them */
		(void)plans_reserve(jps->reg, ds, jp->job, b->rank,
				    (jp->n - b->pos) / jp->world_size + 1);
	b->started = true;
	b->files += k;
	b->steps++;
	uint64_t cpu = thread_cpu_ns() - c0;
	if (b->steps == 1)
		b->cpu_first_ns = cpu;
	if (cpu > b->cpu_max_ns) {
		b->cpu_max_ns = cpu;
		b->cpu_max_at = b->steps - 1;
	}
	if (cpu > SLICE_STEP_NS && b->step > SLICE_STEP_MIN)
		b->step /= 2;
	else if (cpu < SLICE_STEP_NS / 2 && b->step < SLICE_STEP_MAX)
		b->step *= 2;
	if (b->pos < jp->n) {
		static const struct timeval zero = {0, 0};
		evtimer_add(b->ev, &zero);
		return;
	}
	jps->installed++;
	log_info("dataset=%s job=%llu rank=%u world_size=%u epoch=%u op=job_plan_slice%s files=%zu "
		 "missing=%llu source=%s build_us=%llu steps=%u step_cpu_max_us=%llu step_cpu_max_at=%u "
		 "step_cpu_first_us=%llu",
		 ds->name, (unsigned long long)jp->job, b->rank, jp->world_size, jp->epoch,
		 (b->flags & TC_PLAN_APPEND) ? "_append" : "", b->files,
		 (unsigned long long)b->missing, jp->remote ? "cluster" : "local",
		 (unsigned long long)((cache_now_ns() - b->t0_ns) / 1000), b->steps,
		 (unsigned long long)(b->cpu_max_ns / 1000), b->cpu_max_at,
		 (unsigned long long)(b->cpu_first_ns / 1000));
	build_free(b);
}

void job_slice_build(struct job_plans *jps, struct job_plan *jp, uint32_t rank, uint8_t flags,
		     uint32_t from)
{
	struct dataset *ds = jp->ds;
	if (rank >= jp->world_size || !ds->mf)
		return;
	for (struct slice_build *b = jps->slice_builds, *next; b; b = next) {
		next = b->next;
		if (b->jp->ds == ds && b->jp->job == jp->job && b->rank == rank)
			build_free(b); /* starts over */
	}
	const struct dplan *cur = from ? plans_find(jps->reg, ds, jp->job, rank) : NULL;
	if (!cur || cur->owner != jps)
		from = 0;
	struct slice_build *b = calloc(1, sizeof(*b));
	if (!b)
		goto nomem;
	*b = (struct slice_build){.jps = jps,
				  .jp = jp,
				  .rank = rank,
				  .flags = (uint8_t)((flags & TC_PLAN_RESUME) |
						     (from ? TC_PLAN_APPEND : 0)),
				  .pos = rank,
				  .step = 1024,
				  .t0_ns = cache_now_ns()};
	if (from) /* the first entry of rank's at or after from */
		b->pos = (uint64_t)from +
			 (rank + jp->world_size - from % jp->world_size) % jp->world_size;
	b->next = jps->slice_builds;
	jps->slice_builds = b;
	b->ix = malloc(SLICE_STEP_MAX * sizeof(*b->ix));
	b->ev = evtimer_new(jps->reg->cache->base, build_step, b);
	if (!b->ix || !b->ev)
		goto nomem;
	/* the first step at once: the slice is there (its first entries) when
	 * the registration is answered */
	build_step(-1, 0, b);
	return;
nomem:
	jps->install_errors++;
	log_warn("dataset=%s job=%llu rank=%u op=job_plan_slice err=\"%s\"", ds->name,
		 (unsigned long long)jp->job, rank, strerror(ENOMEM));
	if (b)
		build_free(b);
}
