/*
 * The miss path: one cold read per chunk however many clients wait for it
 * (single flight). The cold read, the checksum and the tier file write run
 * off the loop (worker pool, or the backend's own async I/O followed by a
 * worker for the write); publishing the chunk and answering the waiters
 * happen back on the loop.
 */
#ifndef TIERCACHE_FILL_H
#define TIERCACHE_FILL_H

#include "cache.h"

struct waiter {
	struct waiter *next;
	/* Loop thread. c is the resident chunk, or a chunk served without
	 * being kept (state CHUNK_UNKEPT: valid during the call only; take a
	 * reference on c->file to keep its bytes), or NULL with err < 0. */
	void (*cb)(struct cache *cache, struct waiter *w, struct chunk *c, int err);
};

int fill_table_init(struct fill_table *t);
void fill_table_free(struct fill_table *t);

/* Make chunk idx of (ds, path at version src) resident, or serve it
 * unkept if the dataset's placement admits it nowhere. rc says who reads
 * (NULL: an untagged client); a READ_PREFETCH fill is no read: no policy
 * or plan hears of it, and it lands on hot (with READ_PLACED: where the
 * placement puts a miss).
 * Returns 1 with *out set if it already is (nothing queued), 0 if w was
 * queued (w->cb follows, possibly after other waiters), or -errno. */
int fill_get(struct cache *cache, struct dataset *ds, const char *path, const struct cold_stat *src,
	     uint32_t idx, const struct read_ctx *rc, struct waiter *w, struct chunk **out);

/* The tier a fill of len bytes of ds for rc would go to first (where
 * fill_place starts: hot for a plan's prefetch, else where the placement
 * puts a miss, READ_PLACED prefetches included), or TIER_NONE; asks no
 * policy to admit it and counts nothing. The prefetcher checks that
 * tier's room before it starts a fill. Loop thread. */
int fill_first_tier(struct cache *cache, struct dataset *ds, uint32_t len, const struct read_ctx *rc);
/* Fills in flight (status). */
size_t fill_inflight(const struct cache *cache);
/* Is a fill of key in flight (a read-ahead need not join it)? Loop thread. */
bool fill_pending(const struct cache *cache, uint64_t key);
/* Is a fill of key reading from the cold store a read it sent at or after
 * since_ns (so the store answers it as of then or later)? Loop thread. */
bool fill_cold_since(const struct cache *cache, uint64_t key, uint64_t since_ns);

#endif
