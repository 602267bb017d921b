/*
 * Read-ahead of the next files of a directory, for small files.
 *
 * A miss of a small file (one chunk) from a slow cold store costs its
 * reader a whole cold round trip (RADOS: the OSD's read plus the daemon's
 * hand-offs, docs/ceph.md "Read-ahead of small files"); one reader with one
 * open at a time is latency-bound, however fast the store is with many
 * reads in flight. Training sets of small files are directories of
 * samples (ImageNet-style class folders), and a reader that misses one
 * file of a directory reads its neighbours too: in listing order (a
 * sequential walk, a WebDataset-style scan, a copy) or, when a shuffled
 * epoch runs over a dataset that fits, later in the same epoch.
 *
 * So a miss of file k starts reads of the next daemon.readahead_files
 * files of the same directory in the manifest's (sorted) order, k+1..k+N,
 * skipping those resident or already being read. They are prefetch fills
 * (prefetch_int.h): single flight with any client's read of the same
 * chunk, bounded in flight with every other small-file read-ahead by
 * bytes (daemon.prefetch_inflight x chunk_size) and a hard count
 * (daemon.prefetch_small_inflight), landing on hot only in room its policies have free (they evict
 * nothing; with hot at its budget nothing is read ahead), and not counted
 * as reads by the policies. A file read ahead and never opened is an ordinary
 * unreferenced chunk: the first thing given up when room is needed, and
 * counted in the status (prefetch.evicted_unused). The version read is the
 * manifest's; the backend checks it (RADOS: the compound op), so a file
 * that changed at the source fails its read-ahead (ESTALE, no fault) and
 * its next open reads the new version.
 *
 * How deep it reads follows how much of it is used. Reading neighbours
 * ahead pays off when they are read before they are evicted: a walk in
 * listing order, or a shuffled epoch over data the cache holds. When the
 * cache is smaller than what is read in a shuffled order, most of them
 * are evicted unread and each is read from the cold store twice, which
 * costs the store (measured: twice the cold reads and a slower epoch).
 * It reads ahead when the miss is a step of a walk in listing order (a
 * recent miss, of any reader, at most DIR_AHEAD_WALK_GAP files before it
 * in the same manifest, or before the end of what it read ahead: not the
 * depth, which would make a deeper read-ahead guess more often), or when
 * the whole dataset fits in the tiers' budgets;
 * a shuffled read of a dataset larger than the cache reads nothing ahead
 * (measured: its read-ahead was partly evicted unread, +6-14 % cold reads
 * and no faster). There, a walk's read-ahead also ramps up, 2, 4, 8 ...
 * files with its steps (DIR_AHEAD_RAMP): a shuffled miss that happens to
 * fall just past a recent one looks like a walk's first step, and a full
 * depth read ahead of it would mostly be evicted unread. And every DIR_AHEAD_JUDGE prefetched chunks read or
 * evicted unread, the depth doubles (up to readahead_files) if at most a
 * quarter were wasted, and halves otherwise, down to none; with none, one
 * miss in
 * DIR_AHEAD_PROBE reads one neighbour ahead again, to see whether the
 * reads have changed. The counts are the prefetcher's (a plan's
 * prefetches count too: a job with a plan rarely misses, so this rarely
 * runs beside one).
 *
 * Only for cold stores with a costly round trip (no cheap stat: RADOS, S3,
 * as the open-ahead of prefetch.c); a local posix store answers a miss
 * about as fast as a read-ahead would.
 *
 * Only a miss starts it (a client's read that finds the chunk absent, or
 * an open whose revalidation starts the chunk's read, prefetch_open_ahead):
 * a reader that is served from what was read ahead costs nothing here. When the reader catches up with the reads in
 * flight (its open finds its file still being read), that read is a miss
 * again and the window moves on, so a reader faster than the store keeps
 * N reads in flight. Loop thread only.
 */
#include <string.h>

#include "chunk.h"
#include "fill.h"
#include "manifest.h"
#include "policy_glue.h"
#include "prefetch_int.h"

/* Entries looked at past the file, at most (subdirectories' files sort
 * between a directory's own files and are skipped): bounds the work of
 * one miss in a directory of deep trees. */
#define DIR_AHEAD_SCAN_MAX 256u
/* Prefetched chunks read or evicted between two judgements of the depth. */
#define DIR_AHEAD_JUDGE 32u
/* With depth 0, one miss in this many reads one file ahead (a probe). */
#define DIR_AHEAD_PROBE 64u
/* A miss at most this many files past a recent miss, or past the end of
 * its read-ahead, is a step of a walk (dir_ahead_walking). */
#define DIR_AHEAD_WALK_GAP 2u
/* With the dataset larger than the tiers, a walk's first step reads this
 * many ahead, doubling with each step (up to the depth). */
#define DIR_AHEAD_RAMP 1u

/* Is the miss of entry `at` of mf a step of a walk in listing order: a
 * recent miss was at most DIR_AHEAD_WALK_GAP files before it, or before
 * the end of what that miss read ahead (a file it read ahead and the
 * reader reached while it was still being read, or evicted: a file read
 * ahead and resident is a hit, not a miss)? Not the depth: a deeper
 * read-ahead must not make a shuffled miss look like a walk (each of those
 * reads a depth ahead that a shuffled read of more than the cache holds
 * loses). Remembers the miss; *w: its record, for the end of its read-ahead. */
static bool dir_ahead_walking(struct dir_ahead *da, const struct manifest *mf, size_t at,
			      struct dir_ahead_walk **out)
{
	const unsigned n = sizeof(da->walk) / sizeof(da->walk[0]);
	for (unsigned i = 0; i < n; i++) {
		struct dir_ahead_walk *w = &da->walk[i];
		size_t last = w->end > w->at ? w->end : w->at;
		if (w->mf == mf && at > w->at && at <= last + DIR_AHEAD_WALK_GAP) {
			w->at = at;
			if (w->end < at)
				w->end = at;
			if (w->steps < 16)
				w->steps++;
			*out = w;
			return true;
		}
	}
	struct dir_ahead_walk *w = &da->walk[da->walk_next];
	*w = (struct dir_ahead_walk){.mf = mf, .at = at, .end = at};
	da->walk_next = (da->walk_next + 1) % n;
	*out = w;
	return false;
}

/* Does the dataset fit in the tiers' budgets (a shuffled epoch over it
 * then reads what was read ahead before it is given up)? */
static bool dir_ahead_fits(struct cache *cache, const struct manifest *mf)
{
	uint64_t room = 0;
	for (int t = 0; t < TIER_COUNT; t++)
		if (cache->tiers[t].present)
			room += policy_glue_hold(cache, (enum tier_id)t);
	return mf->bytes <= room;
}

/* How many files to read ahead of this miss. */
static unsigned dir_ahead_depth(struct prefetch *pf, unsigned max)
{
	uint64_t hits, unused;
	struct dir_ahead *da = prefetch_dir_ahead(pf, &hits, &unused);
	if (!da->started || da->depth > max) {
		da->started = true;
		da->depth = max; /* optimistic at first, and after a reload */
		da->hits0 = hits;
		da->unused0 = unused;
	}
	uint64_t used = hits - da->hits0, wasted = unused - da->unused0;
	if (used + wasted >= DIR_AHEAD_JUDGE) {
		if (wasted * 4 <= used + wasted)
			da->depth = da->depth ? (da->depth * 2 < max ? da->depth * 2 : max) : 1;
		else
			da->depth /= 2;
		da->hits0 = hits;
		da->unused0 = unused;
	}
	if (da->depth)
		return da->depth;
	if (++da->idle_misses < DIR_AHEAD_PROBE)
		return 0;
	da->idle_misses = 0;
	return 1;
}

void dir_ahead_read(struct prefetch *pf, struct dataset *ds, const char *path,
		    const struct cold_stat *src)
{
	struct cache *cache = prefetch_cache(pf);
	const struct manifest *mf = ds->mf;
	if (!cache->cfg->readahead_files || !mf || cold_has_cheap_stat(&ds->cold) ||
	    !prefetch_may_issue(pf, ds, 0))
		return;
	if (chunk_find(&cache->chunks, chunk_key(ds->name, path, src, 0)))
		return; /* a hit: the reader is behind what was read ahead */
	const struct mf_entry *e = manifest_find(mf, path);
	if (!e)
		return;
	uint64_t h, u;
	struct dir_ahead_walk *w;
	bool walking = dir_ahead_walking(prefetch_dir_ahead(pf, &h, &u), mf, (size_t)(e - mf->v), &w);
	if (!walking && !dir_ahead_fits(cache, mf))
		return; /* a shuffled read of more than the cache holds: a guess that loses */
	unsigned want = dir_ahead_depth(pf, cache->cfg->readahead_files);
	if (!walking || !want) {
		/* the dataset fits: what is read ahead stays until it is read */
	} else if (!dir_ahead_fits(cache, mf) && want > (DIR_AHEAD_RAMP << w->steps)) {
		/* more than the tiers hold: a walk's read-ahead ramps up with its
		 * steps, so a shuffled miss taken for a walk reads little ahead
		 * that is then evicted unread (a cold read twice) */
		want = DIR_AHEAD_RAMP << w->steps;
	}
	if (!want)
		return;
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
	size_t end = (size_t)(e - mf->v) + 1 + DIR_AHEAD_SCAN_MAX;
	if (end > mf->n)
		end = mf->n;
	for (size_t i = (size_t)(e - mf->v) + 1; i < end && want; i++) {
		const struct mf_entry *s = &mf->v[i];
		if (strncmp(s->path, path, dirlen) != 0)
			break; /* past the directory (the manifest is sorted) */
		if (strchr(s->path + dirlen, '/'))
			continue; /* a subdirectory's file */
		if (s->gone || !s->st.size || s->st.size > ds->conf.chunk_size)
			continue; /* not a small file: its reads fetch what they cover */
		want--;
		uint64_t key = chunk_key(ds->name, s->path, &s->st, 0);
		if (chunk_find(&cache->chunks, key) || fill_pending(cache, key)) {
			if (i > w->end)
				w->end = i;
			continue;
		}
		if (!prefetch_may_issue(pf, ds, (uint32_t)s->st.size) ||
		    prefetch_issue_ahead(pf, ds, s->path, &s->st, (uint32_t)s->st.size) < 0)
			break;
		if (i > w->end)
			w->end = i;
	}
}
