/*
 * Prometheus text endpoint: see metrics.h.
 *
 * Loop thread: the HTTP side (at the end of the file) runs on
 * st->cache->base, the loop that owns the counters, tiers and datasets, so
 * a scrape reads them without locks and sees one consistent moment. A scrape costs one pass over the tiers
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
#include <stddef.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netdb.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/util.h>

#include "cluster.h"
#include "counters.h"
#include "dataset.h"
#include "log.h"
#include "plans.h"
#include "prefetch.h"

struct mconn;

struct metrics {
	struct status *st;
	struct event_base *base;
	int lfd;
	struct event *lev;
	struct event *pause;   /* re-arms the listener after an accept error */
	struct mconn *conns;
	unsigned nconns;
	uint64_t refused;      /* connections closed at accept: past metrics_max_clients */
	uint64_t log_ns;       /* when a refusal was last logged */
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

/* Where a per-tier metric's value comes from: a uint64_t field of the
 * tier or of its segment store (off), or a function of the tier. */
enum tier_src { TIER_SRC_TIER, TIER_SRC_SEGS, TIER_SRC_DERIVED };

struct tier_field {
	const char *name, *type, *help;
	enum tier_src src;
	size_t off;                                  /* TIER_SRC_TIER, TIER_SRC_SEGS */
	uint64_t (*derive)(const struct tier *tr);   /* TIER_SRC_DERIVED */
};

static uint64_t tier_effective_capacity(const struct tier *tr)
{
	return tier_capacity_now(tr);
}

static uint64_t tier_failed(const struct tier *tr)
{
	return tr->failed ? 1 : 0;
}

static uint64_t tier_field_value(const struct cache *cache, int t, const struct tier_field *f)
{
	const struct tier *tr = &cache->tiers[t];
	uint64_t v;
	switch (f->src) {
	case TIER_SRC_DERIVED:
		return f->derive(tr);
	case TIER_SRC_SEGS:
		memcpy(&v, (const char *)&cache->segs[t] + f->off, sizeof(v));
		return v;
	case TIER_SRC_TIER:
	default:
		memcpy(&v, (const char *)tr + f->off, sizeof(v));
		return v;
	}
}

#define TIER_FIELD(n, ty, h, s, o) {.name = (n), .type = (ty), .help = (h), .src = (s), .off = (o)}
#define TIER_DERIVED(n, ty, h, fn) {.name = (n), .type = (ty), .help = (h), .src = TIER_SRC_DERIVED, .derive = (fn)}

/* One metric per row, a sample per present tier, in this order. */
static const struct tier_field tier_metrics[] = {
	TIER_FIELD("tiercache_tier_capacity_bytes", "gauge", "Configured capacity of the tier.",
		   TIER_SRC_TIER, offsetof(struct tier, capacity)),
	TIER_FIELD("tiercache_tier_used_bytes", "gauge",
		   "Bytes of chunk files on the tier (including unlinked ones clients still hold).",
		   TIER_SRC_TIER, offsetof(struct tier, used)),
	TIER_FIELD("tiercache_tier_reserved_bytes", "gauge", "Bytes reserved by fills and moves in flight.",
		   TIER_SRC_TIER, offsetof(struct tier, reserved)),
	TIER_FIELD("tiercache_tier_high_water_bytes", "gauge", "Above this the mover drains the tier.",
		   TIER_SRC_TIER, offsetof(struct tier, high_bytes)),
	TIER_FIELD("tiercache_tier_low_water_bytes", "gauge", "The mover drains down to this.",
		   TIER_SRC_TIER, offsetof(struct tier, low_bytes)),
	TIER_FIELD("tiercache_tier_chunks", "gauge", "Chunk files published on the tier.",
		   TIER_SRC_TIER, offsetof(struct tier, chunks)),
	TIER_FIELD("tiercache_tier_read_bytes_total", "counter", "Bytes handed out from the tier.",
		   TIER_SRC_TIER, offsetof(struct tier, read_bytes)),
	TIER_FIELD("tiercache_tier_segments", "gauge", "Segment files on the tier (packed small chunks).",
		   TIER_SRC_SEGS, offsetof(struct segstore, nsegs)),
	TIER_FIELD("tiercache_tier_segment_live_bytes", "gauge", "Bytes of live items in the tier's segments.",
		   TIER_SRC_SEGS, offsetof(struct segstore, bytes_live)),
	TIER_FIELD("tiercache_tier_segment_dead_bytes", "gauge",
		   "Bytes of dead items still on disk in the tier's segments (given back by a reclaim, or when the clients holding them let go).",
		   TIER_SRC_SEGS, offsetof(struct segstore, bytes_dead)),
	TIER_FIELD("tiercache_tier_segment_punched_bytes", "gauge",
		   "Bytes of dead items in the tier's named segments whose blocks were given back (holes punched).",
		   TIER_SRC_SEGS, offsetof(struct segstore, punched_bytes)),
	TIER_FIELD("tiercache_tier_segment_punches_total", "counter", "Holes punched for dead segment items.",
		   TIER_SRC_SEGS, offsetof(struct segstore, punches)),
	TIER_FIELD("tiercache_tier_segment_punch_errors_total", "counter",
		   "Punches that failed (the bytes waited for a reclaim).", TIER_SRC_SEGS,
		   offsetof(struct segstore, punch_errors)),
	TIER_FIELD("tiercache_tier_segments_reclaimed_total", "counter", "Segments unlinked (emptied or reclaimed).",
		   TIER_SRC_SEGS, offsetof(struct segstore, reclaimed)),
	TIER_DERIVED("tiercache_tier_effective_capacity_bytes", "gauge",
		     "Capacity the tier works with: the configured one, or less when its file system has less room.",
		     tier_effective_capacity),
	TIER_DERIVED("tiercache_tier_failed", "gauge",
		     "1 while the tier cannot be written (read-only, I/O errors, directory removed); see status for the reason.",
		     tier_failed),
};

static void render_tiers(struct status *st, struct evbuffer *b)
{
	char labels[64];
	for (size_t f = 0; f < sizeof(tier_metrics) / sizeof(tier_metrics[0]); f++) {
		head(b, tier_metrics[f].name, tier_metrics[f].type, tier_metrics[f].help);
		for (int t = 0; t < TIER_COUNT; t++) {
			if (!st->cache->tiers[t].present)
				continue;
			snprintf(labels, sizeof(labels), "tier=\"%s\"", st->cache->tiers[t].name);
			sample(b, tier_metrics[f].name, labels,
			       tier_field_value(st->cache, t, &tier_metrics[f]));
		}
	}
}

static void render_datasets(struct status *st, struct evbuffer *b)
{
	char name[2 * CONFIG_NAME_MAX + 2], labels[3 * CONFIG_NAME_MAX];
	uint64_t now = cache_now_ns();
	static const struct {
		const char *metric, *help;
		size_t off; /* of a uint64_t in struct dataset */
	} per_ds[] = {
		{"tiercache_dataset_hits_total", "Chunk reads served from a tier.",
		 offsetof(struct dataset, hits)},
		{"tiercache_dataset_misses_total", "Chunk reads that went to the cold store.",
		 offsetof(struct dataset, misses)},
		{"tiercache_dataset_cold_read_bytes_total", "Bytes read from the cold store.",
		 offsetof(struct dataset, bytes_from_cold)},
		{"tiercache_dataset_peer_read_bytes_total",
		 "Bytes of chunks filled from their home node (cluster).",
		 offsetof(struct dataset, bytes_from_peers)},
		{"tiercache_dataset_peer_served_bytes_total", "Bytes of chunks sent to other nodes (cluster).",
		 offsetof(struct dataset, bytes_to_peers)},
	};
	for (size_t k = 0; k < sizeof(per_ds) / sizeof(per_ds[0]); k++) {
		head(b, per_ds[k].metric, "counter", per_ds[k].help);
		for (unsigned i = 0; i < st->cache->nds; i++) {
			const struct dataset *ds = st->cache->ds[i];
			uint64_t v;
			memcpy(&v, (const char *)ds + per_ds[k].off, sizeof(v));
			label_value(name, sizeof(name), ds->name);
			snprintf(labels, sizeof(labels), "dataset=\"%s\"", name);
			sample(b, per_ds[k].metric, labels, v);
		}
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

/* The cluster's fallbacks by reason (docs/cluster.md); nothing without
 * [cluster]. */
static void render_cluster(struct status *st, struct evbuffer *b)
{
	if (!st->cluster)
		return;
	char labels[64];
	head(b, "tiercache_fallback_total", "counter",
	     "Misses whose chunk's home node did not answer (or was not asked), read from the cold store, by reason.");
	for (size_t i = 0; i < cluster_fallback_reasons(); i++) {
		snprintf(labels, sizeof(labels), "reason=\"%s\"", cluster_fallback_reason(i));
		sample(b, "tiercache_fallback_total", labels, cluster_fallbacks(st->cluster, i));
	}
	head(b, "tiercache_cluster_coordinated", "gauge", "1 while Redis (the cluster's coordination) answers.");
	sample(b, "tiercache_cluster_coordinated", "", cluster_coordinated(st->cluster) ? 1 : 0);
	uint64_t mf[3];
	cluster_manifest_counts(st->cluster, mf);
	head(b, "tiercache_manifests_total", "counter",
	     "Dataset manifests published through Redis, loaded from it, or listed here as a fallback.");
	sample(b, "tiercache_manifests_total", "how=\"published\"", mf[0]);
	sample(b, "tiercache_manifests_total", "how=\"loaded\"", mf[1]);
	sample(b, "tiercache_manifests_total", "how=\"fallback\"", mf[2]);
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
	one(b, "tiercache_prefetch_stalls_total", "counter",
	    "Prefetch loads put off: they would displace a chunk needed sooner.", p.stalls);
	one(b, "tiercache_prefetch_room_waits_total", "counter",
	    "Chunks of a plan's window held back for want of free bytes on hot.", p.room_waits);
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
	render_cluster(st, b);
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

/*
 * A small HTTP/1.1 server of its own rather than evhttp, for its limits:
 * libevent 2.1's evhttp has no connection cap, and a connection that
 * never sends a request costs a descriptor until its 30 s timeout (28,000
 * idle TCP connections took the daemon to its descriptor limit). Here a
 * connection past daemon.metrics_max_clients is closed at accept, a
 * request must be complete within METRICS_REQUEST_S of the connect
 * (slowloris), the reply must be taken within METRICS_REPLY_S, and every
 * connection closes after its one reply (Connection: close; Prometheus
 * opens one per scrape anyway). A request is at most METRICS_HEAD_MAX
 * bytes of head and METRICS_BODY_MAX of body.
 */
#define METRICS_HEAD_MAX 16384u
#define METRICS_BODY_MAX 4096u
#define METRICS_REQUEST_S 5
#define METRICS_REPLY_S 10
#define METRICS_ACCEPT_BATCH 32
#define METRICS_PAUSE_MS 100
#define METRICS_LOG_NS (10ull * 1000000000ull)

struct mconn {
	struct metrics *m;
	struct mconn *prev, *next;
	int fd;
	struct event *ev;
	struct timeval deadline;     /* of the phase (request, then reply) */
	struct evbuffer *out;        /* the reply; NULL while the request comes in */
	size_t inlen;
	char in[METRICS_HEAD_MAX + METRICS_BODY_MAX];
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void mconn_close(struct mconn *mc)
{
	struct metrics *m = mc->m;
	if (mc->prev)
		mc->prev->next = mc->next;
	else
		m->conns = mc->next;
	if (mc->next)
		mc->next->prev = mc->prev;
	m->nconns--;
	event_free(mc->ev);
	if (mc->out)
		evbuffer_free(mc->out);
	close(mc->fd);
	free(mc);
}

/* Time left until the phase's deadline (at least 1 ms). */
static struct timeval left(const struct timeval *deadline)
{
	struct timeval now, tv;
	evutil_gettimeofday(&now, NULL);
	evutil_timersub(deadline, &now, &tv);
	if (tv.tv_sec < 0 || (tv.tv_sec == 0 && tv.tv_usec < 1000))
		tv = (struct timeval){.tv_sec = 0, .tv_usec = 1000};
	return tv;
}

static void on_conn_write(evutil_socket_t fd, short what, void *arg);

/* Queue the reply and switch the connection to writing it. */
static void respond(struct mconn *mc, int code, const char *reason, const char *extra_headers,
		    struct evbuffer *body, bool head_only)
{
	mc->out = evbuffer_new();
	if (!mc->out) {
		mconn_close(mc);
		return;
	}
	size_t blen = body ? evbuffer_get_length(body) : 0;
	evbuffer_add_printf(mc->out,
			    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
			    "Connection: close\r\n\r\n",
			    code, reason,
			    code == 200 ? "text/plain; version=0.0.4; charset=utf-8"
					: "text/plain; charset=utf-8",
			    blen, extra_headers ? extra_headers : "");
	if (body && !head_only)
		evbuffer_add_buffer(mc->out, body);
	event_free(mc->ev);
	mc->ev = event_new(mc->m->base, mc->fd, EV_WRITE | EV_PERSIST, on_conn_write, mc);
	evutil_gettimeofday(&mc->deadline, NULL);
	mc->deadline.tv_sec += METRICS_REPLY_S;
	struct timeval tv = left(&mc->deadline);
	if (!mc->ev || event_add(mc->ev, &tv) < 0)
		mconn_close(mc);
}

static void respond_text(struct mconn *mc, int code, const char *reason, const char *extra,
			 const char *text, bool head_only)
{
	struct evbuffer *b = evbuffer_new();
	if (b)
		evbuffer_add_printf(b, "%s\n", text);
	respond(mc, code, reason, extra, b, head_only);
	if (b)
		evbuffer_free(b);
}

static void on_conn_write(evutil_socket_t fd, short what, void *arg)
{
	struct mconn *mc = arg;
	if (what & EV_TIMEOUT) {
		log_debug("op=metrics err=\"reply not taken within %d s: closed\"", METRICS_REPLY_S);
		mconn_close(mc);
		return;
	}
	int n = evbuffer_write(mc->out, fd);
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
		mconn_close(mc);
		return;
	}
	if (evbuffer_get_length(mc->out) == 0) {
		mconn_close(mc);
		return;
	}
	struct timeval tv = left(&mc->deadline);
	event_add(mc->ev, &tv);
}

/* Length of the head (request line and headers, with the blank line that
 * ends it), or 0 if it has not all come in. */
static size_t head_len(const char *in, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		if (in[i] != '\n')
			continue;
		if (in[i + 1] == '\n')
			return i + 2;
		if (i + 2 < n && in[i + 1] == '\r' && in[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* The value of header name (case-insensitive) in the head, copied to
 * out; false if absent. */
static bool header(const char *head, size_t n, const char *name, char *out, size_t outn)
{
	size_t nl = strlen(name);
	const char *p = memchr(head, '\n', n), *end = head + n;
	while (p && p + 1 < end) {
		p++;
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			break;
		if ((size_t)(eol - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			size_t vl = (size_t)(eol - v);
			while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (vl >= outn)
				vl = outn - 1;
			memcpy(out, v, vl);
			out[vl] = '\0';
			return true;
		}
		p = eol;
	}
	return false;
}

/* A whole request is in (or cannot be): answer it. Returns false while
 * more bytes are needed. */
static bool handle_request(struct mconn *mc)
{
	size_t hl = head_len(mc->in, mc->inlen);
	if (!hl) {
		if (mc->inlen >= METRICS_HEAD_MAX) {
			respond_text(mc, 431, "Request Header Fields Too Large", NULL,
				     "request head over 16 KiB", false);
			return true;
		}
		return false;
	}
	char v[32];
	size_t clen = 0;
	if (header(mc->in, hl, "Transfer-Encoding", v, sizeof(v))) {
		respond_text(mc, 411, "Length Required", NULL, "send a Content-Length, not a chunked body",
			     false);
		return true;
	}
	if (header(mc->in, hl, "Content-Length", v, sizeof(v))) {
		char *e;
		unsigned long long l = strtoull(v, &e, 10);
		if (!*v || *e || l > METRICS_BODY_MAX) {
			respond_text(mc, 413, "Content Too Large", NULL, "request body over 4 KiB", false);
			return true;
		}
		clen = (size_t)l;
	}
	if (mc->inlen < hl + clen)
		return false;
	/* the request line: METHOD SP TARGET SP VERSION */
	char method[16], target[1024];
	const char *sp1 = memchr(mc->in, ' ', hl);
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', hl - (size_t)(sp1 + 1 - mc->in)) : NULL;
	const char *eol = memchr(mc->in, '\n', hl);
	if (!sp1 || !sp2 || sp2 > eol || (size_t)(sp1 - mc->in) >= sizeof(method) ||
	    (size_t)(sp2 - sp1 - 1) >= sizeof(target)) {
		respond_text(mc, 400, "Bad Request", NULL, "malformed request line", false);
		return true;
	}
	memcpy(method, mc->in, (size_t)(sp1 - mc->in));
	method[sp1 - mc->in] = '\0';
	memcpy(target, sp1 + 1, (size_t)(sp2 - sp1 - 1));
	target[sp2 - sp1 - 1] = '\0';
	char *q = strchr(target, '?');
	if (q)
		*q = '\0';
	bool head_only = strcmp(method, "HEAD") == 0;
	if (strcmp(target, "/metrics") != 0) {
		respond_text(mc, 404, "Not Found", NULL, "only /metrics is served here", head_only);
		return true;
	}
	if (strcmp(method, "GET") != 0 && !head_only) {
		respond_text(mc, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n", "use GET", false);
		return true;
	}
	struct evbuffer *b = evbuffer_new();
	if (!b) {
		respond_text(mc, 503, "Service Unavailable", NULL, "out of memory", head_only);
		return true;
	}
	metrics_render(mc->m->st, b);
	respond(mc, 200, "OK", NULL, b, head_only);
	evbuffer_free(b);
	return true;
}

static void on_conn_read(evutil_socket_t fd, short what, void *arg)
{
	struct mconn *mc = arg;
	if (what & EV_TIMEOUT) {
		log_debug("op=metrics err=\"no full request within %d s: closed\"", METRICS_REQUEST_S);
		mconn_close(mc);
		return;
	}
	ssize_t n = recv(fd, mc->in + mc->inlen, sizeof(mc->in) - mc->inlen, 0);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		mconn_close(mc);
		return;
	}
	mc->inlen += (size_t)n;
	if (!handle_request(mc)) {
		/* a persistent event's timeout restarts on each wakeup: keep
		 * the deadline counted from the connect */
		struct timeval tv = left(&mc->deadline);
		event_add(mc->ev, &tv);
	}
}

static void on_metrics_pause(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct metrics *m = arg;
	event_add(m->lev, NULL);
}

/* Too many connections: the new one is closed at once (a scraper retries
 * at its next interval). Logged at most every METRICS_LOG_NS. */
static void refuse(struct metrics *m, int fd, unsigned cap)
{
	close(fd);
	m->refused++;
	uint64_t now = mono_ns();
	if (m->log_ns && now - m->log_ns < METRICS_LOG_NS)
		return;
	log_warn("op=metrics err=\"too many connections: closing new ones\" metrics_max_clients=%u "
		 "refused_total=%llu", cap, (unsigned long long)m->refused);
	m->log_ns = now;
}

static void on_metrics_accept(evutil_socket_t lfd, short what, void *arg)
{
	(void)what;
	struct metrics *m = arg;
	for (int i = 0; i < METRICS_ACCEPT_BATCH; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
			    errno == ECONNABORTED)
				return;
			/* EMFILE and the like: the listener would wake the loop at
			 * once again; pause instead of spinning */
			log_warn("op=metrics err=\"accept: %s\": pausing %d ms", strerror(errno),
				 METRICS_PAUSE_MS);
			struct timeval tv = {.tv_sec = 0, .tv_usec = METRICS_PAUSE_MS * 1000};
			event_del(m->lev);
			evtimer_add(m->pause, &tv);
			return;
		}
		unsigned cap = m->st->cache->cfg->metrics_max_clients;
		if (m->nconns >= cap) {
			refuse(m, fd, cap);
			continue;
		}
		struct mconn *mc = malloc(sizeof(*mc));
		if (!mc) {
			close(fd);
			continue;
		}
		*mc = (struct mconn){.m = m, .fd = fd};
		mc->ev = event_new(m->base, fd, EV_READ | EV_PERSIST, on_conn_read, mc);
		evutil_gettimeofday(&mc->deadline, NULL);
		mc->deadline.tv_sec += METRICS_REQUEST_S;
		struct timeval tv = {.tv_sec = METRICS_REQUEST_S, .tv_usec = 0};
		if (!mc->ev || event_add(mc->ev, &tv) < 0) {
			if (mc->ev)
				event_free(mc->ev);
			free(mc);
			close(fd);
			continue;
		}
		mc->next = m->conns;
		if (m->conns)
			m->conns->prev = mc;
		m->conns = mc;
		m->nconns++;
	}
}

/* Bind daemon.metrics_listen: the first address its host resolves to. */
static int metrics_listen(struct metrics *m, const struct config *cfg, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	char port[8];
	snprintf(port, sizeof(port), "%u", (unsigned)cfg->metrics_port);
	int gr = getaddrinfo(cfg->metrics_host[0] ? cfg->metrics_host : NULL, port, &hints, &ai);
	if (gr != 0) {
		snprintf(err, errlen, "cannot listen for metrics on %s: %s (daemon.metrics_listen)",
			 cfg->metrics_listen, gai_strerror(gr));
		return -EINVAL;
	}
	int e = 0;
	m->lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (m->lfd < 0 || setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(m->lfd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(m->lfd, 128) < 0)
		e = errno ? errno : EADDRINUSE;
	freeaddrinfo(ai);
	if (e) {
		snprintf(err, errlen, "cannot listen for metrics on %s: %s (daemon.metrics_listen)",
			 cfg->metrics_listen, strerror(e));
		return -e;
	}
	return 0;
}

int metrics_start(struct metrics **out, struct status *st, char *err, size_t errlen)
{
	const struct config *cfg = st->cache->cfg;
	if (!cfg->metrics_listen[0])
		return 0;
	struct metrics *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	m->st = st;
	m->base = st->cache->base;
	m->lfd = -1;
	int rc = metrics_listen(m, cfg, err, errlen);
	if (rc < 0) {
		metrics_stop(m);
		return rc;
	}
	m->lev = event_new(m->base, m->lfd, EV_READ | EV_PERSIST, on_metrics_accept, m);
	m->pause = evtimer_new(m->base, on_metrics_pause, m);
	if (!m->lev || !m->pause || event_add(m->lev, NULL) < 0) {
		snprintf(err, errlen, "out of memory");
		metrics_stop(m);
		return -ENOMEM;
	}
	*out = m;
	log_info("op=metrics listen=%s max_clients=%u", cfg->metrics_listen, cfg->metrics_max_clients);
	return 0;
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	while (m->conns)
		mconn_close(m->conns);
	if (m->lev)
		event_free(m->lev);
	if (m->pause)
		event_free(m->pause);
	if (m->lfd >= 0)
		close(m->lfd);
	free(m);
}

unsigned metrics_clients(const struct metrics *m)
{
	return m ? m->nconns : 0;
}
