/*
 * Pins: see pins.h (and residency.c for what a pin means).
 */
#include "pins.h"

#include <errno.h>
#include <stdlib.h>

#include "chunk.h"
#include "index.h"
#include "log.h"
#include "mover.h"
#include "policy_glue.h"

/* "DATASET[/PATH]" of a pin: split without copying. */
static void pin_split(const char *spec, size_t *dn, const char **rest)
{
	const char *slash = strchr(spec, '/');
	*dn = slash ? (size_t)(slash - spec) : strlen(spec);
	*rest = slash ? slash + 1 : "";
}

bool pin_in(const char *spec, const struct dataset *ds, const char **rest)
{
	size_t dn;
	pin_split(spec, &dn, rest);
	return strlen(ds->name) == dn && strncmp(spec, ds->name, dn) == 0;
}

bool pin_set_covers(const struct pin_set *ps, const struct chunk *c)
{
	const char *rest;
	for (size_t i = 0; i < ps->n; i++)
		if (pin_in(ps->specs[i], c->ds, &rest) && path_under(c->path, rest))
			return true;
	return false;
}

int pin_set_add(struct pin_set *ps, const char *spec)
{
	for (size_t i = 0; i < ps->n; i++)
		if (strcmp(ps->specs[i], spec) == 0)
			return 0;
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 16;
		char **v = realloc(ps->specs, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ps->specs = v;
		ps->cap = cap;
	}
	if (!(ps->specs[ps->n] = strdup(spec)))
		return -ENOMEM;
	ps->n++;
	return 0;
}

struct pin_load {
	struct pin_set *ps;
	struct cache *cache;
};

static int pin_load_one(void *arg, const char *key, const void *v, size_t n)
{
	struct pin_load *pl = arg;
	size_t dn;
	const char *rest;
	(void)v;
	(void)n;
	pin_split(key, &dn, &rest);
	if (!cache_dataset(pl->cache, key, dn)) {
		log_info("op=pin_load pin=\"%s\" dropped=\"its dataset is no longer configured\"", key);
		index_kv_delete(pl->cache->ix, PIN_NS, key);
		return 0;
	}
	return pin_set_add(pl->ps, key) < 0 ? -ENOMEM : 0;
}

int pin_set_load(struct pin_set *ps, struct cache *cache)
{
	struct pin_load pl = {.ps = ps, .cache = cache};
	return index_kv_scan(cache->ix, PIN_NS, pin_load_one, &pl);
}

size_t pin_set_remove_under(struct pin_set *ps, struct cache *cache, const struct dataset *ds,
			    const char *rest)
{
	size_t removed = 0;
	for (size_t i = 0; i < ps->n;) {
		const char *prest;
		if (pin_in(ps->specs[i], ds, &prest) && path_under(prest, rest)) {
			index_kv_delete(cache->ix, PIN_NS, ps->specs[i]);
			free(ps->specs[i]);
			ps->specs[i] = ps->specs[--ps->n];
			removed++;
		} else {
			i++;
		}
	}
	return removed;
}

void pin_set_free(struct pin_set *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->specs[i]);
	free(ps->specs);
	*ps = (struct pin_set){0};
}

void pin_chunk(struct cache *cache, struct chunk *c)
{
	if (c->state != CHUNK_RESIDENT)
		return;
	chunk_policy_remove(cache, c);
	c->state = CHUNK_PINNED;
	cache->pinned[c->tier] += c->len;
	c->ds->pinned_bytes += c->len;
}

void unpin_chunk(struct cache *cache, struct chunk *c)
{
	c->pin_after_move = false;
	if (c->state != CHUNK_PINNED)
		return;
	c->state = CHUNK_RESIDENT;
	cache->pinned[c->tier] -= c->len;
	c->ds->pinned_bytes -= c->len;
	chunk_policy_insert(cache, c, cache_now_ns());
	mover_kick(cache); /* the policies may be over their budget now */
}

uint64_t pin_room(const struct cache *cache, int t)
{
	if (!cache->tiers[t].present)
		return 0;
	uint64_t budget = policy_glue_budget(cache, (enum tier_id)t);
	return cache->pinned[t] >= budget ? 0 : budget - cache->pinned[t];
}

bool pin_fits(const struct cache *cache, const struct chunk *c)
{
	return pin_room(cache, c->tier) >= c->len;
}
