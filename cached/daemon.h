/*
 * The daemon as composed by the root (daemon.c, reload.c, main.c): the
 * engine and the modules above it, each with its own state, and the wiring
 * between them (the engine's hooks, the api's modules, the transport's
 * ops). Only the root's files include this header; every module below
 * sees just the headers of its own layer and those beneath it
 * (docs/architecture.md). Loop thread only.
 */
#ifndef TIERCACHE_DAEMON_H
#define TIERCACHE_DAEMON_H

#include <stdbool.h>

#include "api.h"
#include "cache.h"
#include "config.h"

struct event_base;
struct plans;
struct residency;
struct status;
struct server;
struct metrics;
struct cluster;

struct daemon {
	struct config *cfg;       /* the running config (a reload replaces it) */
	struct event_base *base;  /* the loop every module runs on */
	struct cache cache;       /* the engine (cache/cache.h) */
	struct plans *plans;      /* registered plans and their prefetcher (plan/) */
	struct residency *res;    /* pins and admin residency ops (admin/residency.h) */
	struct status *status;    /* status and counters (admin/status.h) */
	struct api api;           /* what the ops use (api/api.h) */
	struct server *srv;       /* the Unix socket (net/server.h) */
	struct metrics *metrics;  /* the HTTP endpoint, NULL when off */
	struct cluster *cluster;  /* this node of a cluster (cluster/), NULL without [cluster] */
	/* reload.c: datasets removed by a reload, freed at exit (handles and
	 * jobs in flight may still point at them) */
	struct dataset **retired;
	unsigned nretired;
};

/* Build the daemon from a loaded config: index, tiers, datasets, chunks
 * reconciled with the tier directories, workers, socket. On failure a
 * message in err and -errno; daemon_free() cleans up either way. */
int daemon_init(struct daemon *d, struct config *cfg, char *err, size_t errlen);
/* Serve until SIGTERM / SIGINT; SIGHUP reloads the config. Tells systemd
 * READY=1 once serving and STOPPING=1 on the way out (sd_notify). */
int daemon_run(struct daemon *d);
/* Reload d->cfg->file (reload.h), telling systemd RELOADING=1 and READY=1
 * around it and logging the report line by line. The new config replaces
 * d->cfg (the old one is freed). */
int daemon_reload(struct daemon *d, char **report);
void daemon_free(struct daemon *d);

#endif
