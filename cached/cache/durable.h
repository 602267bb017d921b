/*
 * Lazy durability for filled chunks.
 *
 * A fill answers its readers as soon as the chunk file is renamed into
 * place (fill.c). Making that file durable (fdatasync) and giving it its
 * index record waits here: a chunk is synced once it has been resident for
 * sync_delay, or sooner when the bytes waiting pass sync_backlog (oldest
 * first). A chunk evicted, moved or dropped before its turn is never
 * synced: the sync, and the journal commit it forces, are saved, and its
 * dirty pages usually never reach the disk. That is most of the chunks a
 * plan's prefetcher brings in when the dataset is larger than the tier.
 *
 * The index only ever names synced files, as before: after a crash, the
 * chunks still waiting have no record, startup removes their files as
 * orphans and they are read from the cold store again. A graceful stop
 * syncs and records everything that waits (durable_flush).
 */
#ifndef TIERCACHE_DURABLE_H
#define TIERCACHE_DURABLE_H

#include <stdint.h>

struct cache;
struct chunk;

int durable_init(struct cache *cache);
/* Loop thread: c was just published with c->sync_seq set; sync it later. */
void durable_add(struct cache *cache, const struct chunk *c);
/* Sync and record every waiting chunk now, on the calling thread (stop). */
void durable_flush(struct cache *cache);
void durable_free(struct cache *cache);

/* Chunks and bytes waiting for their sync (status, metrics). */
uint64_t durable_pending_chunks(const struct cache *cache);
uint64_t durable_pending_bytes(const struct cache *cache);

#endif
