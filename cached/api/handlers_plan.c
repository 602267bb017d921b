/*
 * Request handlers for plans: PLAN_SET, PLAN_CANCEL and CONN_JOB (payloads in
 * include/tiercache/protocol.h). Decoding, limits and name resolution here;
 * the registry is plans.c. Loop thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "manifest.h"
#include "plans.h"
#include "handlers.h"

struct plan_req {
	struct dataset *ds;
	uint64_t job;
	uint32_t rank, world_size, epoch;
	uint8_t flags, kind;
	uint32_t n;
};

/* Read "str dataset" and find it (with a manifest). On error reply and
 * return NULL. */
static struct dataset *plan_dataset(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	char name[TC_DATASET_NAME_MAX + 1];
	if (!proto_rd_str_copy(r, name, sizeof(name))) {
		conn_reply_err(c, h->op, h->id, r->left >= 4 ? EINVAL : EBADMSG,
			       "malformed request: a dataset name of at most %u bytes comes first",
			       TC_DATASET_NAME_MAX);
		return NULL;
	}
	struct dataset *ds = cache_dataset(conn_api(c)->cache, name, strlen(name));
	if (!ds) {
		conn_reply_err(c, h->op, h->id, ENOENT, "no dataset named \"%s\" (tierctl datasets lists them)",
			       name);
		return NULL;
	}
	if (!ds->mf) {
		conn_reply_err(c, h->op, h->id, EIO, "dataset %s is unavailable: %s", ds->name, ds->reason);
		return NULL;
	}
	return ds;
}

/* Resolve the frame's n entries into v. On error reply and return false. */
static bool plan_resolve(struct conn *c, const struct tc_hdr *h, struct proto_rd *r,
			 const struct plan_req *q, struct plan_entry *v)
{
	const struct manifest *mf = q->ds->mf;
	for (uint32_t i = 0; i < q->n; i++) {
		const struct mf_entry *e = NULL;
		if (q->kind == TC_PLAN_INDICES) {
			uint64_t ix = proto_rd_u64(r);
			if (!proto_rd_ok(r))
				break;
			if (ix < mf->n && !mf->v[ix].gone)
				e = &mf->v[ix];
			if (!e) {
				conn_reply_err(c, h->op, h->id, ENOENT,
					       "index %llu is not a file of dataset %s (it has %zu files); "
					       "nothing was registered",
					       (unsigned long long)ix, q->ds->name, mf->n);
				return false;
			}
		} else {
			size_t len;
			const char *s = proto_rd_str(r, TC_PATH_MAX, &len);
			if (!s)
				break;
			char path[TC_PATH_MAX + 1];
			memcpy(path, s, len);
			path[len] = '\0';
			if (!manifest_path_valid(path, len)) {
				conn_reply_err(c, h->op, h->id, EINVAL,
					       "plan entry %u: invalid path \"%.200s\" (relative to the dataset, no "
					       "empty, \".\" or \"..\" components); nothing was registered",
					       i, path);
				return false;
			}
			e = manifest_find(mf, path);
			if (!e) {
				conn_reply_err(c, h->op, h->id, ENOENT,
					       "no file \"%.200s\" in dataset %s; nothing was registered", path,
					       q->ds->name);
				return false;
			}
		}
		v[i] = (struct plan_entry){.path = e->path, .src = e->st};
	}
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG,
			       "malformed PLAN_SET: the payload does not hold the %u entries it announces", q->n);
		return false;
	}
	return true;
}

static void plan_reply(struct conn *c, const struct tc_hdr *h, uint64_t entries, uint64_t chunks,
		       bool registered)
{
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u64(&w, entries);
	proto_wr_u64(&w, chunks);
	proto_wr_u8(&w, registered);
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}

void handlers_plan_set(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct plan_req q = {0};
	struct plan_entry *v = NULL;
	if (!(q.ds = plan_dataset(c, h, r)))
		return;
	q.job = proto_rd_u64(r);
	q.rank = proto_rd_u32(r);
	q.world_size = proto_rd_u32(r);
	q.epoch = proto_rd_u32(r);
	q.flags = proto_rd_u8(r);
	q.kind = proto_rd_u8(r);
	q.n = proto_rd_u32(r);
	struct plan_stage *st = proto_rd_ok(r) ? plans_stage_get(conn_api(c)->plans, c, q.ds, q.job, q.rank) : NULL;
	if (!proto_rd_ok(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed PLAN_SET header");
		return;
	}
	/* from here on any error also drops the sequence in progress */
	int err = 0;
	if (q.world_size == 0 || q.rank >= q.world_size) {
		conn_reply_err(c, h->op, h->id, EINVAL,
			       "rank %u of world_size %u: need world_size >= 1 and rank < world_size", q.rank,
			       q.world_size);
		goto fail;
	}
	if (q.flags & ~(TC_PLAN_APPEND | TC_PLAN_MORE | TC_PLAN_CONT | TC_PLAN_RESUME) ||
	    (q.kind != TC_PLAN_PATHS && q.kind != TC_PLAN_INDICES)) {
		conn_reply_err(c, h->op, h->id, EINVAL, "unknown plan flags 0x%x or kind %u (paths 1, indices 2)",
			       q.flags, q.kind);
		goto fail;
	}
	if ((q.flags & TC_PLAN_CONT) && !st) {
		conn_reply_err(c, h->op, h->id, EINVAL,
			       "this plan frame continues a registration that is not in progress (it failed "
			       "or was never started): send the plan again from its first frame");
		return;
	}
	if (!(q.flags & TC_PLAN_CONT) && st) {
		plans_stage_drop(conn_api(c)->plans, st); /* a new sequence replaces an abandoned one */
		st = NULL;
	}
	/* each entry takes at least 8 bytes (index) or 4 + 1 (path) */
	if (q.n > r->left / (q.kind == TC_PLAN_INDICES ? 8 : 5) ||
	    plans_stage_count(st) + q.n > TC_PLAN_ENTRIES_MAX) {
		if (q.n > r->left / (q.kind == TC_PLAN_INDICES ? 8 : 5))
			conn_reply_err(c, h->op, h->id, EBADMSG,
				       "malformed PLAN_SET: %u entries announced in %zu bytes", q.n, r->left);
		else
			conn_reply_err(c, h->op, h->id, EINVAL,
				       "plan too long: at most %u files per registration (register the rest "
				       "with append)",
				       TC_PLAN_ENTRIES_MAX);
		goto fail;
	}
	v = malloc((q.n ? q.n : 1) * sizeof(*v));
	if (!v) {
		conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		goto fail;
	}
	if (!plan_resolve(c, h, r, &q, v))
		goto fail;
	if (q.flags & TC_PLAN_MORE) {
		if (!st)
			st = plans_stage_start(conn_api(c)->plans, c, q.ds, q.job, q.rank,
					       q.flags & (TC_PLAN_APPEND | TC_PLAN_RESUME));
		if (!st || plans_stage_add(st, v, q.n) < 0) {
			conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
			goto fail;
		}
		plan_reply(c, h, plans_stage_count(st), 0, false);
		free(v);
		return;
	}
	uint64_t entries = q.n;
	if (st) {
		err = plans_stage_commit(conn_api(c)->plans, st, q.world_size, q.epoch, v, q.n, &entries);
		st = NULL;
	} else {
		err = plans_set(conn_api(c)->plans, c, q.ds, q.job, q.rank, q.world_size, q.epoch,
				q.flags & (TC_PLAN_APPEND | TC_PLAN_RESUME), v, q.n);
	}
	free(v);
	if (err == -ENOSPC) {
		conn_reply_err(c, h->op, h->id, ENOSPC,
			       "too many plans on this node (%u): cancel plans that are done", PLANS_MAX);
		return;
	}
	if (err == -EFBIG) {
		conn_reply_err(c, h->op, h->id, EFBIG,
			       "plan too long: at most %llu chunk reads ahead of its position (append "
			       "later epochs as the job gets to them)",
			       (unsigned long long)PLANS_CHUNKS_MAX);
		return;
	}
	if (err < 0) {
		conn_reply_err(c, h->op, h->id, -err, "cannot register the plan: %s", strerror(-err));
		return;
	}
	struct dplan *pl = plans_find(conn_api(c)->plans, q.ds, q.job, q.rank);
	plan_reply(c, h, entries, pl ? plan_track_end(&pl->tr) - plan_track_pos(&pl->tr) : 0, true);
	return;
fail:
	free(v);
	if (st)
		plans_stage_drop(conn_api(c)->plans, st);
}

void handlers_plan_cancel(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct dataset *ds = plan_dataset(c, h, r);
	if (!ds)
		return;
	uint64_t job = proto_rd_u64(r);
	uint32_t rank = proto_rd_u32(r);
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed PLAN_CANCEL: str dataset, u64 job, u32 rank");
		return;
	}
	if (plans_cancel(conn_api(c)->plans, ds, job, rank) < 0) {
		conn_reply_err(c, h->op, h->id, ENOENT, "no plan of job %llu rank %u on dataset %s",
			       (unsigned long long)job, rank, ds->name);
		return;
	}
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}

void handlers_conn_job(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct tc_job_tag t;
	int rc = proto_job_decode(r->p, r->left, &t);
	if (rc == -EBADMSG) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed CONN_JOB: u8 flags, u64 job, u32 rank");
		return;
	}
	if (rc < 0) {
		conn_reply_err(c, h->op, h->id, EINVAL,
			       "unknown CONN_JOB flags (0x1 tags the connection, 0 removes the tag)");
		return;
	}
	conn_sess(c)->job = t;
	if (t.set && t.rank == TC_JOB_RANK_ANY)
		log_debug("pid=%d job=%llu rank=any op=conn_job", (int)c->pid, (unsigned long long)t.job);
	else if (t.set)
		log_debug("pid=%d job=%llu rank=%u op=conn_job", (int)c->pid, (unsigned long long)t.job, t.rank);
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}
