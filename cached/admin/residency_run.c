/*
 * Running a residency op (residency_op.h): at most op->window slots in
 * flight, each taking one chunk through the stages its op needs (fill,
 * move to the asked tier, checksum re-read, pin) and counting where it
 * ended up. Loop thread only.
 *
 * A chunk that is being copied by someone else when a slot reaches it
 * waits on a short timer (MOVE_WAIT_POLL_US, at most MOVE_WAIT_MAX_NS),
 * then is looked up again: see residency.c.
 */
#include "residency_op.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "log.h"
#include "mover.h"

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

void rop_slot_end(struct slot *s)
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
void rop_slot_final(struct slot *s)
{
	struct rop *op = s->op;
	struct rop_item *it = &op->items[s->i];
	struct chunk *c = chunk_find(&op->cache->chunks, it->key);
	if (!c)
		res_count_add(&op->r.missing, it->len);
	else if (c->tier == TIER_HOT)
		res_count_add(&op->r.hot, it->len);
	else
		res_count_add(&op->r.warm, it->len);
	rop_slot_end(s);
}

/* A failure of one chunk, counted by its reason so the report can say
 * what happened (no room, a checksum, a read-only tier...). */
static void res_count_failed(struct res_result *r, int err, uint64_t len)
{
	struct res_fail *f = NULL;
	res_count_add(&r->failed, len);
	for (unsigned k = 0; k < RES_FAIL_KINDS && !f; k++)
		if (r->fails[k].err == err || !r->fails[k].n.chunks)
			f = &r->fails[k];
	if (!f) {
		f = &r->fails[RES_FAIL_KINDS - 1];
		f->err = 0; /* more kinds than slots: "other" */
	}
	f->err = f->n.chunks && f->err != err ? 0 : err;
	res_count_add(&f->n, len);
}

void rop_slot_failed(struct slot *s, int err)
{
	struct rop_item *it = &s->op->items[s->i];
	if (err != -ENOENT && err != -ENOSPC)
		log_warn("dataset=%s path=%s chunk=%u op=residency err=\"%s\"",
			 s->op->files[it->file].ds->name, s->op->files[it->file].path, it->idx,
			 strerror(-err));
	res_count_failed(&s->op->r, err, it->len);
	rop_slot_end(s);
}

static void slot_filled(struct cache *cache, struct waiter *w, struct chunk *c, int err);
static void slot_have(struct slot *s, struct chunk *c);

/* warm --verify found the chunk bad and dropped it: fill it again (and
 * verify that copy too). Counted in refetched. */
void rop_slot_refetch(struct slot *s)
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
		rop_slot_failed(s, rc == -EHOSTDOWN ? -EIO : rc);
	} else {
		res_count_add(&op->r.refetched, it->len); /* someone else's fill got it back */
		slot_have(s, c);
	}
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
			res_count_add(&op->r.pinned, it->len);
		} else if (c->state == CHUNK_MOVING) {
			c->pin_after_move = true;
			it->pinned_here = true;
			res_count_add(&op->r.pinned, it->len);
		} else if (c->state == CHUNK_RESIDENT) {
			int other = c->tier == TIER_HOT ? TIER_WARM : TIER_HOT;
			if (pin_fits(op->cache, c)) {
				pin_chunk(op->cache, c);
				it->pinned_here = true;
				res_count_add(&op->r.pinned, it->len);
			} else if (!s->moved && pin_room(op->cache, other) >= c->len) {
				/* its tier's pin room is used up: pin it on the other */
				s->moved = true;
				c->pin_after_move = true;
				if (mover_move(op->cache, c, (enum tier_id)other, true, slot_moved, s) == 0)
					return;
				c->pin_after_move = false;
				res_count_failed(&op->r, -ENOSPC, it->len);
				rop_slot_end(s);
				return;
			} else {
				res_count_failed(&op->r, -ENOSPC, it->len);
				rop_slot_end(s);
				return;
			}
		}
	}
	if (op->flags & RES_WARM_VERIFY)
		rop_slot_verify(s, c);
	else
		rop_slot_final(s);
}

static void slot_moved(struct cache *cache, void *arg, int err)
{
	struct slot *s = arg;
	struct rop *op = s->op;
	struct rop_item *it = &op->items[s->i];
	struct chunk *c = chunk_find(&cache->chunks, it->key);
	if (!err)
		res_count_add(&op->r.moved, it->len);
	if (op->kind == ROP_DEMOTE) {
		if (err)
			rop_slot_failed(s, err);
		else
			rop_slot_end(s);
		return;
	}
	if (!c) {
		rop_slot_final(s); /* counted as missing */
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
			res_count_add(&op->r.filled, it->len);
			return;
		}
		if (rc < 0) {
			rop_slot_failed(s, rc == -EHOSTDOWN ? -EIO : rc);
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
		res_count_add(&s->op->r.refetched, s->op->items[s->i].len);
	if (err < 0)
		rop_slot_failed(s, err);
	else if (c->state == CHUNK_UNKEPT)
		rop_slot_final(s); /* served, not kept: counted as missing */
	else
		slot_have(s, c);
}

static void slot_demote(struct slot *s, struct chunk *c)
{
	struct rop *op = s->op;
	struct rop_item *it = &op->items[s->i];
	if (!c) {
		rop_slot_end(s); /* gone meanwhile: nothing to move */
		return;
	}
	if (c->state == CHUNK_PINNED) {
		res_count_add(&op->r.skipped_pinned, it->len);
		rop_slot_end(s);
		return;
	}
	if (c->tier != TIER_HOT) {
		rop_slot_end(s);
		return;
	}
	if (c->state == CHUNK_MOVING) {
		slot_wait_move(s); /* a reclaim keeping it, a demotion: see where it ends */
		return;
	}
	int rc = mover_move(op->cache, c, TIER_WARM, op->make_room, slot_moved, s);
	if (rc < 0)
		rop_slot_failed(s, rc);
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
		rop_slot_end(s);
	} else if (c && c->state == CHUNK_MOVING && cache_now_ns() < s->wait_deadline) {
		slot_wait_move(s);
	} else if (c && c->state == CHUNK_MOVING) {
		rop_slot_failed(s, -EBUSY); /* a copy that outlasted the bound: reported, not hidden */
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
			rop_slot_failed(s, -ENOMEM);
			return;
		}
		s->wait_deadline = cache_now_ns() + MOVE_WAIT_MAX_NS;
	}
	if (evtimer_add(s->wait, &tv) < 0)
		rop_slot_failed(s, -ENOMEM);
}

static void slot_start(struct rop *op, size_t i)
{
	struct slot *s = calloc(1, sizeof(*s));
	struct rop_item *it = &op->items[i];
	if (!s) {
		res_count_failed(&op->r, -ENOMEM, it->len);
		return;
	}
	s->op = op;
	s->i = i;
	s->fd = -1;
	op->inflight++;
	res_count_add(&op->r.selected, it->len);
	struct chunk *c = chunk_find(&op->cache->chunks, it->key);
	switch (op->kind) {
	case ROP_WARM:
	case ROP_PIN:
		if (op->flags & RES_WARM_CHECK) {
			rop_slot_final(s);
			return;
		}
		slot_get(s);
		return;
	case ROP_DEMOTE:
		slot_demote(s, c);
		return;
	case ROP_VERIFY:
		if (c)
			rop_slot_verify(s, c);
		else
			rop_slot_end(s);
		return;
	}
}

void rop_pump(struct rop *op)
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
