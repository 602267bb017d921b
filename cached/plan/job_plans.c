/*
 * Whole-job plans and the slices this node installs from them: see
 * job_plans.h. Loop thread only.
 */
#include "job_plans.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cache.h"
#include "chunk.h"
#include "log.h"
#include "manifest.h"
#include "job_slices.h"
#include "job_views.h"
#include "mover.h"
#include "plans.h"

static void drop_copies(evutil_socket_t fd, short what, void *arg);

int job_plans_new(struct job_plans **out, struct plans *reg)
{
	struct job_plans *jps = calloc(1, sizeof(*jps));
	if (!jps)
		return -ENOMEM;
	jps->reg = reg;
	*out = jps;
	jps->drop_ev = event_new(reg->cache->base, -1, 0, drop_copies, jps);
	return jps->drop_ev ? 0 : -ENOMEM;
}

void job_plans_passed(struct job_plans *jps, uint64_t key)
{
	if (!jps->hooks.is_home || jps->ndrop >= JOB_DROP_QUEUE ||
	    jps->hooks.is_home(jps->hooks.arg, key))
		return;
	jps->drop_q[jps->ndrop++] = key;
	if (jps->ndrop == 1)
		event_active(jps->drop_ev, EV_TIMEOUT, 0);
}

/* Loop, outside any read: give up the queued copies that are still plain
 * resident chunks (not pinned, moving or in a segment) on a tier filled
 * above half its low watermark (below it there is room to spare). A client
 * that holds one still reads it (chunk files are immutable); the next read
 * of it asks its home again. */
static void drop_copies(evutil_socket_t fd, short what, void *arg)
{
	struct job_plans *jps = arg;
	struct cache *cache = jps->reg->cache;
	(void)fd;
	(void)what;
	for (unsigned i = 0; i < jps->ndrop; i++) {
		struct chunk *c = chunk_find(&cache->chunks, jps->drop_q[i]);
		if (!c || c->state != CHUNK_RESIDENT || c->file->seg)
			continue;
		const struct tier *t = &cache->tiers[c->tier];
		if (t->used <= t->low_bytes / 2)
			continue; /* room to spare: the copy may serve a later read */
		jps->dropped_copies++;
		mover_evict(cache, c);
	}
	jps->ndrop = 0;
}

static void job_plan_free(struct job_plan *jp)
{
	free(jp->blob);
	free(jp->off);
	free(jp);
}

void job_plans_free(struct job_plans *jps)
{
	if (!jps)
		return;
	if (jps->drop_ev)
		event_free(jps->drop_ev);
	job_views_free(jps);
	job_slices_free(jps);
	while (jps->list) {
		struct job_plan *jp = jps->list;
		jps->list = jp->next;
		job_plan_free(jp);
	}
	free(jps);
}

void job_plans_set_hooks(struct job_plans *jps, const struct job_plans_hooks *h)
{
	jps->hooks = *h;
	if (!h->is_home)
		job_views_free(jps); /* no homes (cluster_stop): a build cannot go on */
}

struct job_plan *job_plans_get(struct job_plans *jps, const struct dataset *ds, uint64_t job,
			       uint32_t only_rank)
{
	for (struct job_plan *jp = jps ? jps->list : NULL; jp; jp = jp->next)
		if (jp->ds == ds && jp->job == job && jp->only_rank == only_rank)
			return jp;
	return NULL;
}

struct job_plan *job_plans_find(struct job_plans *jps, const struct dataset *ds, uint64_t job)
{
	return job_plans_get(jps, ds, job, TC_JOB_RANK_ANY);
}

bool job_plans_serves(const struct job_plans *jps, uint64_t job)
{
	for (unsigned i = 0; jps && i < jps->nserved; i++)
		if (jps->served[i].job == job)
			return true;
	return false;
}

/* End the slices of (ds, job) this registry installed (all, or only the
 * ranks >= keep_below). */
static void slices_end(struct job_plans *jps, struct dataset *ds, uint64_t job, uint32_t keep_below)
{
	for (unsigned i = 0; i < jps->nserved; i++) {
		if (jps->served[i].job != job || jps->served[i].rank < keep_below)
			continue;
		struct dplan *pl = plans_find(jps->reg, ds, job, jps->served[i].rank);
		if (pl && pl->owner == jps)
			(void)plans_cancel(jps->reg, ds, job, jps->served[i].rank);
	}
	if (keep_below == 0) {
		job_slices_drop(jps, NULL, ds, job);
		job_view_end(jps, ds, job);
	}
}

/* Install every served rank's slice of jp, in steps (job_slices.h); from >
 * 0: jp extends the plan it replaced, whose entries [0, from) the slices
 * have (sfrom: from, or 0 if the slices of that plan were still being
 * built: installed whole): they are extended, and keep their places. */
static void slices_install(struct job_plans *jps, struct job_plan *jp, uint8_t flags, uint32_t from,
			   uint32_t sfrom)
{
	slices_end(jps, jp->ds, jp->job, jp->world_size);
	for (unsigned i = 0; i < jps->nserved; i++)
		if (jps->served[i].job == jp->job)
			job_slice_build(jps, jp, jps->served[i].rank, flags, sfrom);
	job_view_build(jps, jp->ds, jp->job, from > 0);
}

static void unlink_plan(struct job_plans *jps, struct job_plan *jp)
{
	job_views_drop(jps, jp->ds, jp->job); /* a build in progress reads jp */
	job_slices_drop(jps, jp, NULL, 0);
	for (struct job_plan **p = &jps->list; *p; p = &(*p)->next) {
		if (*p == jp) {
			*p = jp->next;
			jps->n--;
			return;
		}
	}
}

/* Put jp in place of (ds, job)'s current plan (of its rank, for a per-rank
 * copy), then install its slices (a per-rank copy: the views are built
 * again at the next tick). from: jp extends the plan it replaces, whose
 * entries are its first from (an append). */
static int job_plan_put(struct job_plans *jps, struct job_plan *jp, uint8_t flags, uint32_t from)
{
	struct job_plan *old = job_plans_get(jps, jp->ds, jp->job, jp->only_rank);
	if (!old && jps->n >= JOB_PLANS_MAX) {
		job_plan_free(jp);
		return -ENOSPC;
	}
	uint32_t sfrom = from && old && job_slices_pending(jps, old) ? 0 : from;
	if (old) {
		unlink_plan(jps, old);
		job_plan_free(old);
	}
	jp->serial = ++jps->next_serial;
	jp->next = jps->list;
	jps->list = jp;
	jps->n++;
	if (jp->only_rank != TC_JOB_RANK_ANY) {
		log_info("dataset=%s job=%llu rank=%u world_size=%u epoch=%u op=rank_plan_copy entries=%u "
			 "source=%s",
			 jp->ds->name, (unsigned long long)jp->job, jp->only_rank, jp->world_size, jp->epoch,
			 jp->n, jp->remote ? "cluster" : "local");
		jps->views_dirty = true;
		return 0;
	}
	log_info("dataset=%s job=%llu world_size=%u epoch=%u uid=%u op=job_plan_%s entries=%u source=%s",
		 jp->ds->name, (unsigned long long)jp->job, jp->world_size, jp->epoch, (unsigned)jp->uid,
		 from ? "append" : old ? "replace" : "set", jp->n, jp->remote ? "cluster" : "local");
	slices_install(jps, jp, flags, from, sfrom);
	return 0;
}

/* Mark (job, rank) served; true if it was not before. */
static bool serve_mark(struct job_plans *jps, uint64_t job, uint32_t rank)
{
	uint64_t now = cache_now_ns();
	unsigned oldest = 0;
	for (unsigned i = 0; i < jps->nserved; i++) {
		if (jps->served[i].job == job && jps->served[i].rank == rank) {
			jps->served[i].seen_ns = now;
			return false;
		}
		if (jps->served[i].seen_ns < jps->served[oldest].seen_ns)
			oldest = i;
	}
	unsigned at = jps->nserved < JOB_SERVED_MAX ? jps->nserved++ : oldest;
	jps->served[at] = (struct job_served){.job = job, .rank = rank, .seen_ns = now};
	return true;
}

/* A new job plan of the entries of prev (if any) then the files a[0..na)
 * then b[0..nb) (indices into ds->mf). 0, -EINVAL, -EFBIG or -ENOMEM. */
static int plan_build(const struct dataset *ds, const struct job_plan *prev, const uint32_t *a, size_t na,
		      const uint32_t *b, size_t nb, struct job_plan **out)
{
	size_t n0 = prev ? prev->n : 0, n = n0 + na + nb, bytes = prev ? prev->bloblen : 0;
	if (!ds->mf || n > TC_PLAN_ENTRIES_MAX)
		return -EINVAL;
	for (size_t i = 0; i < na + nb; i++) {
		uint32_t x = i < na ? a[i] : b[i - na];
		if (x >= ds->mf->n)
			return -EINVAL;
		bytes += strlen(ds->mf->v[x].path) + 1;
		if (bytes > JOB_PLAN_BLOB_MAX)
			return -EFBIG;
	}
	struct job_plan *jp = calloc(1, sizeof(*jp));
	char *blob = malloc(bytes ? bytes : 1);
	uint32_t *off = malloc((n ? n : 1) * sizeof(*off));
	if (!jp || !blob || !off) {
		free(jp);
		free(blob);
		free(off);
		return -ENOMEM;
	}
	size_t at = 0;
	if (prev) {
		memcpy(blob, prev->blob, prev->bloblen);
		memcpy(off, prev->off, n0 * sizeof(*off));
		at = prev->bloblen;
	}
	for (size_t i = 0; i < na + nb; i++) {
		const char *p = ds->mf->v[i < na ? a[i] : b[i - na]].path;
		size_t len = strlen(p) + 1;
		memcpy(blob + at, p, len);
		off[n0 + i] = (uint32_t)at;
		at += len;
	}
	*jp = (struct job_plan){.ds = (struct dataset *)ds, .blob = blob, .bloblen = bytes, .off = off,
				.n = (uint32_t)n, .only_rank = TC_JOB_RANK_ANY};
	*out = jp;
	return 0;
}

/* A plan registered on this node (by connection c, as rank): filled in,
 * kept, shared through the registered hook, and the rank marked served. */
static int local_put(struct job_plans *jps, struct job_plan *jp, const void *c, uid_t uid,
		     uint64_t job, uint32_t rank, uint32_t world_size, uint32_t epoch, uint8_t flags,
		     uint32_t from)
{
	jp->job = job;
	jp->world_size = world_size;
	jp->epoch = epoch;
	jp->reg_rank = rank;
	jp->uid = uid;
	jp->owner = c;
	bool fresh_serve = serve_mark(jps, job, rank);
	int rc = job_plan_put(jps, jp, flags, from);
	if (rc < 0)
		return rc;
	if (jps->hooks.registered)
		jps->hooks.registered(jps->hooks.arg, jp);
	if (fresh_serve && jps->hooks.serving)
		jps->hooks.serving(jps->hooks.arg, job);
	return 0;
}

int job_plans_set_local(struct job_plans *jps, const void *c, uid_t uid, struct dataset *ds,
			uint64_t job, uint32_t rank, uint32_t world_size, uint32_t epoch, uint8_t flags,
			const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
	if (world_size == 0 || rank >= world_size)
		return -EINVAL;
	/* an append extends the plan registered here (a job that registers
	 * its order in pieces); without one it is a registration */
	struct job_plan *old = (flags & TC_PLAN_APPEND) ? job_plans_find(jps, ds, job) : NULL, *jp;
	if (old && old->remote)
		return -EXDEV; /* registered on another node: appended there */
	if (old && old->world_size != world_size)
		return -EDOM;
	int rc = plan_build(ds, old, a, na, b, nb, &jp);
	if (rc < 0)
		return rc;
	return local_put(jps, jp, c, uid, job, rank, world_size, epoch, flags & ~TC_PLAN_APPEND,
			 old ? old->n : 0);
}

int job_plans_set_remote(struct job_plans *jps, struct dataset *ds, uint64_t job, uint32_t only_rank,
			 uint32_t world_size, uint32_t epoch, uint32_t reg_rank, uid_t uid, char *blob,
			 size_t bloblen, uint32_t *off, uint32_t n, uint64_t gen, uint64_t published_ms,
			 uint64_t hash)
{
	bool ok = world_size && (only_rank == TC_JOB_RANK_ANY || only_rank < world_size);
	struct job_plan *jp = ok ? calloc(1, sizeof(*jp)) : NULL;
	if (!jp) {
		free(blob);
		free(off);
		return ok ? -ENOMEM : -EINVAL;
	}
	*jp = (struct job_plan){.ds = ds, .job = job, .world_size = world_size, .epoch = epoch,
				.reg_rank = reg_rank, .uid = uid, .blob = blob, .bloblen = bloblen,
				.off = off, .n = n, .remote = true, .share_gen = gen,
				.share_ms = published_ms, .share_hash = hash, .only_rank = only_rank};
	/* the registering node appended to it: its first entries are the
	 * plan this node has (the slices are extended, not replaced) */
	const struct job_plan *old = job_plans_get(jps, ds, job, only_rank);
	uint32_t from = 0;
	if (old && only_rank == TC_JOB_RANK_ANY && old->world_size == world_size && n > old->n &&
	    bloblen >= old->bloblen && memcmp(blob, old->blob, old->bloblen) == 0 &&
	    memcmp(off, old->off, (size_t)old->n * sizeof(*off)) == 0)
		from = old->n;
	return job_plan_put(jps, jp, 0, from);
}

int job_plans_end(struct job_plans *jps, struct dataset *ds, uint64_t job, uint32_t only_rank, bool local)
{
	struct job_plan *jp = job_plans_get(jps, ds, job, only_rank);
	if (!jp)
		return -ENOENT;
	if (local && jps->hooks.cancelled)
		jps->hooks.cancelled(jps->hooks.arg, jp);
	unlink_plan(jps, jp);
	if (only_rank != TC_JOB_RANK_ANY) {
		log_info("dataset=%s job=%llu rank=%u op=rank_plan_copy_end why=%s", ds->name,
			 (unsigned long long)job, only_rank, local ? "cancelled" : "cluster");
		job_plan_free(jp);
		jps->views_dirty = true;
		return 0;
	}
	slices_end(jps, ds, job, 0);
	log_info("dataset=%s job=%llu epoch=%u op=job_plan_end why=%s", ds->name, (unsigned long long)job,
		 jp->epoch, local ? "cancelled" : "cluster");
	job_plan_free(jp);
	return 0;
}

int job_plans_cancel(struct job_plans *jps, struct dataset *ds, uint64_t job, bool local)
{
	return job_plans_end(jps, ds, job, TC_JOB_RANK_ANY, local);
}

int job_plans_rank_local(struct job_plans *jps, const void *c, uid_t uid, struct dataset *ds, uint64_t job,
			 uint32_t rank, uint32_t world_size, uint32_t epoch, bool append, const uint32_t *a,
			 size_t na, const uint32_t *b, size_t nb)
{
	if (!jps || !jps->hooks.registered || rank >= world_size)
		return 0; /* no cluster to share it with */
	struct job_plan *old = job_plans_get(jps, ds, job, rank), *jp;
	int rc = plan_build(ds, append && old && !old->remote ? old : NULL, a, na, b, nb, &jp);
	if (rc < 0)
		return rc;
	jp->only_rank = rank;
	return local_put(jps, jp, c, uid, job, rank, world_size, epoch, 0, 0);
}

void job_plans_rank_ended(struct job_plans *jps, struct dataset *ds, uint64_t job, uint32_t rank,
			  bool cancelled)
{
	struct job_plan *jp = rank == TC_JOB_RANK_ANY ? NULL : job_plans_get(jps, ds, job, rank);
	if (jp && !jp->remote)
		(void)job_plans_end(jps, ds, job, rank, cancelled);
}

void job_plans_serve(struct job_plans *jps, uint64_t job, uint32_t rank)
{
	if (!jps || rank == TC_JOB_RANK_ANY || !serve_mark(jps, job, rank))
		return;
	for (struct job_plan *jp = jps->list; jp; jp = jp->next) {
		if (jp->job == job && jp->only_rank == TC_JOB_RANK_ANY) {
			job_slice_build(jps, jp, rank, 0, 0);
			job_view_build(jps, jp->ds, jp->job, false); /* without that rank now */
		} else if (jp->job == job) {
			jps->views_dirty = true;
		}
	}
	if (jps->hooks.serving)
		jps->hooks.serving(jps->hooks.arg, job);
}

void job_plans_conn_closed(struct job_plans *jps, const void *c)
{
	for (struct job_plan *jp = jps ? jps->list : NULL; jp; jp = jp->next) {
		if (jp->owner == c && !jp->remote) {
			jp->owner = NULL;
			jp->gone_ns = cache_now_ns();
		}
	}
}

void job_plans_forget_dataset(struct job_plans *jps, const struct dataset *ds)
{
	for (struct job_plan *jp = jps ? jps->list : NULL, *next; jp; jp = next) {
		next = jp->next;
		if (jp->ds == ds) {
			unlink_plan(jps, jp);
			job_plan_free(jp); /* its slices end with the dataset's plans */
		}
	}
}

void job_plans_tick(struct job_plans *jps, uint64_t now_ns, uint64_t grace_ns)
{
	for (struct job_plan *jp = jps ? jps->list : NULL, *next; jp; jp = next) {
		next = jp->next;
		if (jp->remote || jp->owner || now_ns - jp->gone_ns < grace_ns ||
		    jp->only_rank != TC_JOB_RANK_ANY) /* a per-rank copy ends with its plan */
			continue;
		/* its job is gone: the slices end here; elsewhere its Redis TTL
		 * lapses now that nobody refreshes it */
		unlink_plan(jps, jp);
		slices_end(jps, jp->ds, jp->job, 0);
		log_info("dataset=%s job=%llu epoch=%u op=job_plan_end why=expired", jp->ds->name,
			 (unsigned long long)jp->job, jp->epoch);
		job_plan_free(jp);
	}
	if (jps && jps->views_dirty) {
		jps->views_dirty = false; /* per-rank plans changed: one rebuild a second at most */
		job_views_rebuild(jps);
	}
}

void job_plans_rehome(struct job_plans *jps)
{
	if (jps)
		jps->views_dirty = false;
	job_views_rebuild(jps);
}

void job_plans_report(struct job_plans *jps, struct proto_rs *rs)
{
	uint64_t rank_local = 0, rank_cluster = 0;
	for (struct job_plan *jp = jps ? jps->list : NULL; jp; jp = jp->next)
		if (jp->only_rank != TC_JOB_RANK_ANY)
			jp->remote ? rank_cluster++ : rank_local++;
	proto_rs_section(rs, "job_slices", TC_SHAPE_OBJECT);
	proto_rs_record(rs);
	proto_rs_u64(rs, "installed", jps ? jps->installed : 0);
	proto_rs_u64(rs, "install_errors", jps ? jps->install_errors : 0);
	proto_rs_u64(rs, "dropped_copies", jps ? jps->dropped_copies : 0);
	proto_rs_u64(rs, "home_views", jps ? jps->views_installed : 0);
	proto_rs_u64(rs, "home_views_building", job_views_building(jps));
	proto_rs_u64(rs, "slices_building", job_slices_building(jps));
	proto_rs_u64(rs, "home_view_step_max_us", jps ? jps->view_slice_max_us : 0);
	proto_rs_u64(rs, "rank_plans_shared", rank_local);
	proto_rs_u64(rs, "rank_plans_from_cluster", rank_cluster);

	proto_rs_section(rs, "job_plans", TC_SHAPE_ARRAY);
	for (struct job_plan *jp = jps ? jps->list : NULL; jp; jp = jp->next) {
		if (jp->only_rank != TC_JOB_RANK_ANY)
			continue; /* per-rank copies: counted in job_slices */
		unsigned ranks = 0;
		for (unsigned i = 0; i < jps->nserved; i++)
			ranks += jps->served[i].job == jp->job && jps->served[i].rank < jp->world_size;
		proto_rs_record(rs);
		proto_rs_str(rs, "dataset", jp->ds->name);
		proto_rs_u64(rs, "job", jp->job);
		proto_rs_u64(rs, "world_size", jp->world_size);
		proto_rs_u64(rs, "epoch", jp->epoch);
		proto_rs_u64(rs, "registered_by_rank", jp->reg_rank);
		proto_rs_u64(rs, "uid", jp->uid);
		proto_rs_u64(rs, "entries", jp->n);
		proto_rs_str(rs, "source", jp->remote ? "cluster" : "local");
		proto_rs_u64(rs, "ranks_served", ranks);
		proto_rs_u64(rs, "missing", jp->missing);
		proto_rs_u64(rs, "version", jp->share_gen);
		proto_rs_bool(rs, "connected", jp->remote || jp->owner != NULL);
	}
}
