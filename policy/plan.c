/*
 * Plan store, see plan.h. Keys get a dense id in one store-wide keymap; each
 * plan keeps its reads as dense ids with, per position, the absolute
 * position of the same key's next read, and per dense id the position of
 * its next read at or after the cursor (nextpos) and of its last read in the
 * plan (lastpos, to chain appended reads). Positions are absolute (they
 * never change as the consumed prefix is compacted away).
 *
 * Single-threaded; no I/O.
 */
#include "plan.h"

#include "keymap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Reads ahead of the cursor whose per-key slots are prefetched. */
#define PLAN_PREFETCH 16

struct plan {
	uint64_t job;
	uint32_t *ids;   /* reads [base, base + len) as dense ids */
	uint64_t *keys;  /* the same reads as keys: an in-order read needs no lookup */
	uint64_t *next;  /* absolute position of the same id's next read */
	uint64_t base, len, cap;
	uint64_t cursor; /* absolute position of the next expected read */
	uint64_t *nextpos, *lastpos; /* per dense id */
	uint32_t nids;
	uint64_t steps, start_tick;
	double stride; /* store ticks per plan step, measured */
};

struct plan_store {
	struct keymap ids; /* key -> dense id */
	uint32_t nids;
	struct plan *plans;
	size_t nplans, capplans;
	uint64_t ticks;
	uint64_t version;  /* bumped when an answer may have changed other than by time */
	uint64_t last_key; /* the key looked up last, and its id: access() then */
	uint32_t last_id;  /* next_use() ask about the same key */
	bool last_valid;
	uint32_t window;
};

int plan_store_create(struct plan_store **out)
{
	struct plan_store *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	keymap_init(&ps->ids);
	ps->window = 64;
	*out = ps;
	return 0;
}

static void plan_free(struct plan *pl)
{
	free(pl->ids);
	free(pl->keys);
	free(pl->next);
	free(pl->nextpos);
	free(pl->lastpos);
	memset(pl, 0, sizeof(*pl));
}

void plan_store_destroy(struct plan_store *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->nplans; i++)
		plan_free(&ps->plans[i]);
	free(ps->plans);
	keymap_free(&ps->ids);
	free(ps);
}

void plan_store_set_window(struct plan_store *ps, uint32_t window)
{
	ps->window = window;
}

uint64_t plan_store_ticks(const struct plan_store *ps)
{
	return ps->ticks;
}

size_t plan_store_count(const struct plan_store *ps)
{
	return ps->nplans;
}

static struct plan *plan_find(const struct plan_store *ps, uint64_t job)
{
	for (size_t i = 0; i < ps->nplans; i++)
		if (ps->plans[i].job == job)
			return &ps->plans[i];
	return NULL;
}

/* The dense id of a key already known, through the one-entry cache. */
static bool plan_id_find(struct plan_store *ps, uint64_t key, uint32_t *id)
{
	if (ps->last_valid && ps->last_key == key) {
		*id = ps->last_id;
		return true;
	}
	uint64_t *v = keymap_get(&ps->ids, key);
	if (!v)
		return false;
	ps->last_key = key;
	ps->last_id = *id = (uint32_t)*v;
	ps->last_valid = true;
	return true;
}

static int plan_id_get(struct plan_store *ps, uint64_t key, uint32_t *id)
{
	uint64_t *v = keymap_get(&ps->ids, key);
	if (v) {
		*id = (uint32_t)*v;
		return 0;
	}
	if (ps->nids == UINT32_MAX)
		return -ENOMEM;
	int rc = keymap_put(&ps->ids, key, ps->nids);
	if (rc < 0)
		return rc;
	*id = ps->nids++;
	return 0;
}

static int plan_ids_reserve(struct plan *pl, uint32_t nids)
{
	if (nids <= pl->nids)
		return 0;
	uint32_t n = pl->nids ? pl->nids : 1024;
	while (n < nids)
		n = n > UINT32_MAX / 2 ? UINT32_MAX : 2 * n;
	uint64_t *np = realloc(pl->nextpos, (size_t)n * sizeof(*np));
	if (!np)
		return -ENOMEM;
	pl->nextpos = np;
	uint64_t *lp = realloc(pl->lastpos, (size_t)n * sizeof(*lp));
	if (!lp)
		return -ENOMEM;
	pl->lastpos = lp;
	for (uint32_t i = pl->nids; i < n; i++)
		np[i] = lp[i] = PLAN_NONE;
	pl->nids = n;
	return 0;
}

static int plan_reads_reserve(struct plan *pl, uint64_t more)
{
	if (pl->len + more <= pl->cap)
		return 0;
	/* Drop the consumed prefix first: positions are absolute, so only
	 * base moves. */
	uint64_t gone = pl->cursor - pl->base;
	if (gone && gone >= pl->len / 2) { /* amortised: move at most what was consumed */
		memmove(pl->ids, pl->ids + gone, (pl->len - gone) * sizeof(*pl->ids));
		memmove(pl->keys, pl->keys + gone, (pl->len - gone) * sizeof(*pl->keys));
		memmove(pl->next, pl->next + gone, (pl->len - gone) * sizeof(*pl->next));
		pl->base += gone;
		pl->len -= gone;
		if (pl->len + more <= pl->cap)
			return 0;
	}
	uint64_t n = pl->cap ? pl->cap : 1024;
	while (n < pl->len + more)
		n *= 2;
	uint32_t *ni = realloc(pl->ids, n * sizeof(*ni));
	if (!ni)
		return -ENOMEM;
	pl->ids = ni;
	uint64_t *nk = realloc(pl->keys, n * sizeof(*nk));
	if (!nk)
		return -ENOMEM;
	pl->keys = nk;
	uint64_t *nn = realloc(pl->next, n * sizeof(*nn));
	if (!nn)
		return -ENOMEM;
	pl->next = nn;
	pl->cap = n;
	return 0;
}

static struct plan *plan_add(struct plan_store *ps, uint64_t job)
{
	if (ps->nplans == ps->capplans) {
		size_t n = ps->capplans ? 2 * ps->capplans : 4;
		struct plan *np = realloc(ps->plans, n * sizeof(*np));
		if (!np)
			return NULL;
		ps->plans = np;
		ps->capplans = n;
	}
	struct plan *pl = &ps->plans[ps->nplans++];
	memset(pl, 0, sizeof(*pl));
	pl->job = job;
	pl->start_tick = ps->ticks;
	pl->stride = 1.0;
	return pl;
}

int plan_store_append(struct plan_store *ps, uint64_t job, const uint64_t *keys, size_t n)
{
	if (job == PLAN_JOB_ANY)
		return -EINVAL;
	struct plan *pl = plan_find(ps, job);
	if (!pl && !(pl = plan_add(ps, job)))
		return -ENOMEM;
	ps->version++;
	int rc = plan_reads_reserve(pl, n);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		uint32_t id;
		rc = plan_id_get(ps, keys[i], &id);
		if (rc < 0)
			return rc;
		rc = plan_ids_reserve(pl, id + 1);
		if (rc < 0)
			return rc;
		uint64_t pos = pl->base + pl->len;
		pl->ids[pl->len] = id;
		pl->keys[pl->len] = keys[i];
		pl->next[pl->len] = PLAN_NONE;
		pl->len++;
		uint64_t last = pl->lastpos[id];
		if (last != PLAN_NONE && last >= pl->cursor)
			pl->next[last - pl->base] = pos;
		if (pl->nextpos[id] == PLAN_NONE)
			pl->nextpos[id] = pos;
		pl->lastpos[id] = pos;
	}
	return 0;
}

int plan_store_drop(struct plan_store *ps, uint64_t job)
{
	struct plan *pl = plan_find(ps, job);
	if (!pl)
		return -ENOENT;
	plan_free(pl);
	*pl = ps->plans[--ps->nplans];
	ps->version++;
	return 0;
}

int plan_store_set(struct plan_store *ps, uint64_t job, const uint64_t *keys, size_t n)
{
	if (job == PLAN_JOB_ANY)
		return -EINVAL;
	(void)plan_store_drop(ps, job);
	return plan_store_append(ps, job, keys, n);
}

/* Move the cursor one read on: that id's next read is the one after it. */
static void plan_step(struct plan *pl)
{
	uint64_t i = pl->cursor - pl->base;
	pl->nextpos[pl->ids[i]] = pl->next[i];
	pl->cursor++;
}

static void plan_count_step(struct plan_store *ps, struct plan *pl)
{
	pl->steps++;
	pl->stride = (double)(ps->ticks - pl->start_tick) / (double)pl->steps;
	if (pl->stride < 1.0)
		pl->stride = 1.0;
}

static void plan_advance(struct plan_store *ps, struct plan *pl, uint32_t id)
{
	uint64_t end = pl->base + pl->len;
	if (pl->cursor >= end || id >= pl->nids)
		return;
	uint64_t at = pl->nextpos[id];
	if (at == PLAN_NONE || at - pl->cursor > ps->window)
		return; /* not this plan's read (or too far off to trust) */
	if (at != pl->cursor)
		ps->version++; /* reads skipped: their keys' answers moved */
	while (pl->cursor <= at)
		plan_step(pl);
	plan_count_step(ps, pl);
}

/* The common case: the read is the one the plan expects next. */
static bool plan_expected(struct plan_store *ps, struct plan *pl, uint64_t key)
{
	if (pl->cursor >= pl->base + pl->len || pl->keys[pl->cursor - pl->base] != key)
		return false;
	ps->last_key = key;
	ps->last_id = pl->ids[pl->cursor - pl->base];
	ps->last_valid = true;
	/* The plan is the future: load the slots the reads a little ahead
	 * will update, so following a plan costs no cache miss. */
	uint64_t ahead = pl->cursor - pl->base + PLAN_PREFETCH;
	if (ahead < pl->len && pl->ids[ahead] < pl->nids)
		__builtin_prefetch(&pl->nextpos[pl->ids[ahead]]);
	plan_step(pl);
	plan_count_step(ps, pl);
	return true;
}

void plan_store_access(struct plan_store *ps, uint64_t job, uint64_t key)
{
	ps->ticks++;
	if (job == PLAN_JOB_ANY) {
		/* Job unknown: only a plan whose very next read this is
		 * moves; any plan could hold the key somewhere ahead, and
		 * dragging them all forward would lose their positions. */
		for (size_t i = 0; i < ps->nplans; i++)
			(void)plan_expected(ps, &ps->plans[i], key);
		return;
	}
	struct plan *pl = plan_find(ps, job);
	uint32_t id;
	if (!pl || plan_expected(ps, pl, key) || !plan_id_find(ps, key, &id))
		return;
	plan_advance(ps, pl, id);
}

void plan_store_seek(struct plan_store *ps, uint64_t job, uint64_t pos)
{
	struct plan *pl = plan_find(ps, job);
	if (!pl)
		return;
	uint64_t end = pl->base + pl->len;
	if (pos > end)
		pos = end;
	if (pl->cursor >= pos)
		return;
	if (pos - pl->cursor > 1)
		ps->version++; /* several reads passed at once: their answers moved */
	while (pl->cursor < pos) {
		plan_step(pl);
		pl->steps++;
	}
	pl->stride = pl->steps ? (double)(ps->ticks - pl->start_tick) / (double)pl->steps : 1.0;
	if (pl->stride < 1.0)
		pl->stride = 1.0;
}

uint64_t plan_store_cursor(const struct plan_store *ps, uint64_t job)
{
	const struct plan *pl = plan_find(ps, job);
	return pl ? pl->cursor : 0;
}

uint64_t plan_store_next_use(struct plan_store *ps, uint64_t key)
{
	uint32_t id;
	if (!plan_id_find(ps, key, &id))
		return PLAN_NONE;
	uint64_t best = PLAN_NONE;
	for (size_t i = 0; i < ps->nplans; i++) {
		const struct plan *pl = &ps->plans[i];
		if (id >= pl->nids || pl->nextpos[id] == PLAN_NONE)
			continue;
		uint64_t dist = pl->nextpos[id] - pl->cursor;
		uint64_t t = ps->ticks + (pl->stride == 1.0 ? dist : (uint64_t)((double)dist * pl->stride));
		if (t < best)
			best = t;
	}
	return best;
}

uint64_t plan_store_oracle(void *ctx, uint64_t key, uint64_t now)
{
	(void)now;
	return plan_store_next_use(ctx, key);
}

uint64_t plan_store_version(const struct plan_store *ps)
{
	return ps->version;
}

uint64_t plan_store_version_cb(void *ctx)
{
	return plan_store_version(ctx);
}

uint64_t plan_store_remaining(const struct plan_store *ps, uint64_t job)
{
	const struct plan *pl = plan_find(ps, job);
	return pl ? pl->base + pl->len - pl->cursor : 0;
}
