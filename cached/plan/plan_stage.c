/*
 * Plan registrations in progress: see plan_stage.h. Loop thread only.
 */
#include "plan_stage.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void stage_free(struct plan_stage *st)
{
	free(st->ix);
	free(st);
}

struct plan_stage *plan_stage_get(struct plan_stages *s, const void *c, const void *ds, uint64_t job,
				  uint32_t rank)
{
	for (struct plan_stage *st = s->list; st; st = st->next)
		if (st->c == c && st->ds == ds && st->job == job && st->rank == rank)
			return st;
	return NULL;
}

int plan_stage_start(struct plan_stages *s, const void *c, const void *ds, const void *mf,
		     uint64_t job, uint32_t rank, uint8_t flags, struct plan_stage **out)
{
	struct plan_stage *old = plan_stage_get(s, c, ds, job, rank);
	if (old)
		plan_stage_drop(s, old);
	unsigned n = 0;
	for (struct plan_stage *st = s->list; st; st = st->next)
		n += st->c == c;
	if (n >= PLAN_STAGE_CONN_MAX)
		return -EBUSY;
	struct plan_stage *st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->c = c;
	st->ds = ds;
	st->mf = mf;
	st->job = job;
	st->rank = rank;
	st->flags = flags;
	st->next = s->list;
	s->list = st;
	*out = st;
	return 0;
}

int plan_stage_add(struct plan_stages *s, struct plan_stage *st, const uint32_t *ix, size_t n,
		   uint64_t fp)
{
	if (n > PLAN_STAGE_CONN_ENTRIES ||
	    plan_stage_conn_entries(s, st->c) > PLAN_STAGE_CONN_ENTRIES - n)
		return -E2BIG;
	if (st->n + n > st->cap) {
		/* grow by half, never past what the bound lets this stage hold */
		size_t cap = st->cap ? st->cap + st->cap / 2 : 4096;
		if (cap < st->n + n)
			cap = st->n + n;
		if (cap > PLAN_STAGE_CONN_ENTRIES)
			cap = PLAN_STAGE_CONN_ENTRIES;
		uint32_t *v = realloc(st->ix, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		st->ix = v;
		st->cap = cap;
	}
	if (n)
		memcpy(st->ix + st->n, ix, n * sizeof(*ix));
	st->n += n;
	st->fp += fp;
	return 0;
}

void plan_stage_drop(struct plan_stages *s, struct plan_stage *st)
{
	for (struct plan_stage **p = &s->list; *p; p = &(*p)->next) {
		if (*p == st) {
			*p = st->next;
			stage_free(st);
			return;
		}
	}
}

static void drop_where(struct plan_stages *s, const void *c, const void *ds)
{
	for (struct plan_stage **p = &s->list; *p;) {
		struct plan_stage *st = *p;
		if ((c && st->c == c) || (ds && st->ds == ds)) {
			*p = st->next;
			stage_free(st);
		} else {
			p = &st->next;
		}
	}
}

void plan_stage_drop_conn(struct plan_stages *s, const void *c)
{
	if (c)
		drop_where(s, c, NULL);
}

void plan_stage_drop_ds(struct plan_stages *s, const void *ds)
{
	if (ds)
		drop_where(s, NULL, ds);
}

void plan_stages_free(struct plan_stages *s)
{
	while (s->list) {
		struct plan_stage *st = s->list;
		s->list = st->next;
		stage_free(st);
	}
}

size_t plan_stage_conn_entries(const struct plan_stages *s, const void *c)
{
	size_t n = 0;
	for (const struct plan_stage *st = s->list; st; st = st->next)
		if (st->c == c)
			n += st->n;
	return n;
}

size_t plan_stage_conn_bytes(const struct plan_stages *s, const void *c)
{
	size_t n = 0;
	for (const struct plan_stage *st = s->list; st; st = st->next)
		if (st->c == c)
			n += sizeof(*st) + st->cap * sizeof(*st->ix);
	return n;
}

uint64_t plan_stage_fp(const char *path)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	return h;
}
