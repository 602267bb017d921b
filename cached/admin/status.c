/*
 * Status record sets: see status.h. Field names are part of the interface
 * (`tierctl status --json` prints them as they are): add, never rename.
 * The numbers in "counters" and the gauges in "daemon" are the rows of the
 * counter table (counters.c), which the metrics endpoint walks too.
 */
#include "status.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <event2/event.h>

#include "cluster.h"
#include "counters.h"
#include "dataset.h"
#include "manifest.h"
#include "plans.h"
#include "prefetch.h"
#include "seg_punch.h"
#include "trace_rec.h"

#define RATE_SLOTS 11u /* samples 1 s apart: a 10 s window */

struct status_rates {
	struct event *ev;
	uint64_t ns[RATE_SLOTS];
	uint64_t bytes[RATE_SLOTS][TIER_COUNT];
	unsigned head, n; /* head: the newest sample */
};

static void rate_sample(evutil_socket_t fd, short what, void *arg);

int status_init(struct status **out, struct cache *cache, struct plans *plans)
{
	struct status *st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	*out = st;
	st->cache = cache;
	st->plans = plans;
	st->start_s = cache_wall_s();
	st->rates = calloc(1, sizeof(*st->rates));
	if (!st->rates)
		return -ENOMEM;
	st->rates->ev = event_new(cache->base, -1, EV_PERSIST, rate_sample, st);
	struct timeval second = {.tv_sec = 1};
	if (!st->rates->ev || event_add(st->rates->ev, &second) < 0)
		return -ENOMEM;
	st->rates->head = RATE_SLOTS - 1;
	/* a first sample now: until the window fills, the rate is since start */
	rate_sample(-1, 0, st);
	return 0;
}

void status_free(struct status *st)
{
	if (!st)
		return;
	if (st->rates && st->rates->ev)
		event_free(st->rates->ev);
	free(st->rates);
	free(st);
}

void status_note_reload(struct status *st, bool ok)
{
	if (ok)
		st->reloads++;
	else
		st->reload_failures++;
}

static void rate_sample(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct status *st = arg;
	struct status_rates *r = st->rates;
	r->head = (r->head + 1) % RATE_SLOTS;
	r->ns[r->head] = cache_now_ns();
	for (int t = 0; t < TIER_COUNT; t++)
		r->bytes[r->head][t] = st->cache->tiers[t].read_bytes;
	if (r->n < RATE_SLOTS)
		r->n++;
}

static uint64_t read_rate(const struct status *st, int t)
{
	const struct status_rates *r = st->rates;
	if (!r || !r->n)
		return 0;
	unsigned oldest = (r->head + RATE_SLOTS + 1 - r->n) % RATE_SLOTS;
	uint64_t dt = cache_now_ns() - r->ns[oldest];
	uint64_t db = st->cache->tiers[t].read_bytes - r->bytes[oldest][t];
	return dt ? (uint64_t)((double)db * 1e9 / (double)dt) : 0;
}

static void dataset_fields(struct proto_rs *rs, const struct dataset *ds)
{
	proto_rs_str(rs, "name", ds->name);
	proto_rs_str(rs, "backend", ds->conf.backend);
	proto_rs_bool(rs, "available", ds->available && !dataset_cold_failing(ds, cache_now_ns()));
	proto_rs_bool(rs, "serving", ds->mf != NULL);
	proto_rs_str(rs, "reason", ds->reason);
	/* a listing in progress (the first one at start-up: requests that
	 * asked to wait are parked until it ends): files so far, time taken */
	proto_rs_bool(rs, "loading", ds->refreshing);
	proto_rs_u64(rs, "load_listed",
		     ds->refreshing ? dataset_load_progress(ds) : 0);
	proto_rs_u64(rs, "load_elapsed_ms",
		     ds->refreshing ? (cache_now_ns() - ds->load_start_ns) / 1000000ull : 0);
	/* serve_stale_on_error at work: files served unchecked, store down */
	proto_rs_bool(rs, "serving_stale", dataset_serving_stale(ds, cache_now_ns()));
	proto_rs_u64(rs, "stale_served", ds->stale_served);
	proto_rs_str(rs, "policy", ds->spec.name);
	proto_rs_str(rs, "policy_source", ds->spec_by_admin ? "tierctl" : "config");
	proto_rs_u64(rs, "chunk_size", ds->conf.chunk_size);
	proto_rs_u64(rs, "files", ds->mf ? ds->mf->n : 0);
	proto_rs_u64(rs, "bytes", ds->mf ? ds->mf->bytes : 0);
}

void status_datasets(struct status *st, struct proto_rs *rs)
{
	proto_rs_section(rs, "datasets", TC_SHAPE_ARRAY);
	for (unsigned i = 0; i < st->cache->nds; i++) {
		const struct dataset *ds = st->cache->ds[i];
		proto_rs_record(rs);
		dataset_fields(rs, ds);
		proto_rs_str(rs, "path", ds->conf.path);
		proto_rs_str(rs, "pool", ds->conf.pool);
		proto_rs_str(rs, "namespace", ds->conf.rados_namespace);
		proto_rs_str(rs, "prefix", ds->conf.prefix);
		proto_rs_str(rs, "layout", ds->conf.layout);
		proto_rs_str(rs, "ceph_conf", ds->conf.ceph_conf);
		proto_rs_str(rs, "client_id", ds->conf.client_id);
		proto_rs_str(rs, "keyring", ds->conf.keyring);
	}
}

void status_counters(const struct status *st, struct proto_rs *rs, enum counter_section sec)
{
	for (size_t i = 0; i < counter_nrows; i++) {
		const struct counter_row *r = &counter_rows[i];
		if (r->section == sec)
			proto_rs_u64(rs, r->status, counter_value(r, st));
	}
}

void status_fill(struct status *st, struct proto_rs *rs)
{
	proto_rs_section(rs, "daemon", TC_SHAPE_OBJECT);
	proto_rs_record(rs);
	proto_rs_str(rs, "version", TIERCACHE_VERSION);
	proto_rs_u64(rs, "pid", (uint64_t)getpid());
	proto_rs_i64(rs, "uptime_s", cache_wall_s() - st->start_s);
	proto_rs_str(rs, "socket", st->cache->cfg->socket);
	status_counters(st, rs, STATUS_DAEMON);

	proto_rs_section(rs, "tiers", TC_SHAPE_ARRAY);
	for (int t = 0; t < TIER_COUNT; t++) {
		const struct tier *tr = &st->cache->tiers[t];
		if (!tr->present)
			continue;
		proto_rs_record(rs);
		proto_rs_str(rs, "name", tr->name);
		proto_rs_str(rs, "path", tr->path);
		proto_rs_u64(rs, "capacity_bytes", tr->capacity);
		/* the disk's room when it has less than capacity (tier_health.h) */
		proto_rs_u64(rs, "effective_capacity_bytes", tier_capacity_now(tr));
		proto_rs_str(rs, "state", tr->failed ? "failed" : "ok");
		proto_rs_str(rs, "reason", tr->fail_reason);
		proto_rs_u64(rs, "failures", tr->fail_count);
		proto_rs_u64(rs, "used_bytes", tr->used);
		proto_rs_u64(rs, "reserved_bytes", tr->reserved);
		proto_rs_u64(rs, "held_unlinked_bytes", tr->held_dead);
		proto_rs_u64(rs, "chunks", tr->chunks);
		proto_rs_u64(rs, "high_water_bytes", tr->high_bytes);
		proto_rs_u64(rs, "low_water_bytes", tr->low_bytes);
		proto_rs_u64(rs, "read_bytes", tr->read_bytes);
		proto_rs_u64(rs, "read_rate_bytes", read_rate(st, t));
		proto_rs_u64(rs, "pinned_bytes", st->cache->pinned[t]);
		/* small chunks packed in segments (store/segment.h) */
		const struct segstore *ss = &st->cache->segs[t];
		proto_rs_u64(rs, "segments", ss->nsegs);
		proto_rs_u64(rs, "segment_bytes_live", ss->bytes_live);
		proto_rs_u64(rs, "segment_bytes_dead", ss->bytes_dead);
		proto_rs_u64(rs, "segments_sealed", ss->sealed);
		proto_rs_u64(rs, "segments_reclaimed", ss->reclaimed);
		proto_rs_u64(rs, "segments_created_on_loop", ss->created_on_loop);
		proto_rs_u64(rs, "segment_spares_used", ss->spares_used);
		proto_rs_u64(rs, "segment_spare_errors", ss->spare_errors);
		proto_rs_bool(rs, "segment_punch", seg_punch_on(st->cache, (enum tier_id)t));
		proto_rs_str(rs, "segment_punch_reason", ss->punch ? "" : ss->punch_why);
		proto_rs_u64(rs, "segment_bytes_punched", ss->punched_bytes);
		proto_rs_u64(rs, "segment_punches", ss->punches);
		proto_rs_u64(rs, "segment_punch_errors", ss->punch_errors);
	}

	proto_rs_section(rs, "counters", TC_SHAPE_OBJECT);
	proto_rs_record(rs);
	status_counters(st, rs, STATUS_COUNTERS);

	/* the access trace running or the last one (tierctl trace) */
	struct trace_rec_info ti;
	trace_rec_info(st->cache, &ti);
	proto_rs_section(rs, "trace", TC_SHAPE_OBJECT);
	proto_rs_record(rs);
	trace_rec_report(&ti, rs);

	proto_rs_section(rs, "datasets", TC_SHAPE_ARRAY);
	for (unsigned i = 0; i < st->cache->nds; i++) {
		const struct dataset *ds = st->cache->ds[i];
		proto_rs_record(rs);
		dataset_fields(rs, ds);
		proto_rs_u64(rs, "resident_hot_bytes", ds->resident[TIER_HOT]);
		proto_rs_u64(rs, "resident_warm_bytes", ds->resident[TIER_WARM]);
		proto_rs_u64(rs, "hits", ds->hits);
		proto_rs_u64(rs, "misses", ds->misses);
		proto_rs_u64(rs, "bytes_from_cold", ds->bytes_from_cold);
		proto_rs_u64(rs, "bytes_from_peers", ds->bytes_from_peers);
		proto_rs_u64(rs, "bytes_to_peers", ds->bytes_to_peers);
		proto_rs_u64(rs, "served_unkept", ds->served_unkept);
		proto_rs_u64(rs, "pinned_bytes", ds->pinned_bytes);
	}

	prefetch_report(st->plans->pf, rs);
	plans_report(st->plans, rs);
	if (st->cluster)
		cluster_report(st->cluster, rs);
}
