/*
 * Cancels kept while Redis is away: see plan_cancels.h.
 */
#include "plan_cancels.h"

#include <string.h>

static bool same(const struct plan_cancel *c, const char *dataset, uint64_t job, uint32_t rank)
{
	return c->job == job && c->rank == rank && strcmp(c->dataset, dataset) == 0;
}

bool plan_cancels_keep(struct plan_cancels *k, const struct plan_cancel *c,
		       struct plan_cancel *lost)
{
	unsigned at = k->n, oldest = 0;
	for (unsigned i = 0; i < k->n; i++) {
		if (same(&k->v[i], c->dataset, c->job, c->rank))
			at = i;
		if (k->v[i].since_ns < k->v[oldest].since_ns)
			oldest = i;
	}
	bool gave_up = false;
	if (at == k->n && k->n == PLAN_CANCELS_MAX) {
		*lost = k->v[oldest];
		gave_up = true;
		at = oldest;
	} else if (at == k->n) {
		k->n++;
	}
	k->v[at] = *c;
	return gave_up;
}

void plan_cancels_forget(struct plan_cancels *k, const char *dataset, uint64_t job, uint32_t rank)
{
	for (unsigned i = 0; i < k->n; i++) {
		if (same(&k->v[i], dataset, job, rank)) {
			k->v[i] = k->v[--k->n];
			return;
		}
	}
}

bool plan_cancels_match(const struct plan_cancels *k, const char *dataset, uint64_t job,
			uint32_t rank, uint64_t gen, uint64_t hash)
{
	for (unsigned i = 0; i < k->n; i++)
		if (same(&k->v[i], dataset, job, rank) &&
		    (k->v[i].gen == gen || k->v[i].hash == hash))
			return true;
	return false;
}

bool plan_cancels_pop(struct plan_cancels *k, struct plan_cancel *out)
{
	if (!k->n)
		return false;
	*out = k->v[--k->n];
	return true;
}
