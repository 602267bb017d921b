/*
 * Whole-job plans shared through Redis, the loading side: list the index,
 * drop the copies that were cancelled or lapsed, fetch and decode the plans
 * this node wants. See plan_share.h; loop thread only.
 */
#include "plan_share_int.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_plans.h"
#include "log.h"
#include "plan_codec.h"
#include "plan_codec_job.h"
#include "plan_share_lua.h"
#include "plans.h"

static void on_decoded(struct plan_codec_job *cj);

static bool is_bad(const struct plan_share *ps, uint64_t gen)
{
	for (unsigned i = 0; i < ps->nbad; i++)
		if (ps->bad_gens[i] == gen)
			return true;
	return false;
}

static void mark_bad(struct plan_share *ps, uint64_t gen)
{
	ps->bad_gens[ps->nbad < BAD_GENS_MAX ? ps->nbad++ : gen % BAD_GENS_MAX] = gen;
}

/* One index field and value, checked. */
static bool parse_entry(const redisReply *f, const redisReply *v, struct ps_entry *e)
{
	if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING || f->len >= FIELD_MAX ||
	    v->len >= 200)
		return false;
	char fs[FIELD_MAX], vs[200];
	memcpy(fs, f->str, f->len);
	fs[f->len] = '\0';
	memcpy(vs, v->str, v->len);
	vs[v->len] = '\0';
	int used = 0;
	e->rank = TC_JOB_RANK_ANY;
	if (sscanf(fs, "%64[A-Za-z0-9._-] %" SCNu64 "%n", e->dataset, &e->job, &used) != 2)
		return false;
	if ((size_t)used != f->len) { /* a per-rank plan: " RANK", digits only */
		int more = 0;
		uint64_t rank = 0;
		if (fs[used] != ' ' || fs[used + 1] < '0' || fs[used + 1] > '9' ||
		    sscanf(fs + used + 1, "%" SCNu64 "%n", &rank, &more) != 1 ||
		    (size_t)(used + 1 + more) != f->len || rank >= TC_JOB_RANK_ANY)
			return false;
		e->rank = (uint32_t)rank;
	}
	used = 0;
	if (sscanf(vs,
		   "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %" SCNu64 "%n",
		   &e->gen, &e->np, &e->expires, &e->published, &e->clen, &e->rawlen, &e->hash,
		   &used) != 7 ||
	    (size_t)used != v->len)
		return false;
	if (e->np == 0) /* a tombstone */
		return e->gen > 0;
	return e->gen > 0 && e->np <= PLAN_CODEC_PIECES_MAX && e->clen > 0 &&
	       e->clen <= PLAN_CODEC_ENCODED_MAX &&
	       e->np == (e->clen + PLAN_CODEC_PIECE_MAX - 1) / PLAN_CODEC_PIECE_MAX &&
	       e->rawlen <= PLAN_CODEC_RAW_MAX;
}

static const struct ps_entry *entry_find(const struct plan_share *ps, const char *dataset,
					 uint64_t job, uint32_t rank)
{
	for (size_t i = 0; i < ps->nidx; i++)
		if (ps->idx[i].job == job && ps->idx[i].rank == rank &&
		    strcmp(ps->idx[i].dataset, dataset) == 0)
			return &ps->idx[i];
	return NULL;
}

/* After a list: drop the copies from the cluster that were cancelled, or
 * have been missing from the index for a TTL (a restarted Redis is given
 * that long to be written again). */
static void reconcile(struct plan_share *ps)
{
	uint64_t now = cache_now_ns();
	for (struct job_plan *jp = ps->jps->list, *next; jp; jp = next) {
		next = jp->next;
		if (!jp->remote)
			continue;
		const struct ps_entry *e = entry_find(ps, jp->ds->name, jp->job, jp->only_rank);
		bool drop = false;
		if (e && e->np == 0 && e->gen >= jp->share_gen) {
			drop = true; /* cancelled */
		} else if (e) {
			jp->share_absent_ns = 0;
		} else if (!jp->share_absent_ns) {
			jp->share_absent_ns = now;
		} else if (now - jp->share_absent_ns >= ps->ttl_ms * 1000000ull) {
			drop = true;
		}
		if (drop) {
			ps->dropped++;
			(void)job_plans_end(ps->jps, jp->ds, jp->job, jp->only_rank, false);
		}
	}
}

static void on_listed(void *arg, struct redisReply *r, int err)
{
	struct ps_req *q = arg;
	struct plan_share *ps = ps_req_done(q);
	free(q);
	if (!ps)
		return;
	ps->listing = false;
	if (err < 0 || r->type != REDIS_REPLY_ARRAY || r->elements % 2 ||
	    r->elements > 2 * PLAN_SHARE_INDEX_MAX) {
		ps->list_failures++;
		if (err == 0)
			log_warn("op=job_plans_list err=\"unexpected reply (%zu elements)\" (kept "
				 "the last list)",
				 r->type == REDIS_REPLY_ARRAY ? r->elements : 0);
	} else {
		ps->lists++;
		size_t n = 0;
		for (size_t i = 0; i < r->elements; i += 2)
			if (parse_entry(r->element[i], r->element[i + 1], &ps->idx[n]))
				n++;
		ps->nidx = n;
		reconcile(ps);
		ps_load_next(ps);
	}
	if (ps->list_again) {
		ps->list_again = false;
		if (redis_conn_up(ps->rc)) {
			struct ps_req *q2 = ps_req_new(ps, REQ_LIST);
			const char *argv[] = {"EVAL", plan_share_list_script, "1", ps->index_key};
			if (q2 && ps_req_send(q2, on_listed, 4, argv, NULL) == 0)
				ps->listing = true;
		}
	}
}

void ps_list_now(struct plan_share *ps)
{
	if (ps->listing) {
		ps->list_again = true;
		return;
	}
	if (!redis_conn_up(ps->rc))
		return;
	struct ps_req *q = ps_req_new(ps, REQ_LIST);
	if (!q)
		return;
	const char *argv[] = {"EVAL", plan_share_list_script, "1", ps->index_key};
	if (ps_req_send(q, on_listed, 4, argv, NULL) == 0)
		ps->listing = true;
	else
		ps->list_failures++;
}

/* Should e be loaded? (a dataset here, a version newer than what this
 * node has; without homes, a job served here) */
static bool wanted(struct plan_share *ps, const struct ps_entry *e)
{
	/* a node that serves no rank of the job is still home for its share
	 * of the job's chunks: it loads the plan for its home view */
	/* (a per-rank plan's copy serves only the home views: homes needed) */
	if (e->np == 0 || is_bad(ps, e->gen) ||
	    (!ps->is_home && (e->rank != TC_JOB_RANK_ANY || !job_plans_serves(ps->jps, e->job))) ||
	    plan_cancels_match(&ps->pend, e->dataset, e->job, e->rank, e->gen, e->hash))
		return false;
	struct dataset *ds = ps_dataset_named(ps, e->dataset);
	if (!ds)
		return false;
	struct job_plan *jp = job_plans_get(ps->jps, ds, e->job, e->rank);
	if (!jp)
		return true;
	if (jp->share_gen == e->gen)
		return false;
	if (!jp->remote) /* ours: unpublished yet, or newer than what is listed */
		return jp->share_gen != 0 && jp->share_gen != GEN_UNPUBLISHABLE &&
		       jp->share_gen < e->gen;
	if (jp->share_gen > e->gen)
		return false;
	if (jp->share_hash == e->hash) {
		jp->share_gen =
			e->gen; /* the same list registered again: keep the slices' positions */
		return false;
	}
	return true;
}

static void on_loaded(void *arg, struct redisReply *r, int err)
{
	struct ps_req *q = arg;
	struct plan_share *ps = ps_req_done(q);
	if (!ps) {
		free(q);
		return;
	}
	ps->loading = false;
	const struct ps_entry *e = &q->ent;
	uint8_t *enc = NULL;
	char why[160] = "";
	if (err < 0 || r->type != REDIS_REPLY_ARRAY || r->elements != e->np) {
		snprintf(why, sizeof(why), "%s", err < 0 ? strerror(-err) : "unexpected reply");
		goto fail;
	}
	size_t at = 0;
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *p = r->element[i];
		if (p->type != REDIS_REPLY_STRING) {
			snprintf(why, sizeof(why), "piece %zu gone (replaced or lapsed meanwhile)",
				 i);
			goto fail; /* not bad: the next list has the newer version */
		}
		if (p->len > PLAN_CODEC_PIECE_MAX || at + p->len > e->clen) {
			snprintf(why, sizeof(why),
				 "pieces longer than the %" PRIu64 " bytes announced", e->clen);
			mark_bad(ps, e->gen);
			goto fail;
		}
		at += p->len;
	}
	if (at != e->clen) {
		snprintf(why, sizeof(why), "pieces of %zu bytes, %" PRIu64 " announced", at,
			 e->clen);
		mark_bad(ps, e->gen);
		goto fail;
	}
	enc = malloc(at);
	if (!enc) {
		snprintf(why, sizeof(why), "out of memory");
		goto fail;
	}
	at = 0;
	for (size_t i = 0; i < r->elements; i++) {
		memcpy(enc + at, r->element[i]->str, r->element[i]->len);
		at += r->element[i]->len;
	}
	/* decompressed, hashed and parsed on a worker: on_decoded goes on */
	if (plan_codec_job_decode(ps->cache->workers, enc, at, e->rawlen, e->hash,
				  ps->codec_delay_ms, on_decoded, q) < 0) {
		enc = NULL; /* taken over */
		snprintf(why, sizeof(why), "out of memory");
		goto fail;
	}
	ps->codec_busy++;
	ps_req_track(q);
	ps->loading = true;
	return;
fail:
	ps->load_failures++;
	log_warn("dataset=%s job=%" PRIu64 " version=%" PRIu64 " op=job_plan_load err=\"%s\"",
		 e->dataset, e->job, e->gen, why);
	free(enc);
	free(q);
	ps_load_next(ps);
}

/* q's plan came back decoded from the worker: install it, unless it is no
 * longer wanted (the list now names a newer version, or a tombstone, or
 * this node got the plan otherwise meanwhile). Loop thread. */
static void on_decoded(struct plan_codec_job *cj)
{
	struct ps_req *q = cj->arg;
	struct plan_share *ps = ps_codec_done(cj);
	if (!ps)
		return;
	ps->loading = false;
	const struct ps_entry *e = &q->ent, *now = NULL;
	struct plan_doc *d = &cj->doc;
	char why[160] = "";
	if (cj->rc < 0) {
		snprintf(why, sizeof(why), "%s", cj->why);
		mark_bad(ps, e->gen);
		goto fail;
	}
	if (strcmp(d->dataset, e->dataset) != 0 || d->job != e->job ||
	    (e->rank != TC_JOB_RANK_ANY && (d->reg_rank != e->rank || e->rank >= d->world_size))) {
		snprintf(why, sizeof(why), "the document names another plan (%s %" PRIu64 ")",
			 d->dataset, d->job);
		mark_bad(ps, e->gen);
		goto fail;
	}
	struct dataset *ds = ps_dataset_named(ps, e->dataset);
	now = entry_find(ps, e->dataset, e->job, e->rank);
	if (!ds || !now || now->gen != e->gen || now->np == 0 || !wanted(ps, e)) {
		/* changed while it decoded */
		ps->codec_dropped++;
		log_info("dataset=%s job=%" PRIu64 " version=%" PRIu64 " op=job_plan_load "
								       "result=\"replaced, "
			 "cancelled or lapsed while decoding: dropped\"",
			 e->dataset, e->job, e->gen);
		goto next;
	}
	int rc = job_plans_set_remote(ps->jps, ds, d->job, e->rank, d->world_size, d->epoch,
				      d->reg_rank, (uid_t)d->uid, d->blob, d->bloblen, d->off, d->n,
				      e->gen, e->published, e->hash);
	d->blob = NULL; /* taken over, also on error */
	d->off = NULL;
	if (rc < 0) {
		snprintf(why, sizeof(why), "cannot install it: %s", strerror(-rc));
		goto fail;
	}
	ps->loaded++;
	log_info("dataset=%s job=%" PRIu64 " epoch=%u op=job_plan_loaded version=%" PRIu64 " entrie"
											   "s=%u "
		 "decode_cpu_us=%" PRIu64,
		 e->dataset, e->job, d->epoch, e->gen, d->n, cj->cpu_us);
	goto next;
fail:
	ps->load_failures++;
	log_warn("dataset=%s job=%" PRIu64 " version=%" PRIu64 " op=job_plan_load err=\"%s\"",
		 e->dataset, e->job, e->gen, why);
next:
	plan_codec_job_free(cj);
	free(q);
	ps_load_next(ps);
}

/* Load the next wanted plan of the last list (one at a time). */
void ps_load_next(struct plan_share *ps)
{
	if (ps->loading || !redis_conn_up(ps->rc))
		return;
	for (size_t i = 0; i < ps->nidx; i++) {
		const struct ps_entry *e = &ps->idx[i];
		if (!wanted(ps, e))
			continue;
		struct ps_req *q = ps_req_new(ps, REQ_LOAD);
		const char **argv = calloc(1 + e->np, sizeof(*argv));
		char *keys = calloc(e->np, sizeof(ps->prefix) + 48);
		int rc = -ENOMEM;
		if (q && argv && keys) {
			q->ent = *e;
			argv[0] = "MGET";
			for (size_t k = 0; k < e->np; k++) {
				char *key = keys + k * (sizeof(ps->prefix) + 48);
				snprintf(key, sizeof(ps->prefix) + 48, "%s%" PRIu64 ":%zu",
					 ps->prefix, e->gen, k);
				argv[1 + k] = key;
			}
			rc = ps_req_send(q, on_loaded, (int)(1 + e->np), argv, NULL);
			q = NULL; /* sent, or freed by ps_req_send */
		}
		free(q);
		free(argv);
		free(keys); /* hiredis copied the command */
		if (rc == 0)
			ps->loading = true;
		else
			ps->load_failures++;
		return;
	}
}
