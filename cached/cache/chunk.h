/*
 * Chunks in memory: the table (key -> chunk), the key function, and the
 * life cycle of a resident chunk (publish, drop, file references). Loop
 * thread only.
 */
#ifndef TIERCACHE_CHUNK_H
#define TIERCACHE_CHUNK_H

#include "cache.h"

uint64_t chunk_key(const char *dataset, const char *path, const struct cold_stat *src, uint32_t idx);
/* The checksum kept with a chunk in the index: XXH3-64 (seed 0) of its
 * bytes; fills compute the same value with the streaming XXH3 API. Pure:
 * any thread. */
uint64_t chunk_checksum(const void *buf, size_t len);

int chunk_table_init(struct chunk_table *t);
void chunk_table_free(struct chunk_table *t);
struct chunk *chunk_find(const struct chunk_table *t, uint64_t key);
int chunk_table_add(struct chunk_table *t, struct chunk *c);
void chunk_table_del(struct chunk_table *t, struct chunk *c);
size_t chunk_table_count(const struct chunk_table *t);

/* Every chunk of the table once, in no order:
 *   struct chunk_iter it;
 *   for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it))
 * The chunk just returned may
 * be removed (chunk_drop, chunk_table_del) before the next call; nothing
 * may be added during the walk. */
struct chunk_iter {
	struct u64h_iter it;
};
struct chunk *chunk_iter_first(struct chunk_iter *it, const struct chunk_table *t);
struct chunk *chunk_iter_next(struct chunk_iter *it);

/* A walk that spans many loop turns (the scrubber): the chunk after
 * *cursor, which the call advances. Chunks added or removed between calls
 * may be skipped or seen twice in that pass, never anything worse. *wrapped
 * is set when the walk went past the end of the table (a pass ended). NULL
 * if the table is empty. */
struct chunk_cursor {
	size_t bucket, pos;
};
struct chunk *chunk_cursor_next(const struct chunk_table *t, struct chunk_cursor *cur, bool *wrapped);

/* A new chunk resident on `tier` with a file of len bytes already counted
 * in the tier's `used`; added to the table, the policy and (if persist) the
 * index. NULL on allocation failure. */
struct chunk *chunk_publish(struct cache *cache, struct dataset *ds, const char *path,
			    const struct cold_stat *src, uint32_t idx, uint32_t len, uint64_t checksum,
			    uint8_t tier, int64_t atime_s, bool persist);

/* A chunk that placement did not admit anywhere (TIER_NONE), for the
 * waiters of its fill only: state CHUNK_UNKEPT, in no table, policy or
 * index. fd is its file on `tier`, already unlinked, whose len bytes the
 * tier already counts in `used`; the chunk takes the fd and counts the
 * bytes as held. Every descriptor handed out of it holds its cfile, and
 * the bytes are released with the last one. tier may be CFILE_IN_RAM: fd
 * is then a sealed memfd whose len bytes unkept_ram already counts. NULL
 * on allocation failure (fd then still the caller's). */
struct chunk *chunk_unkept_new(struct cache *cache, struct dataset *ds, const char *path,
			       const struct cold_stat *src, uint32_t idx, uint32_t len, uint8_t tier,
			       int fd);
/* The fill is done with it: drop its own reference. */
void chunk_unkept_free(struct cache *cache, struct chunk *c);

/* Remove a chunk from the cache: policy, index, table, its file unlinked.
 * Bytes stay counted while clients hold the file. `why` names the cause in
 * the log ("evict", "stale", "checksum", ...). */
void chunk_drop(struct cache *cache, struct chunk *c, const char *why);

/* Put a resident chunk into / out of its tier's policy. */
void chunk_policy_insert(struct cache *cache, struct chunk *c, uint64_t now);
/* c back in its tier's policy after it left it without leaving the tier
 * (a move that failed or kept it in place): placement's marks stay. */
/* c arrived in its tier (c->tier) by a move from tier `from`: as
 * chunk_policy_insert, but a demotion goes in as the placement says
 * (placement_demoted_insert: under demote=flat at the age of its last read) */
void chunk_policy_moved_in(struct cache *cache, struct chunk *c, uint8_t from, uint64_t now);
void chunk_policy_reinsert(struct cache *cache, struct chunk *c, uint64_t now);
void chunk_policy_remove(struct cache *cache, struct chunk *c);

/* Write a resident chunk's index record (its file is durable). */
void chunk_persist(struct cache *cache, const struct chunk *c);
/* ... as if it lived on tier, in segment seg (0: a chunk file) at seg_off
 * (a copy to another place, before the chunk itself moves there). */
void chunk_persist_at(struct cache *cache, const struct chunk *c, uint8_t tier, uint64_t seg,
		      uint64_t seg_off);

/* A chunk just published lives in segment g at off (takes a reference). */
void chunk_set_segment(struct chunk *c, struct segment *g, uint64_t off);
/* Where the chunk's bytes start in the descriptor chunk_open_fd gives (the
 * chunk record's base): its offset in its segment, else 0. */
static inline uint64_t chunk_base(const struct chunk *c)
{
	return c->file->seg ? c->file->off : 0;
}
/* The live items of a segment, oldest link first, without a walk of the
 * chunk table:
 *   for (struct seg_link *l = g->items_live.next, *nx; l != &g->items_live; l = nx) {
 *           nx = l->next;
 *           struct chunk *c = chunk_of_seg_link(l);
 * c may be dropped before the next step; dropping the segment's last item
 * may free g (stop then: g->items was 1). */
static inline struct cfile *cfile_of_seg_link(struct seg_link *l)
{
	return (struct cfile *)((char *)l - offsetof(struct cfile, seg_link));
}

static inline struct chunk *chunk_of_seg_link(struct seg_link *l)
{
	return cfile_of_seg_link(l)->chunk;
}
/* The path of the file holding the chunk (its chunk file or segment). */
void chunk_loc_path(const struct cache *cache, const struct chunk *c, char *buf, size_t n);
/* An item of segment g on `tier` died; if that emptied a sealed segment,
 * its bytes leave the tier (or become held, see below). */
void chunk_segment_item_dead(struct cache *cache, uint8_t tier, struct segment *g, uint32_t len);
/* A segment of size bytes with refs references left was unlinked. */
void chunk_segment_gone(struct cache *cache, uint8_t tier, uint64_t size, uint32_t refs);

/* Replace a chunk's file by a new copy on another tier (after a move):
 * its own file, or (seg != NULL) the item at off in segment seg. */
void chunk_move_commit(struct cache *cache, struct chunk *c, uint8_t new_tier, struct segment *seg,
		       uint64_t off);

/* A new read-only descriptor of the chunk's current file (for handing to a
 * client; the caller closes it). */
int chunk_open_fd(struct cache *cache, const struct chunk *c);
/* Slots of the descriptor cache (each may hold one open descriptor). */
#define FDCACHE_SLOTS 1024u
int chunk_fdcache_init(struct cache *cache);
/* Count the chunk's bytes as handed out from its tier (status read_bytes). */
void chunk_count_read(struct cache *cache, const struct chunk *c);
void chunk_fdcache_free(struct cache *cache);

void cfile_ref(struct cfile *f);
void cfile_unref(struct cache *cache, struct cfile *f);

/* Drop every cached chunk of one version of a file (it changed or went
 * away at the source). */
void chunk_drop_version(struct cache *cache, struct dataset *ds, const char *path,
			const struct cold_stat *src, const char *why);

static inline struct chunk *chunk_of_entry(struct pol_entry *e)
{
	return (struct chunk *)e; /* pe is the first member */
}

#endif
