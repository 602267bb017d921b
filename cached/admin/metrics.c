/*
 * Prometheus text endpoint: see metrics.h.
 *
 * Loop thread: evhttp runs its callbacks on st->cache->base, the loop that owns
 * the counters, tiers and datasets, so a scrape reads them without locks
 * and sees one consistent moment. A scrape costs one pass over the tiers
 * and datasets (not the chunks).
 *
 * Names follow the Prometheus conventions: counters end in _total, sizes
 * in _bytes, durations in _seconds; each metric has HELP and TYPE lines.
 * The daemon-wide counters and gauges come from the counter table
 * (counters.c), which status walks too; tiers, datasets, prefetch and the
 * histograms are rendered here from their own objects.
 */
#include "metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "counters.h"
#include "dataset.h"
#include "log.h"
#include "plans.h"
#include "prefetch.h"

struct metrics {
	struct evhttp *http;
};

/* ---- text format ---- */

static void head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value, escaped as the format requires (\\, \", \n). */
static void label_value(char *out, size_t n, const char *v)
{
	size_t o = 0;
	for (; *v && o + 3 < n; v++) {
		if (*v == '\\' || *v == '"') {
			out[o++] = '\\';
			out[o++] = *v;
		} else if (*v == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *v;
		}
	}
	out[o] = '\0';
}

static void sample(struct evbuffer *b, const char *name, const char *labels, uint64_t v)
{
	if (labels && *labels)
		evbuffer_add_printf(b, "%s{%s} %" PRIu64 "\n", name, labels, v);
	else
		evbuffer_add_printf(b, "%s %" PRIu64 "\n", name, v);
}

static void one(struct evbuffer *b, const char *name, const char *type, const char *help,
		uint64_t v)
{
	head(b, name, type, help);
	sample(b, name, NULL, v);
}

/* Seconds from nanoseconds, exactly enough for the format. */
static void seconds(char *buf, size_t n, uint64_t ns)
{
	snprintf(buf, n, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
}

static void histogram(struct evbuffer *b, const char *name, const char *labels,
		      const struct histogram *h)
{
	char le[32], sum[32];
	const char *sep = labels && *labels ? "," : "";
	uint64_t cum = 0;
	for (size_t i = 0; i <= HISTOGRAM_BUCKETS; i++) {
		cum += h->counts[i];
		if (i < HISTOGRAM_BUCKETS)
			seconds(le, sizeof(le), histogram_bound_ns(i));
		else
			snprintf(le, sizeof(le), "+Inf");
		/* trim "0.010000000" to "0.01" */
		char *dot = strchr(le, '.');
		if (dot) {
			char *e = le + strlen(le);
			while (e > dot + 1 && e[-1] == '0')
				*--e = '\0';
		}
		evbuffer_add_printf(b, "%s_bucket{%s%sle=\"%s\"} %" PRIu64 "\n", name,
				    labels ? labels : "", sep, le, cum);
	}
	seconds(sum, sizeof(sum), h->sum_ns);
	if (labels && *labels) {
		evbuffer_add_printf(b, "%s_sum{%s} %s\n", name, labels, sum);
		evbuffer_add_printf(b, "%s_count{%s} %" PRIu64 "\n", name, labels, h->count);
	} else {
		evbuffer_add_printf(b, "%s_sum %s\n", name, sum);
		evbuffer_add_printf(b, "%s_count %" PRIu64 "\n", name, h->count);
	}
}

/* ---- the metrics ---- */

static void render_tiers(struct status *st, struct evbuffer *b)
{
	static const struct {
		const char *name, *type, *help;
		size_t off;
	} fields[] = {
		{"tiercache_tier_capacity_bytes", "gauge", "Configured capacity of the tier.",
		 offsetof(struct tier, capacity)},
		{"tiercache_tier_used_bytes", "gauge",
		 "Bytes of chunk files on the tier (including unlinked ones clients still hold).",
		 offsetof(struct tier, used)},
		{"tiercache_tier_reserved_bytes", "gauge", "Bytes reserved by fills and moves in flight.",
		 offsetof(struct tier, reserved)},
		{"tiercache_tier_high_water_bytes", "gauge", "Above this the mover drains the tier.",
		 offsetof(struct tier, high_bytes)},
		{"tiercache_tier_low_water_bytes", "gauge", "The mover drains down to this.",
		 offsetof(struct tier, low_bytes)},
		{"tiercache_tier_chunks", "gauge", "Chunk files published on the tier.",
		 offsetof(struct tier, chunks)},
		{"tiercache_tier_read_bytes_total", "counter", "Bytes handed out from the tier.",
		 offsetof(struct tier, read_bytes)},
	};
	char labels[64];
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
		head(b, fields[f].name, fields[f].type, fields[f].help);
		for (int t = 0; t < TIER_COUNT; t++) {
			const struct tier *tr = &st->cache->tiers[t];
			if (!tr->present)
				continue;
			uint64_t v;
			memcpy(&v, (const char *)tr + fields[f].off, sizeof(v));
			snprintf(labels, sizeof(labels), "tier=\"%s\"", tr->name);
			sample(b, fields[f].name, labels, v);
		}
	}
	/* derived, not fields: the capacity in use, and the failed state */
	head(b, "tiercache_tier_effective_capacity_bytes", "gauge",
	     "Capacity the tier works with: the configured one, or less when its file system has less room.");
	for (int t = 0; t < TIER_COUNT; t++) {
		const struct tier *tr = &st->cache->tiers[t];
		if (!tr->present)
			continue;
		snprintf(labels, sizeof(labels), "tier=\"%s\"", tr->name);
		sample(b, "tiercache_tier_effective_capacity_bytes", labels, tier_capacity_now(tr));
	}
	head(b, "tiercache_tier_failed", "gauge",
	     "1 while the tier cannot be written (read-only, I/O errors, directory removed); see status for the reason.");
	for (int t = 0; t < TIER_COUNT; t++) {
		const struct tier *tr = &st->cache->tiers[t];
		if (!tr->present)
			continue;
		snprintf(labels, sizeof(labels), "tier=\"%s\"", tr->name);
		sample(b, "tiercache_tier_failed", labels, tr->failed ? 1 : 0);
	}
}

static void render_datasets(struct status *st, struct evbuffer *b)
{
	char name[2 * CONFIG_NAME_MAX + 2], labels[3 * CONFIG_NAME_MAX];
	uint64_t now = cache_now_ns();
	head(b, "tiercache_dataset_hits_total", "counter", "Chunk reads served from a tier.");
	for (unsigned i = 0; i < st->cache->nds; i++) {
		label_value(name, sizeof(name), st->cache->ds[i]->name);
		snprintf(labels, sizeof(labels), "dataset=\"%s\"", name);
		sample(b, "tiercache_dataset_hits_total", labels, st->cache->ds[i]->hits);
	}
	head(b, "tiercache_dataset_misses_total", "counter", "Chunk reads that went to the cold store.");
	for (unsigned i = 0; i < st->cache->nds; i++) {
		label_value(name, sizeof(name), st->cache->ds[i]->name);
		snprintf(labels, sizeof(labels), "dataset=\"%s\"", name);
		sample(b, "tiercache_dataset_misses_total", labels, st->cache->ds[i]->misses);
	}
	head(b, "tiercache_dataset_cold_read_bytes_total", "counter", "Bytes read from the cold store.");
	for (unsigned i = 0; i < st->cache->nds; i++) {
		label_value(name, sizeof(name), st->cache->ds[i]->name);
		snprintf(labels, sizeof(labels), "dataset=\"%s\"", name);
		sample(b, "tiercache_dataset_cold_read_bytes_total", labels, st->cache->ds[i]->bytes_from_cold);
	}
	head(b, "tiercache_dataset_resident_bytes", "gauge", "Bytes of the dataset's chunks per tier.");
	for (unsigned i = 0; i < st->cache->nds; i++) {
		label_value(name, sizeof(name), st->cache->ds[i]->name);
		for (int t = 0; t < TIER_COUNT; t++) {
			if (!st->cache->tiers[t].present)
				continue;
			snprintf(labels, sizeof(labels), "dataset=\"%s\",tier=\"%s\"", name,
				 st->cache->tiers[t].name);
			sample(b, "tiercache_dataset_resident_bytes", labels, st->cache->ds[i]->resident[t]);
		}
	}
	head(b, "tiercache_dataset_available", "gauge",
	     "1 if the dataset's source is reachable and listed, else 0.");
	for (unsigned i = 0; i < st->cache->nds; i++) {
		const struct dataset *ds = st->cache->ds[i];
		label_value(name, sizeof(name), ds->name);
		snprintf(labels, sizeof(labels), "dataset=\"%s\"", name);
		sample(b, "tiercache_dataset_available", labels,
		       ds->available && !dataset_cold_failing(ds, now));
	}
}

static void render_prefetch(struct status *st, struct evbuffer *b)
{
	struct prefetch_counts p;
	prefetch_counts(st->plans->pf, &p);
	head(b, "tiercache_prefetch_bytes_total", "counter",
	     "Bytes read from cold ahead of the reader, by what asked for them.");
	sample(b, "tiercache_prefetch_bytes_total", "source=\"plan\"", p.bytes - p.readahead_bytes);
	sample(b, "tiercache_prefetch_bytes_total", "source=\"readahead\"", p.readahead_bytes);
	one(b, "tiercache_prefetch_hits_total", "counter",
	    "Prefetched chunks that a client then read.", p.hits);
	one(b, "tiercache_prefetch_hit_bytes_total", "counter",
	    "Bytes of prefetched chunks that a client then read.", p.hit_bytes);
	one(b, "tiercache_prefetch_unused_bytes_total", "counter",
	    "Bytes of prefetched chunks evicted before any read.", p.unused_bytes);
	one(b, "tiercache_prefetch_late_reads_total", "counter",
	    "Reads that found their chunk's prefetch still in flight.", p.late);
	one(b, "tiercache_prefetch_errors_total", "counter", "Prefetch cold reads that failed.",
	    p.errors);
	one(b, "tiercache_prefetch_inflight", "gauge", "Prefetch cold reads in progress.",
	    p.inflight);
	one(b, "tiercache_plans", "gauge", "Plans registered by jobs on this node.", plans_count(st->plans));
}

/* The counter table in its order: a family's HELP/TYPE lines before its
 * first row, then one sample per row (the table keeps a family's rows
 * together). */
void metrics_render_counters(const struct status *st, struct evbuffer *b)
{
	const char *family = NULL;
	for (size_t i = 0; i < counter_nrows; i++) {
		const struct counter_row *r = &counter_rows[i];
		if (!family || strcmp(family, r->metric) != 0)
			head(b, r->metric, counter_type_name(r->type), r->help);
		family = r->metric;
		sample(b, r->metric, r->labels, counter_value(r, st));
	}
}

int metrics_render(struct status *st, struct evbuffer *b)
{
	char ver[64];
	label_value(ver, sizeof(ver), TIERCACHE_VERSION);
	head(b, "tiercache_build_info", "gauge", "Always 1; the version is a label.");
	evbuffer_add_printf(b, "tiercache_build_info{version=\"%s\"} 1\n", ver);
	one(b, "tiercache_uptime_seconds", "gauge", "Seconds since the daemon started.",
	    (uint64_t)(cache_wall_s() - st->start_s));

	metrics_render_counters(st, b);
	render_tiers(st, b);
	render_datasets(st, b);
	render_prefetch(st, b);

	head(b, "tiercache_chunk_request_duration_seconds", "histogram",
	     "CHUNK requests from arrival to reply, by result.");
	histogram(b, "tiercache_chunk_request_duration_seconds", "result=\"hit\"",
		  &st->cache->lat_chunk_hit);
	histogram(b, "tiercache_chunk_request_duration_seconds", "result=\"miss\"",
		  &st->cache->lat_chunk_miss);
	head(b, "tiercache_cold_read_duration_seconds", "histogram",
	     "Fills: from a miss to its chunk being ready (cold read, checksum, tier write).");
	histogram(b, "tiercache_cold_read_duration_seconds", NULL, &st->cache->lat_fill);
	return 0;
}

/* ---- the HTTP side ---- */

static void on_request(struct evhttp_request *req, void *arg)
{
	struct status *st = arg;
	const char *uri = evhttp_request_get_uri(req);
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	struct evhttp_uri *u = evhttp_uri_parse(uri ? uri : "");
	const char *path = u ? evhttp_uri_get_path(u) : NULL;
	bool is_metrics = path && strcmp(path, "/metrics") == 0;
	if (u)
		evhttp_uri_free(u);
	if (!is_metrics) {
		evhttp_send_error(req, HTTP_NOTFOUND, "only /metrics is served here");
		return;
	}
	if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
		evhttp_send_error(req, 405, "use GET");
		return;
	}
	struct evbuffer *b = evbuffer_new();
	if (!b) {
		evhttp_send_error(req, HTTP_SERVUNAVAIL, "out of memory");
		return;
	}
	metrics_render(st, b);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, HTTP_OK, "OK", b);
	evbuffer_free(b);
}

int metrics_start(struct metrics **out, struct status *st, char *err, size_t errlen)
{
	const struct config *cfg = st->cache->cfg;
	if (!cfg->metrics_listen[0])
		return 0;
	struct metrics *m = calloc(1, sizeof(*m));
	if (!m || !(m->http = evhttp_new(st->cache->base))) {
		free(m);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
						    EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE);
	evhttp_set_max_headers_size(m->http, 16384);
	evhttp_set_max_body_size(m->http, 4096);
	evhttp_set_timeout(m->http, 30);
	evhttp_set_gencb(m->http, on_request, st);
	if (!evhttp_bind_socket_with_handle(m->http, cfg->metrics_host, cfg->metrics_port)) {
		int e = errno ? errno : EADDRINUSE;
		snprintf(err, errlen, "cannot listen for metrics on %s: %s (daemon.metrics_listen)",
			 cfg->metrics_listen, strerror(e));
		evhttp_free(m->http);
		free(m);
		return -e;
	}
	*out = m;
	log_info("op=metrics listen=%s", cfg->metrics_listen);
	return 0;
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	evhttp_free(m->http);
	free(m);
}
