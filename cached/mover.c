/*
 * Tier maintenance: see mover.h.
 *
 * Two reasons to give chunks up, checked on every pass:
 *   - the policies' budget (policy_glue.h): after a fill, a move or a
 *     promotion the chunks in a tier's policies may exceed its low
 *     watermark; victims go until they do not;
 *   - the backstop: bytes no policy controls (fills and copies in flight,
 *     files held open, chunks served without being kept) pushed the tier
 *     past its high watermark; it drains to the low one, with hysteresis
 *     (cachefilesd style), so such moves come in batches.
 * A hot victim is demoted to warm when the placement says so (warm's
 * policy admits it), else dropped; a warm victim is dropped.
 */
#include "mover.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "chunk.h"
#include "log.h"
#include "policy_glue.h"
#include "residency.h"
#include "workers.h"

#define MOVES_MAX 4

struct move {
	struct job job;
	struct daemon *d;
	struct chunk *c;
	uint8_t from, to;
	uint32_t len;
	uint64_t checksum;
	int err;
	mover_done_fn cb; /* mover_move(): told how it ended */
	void *arg;
	char src[PATH_MAX + 96];
	char tmp[PATH_MAX + 96];
	char dst[PATH_MAX + 96];
};

static void mover_run(evutil_socket_t fd, short what, void *arg);

int mover_init(struct daemon *d)
{
	d->mover_ev = event_new(d->base, -1, 0, mover_run, d);
	return d->mover_ev ? 0 : -ENOMEM;
}

void mover_free(struct daemon *d)
{
	if (d->mover_ev)
		event_free(d->mover_ev);
	d->mover_ev = NULL;
}

void mover_kick(struct daemon *d)
{
	if (d->mover_ev && !d->stopping && !event_pending(d->mover_ev, EV_TIMEOUT, NULL))
		event_active(d->mover_ev, EV_TIMEOUT, 0);
}

struct chunk *mover_victim(struct daemon *d, enum tier_id t)
{
	struct chunk *best = NULL;
	uint64_t now = daemon_now_ns();
	for (unsigned i = 0; i < d->nds; i++) {
		struct policy *p = d->ds[i]->pol[t];
		if (!p || !p->entries)
			continue;
		struct pol_entry *e = policy_victim(p, now);
		/* across datasets: give up the one whose candidate was read
		 * longest ago */
		if (e && (!best || e->atime < best->pe.atime))
			best = chunk_of_entry(e);
	}
	return best;
}

void mover_evict(struct daemon *d, struct chunk *c)
{
	d->ctr.evictions++;
	chunk_drop(d, c, "evict");
}

int mover_make_room(struct daemon *d, enum tier_id t, uint64_t len)
{
	struct tier *tr = &d->tiers[t];
	if (!tr->present || len > tr->capacity)
		return -ENOSPC;
	while (tier_free(tr) < len) {
		struct chunk *v = mover_victim(d, t);
		if (!v)
			return -ENOSPC;
		mover_evict(d, v);
	}
	return 0;
}

/* Worker: copy a chunk file between tiers, verifying its checksum. */
static void move_work(struct job *j)
{
	struct move *m = (struct move *)j;
	int fd = -1;
	void *buf = malloc(m->len ? m->len : 1);
	if (!buf) {
		m->err = -ENOMEM;
		return;
	}
	m->err = tier_file_read(m->src, buf, m->len);
	if (!m->err && chunk_checksum(buf, m->len) != m->checksum)
		m->err = -EBADMSG;
	if (!m->err)
		m->err = tier_file_write(m->tmp, m->dst, buf, m->len, &fd);
	if (fd >= 0)
		close(fd);
	free(buf);
}

static void move_done(struct job *j)
{
	struct move *m = (struct move *)j;
	struct daemon *d = m->d;
	struct chunk *c = m->c;
	int err = m->err ? m->err : c->doomed ? -ENOENT : 0;
	d->moves_inflight--;
	d->moving_bytes[m->from] -= m->len;
	policy_glue_arrived(c->ds, m->to, m->len);
	c->state = CHUNK_RESIDENT;
	if (m->err || c->doomed) {
		tier_unreserve(&d->tiers[m->to], m->len);
		if (!m->err)
			unlink(m->dst);
		chunk_policy_insert(d, c, daemon_now_ns());
		if (m->err == -EBADMSG) {
			d->ctr.checksum_errors++;
			log_err("dataset=%s path=%s chunk=%u tier=%s op=move err=\"checksum mismatch: "
				"dropping the chunk; it will be read from the cold store again\"",
				c->ds->name, c->path, c->idx, d->tiers[m->from].name);
		} else if (m->err) {
			log_warn("dataset=%s path=%s chunk=%u op=move from=%s to=%s err=\"%s\"",
				 c->ds->name, c->path, c->idx, d->tiers[m->from].name,
				 d->tiers[m->to].name, strerror(-m->err));
		}
		chunk_drop(d, c, m->err == -EBADMSG ? "checksum" : "move_failed");
	} else {
		tier_commit(&d->tiers[m->to], m->len);
		chunk_move_commit(d, c, m->to);
		chunk_policy_insert(d, c, daemon_now_ns());
		if (m->to > m->from)
			d->ctr.demotions++;
		else
			d->ctr.promotions++;
		if (c->pin_after_move)
			residency_pin_moved(d, c);
	}
	if (m->cb)
		m->cb(d, m->arg, err);
	free(m);
	mover_kick(d);
}

/* Start copying c to tier `to`, whose space is already reserved. */
static int move_start(struct daemon *d, struct chunk *c, uint8_t to, mover_done_fn cb, void *arg)
{
	struct move *m = calloc(1, sizeof(*m));
	if (!m) {
		tier_unreserve(&d->tiers[to], c->len);
		return -ENOMEM;
	}
	m->cb = cb;
	m->arg = arg;
	chunk_policy_remove(d, c);
	c->state = CHUNK_MOVING;
	m->d = d;
	m->c = c;
	m->from = c->tier;
	m->to = to;
	m->len = c->len;
	m->checksum = c->checksum;
	tier_chunk_path(&d->tiers[m->from], c->key, m->src, sizeof(m->src));
	tier_tmp_path(&d->tiers[to], c->key, m->tmp, sizeof(m->tmp));
	tier_chunk_path(&d->tiers[to], c->key, m->dst, sizeof(m->dst));
	m->job.work = move_work;
	m->job.done = move_done;
	d->moves_inflight++;
	d->moving_bytes[m->from] += m->len;
	policy_glue_arriving(c->ds, to, m->len);
	workers_submit(d->workers, &m->job);
	return 0;
}

int mover_move(struct daemon *d, struct chunk *c, enum tier_id to, bool make_room, mover_done_fn cb,
	       void *arg)
{
	struct tier *t = &d->tiers[to];
	if (!t->present)
		return -ENODEV;
	if (c->state != CHUNK_RESIDENT || d->stopping)
		return -EBUSY;
	if (c->tier == to)
		return -EALREADY;
	if (!tier_reserve(t, c->len) &&
	    !(make_room && mover_make_room(d, to, c->len) == 0 && tier_reserve(t, c->len)))
		return -ENOSPC;
	return move_start(d, c, (uint8_t)to, cb, arg);
}

void mover_promote(struct daemon *d, struct chunk *c)
{
	struct tier *hot = &d->tiers[TIER_HOT];
	if (c->tier != TIER_WARM || c->state != CHUNK_RESIDENT || d->stopping)
		return;
	if (d->moves_inflight >= MOVES_MAX || !tier_reserve(hot, c->len))
		return;
	move_start(d, c, TIER_HOT, NULL, NULL);
}

static uint64_t tier_load(const struct daemon *d, enum tier_id t)
{
	const struct tier *tr = &d->tiers[t];
	return tr->used + tr->reserved - d->moving_bytes[t];
}

enum give_up {
	GAVE_UP,   /* one chunk left (or is leaving) the tier */
	GIVE_WAIT, /* copies are saturated: go on when one finishes */
	GIVE_NONE, /* no policy of the tier holds anything */
};

/* Give up the tier's next victim: demote it or drop it. */
static enum give_up give_up_one(struct daemon *d, enum tier_id t)
{
	bool warm = t == TIER_HOT && d->tiers[TIER_WARM].present;
	if (warm && d->moves_inflight >= MOVES_MAX)
		return GIVE_WAIT; /* before asking warm's policy: it counts the ask */
	struct chunk *v = mover_victim(d, t);
	if (!v)
		return GIVE_NONE;
	if (warm && policy_glue_demote(d, v) == TIER_WARM) {
		struct tier *wt = &d->tiers[TIER_WARM];
		if (tier_reserve(wt, v->len) ||
		    (mover_make_room(d, TIER_WARM, v->len) == 0 && tier_reserve(wt, v->len))) {
			move_start(d, v, TIER_WARM, NULL, NULL);
			return GAVE_UP;
		}
		/* warm cannot take it: drop it */
	}
	mover_evict(d, v);
	return GAVE_UP;
}

static void drain(struct daemon *d, enum tier_id t)
{
	struct tier *tr = &d->tiers[t];
	enum give_up g = GAVE_UP;
	if (!tr->present)
		return;
	uint64_t budget = policy_glue_budget(d, t);
	/* pinned chunks are in no policy but take their room all the same */
	budget = budget > d->pinned[t] ? budget - d->pinned[t] : 0;
	while (policy_glue_tier_bytes(d, t) > budget) {
		g = give_up_one(d, t);
		if (g != GAVE_UP)
			break;
	}
	if (g == GIVE_WAIT)
		return;
	if (!d->draining[t] && tier_over_high(tr))
		d->draining[t] = true;
	while (d->draining[t] && tier_load(d, t) > tr->low_bytes) {
		g = give_up_one(d, t);
		if (g == GIVE_WAIT)
			return; /* continue when a move finishes */
		if (g == GIVE_NONE)
			break;
	}
	if (tier_load(d, t) <= tr->low_bytes)
		d->draining[t] = false;
}

static void mover_run(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct daemon *d = arg;
	if (d->stopping)
		return;
	drain(d, TIER_WARM);
	drain(d, TIER_HOT);
}
