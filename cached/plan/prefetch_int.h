/*
 * What the prefetcher lends to its sibling read-aheads in plan/
 * (dir_ahead.c): the bounds and the issue path of prefetch.c, so that a
 * read-ahead of any kind counts against the same bounds (small files: bytes
 * in flight, daemon.prefetch_inflight x chunk_size, and a hard count),
 * lands on hot only where pf_room says it displaces nothing kept, and is
 * counted (issued, hits, evicted_unused) like every prefetch. Loop thread.
 */
#ifndef TIERCACHE_PREFETCH_INT_H
#define TIERCACHE_PREFETCH_INT_H

#include "prefetch.h"

/* dir_ahead.c's state: how deep it reads ahead now (at most
 * daemon.readahead_files), from how many prefetched chunks were read
 * against how many were evicted unread since it last looked. */
struct dir_ahead {
	bool started;
	unsigned depth;
	unsigned idle_misses;        /* misses while depth is 0 (a probe after a while) */
	uint64_t hits0, unused0;     /* the prefetcher's counts when it last looked */
	struct dir_ahead_walk {      /* recent misses, to tell a walk in listing order */
		const void *mf;      /* the manifest (compared, never followed) */
		size_t at;           /* the missed file's index in it */
		size_t end;          /* the last entry its read-ahead covered (at: none) */
		unsigned steps;      /* steps of the walk seen (its read-ahead ramps up) */
	} walk[8];
	unsigned walk_next;
};

struct cache *prefetch_cache(const struct prefetch *pf);
/* Its state, and the prefetcher's hits and evicted-unread counts now. */
struct dir_ahead *prefetch_dir_ahead(struct prefetch *pf, uint64_t *hits, uint64_t *unused);
/* Room for one more small-file read of len bytes of ds in flight: read-ahead
 * of small files is bounded by bytes (prefetch_inflight x chunk_size) and
 * a hard count (daemon.prefetch_small_inflight); not stopping. */
bool prefetch_may_issue(const struct prefetch *pf, const struct dataset *ds, uint32_t len);
/* Read chunk 0 (len bytes, the whole file) of path at version src ahead
 * of a reader, counted as dir_ahead: only into room hot's policies have
 * free (it evicts nothing: a guess must not cost what the policy keeps).
 * 1: started, 0: nothing to do (a plan holds it, or it is resident),
 * -errno: stop (no free room on hot, or the read could not start). */
int prefetch_issue_ahead(struct prefetch *pf, struct dataset *ds, const char *path,
			 const struct cold_stat *src, uint32_t len);

/* dir_ahead.c: a client read the one chunk of path: if that was a miss,
 * read the next daemon.readahead_files files of its directory ahead. */
void dir_ahead_read(struct prefetch *pf, struct dataset *ds, const char *path,
		    const struct cold_stat *src);

#endif
