/*
 * Datasets at run time: the cold backend connection, the manifest, one
 * policy per tier, and the jobs that (re)load the manifest and revalidate
 * single files against the source. Loop thread, except the work() halves of
 * the jobs.
 *
 * A dataset whose source cannot be reached still serves the chunks it has
 * for files in its last manifest; its `reason` says what is wrong, and the
 * daemon retries loading in the background.
 */
#ifndef TIERCACHE_DATASET_H
#define TIERCACHE_DATASET_H

#include "cache.h"

struct mf_entry;

int dataset_new(struct cache *cache, const struct dataset_conf *dc, struct dataset **out, char *err,
		size_t errlen);
void dataset_free(struct cache *cache, struct dataset *ds);

/* A reload removed ds: stop its timers, delete its persisted manifest and
 * mark it removed so that jobs still in flight persist nothing. Its chunks
 * are the caller's to drop. */
void dataset_forget(struct cache *cache, struct dataset *ds);

/* Startup: the manifest persisted by the last run, so that what is cached
 * can be served before (or without) the source answering. */
void dataset_restore_manifest(struct cache *cache, struct dataset *ds);
/* Write the manifest now if revalidation changed it (shutdown). */
void dataset_flush_manifest(struct cache *cache, struct dataset *ds);

/* The cold store failed (err) or worked (err == 0): tracked so status can
 * say so and opens do not wait on revalidating against a failing store. */
void dataset_note_cold(struct cache *cache, struct dataset *ds, int err);
/* True while the cold store failed within the last few seconds. */
bool dataset_cold_failing(const struct dataset *ds, uint64_t now_ns);

/* Startup, before the loop runs: open and list the source in this thread
 * (blocking backends) or start doing so in the background (async ones). */
void dataset_load(struct cache *cache, struct dataset *ds);

/* Re-list the source, then call cb on the loop with the result (err < 0 on
 * failure; changed = files added, removed or modified). */
typedef void (*dataset_refresh_cb)(struct cache *cache, void *arg, int err, uint64_t files,
				   uint64_t bytes, uint64_t changed);
int dataset_refresh(struct cache *cache, struct dataset *ds, dataset_refresh_cb cb, void *arg);

/* Is e older than revalidate_after? */
bool dataset_entry_stale(const struct dataset *ds, const struct mf_entry *e, uint64_t now_ns);
/* Confirm e against the source now (backends with a cheap stat), updating
 * it and dropping chunks of an old version. Returns 0, or -ENOENT if the
 * file is gone (e is then marked gone). */
int dataset_revalidate_now(struct cache *cache, struct dataset *ds, struct mf_entry *e);
/* The same on a worker (remote backends); cb runs on the loop. */
typedef void (*dataset_reval_cb)(struct cache *cache, void *arg, int err);
int dataset_revalidate_async(struct cache *cache, struct dataset *ds, const char *path,
			     dataset_reval_cb cb, void *arg);

/* Drop the chunks of ds whose file is no longer in the manifest at the same
 * version (after a manifest load). Returns how many. */
unsigned dataset_drop_stale_chunks(struct cache *cache, struct dataset *ds);

#endif
