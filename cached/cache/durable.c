/*
 * Lazy durability: see durable.h.
 *
 * Waiting chunks form a FIFO in publish order (so the oldest is at the
 * head), each entry naming its chunk by key and sync_seq: the chunk table
 * is the truth, and an entry whose chunk is gone or changed (evicted,
 * moved: the mover syncs its own copy and resets sync_seq) is simply
 * skipped. Due entries go to a worker as one batch: writeback is started
 * for every file first (sync_file_range), then each is fdatasync'ed, so
 * the batch shares journal commits instead of forcing one per file. One
 * batch runs at a time; a timer looks for due entries while any wait.
 */
#include "durable.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "chunk.h"
#include "cache.h"
#include "index.h"
#include "log.h"
#include "loop.h"
#include "tier.h"
#include "workers.h"

#define DURABLE_TICK_MS 250
#define DURABLE_BATCH_MAX 64 /* files open at once in a batch */

struct pending {
	struct pending *next;
	uint64_t key;
	uint64_t seq;
	uint64_t since_ns;
	uint32_t len;
	uint8_t tier;
	int err; /* batch result */
};

struct batch {
	struct job job;
	struct cache *cache;
	struct pending *head;
	size_t n;
	char (*paths)[PATH_MAX + 96];
};

struct durable {
	struct pending *head, *tail;
	uint64_t bytes; /* queued, gone or not: what sync_backlog bounds */
	struct event *tick;
	bool running; /* a batch is on the workers */
};

int durable_init(struct cache *cache)
{
	cache->dur = calloc(1, sizeof(*cache->dur));
	if (!cache->dur)
		return -ENOMEM;
	return 0;
}

/* The chunk this entry was queued for, if it still waits for its sync. */
static struct chunk *pending_chunk(const struct cache *cache, const struct pending *p)
{
	struct chunk *c = chunk_find(&cache->chunks, p->key);
	return c && c->sync_seq == p->seq ? c : NULL;
}

static void enqueue(struct durable *u, struct pending *p)
{
	p->next = NULL;
	if (u->tail)
		u->tail->next = p;
	else
		u->head = p;
	u->tail = p;
	u->bytes += p->len;
}

/* Loop: the batch's files are synced (or failed to): record them. A file
 * that could not even be opened for want of descriptors waits again. */
static void batch_record(struct cache *cache, struct pending *p)
{
	/* the batch's records in one index write (its files are synced) */
	bool batched = cache->ix && index_batch_begin(cache->ix) == 0;
	while (p) {
		struct pending *next = p->next;
		struct chunk *c = pending_chunk(cache, p);
		if (c && (p->err == -EMFILE || p->err == -ENFILE) && !cache->stopping) {
			p->err = 0;
			p->since_ns = cache_now_ns();
			enqueue(cache->dur, p);
			p = next;
			continue;
		}
		if (c) {
			c->sync_seq = 0;
			if (p->err) {
				cache->ctr.fill_errors++;
				log_warn("dataset=%s path=%s chunk=%u tier=%s op=fill_sync err=\"%s\" "
					 "action=\"dropped; it will be read from the cold store again\"",
					 c->ds->name, c->path, c->idx, cache->tiers[c->tier].name,
					 strerror(-p->err));
				chunk_drop(cache, c, "sync_failed");
			} else {
				chunk_persist(cache, c);
				cache->ctr.chunks_synced++;
			}
		}
		free(p);
		p = next;
	}
	if (batched)
		index_batch_commit(cache->ix);
}

/* Worker (or the stopping thread): start writeback of every file, then
 * wait for each. A file that is gone was evicted meanwhile: nothing to do. */
static void batch_work(struct job *j)
{
	struct batch *b = (struct batch *)j;
	int *fds = calloc(b->n ? b->n : 1, sizeof(*fds));
	size_t i = 0;
	struct pending *prev = NULL;
	for (struct pending *p = b->head; p; prev = p, p = p->next, i++) {
		if (fds && i && strcmp(b->paths[i], b->paths[i - 1]) == 0) {
			/* the same segment as the entry before: its one sync covers both */
			fds[i] = -2;
			continue;
		}
		int fd = open(b->paths[i], O_RDONLY | O_CLOEXEC);
		if (fds)
			fds[i] = fd;
		if (fd < 0) {
			p->err = errno == ENOENT ? 0 : -errno;
			continue;
		}
		if (!fds) {
			if (fdatasync(fd) < 0)
				p->err = -errno;
			close(fd);
			continue;
		}
		(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	}
	if (!fds)
		return;
	i = 0;
	prev = NULL;
	for (struct pending *p = b->head; p; prev = p, p = p->next, i++) {
		if (fds[i] == -2 && prev) {
			p->err = prev->err;
			continue;
		}
		if (fds[i] < 0)
			continue;
		if (fdatasync(fds[i]) < 0)
			p->err = -errno;
		close(fds[i]);
	}
	free(fds);
}

static void kick(struct cache *cache);

static void batch_done(struct job *j)
{
	struct batch *b = (struct batch *)j;
	struct cache *cache = b->cache;
	batch_record(cache, b->head);
	free(b->paths);
	free(b);
	cache->dur->running = false;
	kick(cache);
}

/* Loop: take the due entries off the queue into a batch: those waiting
 * for sync_delay, and the oldest while more than sync_backlog bytes wait
 * (all of them when stopping). Entries whose chunk is gone are dropped. */
static struct batch *take_due(struct cache *cache, bool all)
{
	struct durable *u = cache->dur;
	uint64_t now = cache_now_ns();
	uint64_t delay = cache->cfg->sync_delay_ms * 1000000ull;
	struct pending *head = NULL, **tail = &head;
	size_t n = 0;
	while (u->head && n < DURABLE_BATCH_MAX) {
		struct pending *p = u->head;
		bool due = all || now - p->since_ns >= delay || u->bytes > cache->cfg->sync_backlog;
		if (!due)
			break;
		u->head = p->next;
		if (!u->head)
			u->tail = NULL;
		u->bytes -= p->len;
		if (!pending_chunk(cache, p)) {
			cache->ctr.syncs_skipped++;
			free(p);
			continue;
		}
		p->next = NULL;
		*tail = p;
		tail = &p->next;
		n++;
	}
	if (!n)
		return NULL;
	struct batch *b = calloc(1, sizeof(*b));
	if (b)
		b->paths = calloc(n, sizeof(*b->paths));
	if (!b || !b->paths) {
		/* no memory for a batch: these stay unrecorded, orphans after a
		 * restart, which reads them from the cold store again */
		log_err("op=fill_sync err=\"out of memory\" chunks=%zu action=\"left without index "
			"records\"",
			n);
		free(b);
		for (struct pending *p = head, *nx; p; p = nx) {
			nx = p->next;
			free(p);
		}
		return NULL;
	}
	b->cache = cache;
	b->head = head;
	b->n = n;
	size_t i = 0;
	for (struct pending *p = head; p; p = p->next, i++) {
		/* a small chunk's bytes are in its segment: an fdatasync of
		 * the segment that starts now covers them */
		struct chunk *c = pending_chunk(cache, p);
		if (c && c->file->seg)
			snprintf(b->paths[i], sizeof(b->paths[i]), "%s", c->file->seg->path);
		else
			tier_chunk_path(&cache->tiers[p->tier], p->key, b->paths[i], sizeof(b->paths[i]));
	}
	b->job.work = batch_work;
	b->job.done = batch_done;
	return b;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	kick(arg);
}

/* Loop: start a batch if one is due and none runs; keep the timer armed
 * while entries wait. */
static void kick(struct cache *cache)
{
	struct durable *u = cache->dur;
	if (!u || cache->stopping)
		return;
	if (!u->running) {
		struct batch *b = take_due(cache, false);
		if (b) {
			u->running = true;
			workers_submit(cache->workers, &b->job);
		}
	}
	if (u->head && !u->tick)
		u->tick = evtimer_new(cache->base, on_tick, cache);
	if (u->head && u->tick && !evtimer_pending(u->tick, NULL)) {
		struct timeval tv = {0, DURABLE_TICK_MS * 1000};
		evtimer_add(u->tick, &tv);
	}
}

void durable_add(struct cache *cache, const struct chunk *c)
{
	loop_assert();
	struct durable *u = cache->dur;
	struct pending *p = calloc(1, sizeof(*p));
	if (!p) {
		log_err("dataset=%s path=%s chunk=%u op=fill_sync err=\"out of memory\" "
			"action=\"left without an index record\"",
			c->ds->name, c->path, c->idx);
		return;
	}
	p->key = c->key;
	p->seq = c->sync_seq;
	p->len = c->len;
	p->tier = c->tier;
	p->since_ns = cache_now_ns();
	enqueue(u, p);
	kick(cache);
}

void durable_flush(struct cache *cache)
{
	struct batch *b;
	if (!cache->dur)
		return;
	while ((b = take_due(cache, true))) {
		batch_work(&b->job);
		batch_record(cache, b->head);
		free(b->paths);
		free(b);
	}
}

void durable_free(struct cache *cache)
{
	struct durable *u = cache->dur;
	if (!u)
		return;
	if (u->tick)
		event_free(u->tick);
	for (struct pending *p = u->head, *nx; p; p = nx) {
		nx = p->next;
		free(p);
	}
	free(u);
	cache->dur = NULL;
}

/* Walks the queue (status and metrics only): entries whose chunk is gone
 * stay queued until their turn, but are not waiting for anything. */
static uint64_t pending_count(const struct cache *cache, bool bytes)
{
	uint64_t n = 0;
	if (!cache->dur)
		return 0;
	for (const struct pending *p = cache->dur->head; p; p = p->next)
		if (pending_chunk(cache, p))
			n += bytes ? p->len : 1;
	return n;
}

uint64_t durable_pending_chunks(const struct cache *cache)
{
	return pending_count(cache, false);
}

uint64_t durable_pending_bytes(const struct cache *cache)
{
	return pending_count(cache, true);
}
