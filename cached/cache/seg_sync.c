/*
 * Group commit of segment appends: see seg_sync.h.
 *
 * One batch per segment with copies waiting. A batch has at most one sync
 * job in flight: `syncing` is the list it covers (taken when it started),
 * `waiting` the copies that finished writing since; when the job ends its
 * list is told, and the next job starts if anything waits. A batch with
 * nothing left is freed, so a batch never outlives its segment (each
 * waiter keeps the segment as a writer).
 */
#include "seg_sync.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "loop.h"
#include "workers.h"

struct seg_batch {
	struct job job;          /* first: the job is the batch */
	struct seg_syncs *owner;
	struct workers *workers;
	struct seg_batch *next;
	struct segment *g;
	struct seg_sync_waiter *waiting, *syncing;
	int err;                 /* the job's fdatasync */
	char path[PATH_MAX + 64];
};

struct seg_syncs {
	struct seg_batch *batches;
	uint64_t *nsyncs;
};

struct seg_syncs *seg_syncs_new(uint64_t *nsyncs)
{
	struct seg_syncs *s = calloc(1, sizeof(*s));
	if (s)
		s->nsyncs = nsyncs;
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
	free(s);
}

/* Worker. */
static void batch_work(struct job *j)
{
	struct seg_batch *b = (struct seg_batch *)j;
	b->err = segment_sync(b->path);
}

static void batch_start(struct seg_batch *b)
{
	b->syncing = b->waiting;
	b->waiting = NULL;
	b->err = 0;
	workers_submit(b->workers, &b->job);
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
	if (b->waiting)
		batch_start(b);
	else
		batch_unlink(s, b);
	bool gone = !b->waiting && !b->syncing;
	while (w) {
		struct seg_sync_waiter *next = w->next;
		w->done(w, err);
		w = next;
	}
	if (gone)
		free(b);
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
	if (!b->syncing)
		batch_start(b);
	return 0;
}
