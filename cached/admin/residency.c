/*
 * Residency ops: see residency.h. Loop thread only; checksum re-reads run
 * on the workers, copies on the mover.
 *
 * An async op is a list of chunks (file, chunk number, key) worked through
 * with at most `window` chunks in flight, so a warmup of a large file
 * neither floods the cold store nor the workers. Each chunk goes through
 * the stages its op needs: fill (fill_get, single flight with readers),
 * move to the asked tier, checksum re-read, pin; then it is counted where
 * it ended up. What an op reports is looked up at the end of each chunk,
 * never assumed.
 *
 * Pins: a pin is a selection string "DATASET[/PATH]" kept in the index
 * (namespace "pin"). Its chunks are in state CHUNK_PINNED: out of every
 * policy, so no victim selection sees them, yet counted in their tier's
 * used bytes, so they take room from everything else; the mover shrinks
 * the policies' budget by the pinned bytes. Pins may take a tier's whole
 * policy budget (its low watermark), no more: the band above stays for
 * fills in flight and held files, so a pin can still read its own chunks
 * when the tier is full of pins. A chunk that lands on a tier with no pin
 * room left is copied to the other tier and pinned there. A pin covers the files present when it is set (and, after a
 * restart, whatever of them is still resident); a file that changes at the
 * source is read again on demand and not pinned until pinned again.
 *
 * A chunk that is being copied by someone else when an op reaches it (the
 * mover's demotion or promotion, a segment reclaim keeping it) cannot be
 * moved or pinned yet, and is not out of room either: the slot waits for
 * that copy to end, polling on a short timer bounded by MOVE_WAIT_MAX_NS,
 * then looks the chunk up again (it may be on another tier, or gone) and
 * goes on. Only a copy that outlasts the bound is reported, as busy.
 */
#include "residency.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "chunk.h"
#include "fill.h"
#include "index.h"
#include "log.h"
#include "manifest.h"
#include "mover.h"
#include "pins.h"
#include "policy_glue.h"
#include "tiercache/protocol.h"
#include "workers.h"

#define WINDOW_FILL 8u  /* chunks of one op in flight: fills */
#define WINDOW_MOVE 4u  /* ... copies between tiers (the mover's own limit) */
#define WINDOW_PIN 2u   /* ... pins: fills must fit the band a full tier keeps */
#define ROP_ITEMS_MAX (64u << 20) /* chunks in one op: far beyond any dataset we serve */
#define MOVE_WAIT_POLL_US 5000u   /* a slot waiting for someone else's copy looks again */
#define MOVE_WAIT_MAX_NS (120ull * 1000000000ull) /* ... and gives up after this */

struct residency {
	struct cache *cache;
	struct pin_set pins;
};

enum rop_kind {
	ROP_WARM,
	ROP_PIN,
	ROP_DEMOTE,
	ROP_VERIFY,
};

struct rop_file {
	struct dataset *ds;
	char *path;
	struct cold_stat src;
};

struct rop_item {
	uint64_t key;
	uint32_t file;
	uint32_t idx;
	uint32_t len;
	bool pinned_here; /* pinned by this op (undone if the pin fails) */
};

struct rop {
	struct cache *cache;
	struct residency *res;
	enum rop_kind kind;
	struct rop_file *files;
	size_t nfiles, capfiles;
	struct rop_item *items;
	size_t n, cap, next;
	unsigned inflight, window;
	int tier;        /* warm: the tier asked for, TIER_COUNT: any */
	unsigned flags;  /* RES_WARM_* */
	bool make_room;  /* moves may evict the target tier's victims */
	bool pumping, stopped;
	char *pin_spec;  /* pin: recorded when every chunk is pinned */
	struct res_cb cb;
	struct res_result r;
};

struct slot {
	struct waiter w; /* first: fill.c hands it back */
	struct job job;
	struct rop *op;
	size_t i;
	bool moved;      /* pin: already copied to the other tier once */
	bool refetched;  /* warm --verify: read again after a bad checksum */
	int fd;
	struct cfile *f;
	uint64_t checksum;
	uint64_t base;  /* the chunk's offset in fd (a segment item), else 0 */
	uint32_t len;
	int err;
	struct event *wait;     /* waiting for another copy of the chunk to end */
	uint64_t wait_deadline; /* cache_now_ns() when it gives up waiting */
};

static void count(struct res_count *c, uint64_t len)
{
	c->chunks++;
	c->bytes += len;
}

/* ---- selections ---- */

static bool chunk_in(const struct chunk *c, const struct dataset *ds, const char *rest)
{
	return (!ds || c->ds == ds) && path_under(c->path, rest);
}

void residency_pin_moved(struct residency *res, struct chunk *c)
{
	if (!c->pin_after_move)
		return;
	c->pin_after_move = false;
	pin_chunk(res->cache, c);
}

void residency_forget_dataset(struct residency *res, const struct dataset *ds)
{
	size_t n = res ? pin_set_remove_under(&res->pins, res->cache, ds, "") : 0;
	if (n)
		log_info("dataset=%s op=unpin pins=%zu why=\"the dataset left the config\"", ds->name, n);
}

int residency_init(struct residency **out, struct cache *cache)
{
	struct residency *res = calloc(1, sizeof(*res));
	if (!res)
		return -ENOMEM;
	*out = res;
	res->cache = cache;
	int rc = pin_set_load(&res->pins, cache);
	if (rc < 0)
		return rc;
	uint64_t chunks = 0;
	struct chunk_iter it;
	if (res->pins.n)
		for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c;
		     c = chunk_iter_next(&it))
			if (c->state == CHUNK_RESIDENT && pin_set_covers(&res->pins, c)) {
				pin_chunk(cache, c);
				chunks++;
			}
	if (res->pins.n)
		log_info("op=pin_load pins=%zu chunks=%" PRIu64 " hot_bytes=%" PRIu64
			 " warm_bytes=%" PRIu64,
			 res->pins.n, chunks, cache->pinned[TIER_HOT], cache->pinned[TIER_WARM]);
	return 0;
}

void residency_free(struct residency *res)
{
	if (!res)
		return;
	pin_set_free(&res->pins);
	free(res);
}

/* ---- op building ---- */

static struct rop *rop_new(struct residency *res, enum rop_kind kind, const struct res_cb *cb)
{
	struct rop *op = calloc(1, sizeof(*op));
	if (!op)
		return NULL;
	op->cache = res->cache;
	op->res = res;
	op->kind = kind;
	op->tier = TIER_COUNT;
	op->window = kind == ROP_DEMOTE ? WINDOW_MOVE : kind == ROP_PIN ? WINDOW_PIN : WINDOW_FILL;
	if (cb)
		op->cb = *cb;
	return op;
}

static void rop_free(struct rop *op)
{
	for (size_t i = 0; i < op->nfiles; i++)
		free(op->files[i].path);
	free(op->files);
	free(op->items);
	free(op->pin_spec);
	free(op);
}

static int rop_add_file(struct rop *op, struct dataset *ds, const char *path,
			const struct cold_stat *src)
{
	if (op->nfiles == op->capfiles) {
		size_t cap = op->capfiles ? op->capfiles * 2 : 16;
		struct rop_file *v = realloc(op->files, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		op->files = v;
		op->capfiles = cap;
	}
	struct rop_file *f = &op->files[op->nfiles];
	if (!(f->path = strdup(path)))
		return -ENOMEM;
	f->ds = ds;
	f->src = *src;
	op->nfiles++;
	return 0;
}

static int rop_add_item(struct rop *op, uint32_t idx, uint32_t len)
{
	const struct rop_file *f = &op->files[op->nfiles - 1];
	if (op->n >= ROP_ITEMS_MAX)
		return -E2BIG;
	if (op->n == op->cap) {
		size_t cap = op->cap ? op->cap * 2 : 64;
		struct rop_item *v = realloc(op->items, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		op->items = v;
		op->cap = cap;
	}
	op->items[op->n++] = (struct rop_item){
		.key = chunk_key(f->ds->name, f->path, &f->src, idx),
		.file = (uint32_t)(op->nfiles - 1),
		.idx = idx,
		.len = len,
	};
	return 0;
}

/* Chunks [first, first + nchunks) of a file of the manifest (0: all). */
static int rop_add_chunks(struct rop *op, struct dataset *ds, const struct mf_entry *e,
			  uint32_t first, uint32_t nchunks)
{
	uint64_t cs = ds->conf.chunk_size;
	uint64_t n = (e->st.size + cs - 1) / cs;
	int rc = rop_add_file(op, ds, e->path, &e->st);
	if (rc < 0)
		return rc;
	uint64_t end = nchunks ? (uint64_t)first + nchunks : n;
	if (end > n)
		end = n;
	for (uint64_t i = first; i < end; i++) {
		uint64_t off = i * cs;
		rc = rop_add_item(op, (uint32_t)i, (uint32_t)(e->st.size - off < cs ? e->st.size - off : cs));
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Every file of ds at or under rest. */
static int rop_add_manifest(struct rop *op, struct dataset *ds, const char *rest)
{
	for (size_t i = 0; i < ds->mf->n; i++) {
		const struct mf_entry *e = &ds->mf->v[i];
		if (e->gone || !path_under(e->path, rest))
			continue;
		int rc = rop_add_chunks(op, ds, e, 0, 0);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* A resident chunk as an item (verify, demote). */
static int rop_add_chunk(struct rop *op, const struct chunk *c)
{
	if (!op->nfiles || op->files[op->nfiles - 1].ds != c->ds ||
	    strcmp(op->files[op->nfiles - 1].path, c->path) != 0 ||
	    !cold_stat_same(&op->files[op->nfiles - 1].src, &c->src)) {
		int rc = rop_add_file(op, c->ds, c->path, &c->src);
		if (rc < 0)
			return rc;
	}
	return rop_add_item(op, c->idx, c->len);
}

/* ---- running an op ---- */

static void rop_pump(struct rop *op);

static void rop_finish(struct rop *op)
{
	struct cache *cache = op->cache;
	if (op->kind == ROP_PIN && !op->r.err) {
		if (op->r.missing.chunks || op->r.failed.chunks || op->stopped) {
			/* all or nothing: a pin that does not hold entirely pins nothing */
			for (size_t i = 0; i < op->n; i++) {
				struct chunk *c;
				if (op->items[i].pinned_here && (c = chunk_find(&cache->chunks, op->items[i].key)))
					unpin_chunk(cache, c);
			}
			op->r.pinned = (struct res_count){0};
			op->r.err = -ENOSPC;
			snprintf(op->r.msg, sizeof(op->r.msg),
				 "%s: pinned nothing: %" PRIu64 " of %" PRIu64 " chunks could not be kept "
				 "resident (%s); free room (tierctl evict, unpin) and try again",
				 op->pin_spec, op->r.missing.chunks + op->r.failed.chunks,
				 op->r.selected.chunks, op->stopped ? "interrupted" : "no room on any tier");
		} else if (pin_set_add(&op->res->pins, op->pin_spec) < 0 ||
			   index_kv_put(cache->ix, PIN_NS, op->pin_spec, "", 0) < 0) {
			op->r.err = -EIO;
			snprintf(op->r.msg, sizeof(op->r.msg),
				 "%s: pinned for now but the pin could not be saved in the index; "
				 "it will not survive a restart (see the daemon log)",
				 op->pin_spec);
		}
	}
	if (op->cb.done)
		op->cb.done(op->cb.arg, &op->r);
	rop_free(op);
}

static void slot_end(struct slot *s)
{
	struct rop *op = s->op;
	op->inflight--;
	if (s->wait)
		event_free(s->wait);
	free(s);
	if (!op->pumping)
		rop_pump(op);
}

/* The chunk's end state: count where it is. */
static void slot_final(struct slot *s)
{
	struct rop *op = s->op;
	struct rop_item *it = &op->items[s->i];
	struct chunk *c = chunk_find(&op->cache->chunks, it->key);
	if (!c)
		count(&op->r.missing, it->len);
	else if (c->tier == TIER_HOT)
		count(&op->r.hot, it->len);
	else
		count(&op->r.warm, it->len);
	slot_end(s);
}

/* A failure of one chunk, counted by its reason so the report can say
 * what happened (no room, a checksum, a read-only tier...). */
static void count_failed(struct res_result *r, int err, uint64_t len)
{
	struct res_fail *f = NULL;
	count(&r->failed, len);
	for (unsigned k = 0; k < RES_FAIL_KINDS && !f; k++)
		if (r->fails[k].err == err || !r->fails[k].n.chunks)
			f = &r->fails[k];
	if (!f) {
		f = &r->fails[RES_FAIL_KINDS - 1];
		f->err = 0; /* more kinds than slots: "other" */
	}
	f->err = f->n.chunks && f->err != err ? 0 : err;
	count(&f->n, len);
}

static void slot_failed(struct slot *s, int err)
{
	struct rop_item *it = &s->op->items[s->i];
	if (err != -ENOENT && err != -ENOSPC)
		log_warn("dataset=%s path=%s chunk=%u op=residency err=\"%s\"",
			 s->op->files[it->file].ds->name, s->op->files[it->file].path, it->idx,
			 strerror(-err));
	count_failed(&s->op->r, err, it->len);
	slot_end(s);
}

static void slot_refetch(struct slot *s);

static void verify_work(struct job *j)
{
	struct slot *s = (struct slot *)((char *)j - offsetof(struct slot, job));
	uint8_t *buf = malloc(s->len ? s->len : 1);
	size_t got = 0;
	s->err = buf ? 0 : -ENOMEM;
	while (!s->err && got < s->len) {
		ssize_t r = pread(s->fd, buf + got, s->len - got, (off_t)(s->base + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			s->err = -errno;
		else if (r == 0)
			s->err = -EBADMSG; /* shorter than its record: as bad as a wrong byte */
		else
			got += (size_t)r;
	}
	if (!s->err && chunk_checksum(buf, s->len) != s->checksum)
		s->err = -EBADMSG;
	free(buf);
	close(s->fd);
}

static void verify_done(struct job *j)
{
	struct slot *s = (struct slot *)((char *)j - offsetof(struct slot, job));
	struct rop *op = s->op;
	struct cache *cache = op->cache;
	struct rop_item *it = &op->items[s->i];
	struct chunk *c = chunk_find(&cache->chunks, it->key);
	bool same = c && c->file == s->f; /* s->f is still referenced: no reuse */
	if (!s->refetched)
		count(&op->r.checked, it->len); /* a chunk once, however often read */
	if (s->err == -EBADMSG) {
		count(&op->r.bad, it->len);
		cache->ctr.checksum_errors++;
		log_err("dataset=%s path=%s chunk=%u tier=%s op=verify err=\"checksum mismatch: "
			"dropping the chunk; it will be read from the cold store again\"",
			op->files[it->file].ds->name, op->files[it->file].path, it->idx,
			s->f->tier < TIER_COUNT ? cache->tiers[s->f->tier].name : "ram");
		if (same)
			chunk_drop(cache, c, "checksum");
	}
	if (!s->err && same)
		c->unverified = false; /* checked now: its first use need not check again */
	cfile_unref(cache, s->f);
	if (s->err && s->err != -EBADMSG)
		slot_failed(s, s->err);
	else if (op->kind == ROP_VERIFY)
		slot_end(s);
	else if (s->err == -EBADMSG && !s->refetched && !cache->stopping)
		slot_refetch(s); /* warm: read it again from the cold store, once */
	else if (s->err == -EBADMSG)
		slot_failed(s, -EBADMSG); /* bad again: the report says so */
	else
		slot_final(s);
}

static void slot_filled(struct cache *cache, struct waiter *w, struct chunk *c, int err);
static void slot_have(struct slot *s, struct chunk *c);

/* warm --verify found the chunk bad and dropped it: fill it again (and
 * verify that copy too). Counted in refetched. */
static void slot_refetch(struct slot *s)
{
	struct rop *op = s->op;
	struct rop_item *it = &op->items[s->i];
	struct rop_file *f = &op->files[it->file];
	struct chunk *c = NULL;
	s->refetched = true;
	s->moved = false;
	s->w.cb = slot_filled;
	int rc = fill_get(op->cache, f->ds, f->path, &f->src, it->idx,
			  &(struct read_ctx){.job = &op->cb.job}, &s->w, &c);
	if (rc == 0)
		return; /* slot_filled follows (and counts it) */
	if (rc < 0) {
		slot_failed(s, rc == -EHOSTDOWN ? -EIO : rc);
	} else {
		count(&op->r.refetched, it->len); /* someone else's fill got it back */
		slot_have(s, c);
	}
}

static void slot_verify(struct slot *s, struct chunk *c)
{
	if (c->state != CHUNK_RESIDENT && c->state != CHUNK_PINNED) {
		/* moving: its copy is checked on the way by the mover */
		if (s->op->kind == ROP_VERIFY)
			slot_end(s);
		else
			slot_final(s);
		return;
	}
	s->fd = chunk_open_fd(s->op->cache, c);
	if (s->fd < 0) {
		slot_failed(s, s->fd);
		return;
	}
	s->f = c->file;
	cfile_ref(s->f);
	s->checksum = c->checksum;
	s->base = chunk_base(c);
	s->len = c->len;
	s->job.work = verify_work;
	s->job.done = verify_done;
	workers_submit(s->op->cache->workers, &s->job);
}

static void slot_moved(struct cache *cache, void *arg, int err);

static void slot_after_move(struct slot *s, struct chunk *c)
{
	struct rop *op = s->op;
	if (op->kind == ROP_PIN) {
		struct rop_item *it = &op->items[s->i];
		if (c->state == CHUNK_PINNED && s->moved && !it->pinned_here) {
			/* pinned by the mover when the copy to the other tier ended */
			it->pinned_here = true;
			count(&op->r.pinned, it->len);
		} else if (c->state == CHUNK_MOVING) {
			c->pin_after_move = true;
			it->pinned_here = true;
			count(&op->r.pinned, it->len);
		} else if (c->state == CHUNK_RESIDENT) {
			int other = c->tier == TIER_HOT ? TIER_WARM : TIER_HOT;
			if (pin_fits(op->cache, c)) {
				pin_chunk(op->cache, c);
				it->pinned_here = true;
				count(&op->r.pinned, it->len);
			} else if (!s->moved && pin_room(op->cache, other) >= c->len) {
				/* its tier's pin room is used up: pin it on the other */
				s->moved = true;
				c->pin_after_move = true;
				if (mover_move(op->cache, c, (enum tier_id)other, true, slot_moved, s) == 0)
					return;
				c->pin_after_move = false;
				count_failed(&op->r, -ENOSPC, it->len);
				slot_end(s);
				return;
			} else {
				count_failed(&op->r, -ENOSPC, it->len);
				slot_end(s);
				return;
			}
		}
	}
	if (op->flags & RES_WARM_VERIFY)
		slot_verify(s, c);
	else
		slot_final(s);
}

static void slot_moved(struct cache *cache, void *arg, int err)
{
	struct slot *s = arg;
	struct rop *op = s->op;
	struct rop_item *it = &op->items[s->i];
	struct chunk *c = chunk_find(&cache->chunks, it->key);
	if (!err)
		count(&op->r.moved, it->len);
	if (op->kind == ROP_DEMOTE) {
		if (err)
			slot_failed(s, err);
		else
			slot_end(s);
		return;
	}
	if (!c) {
		slot_final(s); /* counted as missing */
		return;
	}
	slot_after_move(s, c);
}

static void slot_wait_move(struct slot *s);

/* The chunk is resident (fill done or a hit). */
static void slot_have(struct slot *s, struct chunk *c)
{
	struct rop *op = s->op;
	bool to_move = op->kind == ROP_WARM && op->tier != TIER_COUNT && c->tier != op->tier;
	if (c->state == CHUNK_MOVING && (to_move || op->kind == ROP_PIN)) {
		slot_wait_move(s); /* someone else's copy: not a lack of room */
		return;
	}
	if (to_move && c->state == CHUNK_RESIDENT) {
		int rc = mover_move(op->cache, c, (enum tier_id)op->tier, true, slot_moved, s);
		if (rc == 0)
			return;
		/* no room there: it stays where it is, and the report says so */
	}
	slot_after_move(s, c);
}

/* Warm, pin: the chunk resident (a hit), or filled for this slot. */
static void slot_get(struct slot *s)
{
	struct rop *op = s->op;
	struct rop_item *it = &op->items[s->i];
	struct rop_file *f = &op->files[it->file];
	struct chunk *c = chunk_find(&op->cache->chunks, it->key);
	if (!c) {
		s->w.cb = slot_filled;
		int rc = fill_get(op->cache, f->ds, f->path, &f->src, it->idx,
				  &(struct read_ctx){.job = &op->cb.job}, &s->w, &c);
		if (rc == 0) {
			count(&op->r.filled, it->len);
			return;
		}
		if (rc < 0) {
			slot_failed(s, rc == -EHOSTDOWN ? -EIO : rc);
			return;
		}
	}
	slot_have(s, c);
}

static void slot_filled(struct cache *cache, struct waiter *w, struct chunk *c, int err)
{
	struct slot *s = (struct slot *)w;
	(void)cache;
	if (err >= 0 && s->refetched)
		count(&s->op->r.refetched, s->op->items[s->i].len);
	if (err < 0)
		slot_failed(s, err);
	else if (c->state == CHUNK_UNKEPT)
		slot_final(s); /* served, not kept: counted as missing */
	else
		slot_have(s, c);
}

static void slot_demote(struct slot *s, struct chunk *c)
{
	struct rop *op = s->op;
	struct rop_item *it = &op->items[s->i];
	if (!c) {
		slot_end(s); /* gone meanwhile: nothing to move */
		return;
	}
	if (c->state == CHUNK_PINNED) {
		count(&op->r.skipped_pinned, it->len);
		slot_end(s);
		return;
	}
	if (c->tier != TIER_HOT) {
		slot_end(s);
		return;
	}
	if (c->state == CHUNK_MOVING) {
		slot_wait_move(s); /* a reclaim keeping it, a demotion: see where it ends */
		return;
	}
	int rc = mover_move(op->cache, c, TIER_WARM, op->make_room, slot_moved, s);
	if (rc < 0)
		slot_failed(s, rc);
}

static void slot_wait_fired(evutil_socket_t fd, short what, void *arg)
{
	struct slot *s = arg;
	struct rop *op = s->op;
	struct chunk *c = chunk_find(&op->cache->chunks, op->items[s->i].key);
	(void)fd;
	(void)what;
	if (op->cache->stopping) {
		op->stopped = true;
		slot_end(s);
	} else if (c && c->state == CHUNK_MOVING && cache_now_ns() < s->wait_deadline) {
		slot_wait_move(s);
	} else if (c && c->state == CHUNK_MOVING) {
		slot_failed(s, -EBUSY); /* a copy that outlasted the bound: reported, not hidden */
	} else if (op->kind == ROP_DEMOTE) {
		slot_demote(s, c);
	} else {
		slot_get(s); /* it may have moved, or gone (then it is filled again) */
	}
}

/* The slot's chunk is being copied by someone else: look again shortly. */
static void slot_wait_move(struct slot *s)
{
	struct timeval tv = {.tv_sec = 0, .tv_usec = MOVE_WAIT_POLL_US};
	if (!s->wait) {
		s->wait = evtimer_new(s->op->cache->base, slot_wait_fired, s);
		if (!s->wait) {
			slot_failed(s, -ENOMEM);
			return;
		}
		s->wait_deadline = cache_now_ns() + MOVE_WAIT_MAX_NS;
	}
	if (evtimer_add(s->wait, &tv) < 0)
		slot_failed(s, -ENOMEM);
}

static void slot_start(struct rop *op, size_t i)
{
	struct slot *s = calloc(1, sizeof(*s));
	struct rop_item *it = &op->items[i];
	if (!s) {
		count_failed(&op->r, -ENOMEM, it->len);
		return;
	}
	s->op = op;
	s->i = i;
	s->fd = -1;
	op->inflight++;
	count(&op->r.selected, it->len);
	struct chunk *c = chunk_find(&op->cache->chunks, it->key);
	switch (op->kind) {
	case ROP_WARM:
	case ROP_PIN:
		if (op->flags & RES_WARM_CHECK) {
			slot_final(s);
			return;
		}
		slot_get(s);
		return;
	case ROP_DEMOTE:
		slot_demote(s, c);
		return;
	case ROP_VERIFY:
		if (c)
			slot_verify(s, c);
		else
			slot_end(s);
		return;
	}
}

static void rop_pump(struct rop *op)
{
	op->pumping = true;
	while (op->inflight < op->window && op->next < op->n && !op->stopped) {
		if (op->cache->stopping || (op->cb.gone && op->cb.gone(op->cb.arg))) {
			op->stopped = true;
			break;
		}
		slot_start(op, op->next++);
	}
	op->pumping = false;
	if (op->inflight == 0 && (op->next == op->n || op->stopped))
		rop_finish(op);
}

/* ---- the ops ---- */

static int fail(struct res_result *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct res_result *r, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	r->err = err;
	return err;
}

static int build_failed(struct rop *op, struct res_result *r, int rc)
{
	rop_free(op);
	return fail(r, rc, rc == -E2BIG ? "too many chunks in one request (at most %u)" : "out of memory",
		    ROP_ITEMS_MAX);
}

int residency_warm(struct residency *res, struct dataset *ds, const char *path, uint32_t first,
		   uint32_t nchunks, int tier, unsigned flags, const struct res_cb *cb,
		   struct res_result *r)
{
	struct cache *cache = res->cache;
	struct mf_entry *e = manifest_find(ds->mf, path);
	if (!e)
		return fail(r, -ENOENT, "no file \"%s\" in dataset %s", path, ds->name);
	if (tier != TIER_COUNT && !cache->tiers[tier].present)
		return fail(r, -ENODEV, "there is no %s tier in this daemon's config",
			    tier == TIER_HOT ? "hot" : "warm");
	struct rop *op = rop_new(res, ROP_WARM, cb);
	if (!op)
		return fail(r, -ENOMEM, "out of memory");
	op->tier = tier;
	op->flags = flags;
	int rc = rop_add_chunks(op, ds, e, first, nchunks);
	if (rc < 0)
		return build_failed(op, r, rc);
	rop_pump(op);
	return 0;
}

int residency_pin(struct residency *res, struct dataset *ds, const char *rest, const struct res_cb *cb,
		  struct res_result *r)
{
	struct cache *cache = res->cache;
	char spec[TC_PATH_MAX + TC_DATASET_NAME_MAX + 2];
	snprintf(spec, sizeof(spec), "%s%s%s", ds->name, *rest ? "/" : "", rest);
	if (*rest && !manifest_find(ds->mf, rest) && !manifest_dir_exists(ds->mf, rest))
		return fail(r, -ENOENT, "no file or directory \"%s\" in dataset %s", rest, ds->name);
	struct rop *op = rop_new(res, ROP_PIN, cb);
	if (!op || !(op->pin_spec = strdup(spec))) {
		if (op)
			rop_free(op);
		return fail(r, -ENOMEM, "out of memory");
	}
	int rc = rop_add_manifest(op, ds, rest);
	if (rc < 0)
		return build_failed(op, r, rc);
	/* pins count against capacity: refuse before filling anything */
	uint64_t need = 0, room = 0;
	for (size_t i = 0; i < op->n; i++) {
		struct chunk *c = chunk_find(&cache->chunks, op->items[i].key);
		if (!c || c->state != CHUNK_PINNED)
			need += op->items[i].len;
	}
	for (int t = 0; t < TIER_COUNT; t++)
		room += pin_room(cache, t);
	if (need > room) {
		char a[32], b[32];
		snprintf(a, sizeof(a), "%" PRIu64, need);
		snprintf(b, sizeof(b), "%" PRIu64, room);
		rop_free(op);
		return fail(r, -ENOSPC,
			    "%s does not fit: pinning it needs %s more bytes, the tiers can pin %s more "
			    "(pins may take each tier up to its low watermark; %" PRIu64 " bytes pinned "
			    "now); pinned nothing",
			    spec, a, b, cache->pinned[TIER_HOT] + cache->pinned[TIER_WARM]);
	}
	rop_pump(op);
	return 0;
}

int residency_unpin(struct residency *res, struct dataset *ds, const char *rest, struct res_result *r)
{
	struct cache *cache = res->cache;
	char spec[TC_PATH_MAX + TC_DATASET_NAME_MAX + 2];
	snprintf(spec, sizeof(spec), "%s%s%s", ds->name, *rest ? "/" : "", rest);
	/* a pin above the selection: unpinning part of it is ambiguous */
	for (size_t i = 0; i < res->pins.n; i++) {
		const char *pin = res->pins.specs[i], *prest;
		if (pin_in(pin, ds, &prest) && strlen(prest) < strlen(rest) && path_under(rest, prest))
			return fail(r, -EBUSY,
				    "%s is inside the pin on %s: unpin %s (then pin what should stay)",
				    spec, pin, pin);
	}
	size_t removed = pin_set_remove_under(&res->pins, cache, ds, rest);
	if (!removed)
		return fail(r, -ENOENT, "nothing is pinned at or under %s (tierctl status shows pinned bytes)",
			    spec);
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it))
		if ((c->state == CHUNK_PINNED || c->pin_after_move) && chunk_in(c, ds, rest) &&
		    !pin_set_covers(&res->pins, c)) {
			count(&r->pinned, c->len);
			unpin_chunk(cache, c);
		}
	return 0;
}

int residency_evict(struct residency *res, struct dataset *ds, const char *rest, struct res_result *r)
{
	struct cache *cache = res->cache;
	if (*rest && !manifest_find(ds->mf, rest) && !manifest_dir_exists(ds->mf, rest))
		return fail(r, -ENOENT, "no file or directory \"%s\" in dataset %s", rest, ds->name);
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it)) {
		if (chunk_in(c, ds, rest)) {
			count(&r->selected, c->len);
			if (c->state == CHUNK_PINNED || c->pin_after_move) {
				count(&r->skipped_pinned, c->len);
			} else {
				count(&r->dropped, c->len);
				cache->ctr.evictions++;
				chunk_drop(cache, c, "admin_evict"); /* a moving one goes when its copy ends */
			}
		}
	}
	return 0;
}

int residency_demote(struct residency *res, struct dataset *ds, const char *rest,
		     const struct res_cb *cb, struct res_result *r)
{
	struct cache *cache = res->cache;
	struct tier *warm = &cache->tiers[TIER_WARM];
	if (!warm->present)
		return fail(r, -ENODEV, "there is no warm tier in this daemon's config: nothing to demote to");
	if (*rest && !manifest_find(ds->mf, rest) && !manifest_dir_exists(ds->mf, rest))
		return fail(r, -ENOENT, "no file or directory \"%s\" in dataset %s", rest, ds->name);
	struct rop *op = rop_new(res, ROP_DEMOTE, cb);
	if (!op)
		return fail(r, -ENOMEM, "out of memory");
	uint64_t need = 0;
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it)) {
		if (!chunk_in(c, ds, rest) || c->tier != TIER_HOT)
			continue;
		if (c->state == CHUNK_PINNED) {
			count(&op->r.skipped_pinned, c->len);
			continue;
		}
		int rc = rop_add_chunk(op, c);
		if (rc < 0)
			return build_failed(op, r, rc);
		need += c->len;
	}
	if (need > tier_free(warm)) {
		uint64_t room = tier_free(warm);
		rop_free(op);
		return fail(r, -ENOSPC,
			    "warm has %" PRIu64 " bytes free, demoting needs %" PRIu64 ": evict from "
			    "warm (tierctl evict) or demote less; nothing was moved",
			    room, need);
	}
	rop_pump(op);
	return 0;
}

int residency_verify(struct residency *res, struct dataset *ds, const struct res_cb *cb,
		     struct res_result *r)
{
	struct cache *cache = res->cache;
	struct rop *op = rop_new(res, ROP_VERIFY, cb);
	if (!op)
		return fail(r, -ENOMEM, "out of memory");
	op->window = cache->cfg->workers;
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it)) {
		if (!chunk_in(c, ds, "") ||
		    (c->state != CHUNK_RESIDENT && c->state != CHUNK_PINNED))
			continue;
		int rc = rop_add_chunk(op, c);
		if (rc < 0)
			return build_failed(op, r, rc);
	}
	rop_pump(op);
	return 0;
}

/* A dataset's lifecycle thresholds for this run, seconds (0: never). */
static void lc_thresholds(const struct dataset *ds, const struct res_lifecycle *lc,
			  uint64_t *demote, uint64_t *evict)
{
	if (lc->older_than_s >= 0) {
		*demote = *evict = (uint64_t)lc->older_than_s;
		return;
	}
	*demote = ds->conf.demote_after_s;
	*evict = ds->conf.evict_after_s;
}

int residency_lifecycle(struct residency *res, struct dataset *ds, const struct res_lifecycle *lc,
			const struct res_cb *cb, struct res_result *r)
{
	struct cache *cache = res->cache;
	bool warm = cache->tiers[TIER_WARM].present;
	struct rop *op = rop_new(res, ROP_DEMOTE, cb);
	if (!op)
		return fail(r, -ENOMEM, "out of memory");
	op->make_room = true; /* warm's own policy picks what leaves for it */
	struct chunk_iter it;
	for (struct chunk *c = chunk_iter_first(&it, &cache->chunks); c; c = chunk_iter_next(&it)) {
		uint64_t demote, evict;
		if (ds && c->ds != ds) {
			continue;
		}
		lc_thresholds(c->ds, lc, &demote, &evict);
		int64_t age = lc->as_of_s - c->atime_s;
		if (c->state == CHUNK_PINNED) {
			if ((demote && age > (int64_t)demote) || (evict && age > (int64_t)evict))
				count(&op->r.skipped_pinned, c->len);
		} else if (c->state == CHUNK_RESIDENT) {
			bool hot = c->tier == TIER_HOT;
			if (hot && warm && demote && age > (int64_t)demote) {
				int rc = rop_add_chunk(op, c);
				if (rc < 0)
					return build_failed(op, r, rc);
				count(&op->r.selected, c->len);
			} else if ((!hot || !warm) && evict && age > (int64_t)evict) {
				/* warm data, or hot data with no warm tier below */
				count(&op->r.dropped, c->len);
				if (!lc->dry_run) {
					cache->ctr.evictions++;
					chunk_drop(cache, c, "lifecycle");
				}
			}
		}
	}
	if (lc->dry_run) {
		/* what would move: the chunks selected for demotion */
		op->r.moved = op->r.selected;
		op->n = 0;
	} else {
		op->r.selected = (struct res_count){0}; /* counted again as they start */
	}
	rop_pump(op);
	return 0;
}
