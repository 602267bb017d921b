/*
 * Dataset run time: see dataset.h.
 */
#include "dataset.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "chunk.h"
#include "fill.h"
#include "index.h"
#include "proto.h"
#include "log.h"
#include "loop.h"
#include "manifest.h"
#include "policy_glue.h"
#include "workers.h"

#define RETRY_SECONDS 5

struct load_job {
	struct job job;
	struct cache *cache;
	struct dataset *ds;
	struct manifest *mf;
	int err;
	char reason[256];
	dataset_refresh_cb cb; /* NULL for background (re)loads */
	void *arg;
	bool opened; /* work() opened the backend: done() marks the dataset so */
	/* the manifest_fetch hook took this load (cluster/): fetch says
	 * whether the manifest came with it or the source is to be listed */
	bool fetched;
	struct manifest_fetch fetch;
};

static void retry_cb(evutil_socket_t fd, short what, void *arg);
static void persist_cb(evutil_socket_t fd, short what, void *arg);

int dataset_new(struct cache *cache, const struct dataset_conf *dc, struct dataset **out, char *err,
		size_t errlen)
{
	struct dataset *ds = calloc(1, sizeof(*ds));
	if (!ds)
		return -ENOMEM;
	ds->cache = cache;
	ds->conf = *dc;
	ds->name = ds->conf.name;
	ds->retry_ev = evtimer_new(cache->base, retry_cb, ds);
	ds->persist_ev = evtimer_new(cache->base, persist_cb, ds);
	if (!ds->retry_ev || !ds->persist_ev) {
		if (ds->retry_ev)
			event_free(ds->retry_ev);
		if (ds->persist_ev)
			event_free(ds->persist_ev);
		free(ds);
		return -ENOMEM;
	}
	ds->cold.ops = cold_backend_find(dc->backend);
	snprintf(ds->cold.dataset, sizeof(ds->cold.dataset), "%s", dc->name);
	snprintf(ds->reason, sizeof(ds->reason), "loading");
	ds->first_load = true;
	ds->load_start_ns = cache_now_ns();
	if (!ds->cold.ops) {
		snprintf(err, errlen, "dataset %s: backend \"%s\" is not built into this tiercached",
			 dc->name, dc->backend);
		event_free(ds->retry_ev);
		event_free(ds->persist_ev);
		free(ds);
		return -ENOTSUP;
	}
	int rc = policy_glue_setup(cache, ds, err, errlen);
	if (rc < 0) {
		dataset_free(cache, ds);
		return rc;
	}
	*out = ds;
	return 0;
}

void dataset_free(struct cache *cache, struct dataset *ds)
{
	(void)cache;
	if (!ds)
		return;
	if (ds->retry_ev)
		event_free(ds->retry_ev);
	if (ds->persist_ev)
		event_free(ds->persist_ev);
	if (ds->opened)
		cold_close(&ds->cold);
	policy_glue_teardown(ds);
	manifest_free(ds->mf);
	free(ds);
}

/* Worker (or startup): open the backend if needed and list the source. */
static void load_work(struct job *j)
{
	struct load_job *l = (struct load_job *)j;
	struct dataset *ds = l->ds;
	if (!ds->opened) {
		l->err = cold_open(&ds->cold, &ds->conf, l->reason, sizeof(l->reason));
		if (l->err < 0)
			return;
		/* ds->opened is the loop's: the loop reads it meanwhile (fill_get,
		 * revalidation), so only done() sets it */
		l->opened = true;
	}
	if (l->mf)
		return; /* the manifest came from elsewhere (manifest_fetch) */
	l->err = manifest_build(&l->mf, &ds->cold, cache_now_ns(), &ds->load_listed);
	if (l->err < 0) {
		char why[200] = "";
		if (l->err == -ENODEV)
			cold_probe(&ds->cold, why, sizeof(why)); /* cheap: a stat, on this worker */
		snprintf(l->reason, sizeof(l->reason), "cannot list the source: %s",
			 why[0] ? why : strerror(-l->err));
	} else if (l->fetched && l->fetch.publish) {
		/* for the others (manifest_listed): the listing as persisted */
		struct proto_wr w;
		proto_wr_init(&w);
		manifest_encode(l->mf, &w);
		if (!w.oom) {
			l->fetch.enc = w.buf;
			l->fetch.enc_len = w.len;
		} else {
			proto_wr_free(&w);
		}
	}
}

unsigned dataset_drop_stale_chunks(struct cache *cache, struct dataset *ds)
{
	unsigned dropped = 0;
	if (!ds->mf)
		return 0;
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it)) {
		if (c->ds == ds) {
			struct mf_entry *e = manifest_find(ds->mf, c->path);
			if (!e || !cold_stat_same(&e->st, &c->src)) {
				chunk_drop(cache, c, "stale");
				dropped++;
			}
		}
	}
	return dropped;
}

/* Count differences between two sorted manifests. */
/* How many files differ between a (the manifest in use) and b (the one
 * just loaded). A file a confirmed against the source since the load began
 * (since_ns) at another version than b lists (or found removed) may be
 * newer than what the listing saw: b's entry is made due for a stat, so
 * the next open confirms it instead of serving the listing's version. */
static uint64_t manifest_changes(const struct manifest *a, struct manifest *b, uint64_t since_ns)
{
	size_t i = 0, j = 0;
	uint64_t changed = 0;
	while (i < (a ? a->n : 0) || j < b->n) {
		int c;
		if (!a || i >= a->n)
			c = 1;
		else if (j >= b->n)
			c = -1;
		else
			c = strcmp(a->v[i].path, b->v[j].path);
		if (c < 0) {
			changed += !a->v[i].gone;
			i++;
		} else if (c > 0) {
			changed++;
			j++;
		} else {
			bool differs = a->v[i].gone || !cold_stat_same(&a->v[i].st, &b->v[j].st);
			changed += differs;
			if (differs && a->v[i].checked_ns >= since_ns)
				b->v[j].checked_ns = 0;
			i++;
			j++;
		}
	}
	return changed;
}

#define MANIFEST_NS "manifest"
#define COLD_FAIL_WINDOW_NS (5ull * 1000000000ull)

/* Persist the manifest as one record (manifest_encode). Loop thread. */
static void persist_manifest(struct cache *cache, struct dataset *ds)
{
	struct proto_wr w;
	if (ds->removed)
		return; /* its record went with it (dataset_forget) */
	proto_wr_init(&w);
	manifest_encode(ds->mf, &w);
	if (w.oom || index_kv_put(cache->ix, MANIFEST_NS, ds->name, w.buf, w.len) < 0)
		log_warn("dataset=%s op=persist_manifest err=\"cannot write the manifest to the index\"",
			 ds->name);
	else
		ds->mf_dirty = false;
	proto_wr_free(&w);
}

void dataset_flush_manifest(struct cache *cache, struct dataset *ds)
{
	if (ds->mf && ds->mf_dirty)
		persist_manifest(cache, ds);
}

void dataset_forget(struct cache *cache, struct dataset *ds)
{
	ds->removed = true;
	event_del(ds->retry_ev);
	event_del(ds->persist_ev);
	ds->mf_dirty = false;
	index_kv_delete(cache->ix, MANIFEST_NS, ds->name);
}

static void persist_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct dataset *ds = arg;
	dataset_flush_manifest(ds->cache, ds);
}

/* Revalidation changed an entry: persist soon, batching a burst of changes
 * into one write, so that a restart (even with the source down) knows the
 * versions whose chunks it holds. */
static void mark_dirty(struct dataset *ds)
{
	struct timeval tv = {.tv_sec = 1};
	ds->mf_dirty = true;
	if (!event_pending(ds->persist_ev, EV_TIMEOUT, NULL))
		evtimer_add(ds->persist_ev, &tv);
}

void dataset_restore_manifest(struct cache *cache, struct dataset *ds)
{
	void *v = NULL;
	size_t n = 0;
	struct manifest *m = NULL;
	if (index_kv_get(cache->ix, MANIFEST_NS, ds->name, &v, &n) < 0)
		return;
	/* entries come back unchecked: revalidated on first open once the
	 * source answers */
	int rc = manifest_decode(v, n, &m);
	free(v);
	if (rc < 0) {
		log_warn("dataset=%s op=restore_manifest err=\"persisted manifest unreadable (%s); "
			 "ignoring it\"", ds->name, strerror(-rc));
		return;
	}
	manifest_free(ds->mf);
	ds->mf = m;
	log_info("dataset=%s op=restore_manifest files=%zu", ds->name, m->n);
}

bool dataset_note_cold(struct cache *cache, struct dataset *ds, int err)
{
	char why[sizeof(ds->reason) - 32] = "";
	loop_assert();
	(void)cache;
	/* answers about the data itself, and a file's own errors (ELOOP,
	 * EACCES, EXDEV, a FIFO...) are not failures of the store: it answered */
	if (err < 0 && !cold_err_is_store(err) && err != -ENOMEM &&
	    (!ds->opened || cold_probe(&ds->cold, why, sizeof(why)) == 0))
		err = 0;
	if (err == 0) {
		if (ds->cold_fail_ns) {
			log_info("dataset=%s op=cold state=reachable", ds->name);
			ds->cold_fail_ns = 0;
			ds->stale_since_ns = 0;
			if (ds->available)
				ds->reason[0] = '\0';
		}
		return false;
	}
	if (err == -ENOMEM)
		return false;
	if (!why[0] && err == -ENODEV && ds->opened)
		cold_probe(&ds->cold, why, sizeof(why));
	if (!why[0])
		snprintf(why, sizeof(why), "%s", strerror(-err));
	if (!ds->cold_fail_ns)
		log_warn("dataset=%s op=cold state=failing err=\"%s\"", ds->name, why);
	ds->cold_fail_ns = cache_now_ns();
	snprintf(ds->reason, sizeof(ds->reason), "cold store failing: %s", why);
	return true;
}

bool dataset_cold_failing(const struct dataset *ds, uint64_t now_ns)
{
	return ds->cold_fail_ns && now_ns - ds->cold_fail_ns < COLD_FAIL_WINDOW_NS;
}

bool dataset_serving_stale(const struct dataset *ds, uint64_t now_ns)
{
	return ds->stale_since_ns && (!ds->opened || dataset_cold_failing(ds, now_ns));
}

static void schedule_retry(struct cache *cache, struct dataset *ds)
{
	struct timeval tv = {.tv_sec = RETRY_SECONDS};
	if (!cache->stopping && !ds->removed)
		evtimer_add(ds->retry_ev, &tv);
}

static uint64_t install(struct cache *cache, struct load_job *l)
{
	struct dataset *ds = l->ds;
	uint64_t changed = manifest_changes(ds->mf, l->mf, ds->load_start_ns);
	manifest_free(ds->mf);
	ds->mf = l->mf;
	l->mf = NULL;
	ds->available = true;
	ds->reason[0] = '\0';
	ds->cold_fail_ns = 0;
	persist_manifest(cache, ds);
	unsigned dropped = dataset_drop_stale_chunks(cache, ds);
	log_info("dataset=%s op=manifest files=%zu bytes=%llu changed=%llu stale_chunks_dropped=%u",
		 ds->name, ds->mf->n, (unsigned long long)ds->mf->bytes, (unsigned long long)changed,
		 dropped);
	return changed;
}

static void load_done(struct job *j)
{
	struct load_job *l = (struct load_job *)j;
	struct cache *cache = l->cache;
	struct dataset *ds = l->ds;
	uint64_t changed = 0;
	loop_assert();
	ds->refreshing = false;
	ds->first_load = false;
	if (l->opened)
		ds->opened = true; /* even if the listing failed: close it at the end */
	if (l->err < 0) {
		/* what is cached is served only as dataset_revalidate_now() says:
		 * its last check is recent, or serve_stale_on_error = yes */
		snprintf(ds->reason, sizeof(ds->reason), "%.200s", l->reason);
		ds->available = false;
		log_warn("dataset=%s op=load err=\"%s\" retry_in_s=%d", ds->name, l->reason,
			 l->cb ? 0 : RETRY_SECONDS);
		if (!l->cb)
			schedule_retry(cache, ds);
	} else {
		changed = install(cache, l);
	}
	if (l->fetched && cache->hooks.manifest_listed)
		cache->hooks.manifest_listed(cache->hooks.arg, &l->fetch, l->err);
	if (l->cb)
		l->cb(cache, l->arg, l->err, ds->mf ? ds->mf->n : 0, ds->mf ? ds->mf->bytes : 0, changed);
	manifest_free(l->mf);
	free(l->fetch.enc);
	free(l);
}

/* The manifest_fetch hook answered: the manifest, or list the source. */
static void fetch_done(struct manifest_fetch *f)
{
	struct load_job *l = f->arg;
	loop_assert();
	if (f->result < 0) {
		l->err = f->result;
		snprintf(l->reason, sizeof(l->reason), "manifest not loaded: %s", strerror(-f->result));
		load_done(&l->job);
		return;
	}
	if (f->result == 0 && f->mf) {
		l->mf = f->mf; /* the worker only opens the backend, if it must */
		f->mf = NULL;
	}
	workers_submit(l->cache->workers, &l->job);
}

static int start_load(struct cache *cache, struct dataset *ds, dataset_refresh_cb cb, void *arg,
		      bool inline_ok)
{
	if (ds->refreshing)
		return -EBUSY;
	struct load_job *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->cache = cache;
	l->ds = ds;
	l->cb = cb;
	l->arg = arg;
	l->job.work = load_work;
	l->job.done = load_done;
	ds->refreshing = true;
	ds->load_start_ns = cache_now_ns();
	__atomic_store_n(&ds->load_listed, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ds->cold.list_progress, 0, __ATOMIC_RELAXED);
	if (cache->hooks.manifest_fetch) {
		l->fetch = (struct manifest_fetch){
			.ds = ds, .refresh = !ds->first_load, .done = fetch_done, .arg = l};
		l->fetched = true; /* before the hook: done() may follow on a worker's heels */
		if (cache->hooks.manifest_fetch(cache->hooks.arg, &l->fetch) == 0)
			return 0;
		l->fetched = false;
	}
	if (inline_ok) {
		load_work(&l->job);
		load_done(&l->job);
	} else {
		workers_submit(cache->workers, &l->job);
	}
	return 0;
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct dataset *ds = arg;
	if (!ds->cache->stopping && !ds->available)
		start_load(ds->cache, ds, NULL, NULL, false);
}

void dataset_load(struct cache *cache, struct dataset *ds)
{
	bool inline_ok = !cold_is_async(&ds->cold);
	start_load(cache, ds, NULL, NULL, inline_ok);
}

int dataset_refresh(struct cache *cache, struct dataset *ds, dataset_refresh_cb cb, void *arg)
{
	return start_load(cache, ds, cb, arg, false);
}

uint64_t dataset_load_progress(const struct dataset *ds)
{
	uint64_t a = __atomic_load_n(&ds->load_listed, __ATOMIC_RELAXED);
	uint64_t b = __atomic_load_n(&ds->cold.list_progress, __ATOMIC_RELAXED);
	return a > b ? a : b;
}

bool dataset_entry_stale(const struct dataset *ds, const struct mf_entry *e, uint64_t now_ns)
{
	return now_ns - e->checked_ns > ds->conf.revalidate_after_ms * 1000000ull;
}

bool dataset_entry_due_soon(const struct dataset *ds, const struct mf_entry *e, uint64_t now_ns)
{
	uint64_t after = ds->conf.revalidate_after_ms * 1000000ull;
	return now_ns - e->checked_ns > after - after / 4;
}

/* e cannot be checked: the store is down (or never answered this run).
 * Serve what is known only where the dataset says so. */
static int unreachable(struct cache *cache, struct dataset *ds, const struct mf_entry *e)
{
	if (strcmp(ds->conf.serve_stale_on_error, "yes") != 0)
		return -EIO;
	if (!ds->stale_since_ns) {
		ds->stale_since_ns = cache_now_ns();
		log_warn("dataset=%s path=%s op=serve_stale info=\"the cold store cannot be asked; "
			 "serving cached versions unchecked (serve_stale_on_error = yes)\"",
			 ds->name, e->path);
	}
	ds->stale_served++;
	cache->ctr.stale_served++;
	return 0;
}

/* The answer (rc, st) of a stat of e asked at asked_ns, applied: a change
 * drops the old version's chunks, ENOENT marks e gone, success confirms e
 * as of when it was asked. for_request: a request waits for the answer, so
 * a store error is what unreachable() says; else (a stat ahead) it only
 * marks the store failing and returns -EAGAIN. */
static int apply_stat_at(struct cache *cache, struct dataset *ds, struct mf_entry *e, int rc,
			 const struct cold_stat *st, uint64_t asked_ns, bool for_request)
{
	if (rc == -ENOENT) {
		dataset_note_cold(cache, ds, 0);
		chunk_drop_version(cache, ds, e->path, &e->st, "removed_at_source");
		ds->mf->bytes -= e->st.size;
		e->gone = true;
		mark_dirty(ds);
		return -ENOENT;
	}
	if (rc < 0) {
		if (dataset_note_cold(cache, ds, rc))
			return for_request ? unreachable(cache, ds, e) : -EAGAIN;
		/* this file's own error: this file fails, and only it */
		log_warn("dataset=%s path=%s op=revalidate err=\"%s\"", ds->name, e->path,
			 strerror(-rc));
		return rc;
	}
	dataset_note_cold(cache, ds, 0);
	if (!cold_stat_same(st, &e->st)) {
		log_info("dataset=%s path=%s op=revalidate changed=1 size=%llu", ds->name, e->path,
			 (unsigned long long)st->size);
		chunk_drop_version(cache, ds, e->path, &e->st, "changed_at_source");
		ds->mf->bytes = ds->mf->bytes - e->st.size + st->size;
		e->st = *st;
		mark_dirty(ds);
	}
	if (asked_ns > e->checked_ns)
		e->checked_ns = asked_ns;
	return 0;
}

static int apply_stat(struct cache *cache, struct dataset *ds, struct mf_entry *e, int rc,
		      const struct cold_stat *st)
{
	return apply_stat_at(cache, ds, e, rc, st, cache_now_ns(), true);
}

int dataset_apply_stat_ahead(struct cache *cache, struct dataset *ds, struct mf_entry *e, int rc,
			     const struct cold_stat *st, uint64_t asked_ns)
{
	/* confirmed since this stat was asked (an open's own revalidation):
	 * that answer is the newer; this one may predate a change it saw */
	if (e->checked_ns >= asked_ns)
		return 0;
	return apply_stat_at(cache, ds, e, rc, st, asked_ns, false);
}

void dataset_reval_msg(const struct dataset *ds, const char *path, int err, char *buf, size_t n)
{
	switch (-err) {
	case EIO:
		snprintf(buf, n, "cold store unreachable; cannot check %s/%s is current (%s); set "
			 "serve_stale_on_error = yes in [dataset %s] to serve cached bytes meanwhile",
			 ds->name, path, ds->reason[0] ? ds->reason : "the source is not open", ds->name);
		break;
	case ENOENT:
		snprintf(buf, n, "%s/%s was removed at the source", ds->name, path);
		break;
	case ELOOP:
		snprintf(buf, n, "%s/%s: the source path is a symbolic link or passes through one; "
			 "tiercache follows no symlinks in a dataset (replace it with the file itself)",
			 ds->name, path);
		break;
	case EXDEV:
		snprintf(buf, n, "%s/%s: the source path leads out of the dataset's directory; refused",
			 ds->name, path);
		break;
	case EINVAL:
		snprintf(buf, n, "%s/%s is not a regular file at the source (a FIFO, socket or device); "
			 "tiercache serves regular files only", ds->name, path);
		break;
	case EACCES:
	case EPERM:
		snprintf(buf, n, "%s/%s: the daemon may not read it at the source (%s); fix its "
			 "permissions there", ds->name, path, strerror(-err));
		break;
	default:
		snprintf(buf, n, "%s/%s: cannot check it at the source: %s", ds->name, path,
			 strerror(-err));
	}
}

int dataset_revalidate_now(struct cache *cache, struct dataset *ds, struct mf_entry *e)
{
	struct cold_stat st;
	if (!ds->opened)
		return unreachable(cache, ds, e);
	cache->ctr.reval_stats++;
	int rc = cold_stat(&ds->cold, e->path, &st);
	return apply_stat(cache, ds, e, rc, &st);
}

struct reval_job {
	struct job job;
	struct waiter w; /* joined the read of the file's chunk (reval_join) */
	uint64_t read_since_ns; /* a read sent since may answer (0: none) */
	struct cache *cache;
	struct dataset *ds;
	char *path;
	struct cold_stat st;
	int err;
	struct cold_statio sio; /* a backend with stat_async */
	dataset_reval_cb cb;
	void *arg;
};

static void reval_work(struct job *j)
{
	struct reval_job *r = (struct reval_job *)j;
	r->err = cold_stat(&r->ds->cold, r->path, &r->st);
}

/* stat_async's end, on a backend thread: on to the loop */
static void reval_stat_done(struct cold_statio *sio)
{
	struct reval_job *r = sio->arg;
	r->err = sio->result;
	r->st = sio->st;
	workers_post(r->cache->workers, &r->job);
}

static void reval_done(struct job *j)
{
	struct reval_job *r = (struct reval_job *)j;
	int rc = r->err;
	struct mf_entry *e = r->ds->mf ? manifest_find(r->ds->mf, r->path) : NULL;
	if (e)
		rc = apply_stat(r->cache, r->ds, e, r->err, &r->st);
	else if (rc == 0)
		rc = -ENOENT;
	r->cache->revals_inflight--;
	r->cb(r->cache, r->arg, rc);
	free(r->path);
	free(r);
}

/* The stat of r's file: the backend's async stat where it has one (it
 * then holds no worker while the source answers), else on a worker. */
static void reval_stat(struct reval_job *r)
{
	r->cache->ctr.reval_stats++;
	r->sio.path = r->path;
	r->sio.done = reval_stat_done;
	r->sio.arg = r;
	if (cold_stat_async(&r->ds->cold, &r->sio) == 0)
		return;
	workers_submit(r->cache->workers, &r->job);
}

/* The fill r joined ended. Its cold read asserted the version r->st
 * (cold_io.expect: RADOS's compound op, posix's stat before and after),
 * so a read that succeeded says what the stat would: the source is at
 * that version now. Anything else (the file changed, ESTALE; removed; an
 * error; the entry replaced meanwhile) is the stat's to find. */
static void reval_filled(struct cache *cache, struct waiter *w, struct chunk *c, int err)
{
	struct reval_job *r = (struct reval_job *)((char *)w - offsetof(struct reval_job, w));
	(void)c;
	struct mf_entry *e = err == 0 && r->ds->mf ? manifest_find(r->ds->mf, r->path) : NULL;
	if (e && cold_stat_same(&e->st, &r->st)) {
		int rc = apply_stat(cache, r->ds, e, 0, &r->st);
		cache->ctr.revals_by_read++;
		cache->revals_inflight--;
		r->cb(cache, r->arg, rc);
		free(r->path);
		free(r);
		return;
	}
	if (cache->stopping) {
		cache->revals_inflight--;
		r->cb(cache, r->arg, err < 0 ? err : -ESHUTDOWN);
		free(r->path);
		free(r);
		return;
	}
	reval_stat(r);
}

/* A read of e's one chunk at e's version is on its way from the cold store
 * (the open started it beside this revalidation: open-ahead): wait for
 * that read instead of asking the store a second time. Only a read sent
 * after the request arrived (r->read_since_ns) answers for it: one sent
 * before may have been answered before a change the client already saw
 * made. Not for a chunk that may come from a peer (cluster/: its bytes say
 * nothing of the source now), nor for an entry without a version (the
 * read's size and mtime check is to the second), nor for a larger file. */
static bool reval_join(struct reval_job *r, const struct mf_entry *e)
{
	struct cache *cache = r->cache;
	struct dataset *ds = r->ds;
	if (!r->read_since_ns || cache->hooks.remote_read || !e->st.version || e->st.size == 0 ||
	    e->st.size > ds->conf.chunk_size)
		return false;
	uint64_t key = chunk_key(ds->name, e->path, &e->st, 0);
	if (!fill_cold_since(cache, key, r->read_since_ns) || chunk_find(&cache->chunks, key))
		return false;
	r->st = e->st;
	r->w.cb = reval_filled;
	/* not a read: the open's own read of the chunk is heard of when it comes */
	const struct read_ctx rc = {.flags = READ_PREFETCH};
	struct chunk *ch = NULL;
	return fill_get(cache, ds, e->path, &e->st, 0, &rc, &r->w, &ch) == 0;
}

int dataset_revalidate_async(struct cache *cache, struct dataset *ds, const char *path,
			     dataset_reval_cb cb, void *arg)
{
	return dataset_revalidate_async_since(cache, ds, path, 0, cb, arg);
}

int dataset_revalidate_async_since(struct cache *cache, struct dataset *ds, const char *path,
				   uint64_t read_since_ns, dataset_reval_cb cb, void *arg)
{
	struct reval_job *r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path))) {
		free(r);
		return -ENOMEM;
	}
	r->cache = cache;
	r->ds = ds;
	r->cb = cb;
	r->arg = arg;
	r->read_since_ns = read_since_ns;
	if (!ds->opened || dataset_cold_failing(ds, cache_now_ns())) {
		/* the store is down: do not make the open wait for its timeout */
		struct mf_entry *e = ds->mf ? manifest_find(ds->mf, path) : NULL;
		int rc = e ? unreachable(cache, ds, e) : -ENOENT;
		free(r->path);
		free(r);
		cb(cache, arg, rc);
		return 0;
	}
	r->job.work = reval_work;
	r->job.done = reval_done;
	cache->revals_inflight++;
	struct mf_entry *e = ds->mf ? manifest_find(ds->mf, path) : NULL;
	if (e && reval_join(r, e))
		return 0;
	reval_stat(r);
	return 0;
}
