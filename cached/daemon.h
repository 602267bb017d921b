/*
 * The daemon's state, owned by the loop thread. main.c builds one struct
 * daemon and hands it to the modules; nothing else is global.
 *
 * Data model (DESIGN.md):
 *   dataset   a name, a cold backend, a manifest, one policy instance per
 *             tier and the placement over them (policy_glue.h)
 *   chunk     one chunk_size piece of one version of one file, resident on
 *             exactly one tier; keyed by a 64-bit hash of (dataset, path,
 *             source version, chunk number)
 *   cfile     one physical chunk file. A chunk's current file holds a
 *             reference; so does every client handle that was given its fd.
 *             An evicted or moved file is unlinked at once but its bytes stay
 *             counted in the tier until the last reference goes.
 */
#ifndef TIERCACHE_DAEMON_H
#define TIERCACHE_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "config.h"
#include "histogram.h"
#include "placement.h"
#include "policy.h"
#include "policy_spec.h"
#include "tier.h"

struct event_base;
struct event;
struct workers;
struct durable;
struct index;
struct manifest;
struct server;
struct plan_store;
struct status_rates;
struct metrics;
struct residency;
struct plans;
struct prefetch;

enum chunk_state {
	CHUNK_RESIDENT = 0, /* in its tier's policy */
	CHUNK_MOVING = 1,   /* being copied to another tier: out of every policy */
	CHUNK_UNKEPT = 2,   /* filled but not admitted anywhere: served once, in
			     * no table, policy or index (see fill.c) */
	CHUNK_PINNED = 3,   /* pinned by an admin (residency.c): resident, in no
			     * policy, so never a victim: not demoted, evicted
			     * or promoted until unpinned */
};

/* cfile.tier of an unkept chunk whose bytes are in memory, not on a tier
 * (fill.c: when no tier has room to spare for it). */
#define CFILE_IN_RAM 0xffu

struct cfile {
	struct chunk *chunk; /* NULL once detached (evicted or replaced) */
	uint64_t key;
	uint32_t len;
	uint32_t refs;
	int fd;              /* an unkept chunk's open, already unlinked file; else -1 */
	uint8_t tier;
};

struct chunk {
	struct pol_entry pe;  /* policy links; pe.key == key, pe.size == len */
	struct chunk *hnext;  /* chunk table chain */
	uint64_t key;
	struct dataset *ds;
	char *path;
	struct cold_stat src;
	uint32_t idx;
	uint32_t len;
	uint64_t checksum;
	int64_t atime_s;      /* wall clock of the last read (lifecycle) */
	struct cfile *file;
	uint8_t tier;
	uint8_t state;
	bool doomed;          /* drop when the move in flight ends */
	bool prefetched;      /* brought in by the prefetcher and not read since */
	bool seen;            /* startup: its file was found on disk */
	bool pin_after_move;  /* pin it when the move in flight ends (residency.c) */
	uint64_t sync_seq;    /* != 0: its file is not fdatasync'ed yet, so it
			       * has no index record yet (fill.c) */
};

struct chunk_table {
	struct chunk **b;
	size_t nb;
	size_t n;
};

struct dataset {
	struct daemon *d;
	struct dataset_conf conf;
	const char *name;     /* conf.name */
	struct cold cold;
	bool opened;          /* backend open() succeeded */
	bool available;       /* a manifest was loaded from the source this run */
	char reason[256];     /* why not available, or what is failing */
	uint64_t cold_fail_ns; /* last cold store failure (0: none since success) */
	struct manifest *mf;  /* from the source, or persisted by an earlier run */
	bool refreshing;
	struct event *retry_ev; /* background reload after a failure */
	struct event *persist_ev; /* write a manifest changed by revalidation */
	bool mf_dirty;          /* the manifest differs from its persisted copy */
	/* Policies (policy_glue.c): one instance per present tier, the
	 * placement that asks them, and the choice they were made from. */
	struct policy *pol[TIER_COUNT];
	struct placement pl;
	struct policy_spec spec;
	bool spec_by_admin;   /* set with tierctl and persisted, not the file's */
	int64_t spec_set_at_s; /* when pol[] was (re)created, wall clock */
	uint64_t resident[TIER_COUNT]; /* bytes of live chunks per tier */
	uint64_t hits, misses;
	uint64_t bytes_from_cold;
	uint64_t served_unkept; /* fills served without keeping the chunk */
	bool removed;         /* left the config in a reload (reload.c): kept only
			       * for handles and jobs that still point here */
	uint64_t pinned_bytes;  /* bytes of its chunks in state CHUNK_PINNED */
};

struct counters {
	uint64_t hits_hot, hits_warm, misses;
	uint64_t bytes_served, bytes_from_cold;
	uint64_t evictions, demotions, promotions;
	uint64_t cold_reads, cold_errors, stale_reads;
	uint64_t checksum_errors, fill_errors;
	uint64_t chunks_synced;  /* fills made durable and recorded (durable.c) */
	uint64_t syncs_skipped;  /* fills gone (evicted, moved) before their sync */
	uint64_t served_unkept; /* chunks read from cold and served without keeping them */
	uint64_t bad_frames;
};

struct fill;

/* Open descriptors of recently handed-out chunk files: a hit costs a dup()
 * instead of a path lookup. Direct-mapped by chunk key. */
#define FDCACHE_SLOTS 1024u
struct fdslot {
	const struct cfile *f;
	int fd;
};

struct fill_table {
	struct fill **b;
	size_t nb;
	size_t n;
};

struct daemon {
	struct config *cfg;
	struct event_base *base;
	struct workers *workers;
	struct index *ix;
	struct tier tiers[TIER_COUNT];
	struct dataset **ds;
	unsigned nds;
	struct chunk_table chunks;
	struct status_rates *rates; /* status.c: tier read rates */
	struct plan_store *plans; /* jobs' announced reads, for clairvoyant */
	struct plans *reg;        /* the registered plans (plans.h) */
	struct conn *req_conn;    /* connection whose request is being dispatched
	                           * (its job tag steers plans_access), else NULL */
	struct prefetch *pf;      /* prefetch.h */
	bool fill_quiet;          /* fill_get() call from the prefetcher: not a read, lands on hot */
	struct fdslot *fdcache;
	struct fill_table fills;
	struct server *srv;
	struct counters ctr;
	struct event *mover_ev;
	unsigned moves_inflight;
	unsigned revals_inflight; /* revalidation stats on the way (dataset.c) */
	uint64_t moving_bytes[TIER_COUNT]; /* bytes of this tier being moved out */
	uint64_t unkept_filling[TIER_COUNT]; /* reserved by fills that will not be kept */
	uint64_t unkept_ram; /* bytes of unkept chunks in memory (filling or held) */
	uint64_t sync_seq;   /* last chunk.sync_seq handed out */
	struct durable *dur; /* chunks waiting for their fdatasync (durable.h) */
	bool draining[TIER_COUNT];
	uint64_t pinned[TIER_COUNT]; /* bytes of pinned chunks per tier */
	struct residency *res; /* pins and admin residency ops (residency.h) */
	int64_t start_s;
	bool stopping;
	/* reload.c: datasets removed by a reload, freed at exit (handles and
	 * jobs in flight may still point at them) */
	struct dataset **retired;
	unsigned nretired;
	uint64_t reloads, reload_failures;
	struct metrics *metrics; /* metrics.c: the HTTP endpoint, NULL when off */
	/* latency (metrics.c exports them): CHUNK requests from dispatch to
	 * reply, by hit / miss; fills from the miss to the chunk being ready */
	struct histogram lat_chunk_hit, lat_chunk_miss, lat_fill;
};

/* Monotonic nanoseconds: the policies' clock. */
uint64_t daemon_now_ns(void);
int64_t daemon_wall_s(void);

struct dataset *daemon_dataset(struct daemon *d, const char *name, size_t n);

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
