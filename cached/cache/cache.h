/*
 * cache/cache.h: the engine. What the cache holds (datasets, chunks, the
 * files behind them), the state every engine module shares (struct cache),
 * who is reading (struct read_ctx, an argument, never a field), and the
 * hooks through which the engine tells the layers above what happened.
 * The engine's modules have their own headers beside this one: chunk.h
 * (the table and life cycle), fill.h (the miss path), mover.h
 * (watermarks and moves), durable.h (lazy fdatasync), dataset.h (sources,
 * manifests, revalidation), policy_glue.h (policies and placement).
 *
 * Loop thread only, unless a function says otherwise (util/loop.h:
 * loop_assert() checks it in debug builds).
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
#ifndef TIERCACHE_CACHE_H
#define TIERCACHE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "config.h"
#include "histogram.h"
#include "placement.h"
#include "policy.h"
#include "policy_spec.h"
#include "segment.h"
#include "proto_job.h"
#include "tier.h"
#include "u64hash.h"

struct event_base;
struct event;
struct workers;
struct durable;
struct index;
struct manifest;
struct plan_store;
struct mover;
struct fdslot;
struct tier_health;
struct verifier;
struct scrub;
struct trace_rec;

enum chunk_state {
	CHUNK_RESIDENT = 0, /* in its tier's policy */
	CHUNK_MOVING = 1,   /* being copied to another tier: out of every policy */
	CHUNK_UNKEPT = 2,   /* filled but not admitted anywhere: served once, in
			     * no table, policy or index (see fill.c) */
	CHUNK_PINNED = 3,   /* pinned by an admin (admin/residency*.c): resident, in no
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
	struct segment *seg; /* a small chunk: the segment holding it (a reference), else NULL */
	uint64_t off;        /* ... at this offset (the chunk record's base) */
	struct seg_link seg_link; /* in seg->items_live while a live item */
};

struct chunk {
	struct pol_entry pe;  /* policy links; pe.key == key, pe.size == len */
	struct u64h_node hn;  /* chunk table link (keyed by key) */
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
	bool pin_after_move;  /* pin it when the move in flight ends (admin/residency*.c) */
	bool unverified;      /* loaded from the index (or reported bad by a client):
			       * its file is checked before it is served (verify.h) */
	uint64_t sync_seq;    /* != 0: its file is not fdatasync'ed yet, so it
			       * has no index record yet (fill.c) */
};

/* key -> chunk (chunk.h has the calls, and the iterator every walk uses) */
struct chunk_table {
	struct u64h h;
};

struct dataset {
	struct cache *cache;
	struct dataset_conf conf;
	const char *name;     /* conf.name */
	struct cold cold;
	bool opened;          /* backend open() succeeded */
	bool available;       /* a manifest was loaded from the source this run */
	char reason[256];     /* why not available, or what is failing */
	uint64_t cold_fail_ns; /* last cold store failure (0: none since success) */
	uint64_t stale_since_ns; /* first file served unchecked since the store
				  * failed (serve_stale_on_error; 0: none) */
	uint64_t stale_served; /* files served unchecked (serve_stale_on_error) */
	struct manifest *mf;  /* from the source, or persisted by an earlier run */
	bool refreshing;
	/* Loading progress (status; api/load_wait.c parks requests meanwhile):
	 * first_load until the first listing of this run ends, however it
	 * ends; load_start_ns when the listing in progress started; load_listed
	 * the files it has listed so far (written by the worker that lists:
	 * read it with __atomic_load_n). */
	bool first_load;
	uint64_t load_start_ns;
	uint64_t load_listed;
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
	uint64_t bytes_from_peers; /* chunks filled from their home node (cluster/) */
	uint64_t bytes_to_peers;   /* chunk bytes sent to other nodes (cluster/) */
	uint64_t served_unkept; /* fills served without keeping the chunk */
	bool removed;         /* left the config in a reload (reload.c): kept only
			       * for handles and jobs that still point here */
	uint64_t pinned_bytes;  /* bytes of its chunks in state CHUNK_PINNED */
};

struct counters {
	uint64_t hits_hot, hits_warm, misses;
	uint64_t bytes_served, bytes_from_cold;
	/* the cluster (cluster/): chunks filled from their home node instead
	 * of the cold store, and what this node sent to others */
	uint64_t bytes_from_peers, bytes_to_peers;
	uint64_t peer_fills;       /* fills answered by a peer */
	uint64_t peer_bad;         /* peer answers refused: wrong length or checksum */
	uint64_t peer_fallbacks;   /* fills a peer did not answer, read from the cold store */
	uint64_t evictions, demotions, promotions;
	uint64_t segment_items_kept;    /* live items a segment reclaim copied (reclaim.c) */
	uint64_t segment_items_dropped; /* live items a segment reclaim dropped */
	/* their bytes: what reclaim costs in writes (copied into its own
	 * tier; a demotion counts in demotions) against what it gave up, per
	 * byte filled (bytes_from_cold) */
	uint64_t segment_reclaim_copied_bytes, segment_reclaim_dropped_bytes;
	uint64_t segment_copy_syncs; /* fdatasyncs of segments for the mover's copies (seg_sync.c):
				      * demotions + promotions + segment_items_kept per sync */
	uint64_t cold_reads, cold_errors, stale_reads;
	uint64_t revals_by_read; /* revalidations answered by the file's read at its version
				  * (open-ahead), no stat asked (dataset.c) */
	uint64_t stale_served;   /* opens served unchecked: store down, serve_stale_on_error */
	/* revalidation of stores without a cheap stat: stats a request's own
	 * revalidation asked (dataset.c); stats sent ahead of the opens
	 * (stat_ahead.c), requests that found their entry confirmed by one,
	 * and requests that found theirs in flight and waited for it */
	uint64_t reval_stats, stat_ahead_sent, stat_ahead_used, stat_ahead_joined;
	uint64_t stat_ahead_wasted; /* ... stat'd ahead, then due again when opened */
	uint64_t checksum_errors, fill_errors;
	uint64_t chunks_synced;  /* fills made durable and recorded (durable.c) */
	uint64_t syncs_skipped;  /* fills gone (evicted, moved) before their sync */
	uint64_t served_unkept; /* chunks read from cold and served without keeping them */
	uint64_t served_unkept_room; /* ... of which some tier had room for (policy_glue_room) */
	uint64_t fills_instead;  /* fills the first tier could not take now, kept on the next */
	uint64_t held_refusals; /* descriptors refused past max_held_per_client / _per_user (api) */
	uint64_t scrubbed_bytes; /* bytes of chunk files the scrubber checked (scrub.c) */
	uint64_t scrub_passes;   /* walks of the whole chunk table the scrubber finished */
	uint64_t chunk_reports;  /* clients' reports of a chunk read short (verify.h) */
	uint64_t open_many_frames; /* OPEN_MANY requests answered (api/open_many.c) */
	uint64_t open_many_files;  /* files those named */
	/* open-ahead from plans (api/ahead.c): handles handed, then used or released unused */
	uint64_t ahead_handed, ahead_used, ahead_unused;
	uint64_t ahead_out, ahead_out_bytes; /* gauges: handed, neither used nor released */
	uint64_t held_bytes;     /* gauge: chunk bytes all clients hold through descriptors (api) */
	/* request frames by op (api): what clients ask per file */
	uint64_t frames_open, frames_open_many, frames_open_ahead, frames_chunk, frames_close;
	/* OPENs of a one-chunk file answered with its fill (api/open_fill.c) */
	uint64_t opens_filled;
	uint64_t opens_filling; /* gauge: such OPENs waiting for their fill */
};

struct fill;
struct stat_ahead;

/* key -> fill in flight (fill.c), and buffers of finished fills kept
 * for the next ones (fill_buf.h) */
#define FILL_SPARE_MAX 16
#define FILL_SPARE_BYTES (32ull << 20)
struct fill_table {
	struct u64h h;
	void *spare[FILL_SPARE_MAX];
	size_t spare_cap[FILL_SPARE_MAX];
	unsigned nspare;
	uint64_t spare_bytes;
};

/* Who reads a chunk: built by the caller for one call, never stored. The
 * plans follow a tagged job's reads only (a read tagged with another job
 * does not move its plan); a prefetch is not a read at all. */
#define READ_PREFETCH 0x1u /* the prefetcher's own fill: no policy or plan hears of it */
#define READ_REFETCH 0x2u  /* a chunk found bad is read again for requests that
			    * waited for it: their read was already heard of */
#define READ_FOR_PEER 0x4u /* another node's read (cluster/): served from here or
			    * the cold store, never asked of a peer again but
			    * the chunk's previous home (one hop, READ_PREV_HOME) */
#define READ_PREV_HOME 0x8u /* a new home asks this node, the chunk's previous
			     * home (cluster/): never asked of any peer */
/* with READ_PREFETCH: a prefetch no plan asked for (open-ahead, dir-ahead,
 * readahead), placed where the miss it stands for would be (the placement),
 * not always on hot */
#define READ_PLACED 0x10u
struct read_ctx {
	const struct tc_job_tag *job; /* NULL or !job->set: untagged */
	unsigned flags;               /* READ_* */
};
/* An untagged client read. */
#define READ_CTX_ANY ((const struct read_ctx *)0)

/* A chunk's bytes from somewhere other than the cold store: the chunk's
 * home node (cluster/). The engine fills the request in, the hook's owner
 * answers it. */
struct remote_read {
	/* in */
	struct dataset *ds;
	const char *path;
	struct cold_stat src;   /* the version wanted */
	uint32_t idx;
	uint32_t len;           /* bytes the chunk has at that version */
	uint64_t key;
	unsigned flags;         /* the read's READ_* (the hook may add READ_PREV_HOME) */
	void *buf;              /* len bytes to fill (NULL: a hand-over, no bytes wanted) */
	/* out, set before done(): 0 and buf holds the chunk, whose XXH3
	 * (chunk_checksum) the sender says is checksum; or -errno */
	int result;
	uint64_t checksum;
	/* called once, on the loop, never from within the hook's call */
	void (*done)(struct remote_read *rr);
	void *arg;
};

/* A dataset's manifest from somewhere other than this node's own listing
 * (cluster/: one node lists, the others load what it published). The
 * engine (dataset.c) fills the request in before it lists; the hook's
 * owner answers with a manifest, or asks the engine to list the source
 * itself (and, with publish, to encode what it listed for the others). */
struct manifest_fetch {
	/* in */
	struct dataset *ds;
	bool refresh;           /* a refresh (tierctl refresh), not the first load */
	/* out, set before done() */
	int result;             /* 0: mf is the manifest; 1: list the source;
				 * < 0: the load fails with it (stopping) */
	struct manifest *mf;    /* result 0: the engine takes it */
	bool publish;           /* result 1: encode the listing into enc */
	void (*done)(struct manifest_fetch *f); /* once, on the loop, never from within the hook's call */
	void *arg;
	/* the engine's, after done(): the listing encoded (manifest_encode)
	 * when publish was asked and the listing succeeded; the hook
	 * manifest_listed may take it (then set enc to NULL) */
	void *enc;
	size_t enc_len;
};

/* How the engine tells the layers above what happened; set once by the
 * root (daemon.c) before the loop runs. Any member may be NULL. Each is
 * called on the loop thread. */
struct cache_hooks {
	void *arg;
	/* Every client read of a chunk (resident or not), before any policy
	 * hears of it: plans follow their jobs, the prefetcher counts hits. */
	void (*read_seen)(void *arg, uint64_t key, const struct read_ctx *rc);
	/* c leaves the cache (evicted, stale, dropped), still intact. */
	void (*chunk_dropped)(void *arg, const struct chunk *c);
	/* A move ended with c resident on its new tier. */
	void (*chunk_moved)(void *arg, struct chunk *c);
	/* A miss: may another node give this chunk? 0: it took rr (rr->done
	 * follows); < 0: read the cold store. Asked for READ_FOR_PEER too
	 * (rr->flags says so): then only the chunk's previous home may be asked.
	 * Bytes it gives are checked against the checksum it gives before
	 * they are written anywhere; a wrong answer, like no answer, sends
	 * the fill to the cold store. */
	int (*remote_read)(void *arg, struct remote_read *rr);
	/* Would a miss of key be asked of another node (its home is a peer)?
	 * Sequential readahead starts at a file's first chunk when so. */
	bool (*remote_home)(void *arg, uint64_t key);
	/* Before a (re)load lists the source: 0: it took f (f->done
	 * follows); < 0: list as without it. */
	int (*manifest_fetch)(void *arg, struct manifest_fetch *f);
	/* The load f started ended (err < 0: it failed), with f->enc the
	 * listing encoded if publish was asked. Only for an f that
	 * manifest_fetch took. */
	void (*manifest_listed)(void *arg, struct manifest_fetch *f, int err);
};

/* The engine's shared state. */
struct cache {
	const struct config *cfg;  /* the running config (the root swaps it on reload) */
	struct event_base *base;
	struct workers *workers;
	struct index *ix;
	struct tier tiers[TIER_COUNT];
	struct dataset **ds;       /* the configured datasets (the root adds and removes them) */
	unsigned nds;
	struct chunk_table chunks;
	struct plan_store *plans;  /* jobs' announced reads, for clairvoyant policies */
	struct fdslot *fdcache;    /* chunk.c */
	struct fill_table fills;   /* fill.c */
	struct verifier *verifier; /* verifications in flight (verify.c) */
	struct scrub *scrub;       /* the background checker (scrub.c) */
	struct mover *mover;       /* mover.c */
	struct reclaim *reclaim;   /* segment reclaims under way (reclaim.c) */
	struct seg_punches *punches; /* dead items' blocks being given back (seg_punch.c) */
	struct durable *dur;       /* chunks waiting for their fdatasync (durable.h) */
	struct tier_health *health; /* watching the tier disks (tier_health.h) */
	struct counters ctr;
	struct cache_hooks hooks;
	unsigned revals_inflight;  /* revalidation stats on the way (dataset.c) */
	struct stat_ahead *sa;     /* stats ahead of the opens (stat_ahead.c; NULL: none yet) */
	uint64_t unkept_filling[TIER_COUNT]; /* reserved by fills that will not be kept */
	uint64_t unkept_ram; /* bytes of unkept chunks in memory (filling or held) */
	uint64_t sync_seq;   /* last chunk.sync_seq handed out */
	uint64_t pinned[TIER_COUNT]; /* bytes of pinned chunks per tier */
	struct segstore segs[TIER_COUNT]; /* small chunks packed per tier (store/segment.h) */
	uint64_t seg_threshold;    /* chunks up to this size go into segments (0: none) */
	bool stopping;
	bool tracing;              /* an access trace records (trace_rec.h) */
	struct trace_rec *trace;   /* the running or last trace; NULL: none yet */
	/* latency (admin/metrics.c exports them): CHUNK requests from dispatch
	 * to reply, by hit / miss; fills from the miss to the chunk being ready */
	struct histogram lat_chunk_hit, lat_chunk_miss, lat_fill;
};

/* Monotonic nanoseconds: the policies' clock. */
uint64_t cache_now_ns(void);
int64_t cache_wall_s(void);

/* The configured dataset named name[0..n), or NULL. */
struct dataset *cache_dataset(struct cache *cache, const char *name, size_t n);

/* Build the engine's tables, the index, the tiers and the policy glue
 * (not the datasets: the root adds them). -errno and a message in err. */
int cache_init(struct cache *cache, const struct config *cfg, struct event_base *base, char *err,
	       size_t errlen);
/* After every dataset is added: load the index records, reconcile them with
 * the tier files. */
int cache_load(struct cache *cache, char *err, size_t errlen);
/* Start the workers, durability and the mover (after cache_load). */
int cache_start(struct cache *cache, char *err, size_t errlen);
/* Stop: quiesce the cold stores, drain the workers, sync what waits. */
void cache_stop(struct cache *cache);
void cache_free(struct cache *cache);

#endif
