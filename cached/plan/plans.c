/*
 * The plan registry: see plans.h. Loop thread only.
 *
 * A read reaches every plan through plans_access() (called for every chunk
 * read, from policy_glue_access). It goes to the plan that expects it
 * soonest; that plan's tracker moves, the plan store's cursor of that job
 * follows it (plan_store_seek: the store's clock was ticked once for the
 * read), and the prefetcher refills the plan's window.
 */
#include "plans.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "chunk.h"
#include "job_plans.h"
#include "log.h"
#include "manifest.h"
#include "loop.h"
#include "plan.h"
#include "prefetch.h"

/* How far ahead of a plan's position a read may match it, and how far
 * reads may run past an unread position before it counts as skipped
 * (chunk positions). A DataLoader keeps workers x prefetch_factor batches
 * in flight, typically a few hundred items. */
#define PLAN_MATCH_WINDOW 16384u
#define PLAN_REORDER_TOLERANCE 4096u

#define NS_PER_S 1000000000ull

static void plans_tick(evutil_socket_t fd, short what, void *arg);

int plans_init(struct plans **out, struct cache *cache)
{
	struct plans *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*out = r;
	r->cache = cache;
	int rc = prefetch_init(&r->pf, cache, r);
	if (rc == 0)
		rc = job_plans_new(&r->jobs, r);
	if (rc < 0)
		return rc;
	r->tick = event_new(cache->base, -1, EV_PERSIST, plans_tick, r);
	if (!r->tick)
		return -ENOMEM;
	struct timeval tv = {.tv_sec = 1};
	return event_add(r->tick, &tv) < 0 ? -ENOMEM : 0;
}

static void plan_free(struct dplan *pl)
{
	plan_track_free(&pl->tr);
	for (uint32_t i = 0; i < pl->nfiles; i++)
		free(pl->files[i].path);
	free(pl->files);
	keymap_free(&pl->file_ids);
	free(pl);
}

void plans_free(struct plans *r)
{
	if (!r)
		return;
	if (r->tick)
		event_free(r->tick);
	job_plans_free(r->jobs);
	while (r->list) {
		struct dplan *pl = r->list;
		r->list = pl->next;
		plan_free(pl);
	}
	plan_stages_free(&r->stages);
	prefetch_free(r->pf);
	free(r);
}

struct dplan *plans_find(struct plans *reg, struct dataset *ds, uint64_t job, uint32_t rank)
{
	for (struct dplan *pl = reg->list; pl; pl = pl->next)
		if (pl->ds == ds && pl->job == job && pl->rank == rank)
			return pl;
	return NULL;
}

uint32_t plans_chunk_len(const struct dataset *ds, const struct plan_file *f, uint32_t idx)
{
	uint64_t cs = ds->conf.chunk_size;
	uint64_t off = (uint64_t)idx * cs;
	if (off >= f->src.size)
		return 0;
	return (uint32_t)(f->src.size - off < cs ? f->src.size - off : cs);
}

/* Unlink pl from the list and the plan store, and free it. */
static void plan_remove(struct plans *reg, struct dplan *pl, const char *why)
{
	for (struct dplan **p = &reg->list; *p; p = &(*p)->next) {
		if (*p == pl) {
			*p = pl->next;
			break;
		}
	}
	reg->n--;
	(void)plan_store_drop(reg->cache->plans, pl->psid);
	if (reg->jobs && pl->owner != reg->jobs) /* a client's plan: its shared copy goes too */
		job_plans_rank_ended(reg->jobs, pl->ds, pl->job, pl->rank, strcmp(why, "cancelled") == 0);
	log_info("dataset=%s job=%llu rank=%u op=plan_end why=%s position=%llu chunks=%llu",
		 pl->ds->name, (unsigned long long)pl->job, pl->rank, why,
		 (unsigned long long)plan_track_pos(&pl->tr), (unsigned long long)plan_track_end(&pl->tr));
	plan_free(pl);
}

unsigned plans_count(const struct plans *reg)
{
	return reg ? reg->n : 0;
}

void plans_forget_dataset(struct plans *reg, const struct dataset *ds)
{
	if (!reg)
		return;
	struct dplan *next;
	for (struct dplan *pl = reg->list; pl; pl = next) {
		next = pl->next;
		if (pl->ds == ds)
			plan_remove(reg, pl, "dataset_removed");
	}
	plan_stage_drop_ds(&reg->stages, ds);
	job_plans_forget_dataset(reg->jobs, ds);
}

static struct dplan *plan_new(struct plans *reg, struct dataset *ds, uint64_t job, uint32_t rank)
{
	struct dplan *pl = calloc(1, sizeof(*pl));
	if (!pl)
		return NULL;
	pl->ds = ds;
	pl->job = job;
	pl->rank = rank;
	pl->psid = ++reg->next_psid;
	plan_track_init(&pl->tr, PLAN_MATCH_WINDOW, PLAN_REORDER_TOLERANCE);
	keymap_init(&pl->file_ids);
	pl->rate_ns = cache_now_ns();
	return pl;
}

/* The index of entry e in pl->files, adding it if new. */
static int plan_file_id(struct dplan *pl, const struct mf_entry *e, uint64_t key0, uint32_t *id)
{
	uint64_t *v = keymap_get(&pl->file_ids, key0);
	if (v) {
		*id = (uint32_t)*v;
		return 0;
	}
	if (pl->nfiles == UINT32_MAX)
		return -ENOMEM;
	if (pl->nfiles == pl->capfiles) {
		uint32_t n = pl->capfiles ? 2 * pl->capfiles : 64;
		struct plan_file *nf = realloc(pl->files, n * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		pl->files = nf;
		pl->capfiles = n;
	}
	struct plan_file *f = &pl->files[pl->nfiles];
	f->path = strdup(e->path);
	if (!f->path || keymap_put(&pl->file_ids, key0, pl->nfiles) < 0) {
		free(f->path);
		return -ENOMEM;
	}
	f->src = e->st;
	f->nchunks = (uint32_t)((e->st.size + pl->ds->conf.chunk_size - 1) / pl->ds->conf.chunk_size);
	*id = pl->nfiles++;
	return 0;
}

/* The files of a registration: indices into ds->mf, a staged part and the
 * last frame's. */
struct plan_in {
	const struct manifest *mf;
	const uint32_t *a, *b;
	size_t na, nb;
	uint64_t sample0; /* the sample number of the first file (PLAN_AUX0) */
	/* NULL, or which chunks to plan (a home view: those homed here) */
	bool (*keep)(void *arg, uint64_t key);
	void *keep_arg;
};

static const struct mf_entry *plan_in_get(const struct plan_in *in, size_t i)
{
	return &in->mf->v[i < in->na ? in->a[i] : in->b[i - in->na]];
}

/* Append the files of in to pl: its tracker and the plan store. Gone
 * files (removed at the source since they were named) are left out. */
static int plan_extend(struct plans *reg, struct dplan *pl, const struct plan_in *in)
{
	const char *dsn = pl->ds->name;
	uint64_t cs = pl->ds->conf.chunk_size;
	size_t n = in->na + in->nb, total = 0, at = 0;
	for (size_t i = 0; i < n; i++) {
		const struct mf_entry *e = plan_in_get(in, i);
		if (!e->gone)
			total += (size_t)((e->st.size + cs - 1) / cs);
	}
	if (plan_track_end(&pl->tr) - plan_track_pos(&pl->tr) + total > PLANS_CHUNKS_MAX)
		return -EFBIG;
	uint64_t *keys = malloc((total ? total : 1) * sizeof(*keys));
	uint64_t *aux = malloc((total ? total : 1) * sizeof(*aux));
	int rc = 0;
	if (!keys || !aux) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct mf_entry *e = plan_in_get(in, i);
		uint32_t nch = (uint32_t)((e->st.size + cs - 1) / cs), id = UINT32_MAX;
		if (!nch || e->gone)
			continue; /* an empty file has nothing to read */
		uint64_t key0 = chunk_key(dsn, e->path, &e->st, 0);
		for (uint32_t c = 0; c < nch; c++) {
			keys[at] = c ? chunk_key(dsn, e->path, &e->st, c) : key0;
			if (in->keep && !in->keep(in->keep_arg, keys[at]))
				continue;
			if (id == UINT32_MAX && (rc = plan_file_id(pl, e, key0, &id)) < 0)
				goto out;
			aux[at++] = c ? PLAN_AUX(id, c) : PLAN_AUX0(id, in->sample0 + i);
		}
	}
	rc = plan_track_append(&pl->tr, keys, aux, at);
	if (rc < 0)
		goto out;
	rc = plan_store_append(reg->cache->plans, pl->psid, keys, at);
	if (rc < 0)
		goto out;
	pl->items += n;
out:
	free(keys);
	free(aux);
	return rc;
}

static int plan_register(struct plans *reg, const void *c, uid_t uid, struct dataset *ds,
			 uint64_t job, uint32_t rank, uint32_t world_size, uint32_t epoch,
			 uint8_t flags, const struct plan_in *in)
{
	bool append = flags & TC_PLAN_APPEND;
	bool view = rank == TC_JOB_RANK_ANY && in->keep; /* a home view (plans_set_view) */
	if (world_size == 0 || (rank >= world_size && !view) || !in->mf)
		return -EINVAL;
	for (size_t i = 0; i < in->na + in->nb; i++)
		if ((i < in->na ? in->a[i] : in->b[i - in->na]) >= in->mf->n)
			return -EINVAL;
	struct dplan *old = plans_find(reg, ds, job, rank);
	struct dplan *pl = append ? old : NULL;
	bool fresh = pl == NULL;
	if (!old && reg->n >= PLANS_MAX)
		return -ENOSPC;
	if (fresh && !(pl = plan_new(reg, ds, job, rank)))
		return -ENOMEM;
	/* samples are numbered from each epoch's first (a DataLoader deals
	 * its batches to its workers from 0 every epoch) */
	uint64_t epoch_items = fresh || epoch != pl->epoch ? pl->items : pl->epoch_items;
	struct plan_in num = *in;
	num.sample0 = pl->items - epoch_items;
	int rc = plan_extend(reg, pl, &num);
	if (rc < 0) {
		if (fresh) {
			(void)plan_store_drop(reg->cache->plans, pl->psid);
			plan_free(pl);
		}
		return rc; /* an append that failed half way: the plan keeps what it had or more */
	}
	if (fresh) {
		if (old)
			plan_remove(reg, old, "replaced");
		pl->next = reg->list;
		reg->list = pl;
		reg->n++;
	}
	pl->world_size = world_size;
	pl->epoch = epoch;
	pl->epoch_items = epoch_items;
	pl->owner = c;
	if (fresh)
		pl->uid = uid; /* an admin's append leaves the plan its owner's */
	pl->gone_ns = 0;
	if (fresh && (flags & TC_PLAN_RESUME))
		pl->resync = true;
	if (fresh || c != reg->jobs) /* a view's or slice's steps: its builder logs once, at the end */
		log_info("dataset=%s job=%llu rank=%u world_size=%u epoch=%u uid=%u op=plan_%s "
			 "files=%zu chunks=%llu",
			 ds->name, (unsigned long long)job, rank, world_size, epoch, (unsigned)uid,
			 fresh ? (pl->resync ? "resume" : "set") : "append", in->na + in->nb,
			 (unsigned long long)(plan_track_end(&pl->tr) - plan_track_pos(&pl->tr)));
	prefetch_pump(reg->pf, pl);
	if (c != reg->jobs && !view) {
		/* shared with the cluster for the homes' views (advice: a failure
		 * leaves the plan as it is) */
		int src = job_plans_rank_local(reg->jobs, c, uid, ds, job, rank, world_size, epoch, append,
					       in->a, in->na, in->b, in->nb);
		if (src < 0)
			log_warn("dataset=%s job=%llu rank=%u op=rank_plan_share err=\"%s\" (the plan works "
				 "on this node only)",
				 ds->name, (unsigned long long)job, rank, strerror(-src));
	}
	return 0;
}

int plans_set(struct plans *reg, const void *c, uid_t uid, struct dataset *ds, uint64_t job,
	      uint32_t rank, uint32_t world_size, uint32_t epoch, uint8_t flags, const uint32_t *ix,
	      size_t n)
{
	struct plan_in in = {.mf = ds->mf, .b = ix, .nb = n};
	return plan_register(reg, c, uid, ds, job, rank, world_size, epoch, flags, &in);
}

int plans_set_view(struct plans *reg, const void *c, uid_t uid, struct dataset *ds, uint64_t job,
		   uint32_t world_size, uint32_t epoch, const uint32_t *ix, size_t n,
		   bool (*keep)(void *arg, uint64_t key), void *keep_arg, uint8_t flags)
{
	struct plan_in in = {.mf = ds->mf, .b = ix, .nb = n, .keep = keep, .keep_arg = keep_arg};
	if (!keep)
		return -EINVAL;
	return plan_register(reg, c, uid, ds, job, TC_JOB_RANK_ANY, world_size, epoch,
			     flags & (TC_PLAN_APPEND | TC_PLAN_RESUME), &in);
}

int plans_reserve(struct plans *reg, struct dataset *ds, uint64_t job, uint32_t rank, size_t n)
{
	struct dplan *pl = plans_find(reg, ds, job, rank);
	return pl ? plan_track_reserve(&pl->tr, n) : -ENOENT;
}

int plans_cancel(struct plans *reg, struct dataset *ds, uint64_t job, uint32_t rank)
{
	struct dplan *pl = plans_find(reg, ds, job, rank);
	if (!pl)
		return -ENOENT;
	plan_remove(reg, pl, "cancelled");
	return 0;
}

/* Positions [from, to) of pl were passed: count their bytes (a DDP rank's
 * plan, a job slice or a client's plan of world_size > 1: and maybe give
 * up copies of other nodes' chunks, job_plans_passed). */
static void plan_passed(struct plans *reg, struct dplan *pl, uint64_t from, uint64_t to)
{
	bool ddp = pl->owner == reg->jobs || pl->world_size > 1;
	for (uint64_t q = from; q < to; q++) {
		if (ddp)
			job_plans_passed(reg->jobs, plan_track_key(&pl->tr, q));
		uint64_t aux = plan_track_aux(&pl->tr, q);
		uint32_t len = plans_chunk_len(pl->ds, &pl->files[PLAN_AUX_FILE(aux)], PLAN_AUX_IDX(aux));
		pl->consumed += len;
		if (q < pl->pf)
			pl->ahead -= len < pl->ahead ? len : pl->ahead;
	}
	if (pl->pf < to) {
		pl->pf = to;
		pl->ahead = 0;
	}
}

/* true if a read by rc may advance pl: rc is untagged, or tagged with pl's
 * job (and rank, unless any rank). */
static bool plan_reader_ok(const struct dplan *pl, const struct read_ctx *rc)
{
	const struct tc_job_tag *job = rc ? rc->job : NULL;
	if (!job || !job->set)
		return true;
	return job->job == pl->job && (job->rank == TC_JOB_RANK_ANY || job->rank == pl->rank);
}

/* The plan that expects key soonest, or NULL. A resuming plan expects it
 * wherever it is ahead. */
static struct dplan *plan_for(struct plans *reg, uint64_t key, const struct read_ctx *rc)
{
	struct dplan *best = NULL;
	uint64_t best_d = UINT64_MAX;
	for (struct dplan *pl = reg->list; pl; pl = pl->next) {
		if (!plan_reader_ok(pl, rc))
			continue;
		uint64_t at;
		if (!plan_track_find(&pl->tr, key, &at))
			continue;
		uint64_t dist = at - plan_track_pos(&pl->tr);
		if ((dist <= pl->tr.window || pl->resync) && dist < best_d) {
			best = pl;
			best_d = dist;
		}
	}
	return best;
}

uint64_t plans_access(struct plans *reg, uint64_t key, const struct read_ctx *rc)
{
	loop_assert();
	prefetch_note_read(reg->pf, key);
	plan_store_access(reg->cache->plans, PLAN_JOB_ANY, key);
	if (!reg || !reg->list)
		return PLAN_JOB_ANY;
	struct dplan *pl = plan_for(reg, key, rc);
	if (!pl)
		return PLAN_JOB_ANY;
	uint64_t at;
	if (pl->resync && plan_track_find(&pl->tr, key, &at)) {
		/* resume where the job is: what lies before was read before the restart */
		plan_track_seek(&pl->tr, at);
		pl->resync = false;
		if (pl->pf < at) {
			pl->pf = at;
			pl->ahead = 0;
		}
		plan_store_seek(reg->cache->plans, pl->psid, at);
		log_info("dataset=%s job=%llu rank=%u op=plan_resumed position=%llu", pl->ds->name,
			 (unsigned long long)pl->job, pl->rank, (unsigned long long)at);
	}
	uint64_t before = plan_track_pos(&pl->tr);
	if (!plan_track_read(&pl->tr, key, &at))
		return PLAN_JOB_ANY;
	if (!chunk_find(&reg->cache->chunks, key))
		pl->late++; /* the job got there before the prefetcher */
	uint64_t after = plan_track_pos(&pl->tr);
	if (after != before) {
		plan_passed(reg, pl, before, after);
		plan_store_seek(reg->cache->plans, pl->psid, after);
	}
	if (plan_track_end(&pl->tr) == after)
		log_info("dataset=%s job=%llu rank=%u op=plan_done chunks=%llu skipped=%llu late=%llu",
			 pl->ds->name, (unsigned long long)pl->job, pl->rank, (unsigned long long)after,
			 (unsigned long long)pl->tr.skipped, (unsigned long long)pl->late);
	prefetch_pump(reg->pf, pl);
	return pl->psid;
}

bool plans_hold(struct plans *reg, uint64_t key)
{
	for (struct dplan *pl = reg ? reg->list : NULL; pl; pl = pl->next)
		if (plan_track_holds(&pl->tr, key))
			return true;
	return false;
}

void plans_conn_closed(struct plans *r, const void *c)
{
	if (!r)
		return;
	for (struct dplan *pl = r->list; pl; pl = pl->next) {
		if (pl->owner != c)
			continue;
		pl->owner = NULL;
		pl->gone_ns = cache_now_ns();
		log_info("dataset=%s job=%llu rank=%u op=plan_orphaned grace_s=%u", pl->ds->name,
			 (unsigned long long)pl->job, pl->rank, r->cache->cfg->plan_grace_s);
	}
	plan_stage_drop_conn(&r->stages, c);
	job_plans_conn_closed(r->jobs, c);
}

/* Once a second: expire orphaned plans, measure rates, keep windows full. */
static void plans_tick(evutil_socket_t fd, short what, void *arg)
{
	struct plans *reg = arg;
	(void)fd;
	(void)what;
	uint64_t now = cache_now_ns();
	uint64_t grace = (uint64_t)reg->cache->cfg->plan_grace_s * NS_PER_S;
	for (struct dplan *pl = reg->list, *next; pl; pl = next) {
		next = pl->next;
		if (!pl->owner && now - pl->gone_ns >= grace) {
			plan_remove(reg, pl, "expired");
			continue;
		}
		uint64_t dt = now - pl->rate_ns;
		if (dt >= NS_PER_S / 2) {
			double r = (double)(pl->consumed - pl->rate_bytes) * 1e9 / (double)dt;
			pl->rate = pl->rate > 0 ? 0.5 * pl->rate + 0.5 * r : r;
			pl->rate_ns = now;
			pl->rate_bytes = pl->consumed;
		}
	}
	job_plans_tick(reg->jobs, now, grace);
	prefetch_pump_all(reg->pf);
}

void plans_report(struct plans *reg, struct proto_rs *rs)
{
	uint64_t now = cache_now_ns();
	proto_rs_section(rs, "plans", TC_SHAPE_ARRAY);
	for (struct dplan *pl = reg ? reg->list : NULL; pl; pl = pl->next) {
		uint64_t pos = plan_track_pos(&pl->tr), end = plan_track_end(&pl->tr);
		proto_rs_record(rs);
		proto_rs_str(rs, "dataset", pl->ds->name);
		proto_rs_u64(rs, "job", pl->job);
		proto_rs_u64(rs, "rank", pl->rank);
		proto_rs_u64(rs, "uid", pl->uid);
		proto_rs_u64(rs, "world_size", pl->world_size);
		proto_rs_u64(rs, "epoch", pl->epoch);
		proto_rs_u64(rs, "items", pl->items);
		proto_rs_u64(rs, "files", pl->nfiles);
		proto_rs_u64(rs, "chunks", end);
		proto_rs_u64(rs, "position", pos);
		proto_rs_u64(rs, "remaining", end - pos);
		proto_rs_u64(rs, "read", pl->tr.matched);
		proto_rs_u64(rs, "skipped", pl->tr.skipped);
		proto_rs_u64(rs, "lag", pl->late);
		proto_rs_u64(rs, "consumed_bytes", pl->consumed);
		proto_rs_u64(rs, "rate_bytes_per_s", (uint64_t)pl->rate);
		proto_rs_u64(rs, "ahead_bytes", pl->ahead);
		proto_rs_u64(rs, "window_bytes", prefetch_window(reg->pf, pl));
		proto_rs_u64(rs, "prefetched_bytes", pl->prefetched);
		proto_rs_bool(rs, "connected", pl->owner != NULL);
		proto_rs_bool(rs, "resuming", pl->resync);
		proto_rs_u64(rs, "orphaned_s", pl->owner ? 0 : (now - pl->gone_ns) / NS_PER_S);
		bool ours = reg->jobs && pl->owner == reg->jobs;
		proto_rs_bool(rs, "job_slice", ours && pl->rank != TC_JOB_RANK_ANY);
		proto_rs_bool(rs, "home_view", ours && pl->rank == TC_JOB_RANK_ANY);
	}
	job_plans_report(reg ? reg->jobs : NULL, rs);
}

/* ---- multi-frame registrations ---- */

int plans_stage_commit(struct plans *reg, struct plan_stage *st, uid_t uid, uint32_t world_size,
		       uint32_t epoch, const uint32_t *ix, size_t n, uint64_t *items)
{
	struct dataset *ds = (struct dataset *)st->ds;
	struct plan_in in = {.mf = ds->mf, .a = st->ix, .na = st->n, .b = ix, .nb = n};
	int rc = 0;
	*items = st->n + n;
	/* the staged indices point into st->mf: still the dataset's (a freed
	 * manifest's address may come back, so the paths are checked too) */
	if (ds->mf != st->mf) {
		rc = -ESTALE;
	} else {
		uint64_t fp = 0;
		for (size_t i = 0; i < st->n && rc == 0; i++) {
			if (st->ix[i] >= ds->mf->n)
				rc = -ESTALE;
			else
				fp += plan_stage_fp(ds->mf->v[st->ix[i]].path);
		}
		if (rc == 0 && fp != st->fp)
			rc = -ESTALE;
	}
	if (rc == 0 && (st->flags & TC_PLAN_JOB))
		rc = job_plans_set_local(reg->jobs, st->c, uid, ds, st->job, st->rank, world_size, epoch,
					 st->flags, st->ix, st->n, ix, n);
	else if (rc == 0)
		rc = plan_register(reg, st->c, uid, ds, st->job, st->rank, world_size, epoch, st->flags,
				   &in);
	plan_stage_drop(&reg->stages, st);
	return rc;
}
