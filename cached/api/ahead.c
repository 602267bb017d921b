/*
 * Open-ahead from plans (TC_OP_OPEN_AHEAD, docs/plans.md): a client whose
 * connection is tagged with a job asks for the open records of the next
 * files of that job's plans before it opens them, so that its opens cost
 * no round trip.
 *
 * Per connection the daemon keeps a cursor per plan (what it has already
 * handed, so successive calls hand different files; it never lags the
 * plan's position) and the handles it handed that the client has neither
 * used nor released. Those are ordinary handles: they count in the
 * session's handles and held bytes (session_hold), and on top of that at
 * most TC_AHEAD_HANDLES_MAX of them, holding at most ahead_bytes_cap()
 * bytes, are out per connection, so a client that takes descriptors and
 * never opens them pins no more than that. The tiers bound it too: what
 * all connections hold ahead together stays within half of the hot and
 * warm tiers' room between their watermarks (what eviction frees in one
 * pass: a held chunk cannot be freed), shared evenly among the
 * connections that ask for records (ahead_room()), so that the jobs' ranks
 * on small tiers do not starve the policies of what they could evict.
 *
 * The access an open replaces (plan position, policy, hit counters) is
 * recorded when the client reports the use: a CLOSE of the handle without
 * TC_F_AHEAD_UNUSED. A file whose first chunk is not resident is handed
 * without a descriptor (it still saves the OPEN) and its fill started; its
 * CHUNK request then counts the access as usual.
 *
 * A plan file whose version is past revalidate_after on a store without a
 * cheap stat (RADOS) is confirmed first, as an OPEN would: the request
 * starts those confirmations on workers (at most the files it was asked
 * for, one such request per connection at a time) and answers when the
 * last is back, so that a long epoch keeps handing files ahead instead of
 * falling back to an OPEN per file once the manifest ages. While it waits
 * the request holds the connection (conn_get: SERVER_WAIT_MAX) and its
 * memory (conn_work_begin).
 *
 * Loop thread only.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access.h"
#include "dataset.h"
#include "handlers.h"
#include "log.h"
#include "manifest.h"
#include "plans.h"
#include "prefetch.h"
#include "status.h"

#define AHEAD_PLANS 4u          /* plans followed at once per connection */
#define AHEAD_SCAN_MAX 8192u    /* plan positions looked at per request */
#define AHEAD_BYTES_MAX (64ull << 20)

struct ahead_cursor {
	uint64_t psid; /* 0: free */
	uint64_t next; /* first plan position not handed yet */
};

struct ahead_out {
	uint64_t hid;
	uint64_t bytes; /* of chunk 0's file held through the handed fd (0: none) */
	uint64_t key;   /* out_key() of its file: out_has compares it first */
};

struct ahead_conn {
	struct ahead_cursor cur[AHEAD_PLANS];
	uint32_t n;     /* handles out */
	uint64_t bytes; /* sum of their bytes */
	/* a request waiting for its files' versions (see above) */
	unsigned waiting; /* revalidations out (+1 while they are started) */
	/* the client's stride (OPEN_AHEAD): hand plan samples i (plans.h
	 * PLAN_AUX_SAMPLE) with (i / st_batch) % st_workers == st_index;
	 * st_workers <= 1: all */
	uint32_t st_batch, st_workers, st_index;
	uint32_t wait_id, wait_want;
	struct ahead_out out[TC_AHEAD_HANDLES_MAX];
};

/* Bytes of chunk files one connection may hold through handles handed
 * ahead: a quarter of what it may hold at all, so that its own opens
 * always have room. */
static uint64_t ahead_bytes_cap(const struct config *cfg)
{
	uint64_t cap = AHEAD_BYTES_MAX;
	if (cfg->max_held_per_client / 4 < cap)
		cap = cfg->max_held_per_client / 4;
	if (cfg->max_held_per_user / 4 < cap)
		cap = cfg->max_held_per_user / 4;
	return cap;
}

/* Bytes all connections together may hold ahead: half of what the hot and
 * warm tiers free between high and low water. */
static uint64_t ahead_tier_share(const struct config *cfg)
{
	uint64_t band = 0;
	for (int t = 0; t < TIER_COUNT; t++) {
		const struct tier_conf *tc = &cfg->tiers[t];
		if (tc->present && tc->high_water > tc->low_water)
			band += tc->capacity / 100 * (tc->high_water - tc->low_water);
	}
	return band / 2;
}

/* One connection's cap: its own (ahead_bytes_cap) and its even share of
 * the tiers' (ahead_tier_share over the connections that ask for records,
 * itself included, or over the ranks of its job, world, if more: the first
 * to ask must not take the others' part). */
static uint64_t ahead_conn_cap(const struct api *api, uint32_t world)
{
	const struct config *cfg = api->cache->cfg;
	uint64_t share = ahead_tier_share(cfg);
	uint32_t askers = api->ahead_askers > world ? api->ahead_askers : world;
	uint64_t cap = ahead_bytes_cap(cfg);
	if (askers && share / askers < cap)
		cap = share / askers;
	return cap;
}

/* Whether a connection holding a->bytes ahead may take c0 more: its cap,
 * and the tiers' share for all of them together. */
static bool ahead_room(const struct api *api, const struct ahead_conn *a, uint32_t world, uint64_t c0)
{
	return a->bytes + c0 <= ahead_conn_cap(api, world) &&
	       api->cache->ctr.ahead_out_bytes + c0 <= ahead_tier_share(api->cache->cfg);
}

void api_ahead_info(const void *arg, struct status_ahead *out)
{
	const struct api *api = arg;
	out->bound_bytes = ahead_tier_share(api->cache->cfg);
	out->conn_bound_bytes = ahead_conn_cap(api, 0);
	out->askers = api->ahead_askers;
}

/* Where hd is in a's handed set, or -1. */
static int out_index(struct conn *c, const struct ahead_conn *a, const struct handle *hd)
{
	for (uint32_t i = 0; a && i < a->n; i++)
		if (session_handle_get(c, a->out[i].hid) == hd)
			return (int)i;
	return -1;
}

/* Drop hd from the handed set (it was used, released or is being freed);
 * returns whether it came with a descriptor. */
static bool out_remove(struct conn *c, struct handle *hd)
{
	struct ahead_conn *a = conn_sess(c)->ahead;
	hd->ahead = false;
	int i = out_index(c, a, hd);
	if (i < 0)
		return false;
	bool had_fd = a->out[i].bytes > 0;
	a->bytes -= a->out[i].bytes;
	conn_api(c)->cache->ctr.ahead_out--;
	conn_api(c)->cache->ctr.ahead_out_bytes -= a->out[i].bytes;
	a->out[i] = a->out[--a->n];
	return had_fd;
}

void ahead_close(struct conn *c, struct handle *hd, uint32_t flags)
{
	if (!hd->ahead)
		return;
	struct cache *cache = conn_api(c)->cache;
	bool had_fd = out_remove(c, hd);
	if (flags & TC_F_AHEAD_UNUSED) {
		cache->ctr.ahead_unused++;
		return;
	}
	cache->ctr.ahead_used++;
	/* without a descriptor the client asked for chunk 0 (CHUNK), which
	 * counted the access already */
	if (had_fd)
		handlers_count_access(c, hd);
}

void ahead_handle_gone(struct conn *c, struct handle *hd)
{
	/* freed while still handed: the connection went, or a bug in the
	 * client; either way nobody used it */
	conn_api(c)->cache->ctr.ahead_unused++;
	out_remove(c, hd);
}

void ahead_conn_free(struct session *s)
{
	if (s->ahead)
		s->api->ahead_askers--;
	free(s->ahead);
	s->ahead = NULL;
}

/* A hash of (ds, path): a request hands up to 64 files and checks each
 * against up to TC_AHEAD_HANDLES_MAX out, so most pairs differ here
 * rather than in a strcmp. */
static uint64_t out_key(const struct dataset *ds, const char *path)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)ds;
	for (; *path; path++)
		h = (h ^ (uint8_t)*path) * 1099511628211ull;
	return h;
}

/* Is a handle for (ds, path) (key: out_key of them) handed and still out? */
static bool out_has(struct conn *c, const struct ahead_conn *a, const struct dataset *ds,
		    const char *path, uint64_t key)
{
	for (uint32_t i = 0; i < a->n; i++) {
		if (a->out[i].key != key)
			continue;
		struct handle *h = session_handle_get(c, a->out[i].hid);
		if (h && h->ds == ds && strcmp(h->path, path) == 0)
			return true;
	}
	return false;
}

static struct ahead_cursor *cursor_get(struct ahead_conn *a, const struct dplan *pl)
{
	struct ahead_cursor *free_c = NULL;
	for (unsigned i = 0; i < AHEAD_PLANS; i++) {
		if (a->cur[i].psid == pl->psid)
			return &a->cur[i];
		if (!a->cur[i].psid && !free_c)
			free_c = &a->cur[i];
	}
	if (free_c)
		*free_c = (struct ahead_cursor){.psid = pl->psid, .next = 0};
	return free_c;
}

/* Forget the cursors of plans that are gone (replaced, cancelled). */
static void cursors_prune(struct ahead_conn *a, struct plans *reg)
{
	for (unsigned i = 0; i < AHEAD_PLANS; i++) {
		if (!a->cur[i].psid)
			continue;
		bool live = false;
		for (const struct dplan *pl = reg->list; pl && !live; pl = pl->next)
			live = pl->psid == a->cur[i].psid;
		if (!live)
			a->cur[i].psid = 0;
	}
}

static bool plan_is_ours(const struct dplan *pl, const struct tc_job_tag *job)
{
	return job->set && pl->job == job->job && !pl->ds->removed &&
	       (job->rank == TC_JOB_RANK_ANY || pl->rank == job->rank);
}

/* Release the handles the client names (nrel x u64): closed, counted unused. */
static bool release_named(struct conn *c, struct proto_rd *r, uint32_t nrel)
{
	for (uint32_t i = 0; i < nrel; i++) {
		uint64_t hid = proto_rd_u64(r);
		if (!proto_rd_ok(r))
			return false;
		struct handle *hd = session_handle_get(c, hid);
		if (hd && hd->ahead) { /* never a handle the client opened itself */
			ahead_close(c, hd, TC_F_AHEAD_UNUSED);
			session_handle_free(c, hid);
		}
	}
	return true;
}

struct hand {
	struct proto_wr *w;
	int fds[TC_REPLY_FDS_MAX];
	unsigned nfds;
	uint32_t count, want;
	uint32_t world; /* the largest world_size of the plans handed from */
	char buf[TC_PATH_MAX + 1];
};

/* Append the record of plan file e to the reply: 1 handed, 0 skipped (on
 * to the next), -errno stop (the connection's bounds). */
static int hand_one(struct conn *c, struct ahead_conn *a, struct hand *hn, struct dataset *ds,
		    struct mf_entry *e)
{
	struct cache *cache = conn_api(c)->cache;
	uint64_t key = out_key(ds, e->path);
	if (e->gone || out_has(c, a, ds, e->path, key) || access_may(c, ds, e->path, ACCESS_OPEN) < 0)
		return 0;
	uint64_t now = cache_now_ns();
	bool cheap = cold_has_cheap_stat(&ds->cold);
	if (cheap ? dataset_entry_due_soon(ds, e, now) : dataset_entry_stale(ds, e, now)) {
		/* confirm the version first, as OPEN would, and a little
		 * early, so that the record is not due by the time it is used
		 * (revals_start does so for a slow stat; one it did not get to
		 * is left to the client's own OPEN) */
		if (!cheap || dataset_revalidate_now(cache, ds, e) < 0 || e->gone)
			return 0;
		now = cache_now_ns();
	}
	uint64_t c0 = e->st.size < ds->conf.chunk_size ? e->st.size : ds->conf.chunk_size;
	if (!ahead_room(conn_api(c), a, hn->world, c0))
		return -ENOBUFS;
	uint64_t age_ms = (now - e->checked_ns) / 1000000u;
	uint64_t fresh = ds->conf.revalidate_after_ms > age_ms ? ds->conf.revalidate_after_ms - age_ms : 0;
	int n = snprintf(hn->buf, sizeof(hn->buf), "%s/%s", ds->name, e->path);
	if (n < 0 || (size_t)n >= sizeof(hn->buf))
		return 0;
	size_t mark = hn->w->len;
	proto_wr_str(hn->w, hn->buf);
	proto_wr_u32(hn->w, fresh > UINT32_MAX ? UINT32_MAX : (uint32_t)fresh);
	int fd;
	int rc = handlers_open_record(c, hn->w, TC_F_WANT_CHUNK0 | HANDLERS_OPEN_NO_ACCESS, ds, e, &fd);
	if (rc < 0) {
		hn->w->len = mark;
		return rc;
	}
	struct session *s = conn_sess(c);
	/* the record's handle is the newest: the one at the free hint - 1 */
	struct handle *hd = s->handles[s->free_hint - 1];
	hd->ahead = true;
	uint64_t bytes = fd >= 0 && hd->nheld ? hd->held[0].f->len : 0;
	a->out[a->n++] = (struct ahead_out){
		.hid = session_handle_id(s->free_hint - 1, hd->gen),
		.bytes = bytes,
		.key = key,
	};
	a->bytes += bytes;
	cache->ctr.ahead_out++;
	cache->ctr.ahead_out_bytes += bytes;
	if (fd >= 0)
		hn->fds[hn->nfds++] = fd;
	else if (e->st.size)
		prefetch_open_ahead(conn_api(c)->plans->pf, ds, e->path, &e->st);
	cache->ctr.ahead_handed++;
	hn->count++;
	return 1;
}

/* The entry of the file whose first chunk is at plan position p, if not
 * read yet and still in the manifest (else NULL: nothing to hand there). */
static struct mf_entry *plan_file_at(const struct dplan *pl, const struct ahead_conn *a, uint64_t p)
{
	uint64_t aux = plan_track_aux(&pl->tr, p);
	if (PLAN_AUX_IDX(aux) != 0 || plan_track_done(&pl->tr, p))
		return NULL;
	uint32_t i = PLAN_AUX_SAMPLE(aux);
	if (a->st_workers > 1 && (i / a->st_batch) % a->st_workers != a->st_index)
		return NULL; /* another worker's batch */
	return manifest_find(pl->ds->mf, pl->files[PLAN_AUX_FILE(aux)].path);
}

/* Where a connection's scan of a plan starts: its cursor, never behind
 * the plan's position. */
static uint64_t scan_start(const struct ahead_cursor *cur, const struct dplan *pl)
{
	uint64_t pos = plan_track_pos(&pl->tr);
	return cur->next > pos ? cur->next : pos;
}

/* Hand files of pl from its cursor on until hn is full. -errno: stop. */
static int hand_plan(struct conn *c, struct ahead_conn *a, struct hand *hn, struct dplan *pl)
{
	struct ahead_cursor *cur = cursor_get(a, pl);
	if (!cur)
		return 0;
	uint64_t p = scan_start(cur, pl), end = plan_track_end(&pl->tr);
	int rc = 0;
	for (unsigned scanned = 0; p < end && scanned < AHEAD_SCAN_MAX; p++, scanned++) {
		if (hn->count == hn->want || a->n == TC_AHEAD_HANDLES_MAX)
			break;
		struct mf_entry *e = plan_file_at(pl, a, p);
		if (e && (rc = hand_one(c, a, hn, pl->ds, e)) < 0)
			break; /* p stays: handed on a later call */
	}
	cur->next = p;
	return rc < 0 ? rc : 0;
}

/* Write the answer of an OPEN_AHEAD that asked for want records. */
static void ahead_answer(struct conn *c, uint32_t id, uint32_t want)
{
	struct session *s = conn_sess(c);
	struct api *api = conn_api(c);
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	uint64_t plan_id = 0;
	unsigned nplans = 0;
	struct hand hn = {.w = &w, .want = want};
	for (const struct dplan *pl = api->plans->list; pl; pl = pl->next) {
		if (plan_is_ours(pl, &s->job)) {
			plan_id = plan_id * 1000003u + pl->psid;
			nplans++;
			if (pl->world_size > hn.world)
				hn.world = pl->world_size;
		}
	}
	proto_wr_u8(&w, nplans ? TC_AHEAD_PLAN : TC_AHEAD_NONE);
	proto_wr_u64(&w, plan_id);
	size_t at = w.len;
	proto_wr_u32(&w, 0); /* count, patched below */
	if (nplans && want && s->ahead) {
		cursors_prune(s->ahead, api->plans);
		for (struct dplan *pl = api->plans->list; pl; pl = pl->next) {
			if (!plan_is_ours(pl, &s->job))
				continue;
			if (hand_plan(c, s->ahead, &hn, pl) < 0 || hn.count == want)
				break;
		}
	}
	if (!w.oom)
		for (int i = 0; i < 4; i++)
			w.buf[at + i] = (uint8_t)(hn.count >> (8 * i));
	conn_reply_fds(c, TC_OP_OPEN_AHEAD, id, &w, hn.fds, hn.nfds);
	proto_wr_free(&w);
}

/* Memory a waiting request counts against its connection: its share of
 * the revalidations it started (their jobs and paths). */
#define AHEAD_WAIT_WORK ((size_t)TC_REPLY_FDS_MAX * 512u)

/* One revalidation of the waiting request is back (a file that failed it
 * stays stale and the answer skips it); the last answers. */
static void wait_put(struct cache *cache, void *arg, int err)
{
	(void)cache;
	(void)err;
	struct conn *c = arg;
	struct ahead_conn *a = conn_sess(c)->ahead;
	if (--a->waiting)
		return;
	if (!c->dead)
		ahead_answer(c, a->wait_id, a->wait_want);
	conn_work_end(c, AHEAD_WAIT_WORK);
	conn_put(c);
}

/* Start the revalidations of the (at most want) plan files the answer
 * would hand next whose version is past revalidate_after on a store
 * without a cheap stat; a->waiting counts them. */
static void revals_start(struct conn *c, struct ahead_conn *a, uint32_t want)
{
	struct api *api = conn_api(c);
	struct session *s = conn_sess(c);
	uint64_t now = cache_now_ns();
	uint32_t seen = 0;
	cursors_prune(a, api->plans);
	for (struct dplan *pl = api->plans->list; pl && seen < want; pl = pl->next) {
		struct dataset *ds = pl->ds;
		if (!plan_is_ours(pl, &s->job) || cold_has_cheap_stat(&ds->cold))
			continue;
		struct ahead_cursor *cur = cursor_get(a, pl);
		if (!cur)
			continue;
		uint64_t p = scan_start(cur, pl), end = plan_track_end(&pl->tr);
		for (unsigned scanned = 0; p < end && scanned < AHEAD_SCAN_MAX && seen < want;
		     p++, scanned++) {
			struct mf_entry *e = plan_file_at(pl, a, p);
			if (!e || out_has(c, a, ds, e->path, out_key(ds, e->path)))
				continue;
			seen++;
			if (!dataset_entry_due_soon(ds, e, now) ||
			    access_may(c, ds, e->path, ACCESS_OPEN) < 0)
				continue;
			a->waiting++;
			if (dataset_revalidate_async(api->cache, ds, e->path, wait_put, c) < 0)
				a->waiting--;
		}
	}
}

void ahead_op(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct session *s = conn_sess(c);
	uint32_t want = proto_rd_u32(r);
	uint32_t nrel = proto_rd_u32(r);
	bool noreply = h->aux & TC_F_NOREPLY;
	if (!proto_rd_ok(r) || want > TC_REPLY_FDS_MAX || nrel > TC_AHEAD_HANDLES_MAX ||
	    (noreply && want)) {
		conn_count_bad_frame(c);
		if (!noreply)
			conn_reply_err(c, h->op, h->id, EBADMSG,
				       "malformed OPEN_AHEAD (want <= %u, at most %u handles released)",
				       TC_REPLY_FDS_MAX, TC_AHEAD_HANDLES_MAX);
		return;
	}
	uint32_t st[3] = {1, 1, 0}; /* batch, workers, index: no stride */
	bool stride = false, ok = release_named(c, r, nrel);
	if (ok && !proto_rd_done(r)) {
		stride = true;
		for (int i = 0; i < 3; i++)
			st[i] = proto_rd_u32(r);
		ok = proto_rd_done(r) && st[0] >= 1 && st[0] <= TC_AHEAD_STRIDE_MAX && st[1] >= 1 &&
		     st[1] <= TC_AHEAD_STRIDE_MAX && st[2] < st[1];
	}
	if (!ok) {
		conn_count_bad_frame(c);
		if (!noreply)
			conn_reply_err(c, h->op, h->id, EBADMSG, "malformed OPEN_AHEAD");
		return;
	}
	if (noreply)
		return;
	if (want && !s->ahead) {
		if (!(s->ahead = calloc(1, sizeof(*s->ahead)))) {
			conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
			return;
		}
		conn_api(c)->ahead_askers++; /* until the connection goes */
	}
	struct ahead_conn *a = s->ahead;
	if (a && stride && (a->st_batch != st[0] || a->st_workers != st[1] || a->st_index != st[2])) {
		a->st_batch = st[0];
		a->st_workers = st[1];
		a->st_index = st[2];
		/* what the cursors passed was another worker's part before */
		memset(a->cur, 0, sizeof(a->cur));
	}
	if (!want || a->waiting) { /* one waiting request per connection */
		ahead_answer(c, h->id, want);
		return;
	}
	a->wait_id = h->id;
	a->wait_want = want;
	a->waiting = 1; /* until every revalidation is started */
	conn_get(c);
	conn_work_begin(c, AHEAD_WAIT_WORK);
	revals_start(c, a, want);
	wait_put(conn_api(c)->cache, c, 0);
}
