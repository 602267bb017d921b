/*
 * Punching the blocks of dead segment items: see seg_punch.h.
 *
 * Requests wait in `q`; one job at a time takes them all (`run`, the
 * arrays swap) and punches them in order, one open per segment. The
 * accounting was done when each was queued; the job's end undoes it for
 * the ones that failed.
 *
 * A job starts SEG_PUNCH_DELAY_US after the first request it takes, at
 * once when SEG_PUNCH_BATCH wait, and at the end of the job before it
 * with what queued meanwhile: a stream of misses that each evict
 * one item then costs one job (a worker woken, an open, a fallocate per
 * run of adjacent items, the loop woken for its end) per batch instead of
 * per item, and the index's deletes of those items one write (they are
 * committed before the job starts: no record names punched blocks).
 */
#include "seg_punch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "chunk.h"
#include "index.h"
#include "log.h"
#include "loop.h"
#include "workers.h"

struct punch_req {
	uint64_t seg;
	uint64_t lo, hi, acct;
	int err;
	uint8_t tier;
	bool measure; /* a gap: acct is what the worker finds there (counted when done) */
};

struct seg_punches {
	struct job job; /* first: the job is the punches */
	struct cache *cache;
	struct punch_req *q, *run;
	size_t nq, nrun;
	bool busy;
	bool gaps_left; /* segments found at start may have gaps to punch */
	struct event *later; /* the queue's start and the index's deletes, after the delay */
};

static void punch_start(struct seg_punches *p);
static void flush_later(evutil_socket_t fd, short what, void *arg);

int seg_punch_init(struct cache *cache)
{
	struct seg_punches *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->q = calloc(SEG_PUNCH_QUEUED, sizeof(*p->q));
	p->run = calloc(SEG_PUNCH_QUEUED, sizeof(*p->run));
	if (!p->q || !p->run) {
		free(p->q);
		free(p->run);
		free(p);
		return -ENOMEM;
	}
	p->cache = cache;
	p->gaps_left = true;
	if (cache->base && !(p->later = evtimer_new(cache->base, flush_later, p))) {
		free(p->q);
		free(p->run);
		free(p);
		return -ENOMEM;
	}
	cache->punches = p;
	return 0;
}

void seg_punch_free(struct cache *cache)
{
	struct seg_punches *p = cache->punches;
	if (!p)
		return;
	if (p->later)
		event_free(p->later);
	free(p->q);
	free(p->run);
	free(p);
	cache->punches = NULL;
}

/* The waiting requests go now, and the index's waiting deletes with them
 * (punch_start commits them first), or alone if nothing waits to be
 * punched. While a job runs, nothing: its end starts what waits then (a
 * commit per drop while a long job runs would be a write per drop again). */
static void flush_now(struct seg_punches *p)
{
	struct cache *cache = p->cache;
	if (p->busy)
		return;
	if (p->nq && !cache->stopping)
		punch_start(p);
	else if (cache->ix)
		index_deferred_commit(cache->ix);
}

static void flush_later(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	flush_now(arg);
}

void seg_punch_flush_later(struct cache *cache)
{
	loop_assert();
	struct seg_punches *p = cache->punches;
	static const struct timeval delay = {0, SEG_PUNCH_DELAY_US};
	if (!p || !p->later) { /* no loop to wait on */
		if (p && !p->busy)
			flush_now(p);
		else if (cache->ix)
			index_deferred_commit(cache->ix);
		return;
	}
	if (!evtimer_pending(p->later, NULL))
		evtimer_add(p->later, &delay);
}

bool seg_punch_on(const struct cache *cache, enum tier_id t)
{
	return cache->punches && cache->segs[t].punch;
}

/* n bytes of g given back to tier t's file system (or, back, not after
 * all): the segment's and the tier's counts move together. */
static void count_punched(struct cache *cache, uint8_t t, struct segment *g, uint64_t n, bool back)
{
	if (back) {
		segment_unpunched(&cache->segs[t], g, n);
		tier_unpunched(&cache->tiers[t], n);
	} else {
		segment_punched(&cache->segs[t], g, n);
		tier_punched(&cache->tiers[t], n);
	}
}

static int by_place(const void *a, const void *b)
{
	const struct punch_req *x = a, *y = b;
	if (x->tier != y->tier)
		return x->tier < y->tier ? -1 : 1;
	if (x->seg != y->seg)
		return x->seg < y->seg ? -1 : 1;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Worker: punch each request, in segment and offset order: one open per
 * segment, and one fallocate per run of adjacent dead items (items die
 * about in the order they were written, so a batch is mostly such runs;
 * each punch also costs this VM a synchronous discard, docs/ceph.md).
 * A run's error is each of its requests' error. */
static void punch_work(struct job *j)
{
	struct seg_punches *p = (struct seg_punches *)j;
	int fd = -1, open_err = 0;
	uint64_t fd_seg = 0;
	uint8_t fd_tier = 0;
	qsort(p->run, p->nrun, sizeof(*p->run), by_place);
	for (size_t i = 0; i < p->nrun;) {
		struct punch_req *r = &p->run[i];
		if (fd < 0 || fd_seg != r->seg || fd_tier != r->tier) {
			char path[PATH_MAX + 64];
			if (fd >= 0)
				close(fd);
			segment_path(&p->cache->segs[r->tier], r->seg, path, sizeof(path));
			fd = open(path, O_WRONLY | O_CLOEXEC);
			open_err = fd < 0 ? -errno : 0;
			fd_seg = r->seg;
			fd_tier = r->tier;
		}
		if (r->measure) {
			if (fd >= 0)
				r->acct = segment_data_bytes(fd, r->lo, r->hi);
			r->err = fd < 0 ? open_err : segment_punch(fd, r->lo, r->hi);
			i++;
			continue;
		}
		/* the run: the next requests of this segment that start where
		 * it ends (gaps are measured one by one) */
		size_t k = i + 1;
		uint64_t hi = r->hi;
		while (k < p->nrun && p->run[k].tier == r->tier && p->run[k].seg == r->seg &&
		       !p->run[k].measure && p->run[k].lo == hi)
			hi = p->run[k++].hi;
		int err = fd < 0 ? open_err : segment_punch(fd, r->lo, hi);
		for (; i < k; i++)
			p->run[i].err = err;
	}
	if (fd >= 0)
		close(fd);
}


static void punch_done(struct job *j)
{
	struct seg_punches *p = (struct seg_punches *)j;
	struct cache *cache = p->cache;
	bool warned = false;
	for (size_t i = 0; i < p->nrun; i++) {
		struct punch_req *r = &p->run[i];
		struct segstore *ss = &cache->segs[r->tier];
		/* gone meanwhile (unlinked): its bytes left the tier with it */
		struct segment *g = r->err == -ENOENT ? NULL : segstore_find(ss, r->seg);
		if (!r->err && r->measure && g && r->acct) /* a gap's data, given back */
			count_punched(cache, r->tier, g, r->acct, false);
		if (!r->err || r->err == -ENOENT)
			continue;
		ss->punch_errors++;
		/* its blocks are still there: dead bytes again (a gap that
		 * failed was never counted) */
		if (!r->measure && g)
			count_punched(cache, r->tier, g, r->acct, true);
		if (r->err == -EOPNOTSUPP || r->err == -ENOSYS || r->err == -EINVAL) {
			if (ss->punch)
				log_warn("tier=%s op=segment_punch err=\"%s\" action=\"dead items stay on "
					 "disk until their segment is reclaimed\"",
					 cache->tiers[r->tier].name, strerror(-r->err));
			ss->punch = false;
			snprintf(ss->punch_why, sizeof(ss->punch_why), "punching a hole failed (%s)",
				 strerror(-r->err));
		} else if (!warned) {
			warned = true;
			log_warn("tier=%s op=segment_punch segment=%llx err=\"%s\" action=\"its dead "
				 "bytes wait for the reclaim\"",
				 cache->tiers[r->tier].name, (unsigned long long)r->seg, strerror(-r->err));
		}
	}
	p->nrun = 0;
	p->busy = false;
	seg_punch_gaps(cache); /* segments found at start, if any are left */
	/* what queued while this job ran goes at once: a batch already */
	if (p->nq && !p->busy && !cache->stopping)
		punch_start(p);
	else if (!p->busy && cache->ix && index_deferred_count(cache->ix))
		seg_punch_flush_later(cache); /* the timer may have found the job running */
}

static void punch_start(struct seg_punches *p)
{
	/* the records of the items to punch go first: a crash must not leave
	 * one naming blocks that read as zeros */
	if (p->cache->ix)
		index_deferred_commit(p->cache->ix);
	if (p->later)
		evtimer_del(p->later);
	struct punch_req *v = p->run;
	p->run = p->q;
	p->nrun = p->nq;
	p->q = v;
	p->nq = 0;
	p->busy = true;
	p->job.work = punch_work;
	p->job.done = punch_done;
	workers_submit(p->cache->workers, &p->job);
}

/* Queue [lo, hi) of g, counting acct bytes off it and its tier now (a
 * gap: measure, counted by the worker). */
static bool punch_queue(struct cache *cache, enum tier_id t, struct segment *g, uint64_t lo,
			uint64_t hi, uint64_t acct, bool measure)
{
	struct seg_punches *p = cache->punches;
	if (p->nq == SEG_PUNCH_QUEUED || acct > segment_disk_bytes(g) - g->live)
		return false;
	p->q[p->nq++] = (struct punch_req){
		.seg = g->id, .lo = lo, .hi = hi, .acct = acct, .tier = (uint8_t)t, .measure = measure};
	if (!measure)
		count_punched(cache, (uint8_t)t, g, acct, false);
	return true;
}

void seg_punch_item(struct cache *cache, enum tier_id t, struct segment *g, uint64_t off, uint32_t len)
{
	loop_assert();
	uint64_t lo, hi, acct;
	if (!seg_punch_on(cache, t) || !g->named || !segment_punch_range(g, off, len, &lo, &hi, &acct))
		return;
	if (!punch_queue(cache, t, g, lo, hi, acct, false))
		return;
	if (cache->punches->nq >= SEG_PUNCH_BATCH)
		flush_now(cache->punches);
	else
		seg_punch_flush_later(cache);
}

struct span {
	uint64_t off, end;
};

static int by_off(const void *a, const void *b)
{
	uint64_t x = ((const struct span *)a)->off, y = ((const struct span *)b)->off;
	return (x > y) - (x < y);
}

static uint64_t up(uint64_t x)
{
	return (x + SEGMENT_ALIGN - 1) / SEGMENT_ALIGN * SEGMENT_ALIGN;
}

/* Queue the gaps between g's live items, all or none. False if the queue
 * has no room for them now. What each gives back is counted when it is
 * punched: its holes (already counted at start) are not again. */
static bool gaps_queue(struct cache *cache, enum tier_id t, struct segment *g)
{
	struct seg_punches *p = cache->punches;
	size_t n = g->items, i = 0, ng = 0;
	struct span *v = calloc(n + 1, sizeof(*v));
	if (!v)
		return false;
	for (struct seg_link *l = g->items_live.next; l != &g->items_live && i < n; l = l->next) {
		const struct cfile *f = cfile_of_seg_link(l);
		v[i++] = (struct span){f->off, f->off + f->len};
	}
	qsort(v, i, sizeof(*v), by_off);
	/* the end: nothing lives past the file's size */
	v[i] = (struct span){up(g->size), 0};
	/* in place: gap k's [lo, hi) into v[k] (its item was read already) */
	uint64_t from = 0;
	for (size_t k = 0; k <= i; k++) {
		uint64_t lo = up(from), hi = v[k].off / SEGMENT_ALIGN * SEGMENT_ALIGN;
		if (v[k].end > from)
			from = v[k].end;
		if (hi > lo && lo < g->size)
			v[ng++] = (struct span){lo, hi};
	}
	bool fits = p->nq + ng <= SEG_PUNCH_QUEUED;
	for (size_t k = 0; fits && k < ng; k++)
		punch_queue(cache, t, g, v[k].off, v[k].end, 0, true);
	free(v);
	return fits;
}

void seg_punch_gaps(struct cache *cache)
{
	loop_assert();
	struct seg_punches *p = cache->punches;
	if (!p || !p->gaps_left)
		return; /* every segment found at start is done: no walk */
	p->gaps_left = false;
	for (int t = 0; t < TIER_COUNT && !cache->stopping; t++) {
		for (struct segment *g = cache->segs[t].list; g; g = g->next) {
			if (!g->gaps)
				continue;
			if (!g->named || !seg_punch_on(cache, (enum tier_id)t) || g->items + 1 > SEG_PUNCH_QUEUED) {
				g->gaps = false; /* (left to the reclaim) */
				continue;
			}
			if (!gaps_queue(cache, (enum tier_id)t, g)) {
				p->gaps_left = true;
				goto out; /* the rest when this batch is done */
			}
			g->gaps = false;
		}
	}
out:
	if (cache->stopping)
		p->gaps_left = true;
	if (p->nq && !p->busy && !cache->stopping)
		punch_start(p);
}
