/*
 * LRU: evict the entry read least recently. The baseline every other policy
 * is measured against; under uniform per-epoch reshuffling it hits only about
 * c^2/2 of reads (c = cached fraction), which is why the others exist.
 */
#include "policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Entries read here are on `list`, newest first. Entries moved in
 * without a read (insert_aged: a demotion under demote=flat) keep the age
 * of their last read, older than much of `list`: they go on `aged`, kept
 * in atime order too, and the victim is the older of the two tails. The
 * two lists merged are one LRU by last read. */
struct lru {
	struct policy base;
	struct pol_list list;
	struct pol_list aged;
};

enum { LRU_MAIN = 0, LRU_AGED = 1 }; /* pol_entry.list */

static int lru_create(const struct policy_env *env, struct policy **out)
{
	(void)env;
	struct lru *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	pol_list_init(&l->list);
	pol_list_init(&l->aged);
	*out = &l->base;
	return 0;
}

static void lru_destroy(struct policy *p)
{
	free(p);
}

static int lru_set(struct policy *p, const char *key, const char *value, char *err, size_t n)
{
	(void)value;
	return policy_unknown_tunable(p, key, err, n);
}

static struct pol_list *lru_list_of(struct lru *l, const struct pol_entry *e)
{
	return e->list == LRU_AGED ? &l->aged : &l->list;
}

static void lru_hit(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct lru *l = (struct lru *)p;
	pol_list_unlink(lru_list_of(l, e), e);
	e->atime = now;
	e->list = LRU_MAIN;
	pol_list_push_head(&l->list, e);
}

static void lru_insert(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct lru *l = (struct lru *)p;
	e->atime = now;
	e->list = LRU_MAIN;
	pol_list_push_head(&l->list, e);
}

/* After the entries read later than e: at the head when they come in
 * atime order, as hot's victims do, so this walks nothing then. */
static void lru_insert_aged(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct lru *l = (struct lru *)p;
	(void)now;
	struct pol_entry *at = l->aged.head.next; /* e goes before `at` */
	while (at != &l->aged.head && at->atime > e->atime)
		at = at->next;
	e->list = LRU_AGED;
	e->next = at;
	e->prev = at->prev;
	at->prev->next = e;
	at->prev = e;
	l->aged.bytes += e->size;
	l->aged.count++;
}

static void lru_remove(struct policy *p, struct pol_entry *e)
{
	struct lru *l = (struct lru *)p;
	struct pol_list *from = lru_list_of(l, e);
	pol_list_unlink(from, e);
	pol_list_prefetch_tail(from);
}

/* The older of two candidates (either may be NULL); ties: the aged one,
 * which was read no later and came in earlier. */
static struct pol_entry *lru_older(struct pol_entry *m, struct pol_entry *a)
{
	if (!a)
		return m;
	if (!m)
		return a;
	return a->atime <= m->atime ? a : m;
}

static struct pol_entry *lru_victim(struct policy *p, uint64_t now)
{
	struct lru *l = (struct lru *)p;
	(void)now;
	return lru_older(pol_list_tail(&l->list), pol_list_tail(&l->aged));
}

/* The lists' tail ends merged, oldest first: the order victim() takes
 * them in. */
static size_t lru_next_victims(const struct policy *p, uint64_t now, uint64_t bytes,
			       struct pol_entry **out, size_t max)
{
	const struct lru *l = (const struct lru *)p;
	const struct pol_entry *mh = &l->list.head, *ah = &l->aged.head;
	struct pol_entry *m = l->list.head.prev, *a = l->aged.head.prev;
	uint64_t got = 0;
	size_t n = 0;
	(void)now;
	while (n < max && got < bytes && (m != mh || a != ah)) {
		struct pol_entry *e = lru_older(m != mh ? m : NULL, a != ah ? a : NULL);
		if (e == a)
			a = a->prev;
		else
			m = m->prev;
		out[n++] = e;
		got += e->size;
	}
	return n;
}

const struct policy_ops policy_lru_ops = {
	.name = "lru",
	.summary = "least recently used; the baseline",
	.create = lru_create,
	.destroy = lru_destroy,
	.set = lru_set,
	.hit = lru_hit,
	.insert = lru_insert,
	.remove = lru_remove,
	.victim = lru_victim,
	.tunables = "",
	.next_victims = lru_next_victims,
	.insert_aged = lru_insert_aged,
};
