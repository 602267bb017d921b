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
#include "job_plans.h"
#include "plan_frame.h"
#include "plans.h"
#include "access.h"
#include "handlers.h"

/* The dataset named name, with a manifest. On error reply and return NULL. */
static struct dataset *plan_dataset_named(struct conn *c, const struct tc_hdr *h, const char *name)
{
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
	/* a plan makes the daemon read the dataset for its client: only a
	 * client the dataset admits may (each file's own mode, with access =
	 * source, is checked when the client opens it) */
	if (!access_check(c, h->op, h->id, ds, "", ACCESS_STAT))
		return NULL;
	return ds;
}

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
	return plan_dataset_named(c, h, name);
}

/* May c change pl (replace, extend, cancel)? If not, reply EPERM naming
 * the owner and return false. */
static bool plan_owner_check(struct conn *c, const struct tc_hdr *h, const struct dplan *pl)
{
	if (plans_owner_ok(pl, conn_sess(c)->cred.uid, conn_sess(c)->cred.trusted))
		return true;
	log_info("client_pid=%d uid=%u dataset=%s job=%llu rank=%u owner_uid=%u op=%s "
		 "err=\"not the plan's owner\"",
		 (int)c->pid, (unsigned)c->uid, pl->ds->name, (unsigned long long)pl->job, pl->rank,
		 (unsigned)pl->uid, h->op == TC_OP_PLAN_CANCEL ? "plan_cancel" : "plan_set");
	conn_reply_err(c, h->op, h->id, EPERM,
		       "the plan of job %llu rank %u on dataset %s belongs to uid %u: only that uid or "
		       "an admin may replace or cancel it (use another job id for a plan of your own)",
		       (unsigned long long)pl->job, pl->rank, pl->ds->name, (unsigned)pl->uid);
	return false;
}

/* May c replace or cancel ds's whole-job plan of job? If not, reply EPERM. */
static bool job_owner_check(struct conn *c, const struct tc_hdr *h, struct dataset *ds, uint64_t job)
{
	const struct job_plan *jp = job_plans_find(conn_api(c)->plans->jobs, ds, job);
	if (!jp || conn_sess(c)->cred.trusted || jp->uid == conn_sess(c)->cred.uid)
		return true;
	conn_reply_err(c, h->op, h->id, EPERM,
		       "the whole-job plan of job %llu on dataset %s belongs to uid %u: only that uid or "
		       "an admin may replace or cancel it (use another job id for a plan of your own)",
		       (unsigned long long)job, ds->name, (unsigned)jp->uid);
	return false;
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
	struct plans *plans = conn_api(c)->plans;
	struct plan_frame q;
	char msg[PLAN_FRAME_MSG];
	uint32_t *ix = NULL;
	uint64_t fp = 0;
	int rc = plan_frame_head(r, &q, msg);
	if (rc < 0) {
		conn_reply_err(c, h->op, h->id, -rc, "%s", msg);
		return;
	}
	struct dataset *ds = plan_dataset_named(c, h, q.dataset);
	if (!ds)
		return;
	struct plan_stage *st = plan_stage_get(&plans->stages, c, ds, q.job, q.rank);
	/* from here on any error also drops the sequence in progress */
	if ((q.flags & TC_PLAN_CONT) && !st) {
		rc = plan_frame_check(&q, r->left, 0, msg);
		if (rc < 0)
			conn_reply_err(c, h->op, h->id, -rc, "%s", msg);
		else
			conn_reply_err(c, h->op, h->id, EINVAL,
				       "this plan frame continues a registration that is not in progress "
				       "(it failed or was never started): send the plan again from its "
				       "first frame");
		return;
	}
	if (!(q.flags & TC_PLAN_CONT) && st) {
		plan_stage_drop(&plans->stages, st); /* a new sequence replaces an abandoned one */
		st = NULL;
	}
	rc = plan_frame_check(&q, r->left, st ? st->n : 0, msg);
	if (rc < 0) {
		conn_reply_err(c, h->op, h->id, -rc, "%s", msg);
		goto fail;
	}
	if (((st ? st->flags : q.flags) & TC_PLAN_JOB) && !job_owner_check(c, h, ds, q.job))
		goto fail;
	if (!plan_owner_check(c, h, plans_find(plans, ds, q.job, q.rank)))
		goto fail;
	if (st && st->mf != ds->mf) {
		conn_reply_err(c, h->op, h->id, ESTALE,
			       "dataset %s was refreshed while this plan was being sent: send the plan "
			       "again from its first frame",
			       ds->name);
		goto fail;
	}
	ix = malloc((q.n ? q.n : 1) * sizeof(*ix));
	if (!ix) {
		conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		goto fail;
	}
	rc = plan_frame_entries(r, &q, ds->mf, ix, &fp, msg);
	if (rc < 0) {
		conn_reply_err(c, h->op, h->id, -rc, "%s", msg);
		goto fail;
	}
	if (q.flags & TC_PLAN_MORE) {
		if (!st)
			rc = plan_stage_start(&plans->stages, c, ds, ds->mf, q.job, q.rank,
					      q.flags & (TC_PLAN_APPEND | TC_PLAN_RESUME | TC_PLAN_JOB), &st);
		if (rc == 0)
			rc = plan_stage_add(&plans->stages, st, ix, q.n, fp);
		if (rc == -EBUSY)
			conn_reply_err(c, h->op, h->id, EBUSY,
				       "this connection has %u plan registrations in progress already: "
				       "send their last frames first",
				       PLAN_STAGE_CONN_MAX);
		else if (rc == -E2BIG)
			conn_reply_err(c, h->op, h->id, EINVAL,
				       "plan registrations in progress on this connection would hold more "
				       "than %u files together: finish one before starting the next",
				       PLAN_STAGE_CONN_ENTRIES);
		else if (rc < 0)
			conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		if (rc < 0)
			goto fail;
		plan_reply(c, h, st->n, 0, false);
		free(ix);
		return;
	}
	uint64_t entries = q.n;
	/* the plan is the acting user's (a mount acts for its callers) */
	uid_t owner = conn_sess(c)->cred.uid;
	int err;
	if (st) {
		err = plans_stage_commit(plans, st, owner, q.world_size, q.epoch, ix, q.n, &entries);
		st = NULL;
	} else if (q.flags & TC_PLAN_JOB) {
		err = job_plans_set_local(plans->jobs, c, owner, ds, q.job, q.rank, q.world_size, q.epoch,
					  q.flags & (TC_PLAN_RESUME | TC_PLAN_APPEND), NULL, 0, ix, q.n);
	} else {
		err = plans_set(plans, c, owner, ds, q.job, q.rank, q.world_size, q.epoch,
				q.flags & (TC_PLAN_APPEND | TC_PLAN_RESUME), ix, q.n);
	}
	free(ix);
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
	if (err == -EXDEV) {
		conn_reply_err(c, h->op, h->id, EINVAL,
			       "job %llu's whole-job plan was registered on another node: append to it "
			       "there, or register the whole order here",
			       (unsigned long long)q.job);
		return;
	}
	if (err == -EDOM) {
		conn_reply_err(c, h->op, h->id, EINVAL,
			       "append to job %llu's whole-job plan with world_size %u: the plan has "
			       "another world_size (register the whole order instead)",
			       (unsigned long long)q.job, q.world_size);
		return;
	}
	if (err == -ESTALE) {
		conn_reply_err(c, h->op, h->id, ESTALE,
			       "dataset %s was refreshed while this plan was being sent: send the plan "
			       "again from its first frame",
			       ds->name);
		return;
	}
	if (err < 0) {
		conn_reply_err(c, h->op, h->id, -err, "cannot register the plan: %s", strerror(-err));
		return;
	}
	struct dplan *pl = plans_find(plans, ds, q.job, q.rank);
	plan_reply(c, h, entries, pl ? plan_track_end(&pl->tr) - plan_track_pos(&pl->tr) : 0, true);
	return;
fail:
	free(ix);
	if (st)
		plan_stage_drop(&plans->stages, st);
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
	struct dplan *pl = plans_find(conn_api(c)->plans, ds, job, rank);
	bool whole = job_plans_find(conn_api(c)->plans->jobs, ds, job) != NULL;
	if (whole && !job_owner_check(c, h, ds, job))
		return;
	if (!whole && pl && !plan_owner_check(c, h, pl))
		return;
	/* a whole-job plan is cancelled with any rank: everywhere it runs */
	if (whole ? job_plans_cancel(conn_api(c)->plans->jobs, ds, job, true) < 0
		  : plans_cancel(conn_api(c)->plans, ds, job, rank) < 0) {
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
	if (t.set)
		job_plans_serve(conn_api(c)->plans->jobs, t.job, t.rank); /* this node serves that rank */
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
