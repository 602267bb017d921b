/*
 * The persistent index: RocksDB in the daemon's state directory, the single
 * source of truth about what the tiers hold after a restart.
 *
 * Records:
 *   chunk   "c" + be64(key)     -> which tier holds a chunk of which source
 *                                  version, its length and checksum
 *                                  (chunk_checksum: XXH3-64)
 *   kv      "k" + ns + 0 + key  -> small values of other modules (policy
 *                                  choices, manifests, pins), by namespace
 *
 * Loop thread only (DESIGN: nothing but the loop touches the index). Writes
 * go to the WAL without fsync: a tier file is fsynced and renamed before its
 * record is written, so a crash loses at most records whose files startup
 * reconciliation then removes as orphans.
 */
#ifndef TIERCACHE_INDEX_H
#define TIERCACHE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct index;

struct index_chunk {
	uint64_t key;
	uint8_t tier;
	uint32_t idx;        /* chunk number within the file */
	uint32_t len;        /* bytes */
	uint64_t checksum;   /* chunk_checksum() of the bytes */
	int64_t atime_s;     /* last read, wall clock seconds */
	struct cold_stat src; /* source version the bytes came from */
	const char *dataset;
	const char *path;
	uint64_t seg;        /* != 0: the item is in segment `seg` of the tier ... */
	uint64_t seg_off;    /* ... at this offset; 0: its own chunk file */
};

int index_open(struct index **out, const char *state_dir, char *err, size_t errlen);
void index_close(struct index *ix);

int index_chunk_put(struct index *ix, const struct index_chunk *c);
int index_chunk_delete(struct index *ix, uint64_t key);
/* A chunk delete that may wait: it is kept in memory and written, with the
 * others waiting, in one write (one WAL append instead of one per drop)
 * at index_deferred_commit, before any other chunk record is written
 * (put, delete, batch: the writes keep their order, a put of the same key
 * after it wins), before a scan, at close, and by itself once
 * INDEX_DEFERRED_MAX wait. Into the open batch if there is one. A crash
 * loses the deletes still waiting: their records come back at start, as
 * if the chunks had been dropped just after the crash; the caller must not
 * let the bytes a record names be overwritten before the commit (punched
 * blocks read as zeros: seg_punch.c commits first). */
#define INDEX_DEFERRED_MAX 1024
int index_chunk_delete_later(struct index *ix, uint64_t key);
int index_deferred_commit(struct index *ix);
size_t index_deferred_count(const struct index *ix);
/* Chunk puts and deletes from begin to commit go to the database in one
 * write (one WAL append instead of one per record), in their order; kv
 * records are written at once as always. Until the commit a scan does not
 * see them. -EBUSY if a batch is already open (its opener commits it),
 * -ENOMEM. commit returns 0 or -EIO (logged; the records are lost as
 * after a crash: their items are orphans that startup removes). */
int index_batch_begin(struct index *ix);
int index_batch_commit(struct index *ix);
/* Calls fn for every chunk record (strings valid during the call only). A
 * record that does not decode is deleted and counted in *bad; so is a
 * record of an older format (format 1 kept XXH64 checksums, which nothing
 * can verify any more): its chunk file is then an orphan that startup
 * removes, and the chunk is read from the cold store again. fn returning
 * non-zero stops the scan. */
int index_chunk_scan(struct index *ix, int (*fn)(void *arg, const struct index_chunk *c),
		     void *arg, unsigned *bad);

int index_kv_put(struct index *ix, const char *ns, const char *key, const void *v, size_t n);
/* -ENOENT if absent; *v malloc'd. */
int index_kv_get(struct index *ix, const char *ns, const char *key, void **v, size_t *n);
int index_kv_delete(struct index *ix, const char *ns, const char *key);
int index_kv_scan(struct index *ix, const char *ns,
		  int (*fn)(void *arg, const char *key, const void *v, size_t n), void *arg);

#endif
