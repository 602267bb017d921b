/*
 * The prefetcher: reads chunks from the cold store before a job asks, so
 * that its reads hit even when the dataset is far larger than the hot tier.
 *
 * With a plan (plans.h): keeps a lookahead window of the plan's next reads
 * resident on the hot tier. The window is sized from the measured latency
 * of a prefetch cold read and the job's measured read rate (about four
 * times the bytes the job reads while one cold read completes, plus a full
 * pipeline of reads in flight), never more than daemon.prefetch_max_bytes
 * nor half of the hot tier's budget. Cold reads in flight are bounded by
 * daemon.prefetch_inflight over every plan.
 *
 * It never evicts a chunk needed sooner than the one it fetches: when the
 * hot tier's policies are at their budget, it asks the plan store when the
 * tier's next victim is needed (policy/plan.h next_use) and stops the
 * window there if that is sooner. A chunk no plan needs is always a fair
 * victim; a planned one never gives way to an unplanned readahead.
 *
 * Without a plan: a file read front to back (chunks 0 and 1, then on in
 * order) gets its next daemon.readahead_chunks chunks read ahead; in a
 * cluster, from chunk 0 on when chunk 1's home is another node (the
 * cache's remote_home hook), so a single reader keeps several chunks in
 * flight to their homes instead of one round trip at a time. A read
 * that starts elsewhere fetches only the chunks it covers. An open of a
 * one-chunk file that waits for a revalidation round trip starts its chunk
 * meanwhile (prefetch_open_ahead; off with readahead_chunks = 0 too).
 *
 * Prefetch fills go through fill_get() like any miss (single flight: a
 * client that asks for a chunk being prefetched waits for the same read),
 * flagged so that they are not counted as reads and land on hot.
 *
 * Loop thread only.
 */
#ifndef TIERCACHE_PREFETCH_H
#define TIERCACHE_PREFETCH_H

#include "cache.h"
#include "proto.h"

struct dplan;
struct plans;
struct prefetch;

/* Made by plans_init() for its registry. */
int prefetch_init(struct prefetch **out, struct cache *cache, struct plans *reg);
void prefetch_free(struct prefetch *pf);

/* Fill pl's window (as far as the bounds allow). */
void prefetch_pump(struct prefetch *pf, struct dplan *pl);
void prefetch_pump_all(struct prefetch *pf);
/* The window pl gets now, in bytes. */
uint64_t prefetch_window(const struct prefetch *pf, const struct dplan *pl);

/* Every read of a chunk: counts prefetch hits. */
void prefetch_note_read(struct prefetch *pf, uint64_t key);
/* A client read chunk idx of a file of nchunks chunks (after fill_get):
 * sequential readahead. */
void prefetch_readahead(struct prefetch *pf, struct dataset *ds, const char *path,
			const struct cold_stat *src, uint32_t idx, uint32_t nchunks);
/* An open of path waits for its revalidation against a slow cold store:
 * if the file is one chunk (any read of it needs that chunk), start that
 * chunk of the version known meanwhile (if not resident), so the stat and
 * the read overlap instead of costing two round trips in turn. The cold
 * read asserts that version: if the file changed, the fill fails (ESTALE)
 * or lands as a chunk of the old version nobody asks for. */
bool prefetch_open_ahead(struct prefetch *pf, struct dataset *ds, const char *path,
			 const struct cold_stat *src);
/* A prefetched chunk nobody read is leaving the cache. */
void prefetch_chunk_dropped(struct prefetch *pf, const struct chunk *c);

/* What the prefetcher did since start (metrics). */
struct prefetch_counts {
	uint64_t issued, bytes;       /* prefetch fills started; bytes they brought */
	uint64_t readahead_bytes;     /* of bytes: by readahead without a plan */
	uint64_t hits, hit_bytes;     /* prefetched chunks then read */
	uint64_t unused, unused_bytes; /* prefetched chunks evicted before any read */
	uint64_t late;                /* reads that found their prefetch still in flight */
	uint64_t stalls;              /* loads put off: they would displace a chunk needed sooner */
	uint64_t room_waits;          /* chunks held back for want of free bytes on hot */
	uint64_t errors;
	unsigned inflight;
};
void prefetch_counts(const struct prefetch *pf, struct prefetch_counts *out);

/* Status: section "prefetch". */
void prefetch_report(struct prefetch *pf, struct proto_rs *rs);

#endif
