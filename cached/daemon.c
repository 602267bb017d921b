/*
 * Building, running and tearing down the daemon: the modules of every layer
 * in order, and the wiring between them (the engine's hooks, the api's
 * modules, the transport's ops). Startup order matters: the engine loads
 * and reconciles the index with the tier directories (cache_load) before
 * the socket is opened, so a restarted daemon (even after kill -9) serves
 * only chunks whose complete file and index record both exist.
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

#include "broadcast.h"
#include "busy_poll.h"
#include "chunk.h"
#include "cluster.h"
#include "dataset.h"
#include "log.h"
#include "metrics.h"
#include "nofile.h"
#include "plans.h"
#include "prefetch.h"
#include "reload.h"
#include "residency.h"
#include "scrub.h"
#include "server.h"
#include "status.h"

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	struct daemon *d = arg;
	log_info("op=shutdown signal=%d", (int)sig);
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
	d->cache.stopping = true;
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
	sd_notifyf(0, "READY=1\nSTATUS=serving %u datasets%s", d->cache.nds,
		   rc < 0 ? " (last reload rejected: see the log)" : "");
	return rc;
}

/* ---- the engine's hooks: what it tells the layers above ---- */

static void hook_read_seen(void *arg, uint64_t key, const struct read_ctx *rc)
{
	struct daemon *d = arg;
	(void)plans_access(d->plans, key, rc); /* ticks the plan store, follows the plans */
}

static void hook_chunk_dropped(void *arg, const struct chunk *c)
{
	struct daemon *d = arg;
	prefetch_chunk_dropped(d->plans->pf, c);
}

static void hook_chunk_moved(void *arg, struct chunk *c)
{
	struct daemon *d = arg;
	residency_pin_moved(d->res, c);
}

static int hook_remote_read(void *arg, struct remote_read *rr)
{
	struct daemon *d = arg;
	return cluster_remote_read(d->cluster, rr);
}

static bool hook_remote_home(void *arg, uint64_t key)
{
	struct daemon *d = arg;
	return !cluster_is_home(d->cluster, key);
}

static int hook_manifest_fetch(void *arg, struct manifest_fetch *f)
{
	struct daemon *d = arg;
	return cluster_manifest_fetch(d->cluster, f);
}

static void hook_manifest_listed(void *arg, struct manifest_fetch *f, int err)
{
	struct daemon *d = arg;
	cluster_manifest_listed(d->cluster, f, err);
}

static int api_reload(void *arg, char **report)
{
	return daemon_reload(arg, report);
}

int daemon_init(struct daemon *d, struct config *cfg, char *err, size_t errlen)
{
	int rc;
	memset(d, 0, sizeof(*d));
	d->cfg = cfg;
	log_set_level(cfg->log_level);
	/* clients, the metrics endpoint's, the fd cache, files waiting for
	 * their sync, the index, the cold stores' sockets: warn when the
	 * limit leaves no room (running out anyway does not spin: on_accept
	 * in net/server.c) */
	uint64_t nofile = tc_nofile_raise();
	uint64_t need = (uint64_t)cfg->max_clients + FDCACHE_SLOTS + 256u +
			(cfg->metrics_listen[0] ? cfg->metrics_max_clients : 0);
	if (nofile < need)
		log_warn("op=start nofile=%llu wanted=%llu: the descriptor limit may refuse clients "
			 "or fills under load; raise it (ulimit -n, or LimitNOFILE= in the unit) or "
			 "lower max_clients", (unsigned long long)nofile, (unsigned long long)need);
	if (evthread_use_pthreads() < 0 || !(d->base = event_base_new())) {
		snprintf(err, errlen, "cannot set up the event loop");
		return -ENOMEM;
	}
	struct cache *cache = &d->cache;
	rc = cache_init(cache, cfg, d->base, err, errlen);
	if (rc < 0)
		return rc;
	if ((rc = plans_init(&d->plans, cache)) < 0 ||
	    (rc = status_init(&d->status, cache, d->plans)) < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	cache->hooks = (struct cache_hooks){
		.arg = d,
		.read_seen = hook_read_seen,
		.chunk_dropped = hook_chunk_dropped,
		.chunk_moved = hook_chunk_moved,
	};
	for (unsigned i = 0; i < cfg->ndatasets; i++) {
		rc = dataset_new(cache, &cfg->datasets[i], &cache->ds[cache->nds], err, errlen);
		if (rc < 0)
			return rc;
		dataset_restore_manifest(cache, cache->ds[cache->nds]);
		cache->nds++;
	}
	rc = cache_load(cache, err, errlen);
	if (rc < 0)
		return rc;
	rc = residency_init(&d->res, cache);
	if (rc < 0) {
		snprintf(err, errlen, "cannot load the pins from the index: %s", strerror(-rc));
		return rc;
	}
	rc = cache_start(cache, err, errlen);
	if (rc < 0)
		return rc;
	if ((rc = scrub_start(cache)) < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	if (cfg->cluster.enabled) {
		/* before clients: a miss may ask the chunk's home from the start */
		if ((rc = cluster_new(cache, &cfg->cluster, &d->cluster, err, errlen)) < 0)
			return rc;
		cluster_set_plans(d->cluster, d->plans);
		if ((rc = cluster_start(d->cluster, err, errlen)) < 0)
			return rc;
		cache->hooks.remote_read = hook_remote_read;
		cache->hooks.remote_home = hook_remote_home; /* readahead from a file's first chunk */
		cache->hooks.manifest_fetch = hook_manifest_fetch; /* one listing per cluster */
		cache->hooks.manifest_listed = hook_manifest_listed;
		d->status->cluster = d->cluster;
	}
	for (unsigned i = 0; i < cache->nds; i++) /* after the cluster: its hooks may load the manifests */
		dataset_load(cache, cache->ds[i]);
	d->api = (struct api){
		.cache = cache,
		.plans = d->plans,
		.res = d->res,
		.status = d->status,
		.reload = api_reload,
		.reload_arg = d,
		.bcast = cluster_broadcast(d->cluster),
		.cluster = d->cluster,
	};
	if (d->api.bcast) /* the stream's entries apply through the api, as root */
		broadcast_set_hooks(d->api.bcast,
				    &(struct broadcast_hooks){.arg = &d->api, .apply = api_cluster_apply});
	rc = server_start(d->base, cfg, &api_server_ops, &d->api, &d->srv, err, errlen);
	if (rc < 0)
		return rc;
	d->status->srv = d->srv;
	d->status->ahead_arg = &d->api;
	d->status->ahead_info = api_ahead_info;
	return metrics_start(&d->metrics, d->status, err, errlen);
}

/* The busy-poll window after client frames (net/busy_poll.h). */
static uint64_t daemon_poll_ns(void)
{
	unsigned us = SERVER_POLL_US_DEFAULT;
	const char *e = getenv("TIERCACHE_DAEMON_POLL_US");
	if (e && *e) {
		char *end;
		unsigned long v = strtoul(e, &end, 10);
		if (*end || v > SERVER_POLL_US_MAX)
			log_warn("op=config TIERCACHE_DAEMON_POLL_US=%s is not 0..%u microseconds; using %u", e,
				 SERVER_POLL_US_MAX, us);
		else
			us = (unsigned)v;
	}
	return (uint64_t)us * 1000u;
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
		 d->cache.nds, chunk_table_count(&d->cache.chunks), (unsigned long long)d->cache.tiers[TIER_HOT].used,
		 (unsigned long long)d->cache.tiers[TIER_WARM].used);
	/* systemd (Type=notify): serving now; a no-op without NOTIFY_SOCKET */
	sd_notifyf(0, "READY=1\nSTATUS=serving %u datasets\nMAINPID=%lu", d->cache.nds,
		   (unsigned long)getpid());
	rc = server_loop(d->base, d->srv, daemon_poll_ns());
out:
	for (int i = 0; i < 3; i++)
		if (sigs[i])
			event_free(sigs[i]);
	return rc;
}

void daemon_free(struct daemon *d)
{
	d->cache.stopping = true;
	metrics_stop(d->metrics);
	d->metrics = NULL;
	if (d->status) {
		d->status->srv = NULL;
		d->status->ahead_info = NULL;
	}
	server_stop(d->srv);
	d->srv = NULL;
	/* peer requests in flight end (their fills go to the cold store or
	 * fail), before the engine drains its fills */
	cluster_stop(d->cluster);
	/* cold reads in flight of removed datasets end through the workers too */
	for (unsigned i = 0; i < d->nretired; i++)
		if (d->retired[i]->opened)
			cold_quiesce(&d->retired[i]->cold);
	cache_stop(&d->cache); /* quiesce, drain the workers, sync what waits */
	scrub_free(&d->cache); /* after the drain: a check in flight told it how it ended */
	plans_free(d->plans); /* after the workers: prefetch completions use the plans */
	d->plans = NULL;
	reload_free_retired(d);
	status_free(d->status);
	d->status = NULL;
	residency_free(d->res);
	d->res = NULL;
	cluster_free(d->cluster); /* after the drain: a request it served may have waited for a fill */
	d->cluster = NULL;
	cache_free(&d->cache);
	if (d->base)
		event_base_free(d->base);
	libevent_global_shutdown();
}
