/*
 * Tier maintenance: see mover.h.
 *
 * Watermarks have hysteresis (cachefilesd style): a tier starts draining
 * when used + reserved passes high_water and stops at low_water, so moves
 * come in batches instead of one per fill.
 */
#include "mover.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <xxhash.h>

#include "chunk.h"
#include "log.h"
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
	if (!m->err && XXH64(buf, m->len, 0) != m->checksum)
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
	d->moves_inflight--;
	d->moving_bytes[m->from] -= m->len;
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
	}
	free(m);
	mover_kick(d);
}

/* Start copying c to tier `to`, whose space is already reserved. */
static void move_start(struct daemon *d, struct chunk *c, uint8_t to)
{
	struct move *m = calloc(1, sizeof(*m));
	if (!m) {
		tier_unreserve(&d->tiers[to], c->len);
		return;
	}
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
	workers_submit(d->workers, &m->job);
}

void mover_promote(struct daemon *d, struct chunk *c)
{
	struct tier *hot = &d->tiers[TIER_HOT];
	if (c->tier != TIER_WARM || c->state != CHUNK_RESIDENT || d->stopping)
		return;
	if (d->moves_inflight >= MOVES_MAX || !tier_reserve(hot, c->len))
		return;
	move_start(d, c, TIER_HOT);
}

static uint64_t tier_load(const struct daemon *d, enum tier_id t)
{
	const struct tier *tr = &d->tiers[t];
	return tr->used + tr->reserved - d->moving_bytes[t];
}

static void drain(struct daemon *d, enum tier_id t)
{
	struct tier *tr = &d->tiers[t];
	bool demote = t == TIER_HOT && d->tiers[TIER_WARM].present;
	if (!tr->present)
		return;
	if (!d->draining[t] && tier_over_high(tr))
		d->draining[t] = true;
	while (d->draining[t] && tier_load(d, t) > tr->low_bytes) {
		if (demote && d->moves_inflight >= MOVES_MAX)
			return; /* continue when a move finishes */
		struct chunk *v = mover_victim(d, t);
		if (!v)
			break;
		if (!demote) {
			mover_evict(d, v);
			continue;
		}
		struct tier *warm = &d->tiers[TIER_WARM];
		if (!tier_reserve(warm, v->len) &&
		    (mover_make_room(d, TIER_WARM, v->len) < 0 || !tier_reserve(warm, v->len))) {
			mover_evict(d, v); /* warm cannot take it: drop it */
			continue;
		}
		move_start(d, v, TIER_WARM);
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
