/*
 * What a segment reclaim keeps: see reclaim_rank.h.
 */
#include "reclaim_rank.h"

#include <stdlib.h>

#include "chunk.h"
#include "policy_glue.h"

static int by_entry(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct rank_item *)a)->e;
	uintptr_t y = (uintptr_t)((const struct rank_item *)b)->e;
	return (x > y) - (x < y);
}

/* The bytes a reclaim of a segment of seg_size bytes makes the tier give
 * up soon: refilling them takes room the policies do not have. */
static uint64_t rank_need(const struct reclaim_rank *rk, uint64_t seg_size)
{
	return seg_size > rk->room ? seg_size - rk->room : 0;
}

void reclaim_rank_begin(struct reclaim_rank *rk, struct cache *cache, enum tier_id t,
			uint64_t seg_size)
{
	uint64_t held = policy_glue_tier_bytes(cache, t), budget = policy_glue_hold(cache, t);
	uint64_t now = cache_now_ns();
	*rk = (struct reclaim_rank){.tier = t, .room = budget > held ? budget - held : 0};
	unsigned nds = cache->nds;
	for (unsigned i = 0; i < nds; i++) {
		const struct policy *p = cache->ds[i]->pol[t];
		if (p && !policy_has_order(p))
			return; /* not ordered: the caller's fallback */
	}
	uint64_t need = rank_need(rk, seg_size);
	if (!need || !nds) {
		rk->ordered = true; /* nothing goes */
		return;
	}
	struct pol_entry ***lists = calloc(nds, sizeof(*lists));
	size_t *cnt = calloc(nds, sizeof(*cnt)), *pos = calloc(nds, sizeof(*pos));
	size_t total = 0;
	if (!lists || !cnt || !pos)
		goto out;
	for (unsigned i = 0; i < nds; i++) {
		const struct policy *p = cache->ds[i]->pol[t];
		if (!p || !p->entries)
			continue;
		size_t cap = p->entries < RECLAIM_RANK_MAX ? (size_t)p->entries : RECLAIM_RANK_MAX;
		if (!(lists[i] = malloc(cap * sizeof(**lists))))
			goto out;
		cnt[i] = policy_next_victims(p, now, need, lists[i], cap);
		total += cnt[i];
	}
	if (total && !(rk->v = malloc(total * sizeof(*rk->v))))
		goto out;
	/* merged as the mover takes them: of the datasets' next victims, the
	 * one read longest ago first */
	for (uint64_t got = 0; got < need && rk->n < total;) {
		unsigned best = nds;
		for (unsigned i = 0; i < nds; i++)
			if (pos[i] < cnt[i] &&
			    (best == nds || lists[i][pos[i]]->atime < lists[best][pos[best]]->atime))
				best = i;
		if (best == nds)
			break;
		const struct pol_entry *e = lists[best][pos[best]++];
		rk->v[rk->n++] = (struct rank_item){.e = e, .before = got};
		got += e->size;
	}
	qsort(rk->v, rk->n, sizeof(*rk->v), by_entry);
	rk->ordered = true;
out:
	if (lists)
		for (unsigned i = 0; i < nds; i++)
			free(lists[i]);
	free(lists);
	free(cnt);
	free(pos);
}

int reclaim_rank_goes(const struct reclaim_rank *rk, const struct chunk *c, uint64_t seg_size)
{
	if (!rk || !rk->ordered || c->tier != rk->tier)
		return -1;
	uint64_t need = rank_need(rk, seg_size);
	if (!need)
		return 0;
	struct rank_item key = {.e = &c->pe};
	const struct rank_item *it = rk->n ? bsearch(&key, rk->v, rk->n, sizeof(*rk->v), by_entry) : NULL;
	return it && it->before < need ? 1 : 0;
}

void reclaim_rank_end(struct reclaim_rank *rk)
{
	free(rk->v);
	rk->v = NULL;
	rk->n = 0;
	rk->ordered = false;
}
