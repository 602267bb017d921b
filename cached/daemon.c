/*
 * Building, running and tearing down the daemon. Startup order matters:
 * the index is read and reconciled with the tier directories before any
 * client can connect, so a restarted daemon (even after kill -9) serves only
 * chunks whose complete file and index record both exist.
 */
#include "daemon.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <systemd/sd-daemon.h>

#include "chunk.h"
#include "dataset.h"
#include "durable.h"
#include "fill.h"
#include "index.h"
#include "log.h"
#include "metrics.h"
#include "mover.h"
#include "nofile.h"
#include "plans.h"
#include "policy_glue.h"
#include "prefetch.h"
#include "reload.h"
#include "residency.h"
#include "server.h"
#include "status.h"
#include "workers.h"

uint64_t daemon_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t daemon_wall_s(void)
{
	return (int64_t)time(NULL);
}

struct dataset *daemon_dataset(struct daemon *d, const char *name, size_t n)
{
	for (unsigned i = 0; i < d->nds; i++)
		if (strlen(d->ds[i]->name) == n && memcmp(d->ds[i]->name, name, n) == 0)
			return d->ds[i];
	return NULL;
}

/* ---- startup: index records + tier files ---- */

struct loaded {
	struct index_chunk ic;
	char *dataset, *path;
};

struct load_ctx {
	struct daemon *d;
	struct loaded *v;
	size_t n, cap;
	unsigned dropped;
};

static int load_one(void *arg, const struct index_chunk *ic)
{
	struct load_ctx *lc = arg;
	struct daemon *d = lc->d;
	if (ic->tier >= TIER_COUNT || !d->tiers[ic->tier].present ||
	    !daemon_dataset(d, ic->dataset, strlen(ic->dataset))) {
		/* its tier or dataset left the config: forget it (the file goes
		 * as an orphan) */
		index_chunk_delete(d->ix, ic->key);
		lc->dropped++;
		return 0;
	}
	if (lc->n == lc->cap) {
		size_t cap = lc->cap ? lc->cap * 2 : 1024;
		struct loaded *v = realloc(lc->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		lc->v = v;
		lc->cap = cap;
	}
	struct loaded *l = &lc->v[lc->n];
	l->ic = *ic;
	l->dataset = strdup(ic->dataset);
	l->path = strdup(ic->path);
	if (!l->dataset || !l->path) {
		free(l->dataset);
		free(l->path);
		return -ENOMEM;
	}
	lc->n++;
	return 0;
}

static int by_atime(const void *a, const void *b)
{
	int64_t x = ((const struct loaded *)a)->ic.atime_s, y = ((const struct loaded *)b)->ic.atime_s;
	return (x > y) - (x < y);
}

static bool file_known(void *arg, struct tier *t, uint64_t key, uint64_t size)
{
	struct daemon *d = arg;
	struct chunk *c = chunk_find(&d->chunks, key);
	if (!c || c->tier != t->id || c->len != size)
		return false;
	c->seen = true;
	return true;
}

static int load_chunks(struct daemon *d, char *err, size_t errlen)
{
	struct load_ctx lc = {.d = d};
	unsigned bad = 0, orphans_total = 0, missing = 0;
	int rc = index_chunk_scan(d->ix, load_one, &lc, &bad);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read the index: %s", strerror(-rc));
		goto out;
	}
	/* oldest first, so each policy sees them in the order they were read */
	if (lc.n > 1)
		qsort(lc.v, lc.n, sizeof(*lc.v), by_atime);
	for (size_t i = 0; i < lc.n; i++) {
		struct loaded *l = &lc.v[i];
		struct dataset *ds = daemon_dataset(d, l->dataset, strlen(l->dataset));
		if (chunk_find(&d->chunks, l->ic.key))
			continue;
		d->tiers[l->ic.tier].used += l->ic.len;
		if (!chunk_publish(d, ds, l->path, &l->ic.src, l->ic.idx, l->ic.len, l->ic.checksum,
				   l->ic.tier, l->ic.atime_s, false)) {
			rc = -ENOMEM;
			snprintf(err, errlen, "out of memory loading the index");
			goto out;
		}
	}
	for (int t = 0; t < TIER_COUNT; t++) {
		unsigned orphans;
		rc = tier_reconcile(&d->tiers[t], file_known, d, &orphans);
		if (rc < 0) {
			snprintf(err, errlen, "tier %s: cannot scan %s: %s", d->tiers[t].name,
				 d->tiers[t].path, strerror(-rc));
			goto out;
		}
		orphans_total += orphans;
	}
	/* records whose file is missing or the wrong size */
	for (size_t b = 0; b < d->chunks.nb; b++) {
		struct chunk *c = d->chunks.b[b];
		while (c) {
			struct chunk *next = c->hnext;
			if (!c->seen) {
				chunk_drop(d, c, "no_file");
				missing++;
			}
			c = next;
		}
	}
	log_info("op=reconcile chunks=%zu orphan_files_removed=%u records_without_file=%u "
		 "undecodable_records=%u records_of_removed_datasets=%u",
		 d->chunks.n, orphans_total, missing, bad, lc.dropped);
	rc = 0;
out:
	for (size_t i = 0; i < lc.n; i++) {
		free(lc.v[i].dataset);
		free(lc.v[i].path);
	}
	free(lc.v);
	return rc;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	struct daemon *d = arg;
	log_info("op=shutdown signal=%d", (int)sig);
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
	d->stopping = true;
	event_base_loopbreak(d->base);
}

/* SIGHUP: reload the config file; daemon_reload() logs what happened. */
static void on_hup(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	struct daemon *d = arg;
	char *report = NULL;
	log_info("op=reload signal=HUP file=%s", d->cfg->file);
	daemon_reload(d, &report);
	free(report);
}

/* Log a reload's report, one line per log line: the changes, or the
 * file's errors. */
static void log_report(const char *report, int rc)
{
	char q[1024];
	const char *line = report;
	while (line && *line) {
		/* the value goes in double quotes: escape the ones it has */
		size_t o = 0;
		for (; *line && *line != '\n'; line++)
			if (o + 3 < sizeof(q)) {
				if (*line == '"' || *line == '\\')
					q[o++] = '\\';
				q[o++] = *line;
			}
		q[o] = '\0';
		if (*line == '\n')
			line++;
		if (rc < 0)
			log_err("op=reload err=\"%s\"", q);
		else
			log_info("op=reload change=\"%s\"", q);
	}
	if (rc < 0)
		log_err("op=reload result=rejected running_config=kept err=\"%s\"", strerror(-rc));
}

int daemon_reload(struct daemon *d, char **report)
{
	sd_notify(0, "RELOADING=1\nSTATUS=reloading the configuration");
	int rc = reload_config(d, report);
	log_report(*report, rc);
	sd_notifyf(0, "READY=1\nSTATUS=serving %u datasets%s", d->nds,
		   rc < 0 ? " (last reload rejected: see the log)" : "");
	return rc;
}

int daemon_init(struct daemon *d, struct config *cfg, char *err, size_t errlen)
{
	int rc;
	memset(d, 0, sizeof(*d));
	d->cfg = cfg;
	d->start_s = daemon_wall_s();
	log_set_level(cfg->log_level);
	/* clients, the fd cache, files waiting for their sync, the index,
	 * the cold stores' sockets: warn when the limit leaves no room */
	uint64_t nofile = tc_nofile_raise();
	uint64_t need = (uint64_t)cfg->max_clients + FDCACHE_SLOTS + 256u;
	if (nofile < need)
		log_warn("op=start nofile=%llu wanted=%llu: the descriptor limit may refuse clients "
			 "or fills under load; raise it (ulimit -n, or LimitNOFILE= in the unit) or "
			 "lower max_clients", (unsigned long long)nofile, (unsigned long long)need);
	if (evthread_use_pthreads() < 0 || !(d->base = event_base_new())) {
		snprintf(err, errlen, "cannot set up the event loop");
		return -ENOMEM;
	}
	if ((rc = chunk_table_init(&d->chunks)) < 0 || (rc = fill_table_init(&d->fills)) < 0 ||
	    (rc = chunk_fdcache_init(d)) < 0 || (rc = mover_init(d)) < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	rc = index_open(&d->ix, cfg->state_dir, err, errlen);
	if (rc < 0)
		return rc;
	if ((rc = policy_glue_init(d)) < 0 || (rc = plans_init(d)) < 0 || (rc = prefetch_init(d)) < 0 ||
	    (rc = status_init(d)) < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	for (int t = 0; t < TIER_COUNT; t++) {
		rc = tier_setup(&d->tiers[t], (enum tier_id)t, &cfg->tiers[t], err, errlen);
		if (rc < 0)
			return rc;
	}
	d->ds = calloc(cfg->ndatasets ? cfg->ndatasets : 1, sizeof(*d->ds));
	if (!d->ds)
		return -ENOMEM;
	for (unsigned i = 0; i < cfg->ndatasets; i++) {
		rc = dataset_new(d, &cfg->datasets[i], &d->ds[d->nds], err, errlen);
		if (rc < 0)
			return rc;
		dataset_restore_manifest(d, d->ds[d->nds]);
		d->nds++;
	}
	rc = load_chunks(d, err, errlen);
	if (rc < 0)
		return rc;
	rc = residency_init(d);
	if (rc < 0) {
		snprintf(err, errlen, "cannot load the pins from the index: %s", strerror(-rc));
		return rc;
	}
	rc = workers_start(&d->workers, d->base, cfg->workers);
	if (rc < 0) {
		snprintf(err, errlen, "cannot start %u worker threads", cfg->workers);
		return rc;
	}
	rc = durable_init(d);
	if (rc < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	for (unsigned i = 0; i < d->nds; i++)
		dataset_load(d, d->ds[i]);
	mover_kick(d);
	rc = server_start(d, &d->srv, err, errlen);
	if (rc < 0)
		return rc;
	return metrics_start(d, err, errlen);
}

int daemon_run(struct daemon *d)
{
	struct event *sigs[3] = {NULL};
	const int which[3] = {SIGTERM, SIGINT, SIGHUP};
	int rc = 0;
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < 3; i++) {
		sigs[i] = evsignal_new(d->base, which[i], which[i] == SIGHUP ? on_hup : on_signal, d);
		if (!sigs[i] || event_add(sigs[i], NULL) < 0) {
			rc = -ENOMEM;
			goto out;
		}
	}
	log_info("op=ready socket=%s datasets=%u chunks=%zu hot_used=%llu warm_used=%llu", d->cfg->socket,
		 d->nds, d->chunks.n, (unsigned long long)d->tiers[TIER_HOT].used,
		 (unsigned long long)d->tiers[TIER_WARM].used);
	/* systemd (Type=notify): serving now; a no-op without NOTIFY_SOCKET */
	sd_notifyf(0, "READY=1\nSTATUS=serving %u datasets\nMAINPID=%lu", d->nds,
		   (unsigned long)getpid());
	rc = event_base_dispatch(d->base) < 0 ? -EIO : 0;
out:
	for (int i = 0; i < 3; i++)
		if (sigs[i])
			event_free(sigs[i]);
	return rc;
}

void daemon_free(struct daemon *d)
{
	d->stopping = true;
	metrics_stop(d);
	server_stop(d->srv);
	d->srv = NULL;
	/* Cold reads in flight end on a backend thread and go on through the
	 * workers (fill.c): wait for them while the workers still run. */
	for (unsigned i = 0; i < d->nds; i++)
		if (d->ds[i]->opened)
			cold_quiesce(&d->ds[i]->cold);
	for (unsigned i = 0; i < d->nretired; i++)
		if (d->retired[i]->opened)
			cold_quiesce(&d->retired[i]->cold);
	workers_stop(d->workers); /* runs what is queued, delivers completions */
	d->workers = NULL;
	durable_flush(d); /* a graceful stop keeps every chunk: sync and record */
	durable_free(d);
	plans_free(d); /* after the workers: prefetch completions use the plans */
	for (unsigned i = 0; i < d->nds; i++)
		dataset_flush_manifest(d, d->ds[i]);
	for (size_t b = 0; d->chunks.b && b < d->chunks.nb; b++) {
		struct chunk *c = d->chunks.b[b];
		while (c) {
			struct chunk *next = c->hnext;
			free(c->file); /* no client holds anything now */
			free(c->path);
			free(c);
			c = next;
		}
	}
	chunk_table_free(&d->chunks);
	chunk_fdcache_free(d);
	fill_table_free(&d->fills);
	for (unsigned i = 0; i < d->nds; i++)
		dataset_free(d, d->ds[i]);
	free(d->ds);
	reload_free_retired(d);
	prefetch_free(d);
	status_free(d);
	policy_glue_free(d);
	residency_free(d);
	mover_free(d);
	index_close(d->ix);
	if (d->base)
		event_base_free(d->base);
	libevent_global_shutdown();
}
