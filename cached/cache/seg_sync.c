/*
 * Group commit of segment appends: see seg_sync.h.
 *
 * One batch per segment with copies waiting. A batch has at most one sync
 * job in flight: `syncing` is the list it covers (taken when it started),
 * `waiting` the copies that finished writing since. Waiting copies are
 * counted across batches; when the count or their bytes pass the group's
 * bound, or the window's timer fires, every batch with copies waiting and
 * no job in flight starts one, and a batch whose job is in flight starts
 * its next as soon as that one ends (`due`). A batch with nothing left is
 * freed, so a batch never outlives its segment (each waiter keeps the
 * segment as a writer).
 */
#include "seg_sync.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>

#include "index.h"
#include "loop.h"
#include "workers.h"

struct seg_batch {
	struct job job;          /* first: the job is the batch */
	struct seg_syncs *owner;
	struct workers *workers;
	struct seg_batch *next;
	struct segment *g;
	struct seg_sync_waiter *waiting, *syncing;
	bool due;                /* start the next sync when this one ends */
	int err;                 /* the job's fdatasync */
	char path[PATH_MAX + 64];
};

struct seg_syncs {
	struct seg_batch *batches;
	uint64_t *nsyncs;
	struct index **ixp;
	struct event *window;    /* the oldest waiting copy's deadline */
	unsigned nwaiting;       /* copies in the batches' waiting lists */
	uint64_t waiting_bytes;
	unsigned max_items;      /* seg_syncs_set_group */
	uint64_t max_bytes;
	bool stopping;           /* no window: every sync starts at once */
};

static void window_fire(evutil_socket_t fd, short what, void *arg);

struct seg_syncs *seg_syncs_new(struct event_base *base, struct index **ixp, uint64_t *nsyncs)
{
	struct seg_syncs *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->nsyncs = nsyncs;
	s->ixp = ixp;
	s->max_items = 16;
	s->max_bytes = 1 << 20;
	s->window = evtimer_new(base, window_fire, s);
	if (!s->window) {
		free(s);
		return NULL;
	}
	return s;
}

void seg_syncs_free(struct seg_syncs *s)
{
	if (!s)
		return;
	while (s->batches) { /* only if the loop stopped with jobs queued */
		struct seg_batch *b = s->batches;
		s->batches = b->next;
		free(b);
	}
	event_free(s->window);
	free(s);
}

void seg_syncs_set_group(struct seg_syncs *s, unsigned max_items, uint64_t max_bytes)
{
	s->max_items = max_items ? max_items : 1;
	s->max_bytes = max_bytes;
}

unsigned seg_syncs_waiting(const struct seg_syncs *s)
{
	return s ? s->nwaiting : 0;
}

/* Worker. */
static void batch_work(struct job *j)
{
	struct seg_batch *b = (struct seg_batch *)j;
	b->err = segment_sync(b->path);
}

static void batch_start(struct seg_batch *b)
{
	struct seg_syncs *s = b->owner;
	for (struct seg_sync_waiter *w = b->waiting; w; w = w->next) {
		s->nwaiting--;
		s->waiting_bytes -= w->len;
	}
	b->syncing = b->waiting;
	b->waiting = NULL;
	b->due = false;
	b->err = 0;
	workers_submit(b->workers, &b->job);
}

/* Start every batch's sync that waits: the group is complete. */
static void start_all(struct seg_syncs *s)
{
	for (struct seg_batch *b = s->batches; b; b = b->next) {
		if (!b->waiting)
			continue;
		if (b->syncing)
			b->due = true;
		else
			batch_start(b);
	}
	if (!s->nwaiting)
		evtimer_del(s->window);
}

static void window_fire(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	start_all(arg);
}

/* Copies wait: start the syncs if the group is full, else make sure the
 * window's timer runs. */
static void group_check(struct seg_syncs *s)
{
	if (!s->nwaiting)
		return;
	if (s->stopping || s->nwaiting >= s->max_items || s->waiting_bytes >= s->max_bytes) {
		start_all(s);
		return;
	}
	if (!evtimer_pending(s->window, NULL)) {
		struct timeval tv = {0, SEG_SYNC_WINDOW_MS * 1000};
		evtimer_add(s->window, &tv);
	}
}

static void batch_unlink(struct seg_syncs *s, struct seg_batch *b)
{
	for (struct seg_batch **p = &s->batches; *p; p = &(*p)->next)
		if (*p == b) {
			*p = b->next;
			return;
		}
}

static void batch_done(struct job *j)
{
	struct seg_batch *b = (struct seg_batch *)j;
	struct seg_syncs *s = b->owner;
	struct seg_sync_waiter *w = b->syncing;
	int err = b->err;
	b->syncing = NULL;
	(*s->nsyncs)++;
	/* the next sync first, while the waiting copies still hold g: the
	 * ones told below may end g's last write */
	if (b->waiting && (b->due || s->stopping))
		batch_start(b);
	bool gone = !b->waiting && !b->syncing;
	if (gone)
		batch_unlink(s, b);
	/* their records in one write, committed before any old copy goes:
	 * the bytes they name are durable */
	struct index *ix = s->ixp ? *s->ixp : NULL;
	if (!err) {
		bool batched = ix && index_batch_begin(ix) == 0;
		for (struct seg_sync_waiter *r = w; r; r = r->next)
			if (r->record)
				r->record(r);
		if (batched)
			index_batch_commit(ix);
	}
	/* what done() writes (the same records again, deletes) in one more */
	bool batched = ix && index_batch_begin(ix) == 0;
	while (w) {
		struct seg_sync_waiter *next = w->next;
		w->done(w, err);
		w = next;
	}
	if (batched)
		index_batch_commit(ix);
	if (gone)
		free(b);
	group_check(s);
}

int seg_sync_after_write(struct seg_syncs *s, struct workers *workers, struct segment *g,
			 struct seg_sync_waiter *w)
{
	loop_assert();
	struct seg_batch *b = s->batches;
	while (b && b->g != g)
		b = b->next;
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return -ENOMEM;
		b->owner = s;
		b->workers = workers;
		b->g = g;
		b->job.work = batch_work;
		b->job.done = batch_done;
		snprintf(b->path, sizeof(b->path), "%s", g->path);
		b->next = s->batches;
		s->batches = b;
	}
	w->next = b->waiting;
	b->waiting = w;
	s->nwaiting++;
	s->waiting_bytes += w->len;
	group_check(s);
	return 0;
}

void seg_syncs_start(struct seg_syncs *s)
{
	if (s && s->nwaiting)
		start_all(s);
}

void seg_syncs_stop(struct seg_syncs *s)
{
	if (!s)
		return;
	s->stopping = true;
	start_all(s);
}
