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

/* The outcome of a call to the cold store: 0 (it answered) or -errno.
 * Only an error that means the store itself is down (cold_err_is_store(),
 * or any error while cold_probe() says the store is gone) marks it failing,
 * for status and so that revalidation does not wait on it; an error about
 * one file (ELOOP, EACCES, EXDEV, a FIFO...) stays that file's and counts as
 * an answer. Returns true if err marked the store. Tier errors are not
 * cold errors: never pass them here. */
bool dataset_note_cold(struct cache *cache, struct dataset *ds, int err);
/* True while the cold store failed within the last few seconds. */
bool dataset_cold_failing(const struct dataset *ds, uint64_t now_ns);
/* True while the dataset serves files it could not check
 * (serve_stale_on_error = yes and the store down). */
bool dataset_serving_stale(const struct dataset *ds, uint64_t now_ns);

/* Startup, before the loop runs: open and list the source in this thread
 * (blocking backends) or start doing so in the background (async ones). */
void dataset_load(struct cache *cache, struct dataset *ds);

/* Files (or objects) the listing in progress has found so far. */
uint64_t dataset_load_progress(const struct dataset *ds);

/* Re-list the source, then call cb on the loop with the result (err < 0 on
 * failure; changed = files added, removed or modified). */
typedef void (*dataset_refresh_cb)(struct cache *cache, void *arg, int err, uint64_t files,
				   uint64_t bytes, uint64_t changed);
int dataset_refresh(struct cache *cache, struct dataset *ds, dataset_refresh_cb cb, void *arg);

/* Is e older than revalidate_after (to be confirmed before it is served)? */
bool dataset_entry_stale(const struct dataset *ds, const struct mf_entry *e, uint64_t now_ns);
/* Is e stale, or will it be within a quarter of revalidate_after? What is
 * confirmed ahead of a request (stat-ahead, records handed ahead) is
 * confirmed a little early, so that it is still fresh when used. */
bool dataset_entry_due_soon(const struct dataset *ds, const struct mf_entry *e, uint64_t now_ns);
/* Confirm e against the source now (backends with a cheap stat), updating
 * it and dropping chunks of an old version. Returns
 *   0        serve e (confirmed; or the store is down and the dataset has
 *            serve_stale_on_error = yes: counted in stale_served)
 *   -ENOENT  the file is gone (e is then marked gone)
 *   -EIO     the store is down and e cannot be checked: not served
 *   -errno   an error of this file at the source (ELOOP, EACCES, EINVAL
 *            for a special file, ...): not served
 * dataset_reval_msg() words any of these for the client. */
int dataset_revalidate_now(struct cache *cache, struct dataset *ds, struct mf_entry *e);
/* The same on a worker (remote backends); cb runs on the loop with the
 * same results. While the store is marked failing nothing is asked and cb
 * runs before this returns. */
typedef void (*dataset_reval_cb)(struct cache *cache, void *arg, int err);
int dataset_revalidate_async(struct cache *cache, struct dataset *ds, const char *path,
			     dataset_reval_cb cb, void *arg);
/* The same, where a read of the file's one chunk that the loop sent at or
 * after read_since_ns (the request's arrival; 0: none) and that is still
 * on its way may answer instead of a stat of its own: the read asserts the
 * version, so its success says what the stat would. */
int dataset_revalidate_async_since(struct cache *cache, struct dataset *ds, const char *path,
				   uint64_t read_since_ns, dataset_reval_cb cb, void *arg);
/* A stat of e asked at asked_ns ahead of any request (stat_ahead.c)
 * answered (rc, st on the loop): applied as a revalidation's (a change
 * drops the old version's chunks; ENOENT marks e gone; 0 confirms e as of
 * asked_ns). Returns 0, -ENOENT, this file's own error, or -EAGAIN if the
 * error was the store's (marked failing; e is not confirmed). */
int dataset_apply_stat_ahead(struct cache *cache, struct dataset *ds, struct mf_entry *e, int rc,
			     const struct cold_stat *st, uint64_t asked_ns);
/* What a client is told when revalidating path gave err (< 0): what
 * happened and what to do. */
void dataset_reval_msg(const struct dataset *ds, const char *path, int err, char *buf, size_t n);

/* Drop the chunks of ds whose file is no longer in the manifest at the same
 * version (after a manifest load). Returns how many. */
unsigned dataset_drop_stale_chunks(struct cache *cache, struct dataset *ds);

#endif
