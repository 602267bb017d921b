/*
 * Stat-ahead: see stat_ahead.h.
 *
 * Which entries: a training set of small files is directories of samples,
 * and an epoch reads every file of them, in listing order or shuffled. So
 * a request that finds its entry due opens a window on its directory in
 * the manifest (path-sorted: a directory's files are one range): the files
 * after it, then those before it, at most SA_SCAN_MAX looked at (a
 * subdirectory's files, which sort between them, are skipped). Of those,
 * the ones due or due within a quarter of revalidate_after (entries
 * confirmed a little apart fall due a little apart; one window confirms
 * them together) and not already being stat'd are stat'd ahead (a file
 * whose open will miss and have its read answer for the stat is left to
 * it: struct stat_ahead, skip_cold). So an
 * entry is stat'd at most about once per revalidate_after, only because a
 * reader opened a due file of its directory, and not again ahead until it
 * has been opened since its last stat ahead: stats ahead never outnumber
 * the opens by more than one window's guess per entry (a reader of a part
 * of a directory, or a revalidate_after shorter than an epoch, does not
 * have every entry stat'd again and again).
 *
 * Bounded: daemon.stat_ahead_inflight stats at once across datasets; the
 * windows (the last SA_WINDOWS) are drained oldest first as stats end. An
 * open's own revalidation is never held back by them: it asks the store
 * at once, or joins the stat ahead of its entry if one is in flight.
 *
 * Correct: an answer goes through dataset_apply_stat_ahead (the same as an
 * open's revalidation: a change drops the old version's chunks, ENOENT
 * marks the entry gone), found again by path in the manifest of now (a
 * reload or refresh may have replaced it). A store error confirms nothing.
 * A success confirms the entry as of when the stat was asked, so the
 * revalidate_after contract holds as for any confirmed entry.
 *
 * The stats are the backend's async stat (RADOS aio): no worker is held.
 * Loop thread; the stat's end arrives on a backend thread and is posted.
 */
#include "stat_ahead.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chunk.h"
#include "fill.h"
#include "loop.h"
#include "manifest.h"
#include "workers.h"

/* Entries a window looks at, at most (bounds the work of one trigger). */
#define SA_SCAN_MAX 256u
/* Windows kept at once: a new trigger takes the place of the oldest. */
#define SA_WINDOWS 8u
/* Due opens of files not resident between two judgements of skip_cold. */
#define SA_JUDGE 32u
/* Stats ahead used or wasted between two judgements of the pause. */
#define SA_JUDGE_USE 64u
/* The longest pause, in revalidate_after. */
#define SA_PAUSE_MAX 64u

struct sa_waiter {
	dataset_reval_cb cb;
	void *arg;
	struct sa_waiter *next;
};

struct sa_job {
	struct job job;
	struct cold_statio sio;
	struct cache *cache;
	struct dataset *ds;
	char *path;
	uint64_t asked_ns;
	struct sa_waiter *waiters; /* requests that joined it */
	struct sa_job *prev, *next; /* in flight */
};

struct sa_window {
	struct dataset *ds;     /* NULL: unused or done */
	const struct manifest *mf; /* the manifest it scans (ds->mf when opened) */
	char *dir;              /* the directory's prefix, "" for the root */
	size_t dirlen;
	size_t fwd;             /* next index to look at after the trigger */
	size_t bwd;             /* one past the next index before it */
	bool fwd_done, bwd_done;
	unsigned looked;
};

struct stat_ahead {
	struct sa_job *inflight;
	unsigned n;
	struct sa_window win[SA_WINDOWS];
	unsigned next_win; /* the oldest window, the next replaced */
	/* A file of one chunk that is not resident is a miss when opened: its
	 * open may start the chunk's read beside the revalidation, and that
	 * read (it asserts the version) then answers for the stat
	 * (dataset.c, reval_join; counters.revalidations_by_read): a stat
	 * ahead of it would be a second request to the store for nothing.
	 * Whether the opens do so depends on room the prefetcher has (with
	 * some policies none), so it is observed: of the last SA_JUDGE due
	 * opens of such files, how many had their read answer (by_read) and
	 * how many asked a stat (by_stat). skip_cold: most had a read, so
	 * such files are left to their opens. */
	unsigned by_read, by_stat;
	bool skip_cold;
	/* A stat ahead pays if its file is opened before it is due again.
	 * In a shuffled epoch longer than revalidate_after most are not (the
	 * file is due again when opened: wasted, a second stat). When more
	 * than half of the last SA_JUDGE_USE were wasted, nothing is sent
	 * ahead for pause_mult x revalidate_after (paused_until); then it
	 * tries again. pause_mult doubles with each judgement in a row that
	 * finds them wasted (up to SA_PAUSE_MAX) and is 1 again after one
	 * that does not: in a long shuffled epoch the windows it still tries
	 * cost the store a shrinking share of extra stats. */
	uint64_t used0, wasted0, paused_until;
	unsigned pause_mult;
};

/* Judge the stats ahead used and wasted since the last judgement, once
 * SA_JUDGE_USE of them are in: pause sending ahead while most were wasted. */
static void sa_judge(struct cache *cache, struct stat_ahead *sa, const struct dataset *ds)
{
	uint64_t used = cache->ctr.stat_ahead_used - sa->used0;
	uint64_t wasted = cache->ctr.stat_ahead_wasted - sa->wasted0;
	if (used + wasted < SA_JUDGE_USE)
		return;
	if (wasted * 2 > used + wasted) {
		unsigned m = sa->pause_mult ? sa->pause_mult : 1;
		sa->paused_until = cache_now_ns() + m * ds->conf.revalidate_after_ms * 1000000ull;
		sa->pause_mult = m < SA_PAUSE_MAX ? 2 * m : SA_PAUSE_MAX;
	} else {
		sa->pause_mult = 1;
	}
	sa->used0 = cache->ctr.stat_ahead_used;
	sa->wasted0 = cache->ctr.stat_ahead_wasted;
}

static struct stat_ahead *sa_get(struct cache *cache)
{
	if (!cache->sa && (cache->sa = calloc(1, sizeof(*cache->sa))))
		cache->sa->skip_cold = true; /* the cheaper guess for the store */
	return cache->sa;
}

/* Is e a file whose open misses and may have its read answer for the
 * stat (a one-chunk file with an object version, not resident, nor being
 * read if pending_too; not in a cluster, where the chunk may come from a
 * peer)? */
static bool sa_cold_one_chunk(const struct cache *cache, const struct dataset *ds,
			      const struct mf_entry *e, bool pending_too)
{
	if (cache->hooks.remote_read || !e->st.version || e->st.size == 0 ||
	    e->st.size > ds->conf.chunk_size)
		return false;
	uint64_t key = chunk_key(ds->name, e->path, &e->st, 0);
	return !chunk_find(&cache->chunks, key) && !(pending_too && fill_pending(cache, key));
}

static void window_close(struct sa_window *w)
{
	free(w->dir);
	*w = (struct sa_window){0};
}

/* May stats be sent ahead for ds now? */
static bool sa_allowed(const struct cache *cache, const struct dataset *ds, uint64_t now)
{
	return cache->cfg->stat_ahead_inflight && !cache->stopping && ds->opened && !ds->removed &&
	       (!cache->sa || now >= cache->sa->paused_until) &&
	       ds->mf && ds->conf.revalidate_after_ms && !cold_has_cheap_stat(&ds->cold) &&
	       !dataset_cold_failing(ds, now);
}

static void sa_done(struct job *jb);

static void sa_stat_done(struct cold_statio *sio)
{
	struct sa_job *j = sio->arg;
	workers_post(j->cache->workers, &j->job);
}

/* Send the stat of e ahead. Returns 0, or -errno (nothing sent). */
static int sa_issue(struct cache *cache, struct stat_ahead *sa, struct dataset *ds,
		    struct mf_entry *e, uint64_t now)
{
	struct sa_job *j = calloc(1, sizeof(*j));
	if (!j || !(j->path = strdup(e->path))) {
		free(j);
		return -ENOMEM;
	}
	j->cache = cache;
	j->ds = ds;
	j->asked_ns = now;
	j->job.done = sa_done;
	j->sio.path = j->path;
	j->sio.done = sa_stat_done;
	j->sio.arg = j;
	/* in the list before the stat: its end is posted to this loop, so
	 * nothing runs sa_done before this returns */
	j->next = sa->inflight;
	if (sa->inflight)
		sa->inflight->prev = j;
	sa->inflight = j;
	sa->n++;
	int rc = cold_stat_async(&ds->cold, &j->sio);
	if (rc < 0) {
		sa->inflight = j->next;
		if (j->next)
			j->next->prev = NULL;
		sa->n--;
		free(j->path);
		free(j);
		return rc;
	}
	e->ahead = true;
	cache->ctr.stat_ahead_sent++;
	return 0;
}

/* The next entry of w to consider, or NULL when w is done. */
static struct mf_entry *window_next(struct sa_window *w)
{
	const struct manifest *mf = w->mf;
	while (w->looked < SA_SCAN_MAX) {
		size_t i;
		bool fwd;
		if (!w->fwd_done && w->fwd < mf->n) {
			i = w->fwd++;
			fwd = true;
		} else if (!w->bwd_done && w->bwd > 0) {
			i = --w->bwd;
			fwd = false;
		} else {
			break;
		}
		w->looked++;
		struct mf_entry *s = &mf->v[i];
		if (strncmp(s->path, w->dir, w->dirlen) != 0) {
			/* past the directory (the manifest is sorted) */
			if (fwd)
				w->fwd_done = true;
			else
				w->bwd_done = true;
			continue;
		}
		if (strchr(s->path + w->dirlen, '/'))
			continue; /* a subdirectory's file */
		return s;
	}
	window_close(w);
	return NULL;
}

/* Send stats ahead from the windows, oldest first, while the bound allows. */
static void sa_pump(struct cache *cache, struct stat_ahead *sa)
{
	uint64_t now = cache_now_ns();
	for (unsigned k = 0; k < SA_WINDOWS; k++) {
		struct sa_window *w = &sa->win[(sa->next_win + k) % SA_WINDOWS];
		if (!w->ds)
			continue;
		if (w->ds->mf != w->mf || !sa_allowed(cache, w->ds, now)) {
			window_close(w); /* the manifest was replaced, or the store fails */
			continue;
		}
		while (sa->n < cache->cfg->stat_ahead_inflight) {
			struct mf_entry *s = window_next(w);
			if (!s)
				break;
			/* ahead_ok: stat'd ahead before and not opened since:
			 * not again until it is (a guess that did not pay).
			 * Found due again unopened, it is counted wasted now,
			 * not when (if ever) it is opened: in a long shuffled
			 * epoch the stats whose files are opened soon are
			 * judged first, and would keep it sending for long */
			if (s->ahead_ok && !s->ahead_lapsed && !s->gone &&
			    dataset_entry_stale(w->ds, s, now)) {
				s->ahead_lapsed = true;
				cache->ctr.stat_ahead_wasted++;
				sa_judge(cache, sa, w->ds);
				if (!sa_allowed(cache, w->ds, now))
					break;
			}
			if (s->gone || s->ahead || s->ahead_ok || !dataset_entry_due_soon(w->ds, s, now) ||
			    (sa->skip_cold && sa_cold_one_chunk(cache, w->ds, s, true)))
				continue;
			if (sa_issue(cache, sa, w->ds, s, now) < 0) {
				window_close(w);
				break;
			}
		}
		if (sa->n >= cache->cfg->stat_ahead_inflight)
			return;
	}
}

void stat_ahead_trigger(struct cache *cache, struct dataset *ds, const struct mf_entry *e,
			bool by_read)
{
	loop_assert();
	if (!sa_allowed(cache, ds, cache_now_ns()))
		return;
	const struct manifest *mf = ds->mf;
	if (e < mf->v || e >= mf->v + mf->n)
		return; /* not an entry of the manifest of now */
	size_t at = (size_t)(e - mf->v);
	struct stat_ahead *sa = sa_get(cache);
	if (!sa)
		return;
	/* (its own read, if it started one, is pending: not resident) */
	if (by_read || sa_cold_one_chunk(cache, ds, e, false)) {
		if (by_read)
			sa->by_read++;
		else
			sa->by_stat++;
		if (sa->by_read + sa->by_stat >= SA_JUDGE) {
			sa->skip_cold = sa->by_read >= sa->by_stat;
			sa->by_read = sa->by_stat = 0;
		}
	}
	const char *slash = strrchr(e->path, '/');
	size_t dirlen = slash ? (size_t)(slash - e->path) + 1 : 0;
	char *dir = strndup(e->path, dirlen);
	if (!dir)
		return;
	struct sa_window *w = &sa->win[sa->next_win];
	window_close(w);
	*w = (struct sa_window){.ds = ds, .mf = mf, .dir = dir, .dirlen = dirlen, .fwd = at + 1,
				.bwd = at};
	sa->next_win = (sa->next_win + 1) % SA_WINDOWS;
	sa_pump(cache, sa);
}

/* A stat ahead ended, on the loop. */
static void sa_done(struct job *jb)
{
	struct sa_job *j = (struct sa_job *)jb;
	struct cache *cache = j->cache;
	struct stat_ahead *sa = cache->sa;
	struct dataset *ds = j->ds;
	loop_assert();
	if (j->prev)
		j->prev->next = j->next;
	else
		sa->inflight = j->next;
	if (j->next)
		j->next->prev = j->prev;
	sa->n--;
	/* again by path: the manifest may have been replaced meanwhile */
	struct mf_entry *e = ds->mf ? manifest_find(ds->mf, j->path) : NULL;
	int rc = j->sio.result;
	if (e) {
		e->ahead = false;
		rc = dataset_apply_stat_ahead(cache, ds, e, j->sio.result, &j->sio.st, j->asked_ns);
		if (rc == 0 && !j->waiters && e->checked_ns == j->asked_ns)
			e->ahead_ok = true; /* this answer confirmed it */
	} else if (rc == 0 || rc == -ENOENT) {
		rc = -ENOENT;
	} else if (!ds->removed) {
		dataset_note_cold(cache, ds, rc);
		rc = -EAGAIN;
	}
	while (j->waiters) {
		struct sa_waiter *w = j->waiters;
		j->waiters = w->next;
		if (rc != -EAGAIN)
			w->cb(cache, w->arg, rc);
		else if (cache->stopping)
			w->cb(cache, w->arg, -ESHUTDOWN);
		/* the store's error: the request's own revalidation says
		 * what it is told (the store failing: at once) */
		else if (dataset_revalidate_async(cache, ds, j->path, w->cb, w->arg) < 0)
			w->cb(cache, w->arg, -ENOMEM);
		free(w);
	}
	free(j->path);
	free(j);
	sa_pump(cache, sa);
}

int stat_ahead_join(struct cache *cache, struct dataset *ds, struct mf_entry *e,
		    dataset_reval_cb cb, void *arg)
{
	loop_assert();
	struct stat_ahead *sa = cache->sa;
	if (e->ahead_ok && !e->ahead_lapsed) {
		/* stat'd ahead, and due again before it was opened */
		cache->ctr.stat_ahead_wasted++;
		if (sa)
			sa_judge(cache, sa, ds);
	}
	e->ahead_ok = false; /* opened: it may be stat'd ahead again */
	e->ahead_lapsed = false;
	if (!e->ahead || !sa)
		return -ENOENT;
	for (struct sa_job *j = sa->inflight; j; j = j->next) {
		if (j->ds != ds || strcmp(j->path, e->path) != 0)
			continue;
		struct sa_waiter *w = malloc(sizeof(*w));
		if (!w)
			return -ENOMEM;
		*w = (struct sa_waiter){.cb = cb, .arg = arg, .next = j->waiters};
		j->waiters = w;
		cache->ctr.stat_ahead_joined++;
		return 0;
	}
	return -ENOENT;
}

unsigned stat_ahead_inflight(const struct cache *cache)
{
	return cache->sa ? cache->sa->n : 0;
}

void stat_ahead_free(struct cache *cache)
{
	struct stat_ahead *sa = cache->sa;
	if (!sa)
		return;
	for (unsigned k = 0; k < SA_WINDOWS; k++)
		window_close(&sa->win[k]);
	free(sa);
	cache->sa = NULL;
}
