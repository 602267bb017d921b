/*
 * Whole-job plans shared through Redis: see plan_share.h. Loop thread only.
 *
 * Requests carry names (dataset, job) and the registration's serial, never
 * a pointer to a plan: a plan may be replaced or end while its request is
 * in flight, and the reply then finds another plan (or none) and leaves it
 * alone.
 */
#include "plan_share_int.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "job_plans.h"
#include "log.h"
#include "plan_cancels.h"
#include "plan_codec.h"
#include "plan_codec_job.h"
#include "plan_share_lua.h"
#include "plans.h"
#include "redis_conn.h"

static void publish_next(struct plan_share *ps);

/* ---- requests ---- */

struct ps_req *ps_req_new(struct plan_share *ps, enum req_kind kind)
{
	struct ps_req *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->ps = ps;
	q->kind = kind;
	return q;
}

/* Send q's command; on failure q is freed and -errno returned. */
int ps_req_send(struct ps_req *q, redis_reply_fn fn, int argc, const char **argv, const size_t *lens)
{
	struct plan_share *ps = q->ps;
	int rc = redis_conn_cmd(ps->rc, fn, q, argc, argv, lens);
	if (rc < 0) {
		free(q);
		return rc;
	}
	q->next = ps->reqs;
	ps->reqs = q;
	return 0;
}

/* q waits for a worker (plan_codec_job.h): kept in the list, so that
 * plan_share_free cuts it loose as it does a Redis request. */
void ps_req_track(struct ps_req *q)
{
	q->next = q->ps->reqs;
	q->ps->reqs = q;
}

/* A reply came: unlink q; its plan_share, or NULL when freed meanwhile. */
struct plan_share *ps_req_done(struct ps_req *q)
{
	struct plan_share *ps = q->ps;
	if (!ps)
		return NULL;
	for (struct ps_req **p = &ps->reqs; *p; p = &(*p)->next) {
		if (*p == q) {
			*p = q->next;
			break;
		}
	}
	return ps;
}

struct plan_share *ps_codec_done(struct plan_codec_job *cj)
{
	struct ps_req *q = cj->arg;
	struct plan_share *ps = ps_req_done(q);
	if (!ps) {
		free(q);
		plan_codec_job_free(cj);
		return NULL;
	}
	ps->codec_busy--;
	return ps;
}

/* "DATASET JOB" (a whole-job plan) or "DATASET JOB RANK" (a per-rank plan) */
static void field_of(char *buf, const char *dataset, uint64_t job, uint32_t rank)
{
	if (rank == TC_JOB_RANK_ANY)
		snprintf(buf, FIELD_MAX, "%s %" PRIu64, dataset, job);
	else
		snprintf(buf, FIELD_MAX, "%s %" PRIu64 " %" PRIu32, dataset, job, rank);
}

/* The local dataset named name, if it has a manifest. */
struct dataset *ps_dataset_named(struct plan_share *ps, const char *name)
{
	struct dataset *ds = cache_dataset(ps->cache, name, strlen(name));
	return ds && ds->mf ? ds : NULL;
}

/* The plan of q's (dataset, job), if it is still q's registration. */
static struct job_plan *req_plan(struct plan_share *ps, const struct ps_req *q)
{
	struct dataset *ds = cache_dataset(ps->cache, q->dataset, strlen(q->dataset));
	struct job_plan *jp = ds ? job_plans_get(ps->jps, ds, q->job, q->rank) : NULL;
	return jp && jp->serial == q->serial ? jp : NULL;
}

/* ---- publish ---- */

static int send_cancel(struct plan_share *ps, const struct plan_cancel *c, bool kept);
static void cancel_keep(struct plan_share *ps, const struct plan_cancel *c);

/* Version gen of q's registration reached Redis after the plan ended here
 * (a cancel, or its connection gone, while it was encoded or sent): no
 * node may follow it, so it is cancelled (that version only: a newer
 * registration is left alone). A plan replaced here by a newer local one
 * is overwritten by the newer one's publish instead. */
static void published_orphan(struct plan_share *ps, const struct ps_req *q, uint64_t gen)
{
	struct dataset *ds = cache_dataset(ps->cache, q->dataset, strlen(q->dataset));
	if (ds && job_plans_get(ps->jps, ds, q->job, q->rank))
		return;
	struct plan_cancel c = {.job = q->job, .rank = q->rank, .gen = gen, .hash = q->hash,
				.since_ns = cache_now_ns()};
	snprintf(c.dataset, sizeof(c.dataset), "%s", q->dataset);
	log_info("dataset=%s job=%" PRIu64 " op=job_plan_published version=%" PRIu64 " result=\"ended "
		 "here meanwhile: cancelled\"",
		 q->dataset, q->job, gen);
	if (send_cancel(ps, &c, true) < 0)
		cancel_keep(ps, &c);
}

static void on_published(void *arg, struct redisReply *r, int err)
{
	struct ps_req *q = arg;
	struct plan_share *ps = ps_req_done(q);
	if (ps) {
		ps->publishing = false;
		struct job_plan *jp = req_plan(ps, q);
		uint64_t gen = 0;
		bool parsed = false; /* the reply's gen is a number ("0": cancelled) */
		if (err == 0 && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		    r->element[0]->type == REDIS_REPLY_STRING && r->element[0]->len < 24 &&
		    r->element[1]->type == REDIS_REPLY_INTEGER) {
			char num[24], *end = NULL;
			memcpy(num, r->element[0]->str, r->element[0]->len);
			num[r->element[0]->len] = '\0';
			gen = strtoull(num, &end, 10);
			parsed = end && end != num && !*end;
			if (!parsed)
				gen = 0;
		}
		if (err == 0 && gen == 0 && parsed && jp && !jp->remote) {
			/* a republish found the list cancelled meanwhile */
			ps->superseded++;
			log_info("dataset=%s job=%" PRIu64 " op=job_plan_superseded "
				 "why=\"cancelled on another node while Redis was away\"",
				 q->dataset, q->job);
			(void)job_plans_end(ps->jps, jp->ds, jp->job, jp->only_rank, false);
		} else if (gen > 0 && gen != GEN_UNPUBLISHABLE) {
			ps->published++;
			if (jp && !jp->remote) {
				jp->share_gen = gen;
				jp->share_republish = false;
				jp->share_ms = (uint64_t)r->element[1]->integer;
				jp->share_hash = q->hash;
				log_info("dataset=%s job=%" PRIu64 " epoch=%u op=job_plan_published "
					 "version=%" PRIu64 " entries=%u encode_cpu_us=%" PRIu64,
					 q->dataset, q->job, jp->epoch, jp->share_gen, jp->n, q->gen);
			} else if (!jp) {
				published_orphan(ps, q, gen);
			}
			publish_next(ps); /* replaced meanwhile: the newer one goes next */
		} else {
			ps->publish_failures++; /* tried again at the next heartbeat */
			log_warn("dataset=%s job=%" PRIu64 " op=job_plan_publish err=\"%s\" (retried at the "
				 "next heartbeat)",
				 q->dataset, q->job, err == -EPROTO ? r->str : strerror(err ? -err : EPROTO));
		}
	}
	free(q);
}

/* The encoded plan of q's registration came back from the worker: send
 * it, unless a newer registration or a cancel came meanwhile (then the
 * newer one, if any, is encoded next). Loop thread. */
static void on_encoded(struct plan_codec_job *cj)
{
	struct ps_req *q = cj->arg;
	struct plan_share *ps = ps_codec_done(cj);
	if (!ps)
		return;
	ps->publishing = false;
	struct job_plan *jp = req_plan(ps, q);
	int rc = cj->rc;
	if (!jp || jp->remote || jp->share_gen != 0) {
		ps->codec_dropped++;
		log_info("dataset=%s job=%" PRIu64 " op=job_plan_publish result=\"replaced or ended while "
			  "encoding: dropped\"",
			  q->dataset, q->job);
		free(q);
		goto next;
	}
	if (rc == -EFBIG || rc == -EINVAL) {
		jp->share_gen = GEN_UNPUBLISHABLE;
		log_warn("dataset=%s job=%" PRIu64 " op=job_plan_publish err=\"%s\": the plan stays on this "
			 "node only (at most %u MiB compressed)",
			 jp->ds->name, jp->job, strerror(-rc), PLAN_CODEC_ENCODED_MAX >> 20);
		free(q);
		goto next;
	}
	if (rc < 0) {
		ps->publish_failures++; /* tried again at the next heartbeat */
		free(q);
		goto out;
	}
	size_t enclen = cj->enclen, np = (enclen + PLAN_CODEC_PIECE_MAX - 1) / PLAN_CODEC_PIECE_MAX;
	const uint8_t *enc = cj->enc;
	const char **argv = calloc(10 + np, sizeof(*argv));
	size_t *lens = calloc(10 + np, sizeof(*lens));
	char field[FIELD_MAX], ttl[24], meta[80];
	if (!argv || !lens) {
		ps->publish_failures++;
		free(q);
		free(argv);
		free(lens);
		goto out;
	}
	field_of(field, jp->ds->name, jp->job, jp->only_rank);
	snprintf(ttl, sizeof(ttl), "%" PRIu64, ps->ttl_ms);
	snprintf(meta, sizeof(meta), "%zu %" PRIu64 " %" PRIu64, enclen, cj->rawlen, cj->hash);
	const char *head[] = {"EVAL", plan_share_publish_script, "2", ps->index_key,
			      ps->gen_key, field, ttl, ps->prefix, meta,
			      jp->share_republish ? "1" : "0"};
	for (size_t i = 0; i < 10; i++) {
		argv[i] = head[i];
		lens[i] = strlen(head[i]);
	}
	for (size_t i = 0; i < np; i++) {
		argv[10 + i] = (const char *)enc + i * PLAN_CODEC_PIECE_MAX;
		lens[10 + i] = i + 1 < np ? PLAN_CODEC_PIECE_MAX : enclen - i * PLAN_CODEC_PIECE_MAX;
	}
	q->hash = cj->hash;
	q->gen = cj->cpu_us; /* for the log line (gen is not used by a publish) */
	rc = ps_req_send(q, on_published, (int)(10 + np), argv, lens);
	free(argv);
	free(lens);
	if (rc == 0)
		ps->publishing = true;
	else
		ps->publish_failures++;
	goto out;
next:
	plan_codec_job_free(cj);
	publish_next(ps);
	return;
out:
	plan_codec_job_free(cj);
}

/* Start publishing jp: its document is encoded on a worker (on_encoded
 * sends it). 0 (ps->publishing set) or -errno. */
static int publish(struct plan_share *ps, struct job_plan *jp)
{
	struct plan_doc d = {.job = jp->job, .world_size = jp->world_size, .epoch = jp->epoch,
			     .reg_rank = jp->reg_rank, .uid = (uint32_t)jp->uid, .blob = jp->blob,
			     .bloblen = jp->bloblen, .off = jp->off, .n = jp->n};
	snprintf(d.dataset, sizeof(d.dataset), "%s", jp->ds->name);
	struct ps_req *q = ps_req_new(ps, REQ_PUBLISH);
	if (!q)
		return -ENOMEM;
	snprintf(q->dataset, sizeof(q->dataset), "%s", jp->ds->name);
	q->job = jp->job;
	q->rank = jp->only_rank;
	q->serial = jp->serial;
	int rc = plan_codec_job_encode(ps->cache->workers, &d, ps->codec_delay_ms, on_encoded, q);
	if (rc < 0) {
		free(q);
		return rc;
	}
	ps->codec_busy++;
	ps_req_track(q);
	ps->publishing = true;
	return 0;
}

/* Publish the first local plan not yet in Redis (one at a time). */
static void publish_next(struct plan_share *ps)
{
	if (ps->publishing || !redis_conn_up(ps->rc))
		return;
	for (struct job_plan *jp = ps->jps->list; jp; jp = jp->next) {
		if (jp->remote || jp->share_gen != 0)
			continue;
		if (publish(ps, jp) < 0 && jp->share_gen != GEN_UNPUBLISHABLE)
			ps->publish_failures++;
		if (ps->publishing)
			return;
	}
}

/* ---- refresh ---- */

static void on_refreshed(void *arg, struct redisReply *r, int err)
{
	struct ps_req *q = arg;
	struct plan_share *ps = ps_req_done(q);
	if (ps) {
		struct job_plan *jp = req_plan(ps, q);
		if (err < 0 || r->type != REDIS_REPLY_INTEGER) {
			ps->refresh_failures++;
		} else if (jp && jp->share_gen == q->gen && r->integer == 0) {
			/* Redis lost it (restarted empty): publish it again */
			ps->republished++;
			jp->share_gen = 0;
			jp->share_republish = true;
			publish_next(ps);
		} else if (jp && jp->share_gen == q->gen && r->integer < 0) {
			/* another registration (or a cancel) elsewhere replaced it */
			ps->superseded++;
			log_info("dataset=%s job=%" PRIu64 " op=job_plan_superseded version=%" PRIu64, q->dataset,
				 q->job, q->gen);
			(void)job_plans_end(ps->jps, jp->ds, jp->job, jp->only_rank, false);
		} else if (r->integer > 0) {
			ps->refreshes++;
		}
	}
	free(q);
}

static void refresh_all(struct plan_share *ps)
{
	char ttl[24], gen[24], field[FIELD_MAX];
	snprintf(ttl, sizeof(ttl), "%" PRIu64, ps->ttl_ms);
	for (struct job_plan *jp = ps->jps->list; jp; jp = jp->next) {
		if (jp->remote || jp->share_gen == 0 || jp->share_gen == GEN_UNPUBLISHABLE)
			continue;
		struct ps_req *q = ps_req_new(ps, REQ_REFRESH);
		if (!q)
			return;
		snprintf(q->dataset, sizeof(q->dataset), "%s", jp->ds->name);
		q->job = jp->job;
		q->rank = jp->only_rank;
		q->serial = jp->serial;
		q->gen = jp->share_gen;
		field_of(field, jp->ds->name, jp->job, jp->only_rank);
		snprintf(gen, sizeof(gen), "%" PRIu64, jp->share_gen);
		const char *argv[] = {"EVAL", plan_share_refresh_script, "1", ps->index_key,
				      field, gen, ttl, ps->prefix};
		if (ps_req_send(q, on_refreshed, 8, argv, NULL) < 0)
			ps->refresh_failures++;
	}
}

/* ---- cancel ---- */

static int send_cancel(struct plan_share *ps, const struct plan_cancel *c, bool kept);

/* Keep c until Redis is back (plan_cancels.h). */
static void cancel_keep(struct plan_share *ps, const struct plan_cancel *c)
{
	struct plan_cancel lost;
	ps->cancels_kept++;
	if (plan_cancels_keep(&ps->pend, c, &lost)) {
		ps->cancels_lost++;
		log_warn("dataset=%s job=%" PRIu64 " op=job_plan_cancel err=\"%u cancels already wait "
			 "for Redis\": this older one is given up; other nodes drop that plan when its "
			 "TTL lapses",
			 lost.dataset, lost.job, PLAN_CANCELS_MAX);
	}
}

/* Redis is back: send the kept cancels (before any list, on the same
 * connection, so the list already sees them). Those older than
 * PLAN_SHARE_CANCEL_AGE_TTLS TTLs are given up. */
static void cancels_flush(struct plan_share *ps)
{
	uint64_t now = cache_now_ns(), max_age = PLAN_SHARE_CANCEL_AGE_TTLS * ps->ttl_ms * 1000000ull;
	struct plan_cancel c;
	while (redis_conn_up(ps->rc) && plan_cancels_pop(&ps->pend, &c)) {
		if (now - c.since_ns > max_age) {
			ps->cancels_lost++;
			log_warn("dataset=%s job=%" PRIu64 " op=job_plan_cancel err=\"Redis was away too "
				 "long\": the cancel is given up; the plan lapses with its TTL unless its job "
				 "still runs",
				 c.dataset, c.job);
			continue;
		}
		if (send_cancel(ps, &c, true) < 0) {
			struct plan_cancel lost;
			(void)plan_cancels_keep(&ps->pend, &c, &lost); /* it was just taken out: room */
			return;
		}
		ps->cancels_resent++;
	}
}

static void on_cancelled(void *arg, struct redisReply *r, int err)
{
	struct ps_req *q = arg;
	struct plan_share *ps = ps_req_done(q);
	if (ps && err < 0) {
		/* sent, but no answer (the deadline passed, or the connection
		 * broke): kept, and sent again when Redis is back */
		log_warn("dataset=%s job=%" PRIu64 " op=job_plan_cancel err=\"%s\": kept, sent again when "
			 "Redis is back",
			 q->dataset, q->job, strerror(-err));
		struct plan_cancel c = {.job = q->job, .rank = q->rank, .gen = q->gen, .hash = q->hash,
					.since_ns = q->since_ns};
		snprintf(c.dataset, sizeof(c.dataset), "%s", q->dataset);
		cancel_keep(ps, &c);
	} else if (ps && r->type == REDIS_REPLY_INTEGER && r->integer < 0) {
		log_info("dataset=%s job=%" PRIu64 " op=job_plan_cancel result=\"a newer registration "
			 "replaced the cancelled one meanwhile: left alone\"",
			 q->dataset, q->job);
	}
	free(q);
}

/* kept: only that registration (gen/hash) or its republished copy. */
static int send_cancel(struct plan_share *ps, const struct plan_cancel *c, bool kept)
{
	struct ps_req *q = ps_req_new(ps, REQ_CANCEL);
	if (!q)
		return -ENOMEM;
	char field[FIELD_MAX], ttl[24], g[24], h[24];
	snprintf(q->dataset, sizeof(q->dataset), "%s", c->dataset);
	q->job = c->job;
	q->rank = c->rank;
	q->gen = c->gen;
	q->hash = c->hash;
	q->since_ns = c->since_ns;
	field_of(field, c->dataset, c->job, c->rank);
	snprintf(ttl, sizeof(ttl), "%" PRIu64, ps->ttl_ms);
	snprintf(g, sizeof(g), "%" PRIu64, kept ? c->gen : 0);
	snprintf(h, sizeof(h), "%" PRIu64, kept ? c->hash : 0);
	const char *argv[] = {"EVAL", plan_share_cancel_script, "1", ps->index_key, field,
			      ttl, ps->prefix, g, h};
	int rc = ps_req_send(q, on_cancelled, 9, argv, NULL);
	if (rc == 0)
		ps->cancels_sent++;
	return rc;
}

static void hook_cancelled(void *arg, const struct job_plan *jp)
{
	struct plan_share *ps = arg;
	if (jp->share_gen == 0 || jp->share_gen == GEN_UNPUBLISHABLE)
		return;
	struct plan_cancel c = {.job = jp->job, .rank = jp->only_rank, .gen = jp->share_gen,
				.hash = jp->share_hash, .since_ns = cache_now_ns()};
	snprintf(c.dataset, sizeof(c.dataset), "%s", jp->ds->name);
	if (send_cancel(ps, &c, false) == 0)
		return;
	cancel_keep(ps, &c);
	log_warn("dataset=%s job=%" PRIu64 " op=job_plan_cancel err=\"coordination unavailable\": kept, "
		 "sent when Redis is back",
		 jp->ds->name, jp->job);
}

/* ---- hooks, timer, life ---- */

static void hook_registered(void *arg, struct job_plan *jp)
{
	struct plan_share *ps = arg;
	/* a new registration replaces the cancelled one */
	plan_cancels_forget(&ps->pend, jp->ds->name, jp->job, jp->only_rank);
	publish_next(ps);
}

static void hook_serving(void *arg, uint64_t job)
{
	struct plan_share *ps = arg;
	(void)job;
	ps_list_now(ps); /* its plan may be in Redis already */
}

static bool hook_is_home(void *arg, uint64_t key)
{
	struct plan_share *ps = arg;
	return ps->is_home(ps->home_arg, key);
}

static void beat(struct plan_share *ps)
{
	if (!redis_conn_up(ps->rc))
		return;
	cancels_flush(ps);
	refresh_all(ps);
	publish_next(ps);
	ps_list_now(ps);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	beat(arg);
}

void plan_share_members_changed(struct plan_share *ps)
{
	if (ps)
		job_plans_rehome(ps->jps);
}

void plan_share_redis_up(struct plan_share *ps)
{
	if (ps)
		beat(ps);
}

int plan_share_new(struct cache *cache, struct redis_conn *rc, const struct cluster_conf *cc,
		   struct plans *reg, bool (*is_home)(void *home_arg, uint64_t key), void *home_arg,
		   struct plan_share **out)
{
	struct plan_share *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	ps->idx = calloc(PLAN_SHARE_INDEX_MAX, sizeof(*ps->idx));
	ps->timer = event_new(cache->base, -1, EV_PERSIST, on_timer, ps);
	if (!ps->idx || !ps->timer) {
		plan_share_free(ps);
		return -ENOMEM;
	}
	ps->cache = cache;
	ps->rc = rc;
	ps->jps = reg->jobs;
	ps->is_home = is_home;
	ps->home_arg = home_arg;
	snprintf(ps->index_key, sizeof(ps->index_key), "tc:{%s}:jplans", cc->name);
	snprintf(ps->gen_key, sizeof(ps->gen_key), "tc:{%s}:jplan_gen", cc->name);
	snprintf(ps->prefix, sizeof(ps->prefix), "tc:{%s}:jplan:", cc->name);
	ps->period_ms = cc->heartbeat_ms ? cc->heartbeat_ms : 1000;
	ps->codec_delay_ms = plan_codec_job_test_delay_ms();
	/* a plan outlives its registering node by a few leases, and a
	 * connection's plan by the plan grace */
	uint64_t grace = (uint64_t)cache->cfg->plan_grace_s * 1000u;
	ps->ttl_ms = grace > 3 * cc->lease_ms ? grace : 3 * cc->lease_ms;
	if (ps->ttl_ms < 4 * ps->period_ms)
		ps->ttl_ms = 4 * ps->period_ms;
	const struct job_plans_hooks h = {
		.arg = ps,
		.registered = hook_registered,
		.cancelled = hook_cancelled,
		.serving = hook_serving,
		.is_home = is_home ? hook_is_home : NULL,
	};
	job_plans_set_hooks(ps->jps, &h);
	struct timeval tv = {.tv_sec = (time_t)(ps->period_ms / 1000),
			     .tv_usec = (suseconds_t)(ps->period_ms % 1000) * 1000};
	if (event_add(ps->timer, &tv) < 0) {
		plan_share_free(ps);
		return -ENOMEM;
	}
	*out = ps;
	return 0;
}

void plan_share_free(struct plan_share *ps)
{
	if (!ps)
		return;
	if (ps->jps) {
		const struct job_plans_hooks none = {0};
		job_plans_set_hooks(ps->jps, &none);
	}
	for (struct ps_req *q = ps->reqs; q; q = q->next)
		q->ps = NULL; /* freed when their replies (or cancellations) come */
	if (ps->timer)
		event_free(ps->timer);
	free(ps->idx);
	free(ps);
}

void plan_share_report(const struct plan_share *ps, struct proto_rs *rs)
{
	proto_rs_section(rs, "cluster_plans", TC_SHAPE_OBJECT);
	proto_rs_record(rs);
	if (!ps)
		return;
	unsigned local = 0, remote = 0;
	for (const struct job_plan *jp = ps->jps->list; jp; jp = jp->next)
		jp->remote ? remote++ : local++;
	proto_rs_u64(rs, "local", local);
	proto_rs_u64(rs, "from_cluster", remote);
	proto_rs_u64(rs, "listed", ps->nidx);
	proto_rs_u64(rs, "ttl_ms", ps->ttl_ms);
	proto_rs_u64(rs, "published", ps->published);
	proto_rs_u64(rs, "publish_failures", ps->publish_failures);
	proto_rs_u64(rs, "republished", ps->republished);
	proto_rs_u64(rs, "refreshes", ps->refreshes);
	proto_rs_u64(rs, "refresh_failures", ps->refresh_failures);
	proto_rs_u64(rs, "superseded", ps->superseded);
	proto_rs_u64(rs, "loaded", ps->loaded);
	proto_rs_u64(rs, "load_failures", ps->load_failures);
	proto_rs_u64(rs, "cancels_sent", ps->cancels_sent);
	proto_rs_u64(rs, "cancels_pending", ps->pend.n);
	proto_rs_u64(rs, "cancels_kept", ps->cancels_kept);
	proto_rs_u64(rs, "cancels_resent", ps->cancels_resent);
	proto_rs_u64(rs, "cancels_lost", ps->cancels_lost);
	proto_rs_u64(rs, "dropped", ps->dropped);
	proto_rs_u64(rs, "codec_jobs", ps->codec_busy);
	proto_rs_u64(rs, "codec_dropped", ps->codec_dropped);
	proto_rs_u64(rs, "lists", ps->lists);
	proto_rs_u64(rs, "list_failures", ps->list_failures);
}
