/*
 * Datasets' policies in the daemon: see policy_glue.h. Loop thread only.
 */
#include "policy_glue.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunk.h"
#include "index.h"
#include "log.h"
#include "loop.h"
#include "mover.h"
#include "plan.h"
#include "reclaim_rank.h"

#define POLICY_NS "policy"
#define PLACEMENT_TUNABLES "demote promote hot_max_size"

int policy_glue_init(struct cache *cache)
{
	return plan_store_create(&cache->plans);
}

void policy_glue_free(struct cache *cache)
{
	plan_store_destroy(cache->plans);
	cache->plans = NULL;
}

uint64_t policy_glue_budget(const struct cache *cache, enum tier_id t)
{
	const struct tier *tr = &cache->tiers[t];
	/* low_water 0 would leave the policies nothing: without a low mark
	 * they use the tier up to the high one */
	return tr->low_bytes ? tr->low_bytes : tr->high_bytes;
}

/*
 * demote=flat on hot: with demote=1 the mover's demotions trail the fills
 * (a copy each, MOVES_MAX at once), so hot holds more than its budget, up
 * to its capacity, and bench/epochs.sh's replays model that (--hot-max).
 * demote=flat drops most of hot's victims, at once: held to the budget,
 * hot kept a quarter less than demote=1's and the daemon got 0.88-0.95 of
 * the simulator's hits with lru, 0.72-0.79 with arc (2026-11-25). So the
 * policies of a flat hot hold it to its high watermark, the band above
 * left to fills in flight and files clients hold, as demote=1's is.
 */
static bool hold_flat_hot(const struct cache *cache, enum tier_id t)
{
	if (t != TIER_HOT || !cache->tiers[TIER_WARM].present || !cache->tiers[t].high_bytes)
		return false;
	/* a registered plan: the prefetcher loads into the band above the
	 * budget, as with demote=1 (docs/simulator.md, "The mover trailing") */
	if (cache->plans && plan_store_count(cache->plans))
		return false;
	bool any = false;
	for (unsigned i = 0; i < cache->nds; i++) {
		const struct dataset *ds = cache->ds[i];
		if (!ds->pol[t])
			continue;
		if (!ds->pl.demote_flat)
			return false;
		any = true;
	}
	return any;
}

uint64_t policy_glue_hold(const struct cache *cache, enum tier_id t)
{
	uint64_t budget = policy_glue_budget(cache, t);
	uint64_t high = cache->tiers[t].high_bytes;
	return hold_flat_hot(cache, t) && high > budget ? high : budget;
}

uint64_t policy_glue_tier_bytes(const struct cache *cache, enum tier_id t)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < cache->nds; i++)
		if (cache->ds[i]->pol[t])
			sum += cache->ds[i]->pol[t]->bytes;
	return sum;
}

/* Apply placement's "k=v k=v" list (already shape-checked by policy_spec). */
static int placement_apply(struct placement *pl, const char *list, char *err, size_t errlen)
{
	char buf[POLICY_SPEC_PAIR_MAX + 1];
	const char *s = list;
	int rc = 0;
	while (*s) {
		while (*s == ' ')
			s++;
		size_t n = strcspn(s, " ");
		if (!n)
			break;
		if (n >= sizeof(buf)) {
			snprintf(err, errlen, "placement: tunable too long");
			return -EINVAL;
		}
		memcpy(buf, s, n);
		buf[n] = '\0';
		s += n;
		char *eq = strchr(buf, '=');
		if (!eq) {
			snprintf(err, errlen, "placement: \"%s\" is not key=value", buf);
			return -EINVAL;
		}
		*eq = '\0';
		rc = placement_set(pl, buf, eq + 1, err, errlen);
		if (rc < 0)
			break;
	}
	return rc;
}

/* demote=flat's view of a tier (placement.h): the room and the next
 * victim over every dataset on it, as the fill path and the mover see them */
static uint64_t flat_room(void *arg, int t)
{
	return policy_glue_room(arg, (enum tier_id)t);
}

static const struct pol_entry *flat_victim(void *arg, int t, uint64_t now)
{
	(void)now; /* mover_victim asks at the loop's time */
	struct chunk *c = mover_victim(arg, (enum tier_id)t);
	return c ? &c->pe : NULL;
}

/* New instances for every present tier and a placement over them, from
 * spec. Nothing of ds is touched; on error everything made is freed. */
static int instances_create(struct cache *cache, const struct policy_spec *spec,
			    struct policy *p[TIER_COUNT], struct placement *pl, char *err,
			    size_t errlen)
{
	int rc = 0;
	const struct policy_ops *ops = policy_find(spec->name);
	for (int t = 0; t < TIER_COUNT; t++)
		p[t] = NULL;
	for (int t = 0; t < TIER_COUNT; t++) {
		if (!cache->tiers[t].present)
			continue;
		struct policy_env env = {.capacity = policy_glue_budget(cache, (enum tier_id)t)};
		if (ops && (ops->caps & POLICY_CAP_PLANS)) {
			env.next_use = plan_store_oracle;
			env.version = plan_store_version_cb;
			env.ctx = cache->plans;
		}
		rc = policy_create_with(spec->name, spec->tunables, &env, &p[t], err, errlen);
		if (rc < 0) {
			/* a mistyped key may have been meant for placement */
			size_t at = strlen(err);
			if (rc == -EINVAL && strstr(err, "unknown tunable") && at + 2 < errlen)
				snprintf(err + at, errlen - at, " (placement: %s)", PLACEMENT_TUNABLES);
			rc = rc == -ENOENT ? -EINVAL : rc;
			goto fail;
		}
	}
	placement_init(pl, p[TIER_HOT], p[TIER_WARM]);
	pl->room = flat_room;
	pl->victim = flat_victim;
	pl->arg = cache;
	rc = placement_apply(pl, spec->placement, err, errlen);
	if (rc < 0)
		goto fail;
	return 0;
fail:
	for (int t = 0; t < TIER_COUNT; t++) {
		policy_destroy(p[t]);
		p[t] = NULL;
	}
	return rc;
}

static int record_put(struct cache *cache, const struct dataset *ds, const struct policy_spec *spec,
		      int64_t now_s)
{
	struct policy_record r = {.spec = *spec, .set_at_s = now_s};
	struct proto_wr w;
	snprintf(r.config_policy, sizeof(r.config_policy), "%s", ds->conf.policy);
	proto_wr_init(&w);
	policy_record_encode(&r, &w);
	int rc = w.oom ? -ENOMEM : index_kv_put(cache->ix, POLICY_NS, ds->name, w.buf, w.len);
	proto_wr_free(&w);
	return rc;
}

/* The persisted choice for ds: 0, -ENOENT (none) or -EBADMSG. */
static int record_get(struct cache *cache, const struct dataset *ds, struct policy_record *r)
{
	void *v = NULL;
	size_t n = 0;
	int rc = index_kv_get(cache->ix, POLICY_NS, ds->name, &v, &n);
	if (rc < 0)
		return rc;
	rc = policy_record_decode(v, n, r);
	free(v);
	return rc;
}

static void adopt(struct dataset *ds, struct policy *p[TIER_COUNT], const struct placement *pl,
		  const struct policy_spec *spec, bool by_admin, int64_t set_at_s)
{
	for (int t = 0; t < TIER_COUNT; t++) {
		policy_destroy(ds->pol[t]);
		ds->pol[t] = p[t];
	}
	ds->pl = *pl;
	ds->spec = *spec;
	ds->spec_by_admin = by_admin;
	ds->spec_set_at_s = set_at_s;
}

int policy_glue_setup(struct cache *cache, struct dataset *ds, char *err, size_t errlen)
{
	struct policy *p[TIER_COUNT];
	struct placement pl;
	struct policy_spec file;
	struct policy_record rec;
	char why[512];
	int rc = policy_spec_parse(ds->conf.policy, &file, why, sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "dataset %s: policy: %s", ds->name, why);
		return rc;
	}
	rc = record_get(cache, ds, &rec);
	if (rc == -EBADMSG) {
		log_warn("dataset=%s op=policy_restore err=\"persisted policy choice unreadable; using "
			 "the config file's\"",
			 ds->name);
		index_kv_delete(cache->ix, POLICY_NS, ds->name);
	} else if (rc == 0 && !policy_record_applies(&rec, ds->conf.policy)) {
		log_info("dataset=%s op=policy_restore policy=%s ignored=\"%s\" reason=\"the config "
			 "file's policy changed since it was set with tierctl\"",
			 ds->name, ds->conf.policy, rec.spec.name);
		index_kv_delete(cache->ix, POLICY_NS, ds->name);
	} else if (rc == 0) {
		rc = instances_create(cache, &rec.spec, p, &pl, why, sizeof(why));
		if (rc == 0) {
			adopt(ds, p, &pl, &rec.spec, true, rec.set_at_s);
			char s[3 * (POLICY_SPEC_LIST_MAX + 1)];
			policy_spec_format(&rec.spec, s, sizeof(s));
			log_info("dataset=%s op=policy_restore policy=\"%s\" source=tierctl "
				 "config_policy=%s",
				 ds->name, s, ds->conf.policy);
			return 0;
		}
		log_warn("dataset=%s op=policy_restore err=\"persisted policy no longer valid: %s; "
			 "using the config file's\"",
			 ds->name, why);
		index_kv_delete(cache->ix, POLICY_NS, ds->name);
	}
	rc = instances_create(cache, &file, p, &pl, why, sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "dataset %s: policy: %s", ds->name, why);
		return rc;
	}
	adopt(ds, p, &pl, &file, false, cache_wall_s());
	return 0;
}

void policy_glue_teardown(struct dataset *ds)
{
	for (int t = 0; t < TIER_COUNT; t++) {
		policy_destroy(ds->pol[t]);
		ds->pol[t] = NULL;
	}
	memset(&ds->pl, 0, sizeof(ds->pl));
}

void policy_glue_access(struct cache *cache, uint64_t key, const struct read_ctx *rc)
{
	loop_assert();
	/* the plans tick the plan store and follow their jobs (plan/plans.c) */
	if (cache->hooks.read_seen)
		cache->hooks.read_seen(cache->hooks.arg, key, rc);
}

/* A failed tier (tier_health.h) takes nothing: the other one keeps the
 * chunk if it works, else it is served unkept. */
static int fill_working(const struct cache *cache, int to)
{
	if (to != TIER_NONE && cache->tiers[to].failed) {
		int other = to == TIER_HOT ? TIER_WARM : TIER_HOT;
		to = cache->tiers[other].present && !cache->tiers[other].failed ? other : TIER_NONE;
	}
	return to;
}

int policy_glue_fill(struct cache *cache, struct dataset *ds, uint64_t key, uint32_t len)
{
	return fill_working(cache, placement_fill(&ds->pl, key, len, cache_now_ns()));
}

int policy_glue_fill_first(struct cache *cache, struct dataset *ds, uint32_t len)
{
	return fill_working(cache, placement_fill_first(&ds->pl, len, cache_now_ns()));
}

int policy_glue_fill_instead(struct cache *cache, struct dataset *ds, int refused, uint64_t key,
			     uint32_t len)
{
	int to = refused;
	do
		to = placement_fill_instead(&ds->pl, to, key, len, cache_now_ns());
	while (to != TIER_NONE && cache->tiers[to].failed);
	return to;
}

bool policy_glue_ahead_hot(struct cache *cache, struct dataset *ds, uint64_t key, uint32_t len)
{
	(void)cache;
	return placement_ahead_hot(&ds->pl, key, len, cache_now_ns());
}

uint64_t policy_glue_room(const struct cache *cache, enum tier_id t)
{
	const struct tier *tr = &cache->tiers[t];
	if (!tr->present || tr->failed)
		return 0;
	uint64_t held = policy_glue_tier_bytes(cache, t) + cache->pinned[t];
	for (unsigned i = 0; i < cache->nds; i++)
		held += cache->ds[i]->pl.inflight[t];
	uint64_t budget = policy_glue_hold(cache, t);
	uint64_t room = held < budget ? budget - held : 0;
	uint64_t disk = tier_free(tr);
	return room < disk ? room : disk;
}

int policy_glue_hit(struct cache *cache, struct chunk *c)
{
	(void)cache;
	return placement_hit(&c->ds->pl, c->tier, &c->pe, cache_now_ns());
}

int policy_glue_demote(struct cache *cache, struct chunk *c)
{
	(void)cache;
	return placement_demote(&c->ds->pl, &c->pe, cache_now_ns());
}

/*
 * What a reclaim keeps:
 *   - the tier has room for everything its policies hold plus the whole
 *     segment again: nothing would be given up for it, keep it;
 *   - the tier's policies say their order (lru, arc: reclaim_rank.h):
 *     keep it unless they give it up within the next bytes the tier must
 *     give up (the segment's size less the room they have), as they would
 *     with no segments at all;
 * else (epoch, clairvoyant) the rule places the item in the tier's order
 * by its last access, the key every policy here keeps in pol_entry.atime
 * and the one the mover uses to choose between the datasets' victims:
 *   - the item is the tier's next victim (mover_victim): do not keep it;
 *   - else keep it unless it was read in the oldest RECLAIM_OLDEST_PART-th
 *     (a quarter) of the span from the victim's last access to now: the
 *     policy would give those up first as the tier fills.
 * A hot item not kept goes where the placement sends a hot victim (warm's
 * policy admits it or not); a warm item not kept is dropped.
 */
bool policy_glue_reclaim_keeps(struct cache *cache, struct chunk *c, uint64_t seg_size,
			       const struct reclaim_rank *rk)
{
	enum tier_id t = (enum tier_id)c->tier;
	uint64_t now = cache_now_ns();
	if (!c->ds->pol[t])
		return false;
	if (policy_glue_tier_bytes(cache, t) + seg_size <= policy_glue_hold(cache, t))
		return true;
	int goes = reclaim_rank_goes(rk, c, seg_size);
	if (goes >= 0)
		return !goes;
	/* the tier's next victim across datasets, as the mover picks it */
	struct chunk *vc = mover_victim(cache, t);
	struct pol_entry *v = vc ? &vc->pe : NULL;
	return v && v != &c->pe && v->atime <= now &&
	       c->pe.atime > v->atime + (now - v->atime) / RECLAIM_OLDEST_PART;
}

int policy_glue_reclaim(struct cache *cache, struct chunk *c, uint64_t seg_size,
			const struct reclaim_rank *rk)
{
	if (policy_glue_reclaim_keeps(cache, c, seg_size, rk))
		return c->tier;
	if (c->tier == TIER_HOT && cache->tiers[TIER_WARM].present)
		return policy_glue_demote(cache, c);
	return TIER_NONE;
}

void policy_glue_arriving(struct dataset *ds, int t, uint32_t len)
{
	ds->pl.inflight[t] += len;
}

void policy_glue_arrived(struct dataset *ds, int t, uint32_t len)
{
	ds->pl.inflight[t] -= len;
}

static int by_atime(const void *a, const void *b)
{
	uint64_t x = (*(struct chunk *const *)a)->pe.atime;
	uint64_t y = (*(struct chunk *const *)b)->pe.atime;
	return (x > y) - (x < y);
}

/* ds's chunks that sit in tier t's policy, least recently read first. */
static int residents(struct cache *cache, struct dataset *ds, int t, struct chunk ***out, size_t *n)
{
	size_t cnt = 0;
	*out = NULL;
	*n = 0;
	if (!ds->pol[t] || !ds->pol[t]->entries)
		return 0;
	struct chunk **v = malloc(ds->pol[t]->entries * sizeof(*v));
	if (!v)
		return -ENOMEM;
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it))
		if (c->ds == ds && c->tier == t && c->state == CHUNK_RESIDENT &&
		    cnt < ds->pol[t]->entries)
			v[cnt++] = c;
	qsort(v, cnt, sizeof(*v), by_atime);
	*out = v;
	*n = cnt;
	return 0;
}

int policy_glue_set(struct cache *cache, struct dataset *ds, const struct policy_spec *spec,
		    char *err, size_t errlen)
{
	struct policy *p[TIER_COUNT];
	struct placement pl;
	struct policy_spec want;
	struct chunk **moving[TIER_COUNT] = {NULL};
	size_t nmoving[TIER_COUNT] = {0};
	bool by_admin = spec != NULL;
	int64_t now_s = cache_wall_s();
	int rc;

	if (spec) {
		want = *spec;
	} else {
		rc = policy_spec_parse(ds->conf.policy, &want, err, errlen);
		if (rc < 0)
			return rc;
	}
	rc = instances_create(cache, &want, p, &pl, err, errlen);
	if (rc < 0)
		return rc;
	for (int t = 0; t < TIER_COUNT; t++) {
		rc = residents(cache, ds, t, &moving[t], &nmoving[t]);
		if (rc < 0) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	/* persist first: a choice that would not survive a restart is refused */
	rc = by_admin ? record_put(cache, ds, &want, now_s) : index_kv_delete(cache->ix, POLICY_NS, ds->name);
	if (rc < 0) {
		snprintf(err, errlen, "cannot write the policy choice to the index: %s", strerror(-rc));
		goto fail;
	}
	for (int t = 0; t < TIER_COUNT; t++) {
		for (size_t i = 0; i < nmoving[t]; i++) {
			struct chunk *c = moving[t][i];
			uint64_t atime = c->pe.atime;
			policy_remove(ds->pol[t], &c->pe);
			/* oldest first, each at the time it was read: the new
			 * instance sees the residents in the order they were used */
			policy_reinsert(p[t], &c->pe, atime);
		}
		free(moving[t]);
	}
	/* fills and moves in flight end in the new instances */
	memcpy(pl.inflight, ds->pl.inflight, sizeof(pl.inflight));
	adopt(ds, p, &pl, &want, by_admin, now_s);
	char s[3 * (POLICY_SPEC_LIST_MAX + 1)];
	policy_spec_format(&want, s, sizeof(s));
	log_info("dataset=%s op=policy_set policy=\"%s\" source=%s", ds->name, s,
		 by_admin ? "tierctl" : "config");
	mover_kick(cache);
	return 0;
fail:
	for (int t = 0; t < TIER_COUNT; t++) {
		free(moving[t]);
		policy_destroy(p[t]);
	}
	return rc;
}

static void tier_fields(struct proto_rs *rs, struct dataset *ds, int t, const char *name)
{
	char key[32], state[512];
	struct policy *p = ds->pol[t];
	if (!p)
		return;
	policy_describe(p, state, sizeof(state));
	snprintf(key, sizeof(key), "%s_entries", name);
	proto_rs_u64(rs, key, p->entries);
	snprintf(key, sizeof(key), "%s_bytes", name);
	proto_rs_u64(rs, key, p->bytes);
	snprintf(key, sizeof(key), "%s_state", name);
	proto_rs_str(rs, key, state);
}

void policy_glue_report(struct cache *cache, struct dataset *ds, struct proto_rs *rs)
{
	const struct placement *pl = &ds->pl;
	const struct policy_ops *ops = policy_find(ds->spec.name);
	proto_rs_str(rs, "dataset", ds->name);
	proto_rs_str(rs, "policy", ds->spec.name);
	proto_rs_str(rs, "tunables", ds->spec.tunables);
	proto_rs_str(rs, "placement_tunables", ds->spec.placement);
	proto_rs_str(rs, "source", ds->spec_by_admin ? "tierctl" : "config");
	proto_rs_str(rs, "config_policy", ds->conf.policy);
	proto_rs_i64(rs, "set_at_s", ds->spec_set_at_s);
	proto_rs_str(rs, "summary", ops && ops->summary ? ops->summary : "");
	proto_rs_bool(rs, "demote", pl->demote);
	proto_rs_bool(rs, "demote_reread", pl->demote_reread);
	proto_rs_bool(rs, "demote_flat", pl->demote_flat);
	proto_rs_bool(rs, "promote", pl->promote);
	proto_rs_u64(rs, "hot_max_size_bytes", pl->hot_max_size);
	proto_rs_u64(rs, "hot_budget_bytes", cache->tiers[TIER_HOT].present ? policy_glue_budget(cache, TIER_HOT) : 0);
	proto_rs_u64(rs, "warm_budget_bytes",
		     cache->tiers[TIER_WARM].present ? policy_glue_budget(cache, TIER_WARM) : 0);
	proto_rs_u64(rs, "fills_hot", pl->fills[TIER_HOT]);
	proto_rs_u64(rs, "fills_warm", pl->fills[TIER_WARM]);
	proto_rs_u64(rs, "not_admitted", pl->refused);
	proto_rs_u64(rs, "fills_instead", pl->instead);
	proto_rs_u64(rs, "ahead_refused", pl->ahead_refused);
	proto_rs_u64(rs, "demoted", pl->demoted);
	proto_rs_u64(rs, "dropped", pl->dropped);
	proto_rs_u64(rs, "dropped_unread", pl->dropped_unread);
	proto_rs_u64(rs, "dropped_older", pl->dropped_older);
	proto_rs_u64(rs, "fills_older", pl->fills_older);
	proto_rs_u64(rs, "promoted", pl->promoted);
	proto_rs_u64(rs, "served_unkept", ds->served_unkept);
	tier_fields(rs, ds, TIER_HOT, "hot");
	tier_fields(rs, ds, TIER_WARM, "warm");
}

void policy_glue_report_known(struct proto_rs *rs)
{
	for (const struct policy_ops *const *o = policy_all(); *o; o++) {
		proto_rs_record(rs);
		proto_rs_str(rs, "name", (*o)->name);
		proto_rs_str(rs, "tunables", (*o)->tunables ? (*o)->tunables : "");
		proto_rs_str(rs, "summary", (*o)->summary ? (*o)->summary : "");
	}
	proto_rs_record(rs);
	proto_rs_str(rs, "name", "placement");
	proto_rs_str(rs, "tunables", PLACEMENT_TUNABLES);
	proto_rs_str(rs, "summary", "with any policy: where fills go, demote to warm, promote to hot");
}
