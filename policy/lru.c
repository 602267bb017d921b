/*
 * LRU: evict the entry read least recently. The baseline every other policy
 * is measured against; under uniform per-epoch reshuffling it hits only about
 * c^2/2 of reads (c = cached fraction), which is why the others exist.
 */
#include "policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct lru {
	struct policy base;
	struct pol_list list;
};

static int lru_create(const struct policy_env *env, struct policy **out)
{
	(void)env;
	struct lru *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	pol_list_init(&l->list);
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

static void lru_hit(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct lru *l = (struct lru *)p;
	pol_list_unlink(&l->list, e);
	e->atime = now;
	pol_list_push_head(&l->list, e);
}

static void lru_insert(struct policy *p, struct pol_entry *e, uint64_t now)
{
	struct lru *l = (struct lru *)p;
	e->atime = now;
	pol_list_push_head(&l->list, e);
}

static void lru_remove(struct policy *p, struct pol_entry *e)
{
	struct lru *l = (struct lru *)p;
	pol_list_unlink(&l->list, e);
	pol_list_prefetch_tail(&l->list);
}

static struct pol_entry *lru_victim(struct policy *p, uint64_t now)
{
	(void)now;
	return pol_list_tail(&((struct lru *)p)->list);
}

/* The list's tail end, oldest first: the order victim() takes them in. */
static size_t lru_next_victims(const struct policy *p, uint64_t now, uint64_t bytes,
			       struct pol_entry **out, size_t max)
{
	const struct pol_list *l = &((const struct lru *)p)->list;
	uint64_t got = 0;
	size_t n = 0;
	(void)now;
	for (struct pol_entry *e = l->head.prev; e != &l->head && n < max && got < bytes; e = e->prev) {
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
};
