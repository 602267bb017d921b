/*
 * Per-epoch per-stream cold store rates from a trace: see rate.h.
 */
#include "rate.h"

#include <errno.h>
#include <stdlib.h>

struct sample {
	uint32_t epoch;
	double rate; /* bytes/s */
};

static int cmp_sample(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;
	if (x->epoch != y->epoch)
		return x->epoch < y->epoch ? -1 : 1;
	return x->rate < y->rate ? -1 : x->rate > y->rate;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static uint64_t clamp_rate(double r)
{
	return r < 1 ? 1 : r > 1e15 ? (uint64_t)1e15 : (uint64_t)r;
}

int sim_epoch_rates(const struct trace *t, uint64_t *rates)
{
	if (!t->time_us || !t->result || !t->n)
		return -EINVAL;
	uint32_t ne = t->nepochs ? t->nepochs : 1, nr = t->nranks ? t->nranks : 1;
	size_t streams = (size_t)(t->njobs ? t->njobs : 1) * nr;
	/* per (job, rank): the access before, +1 (0: none yet) */
	size_t *prev = calloc(streams, sizeof(*prev));
	struct sample *v = malloc(t->n * sizeof(*v));
	double *all = malloc(t->n * sizeof(*all));
	int rc = -ENOMEM;
	if (!prev || !v || !all)
		goto out;
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++) {
		size_t s = (size_t)t->job[i] * nr + t->rank[i];
		size_t b = prev[s];
		prev[s] = i + 1;
		if (!b || t->result[i] != TRACE_RES_MISS || t->epoch[b - 1] != t->epoch[i] ||
		    t->time_us[i] <= t->time_us[b - 1])
			continue;
		v[n].epoch = t->epoch[i];
		v[n].rate = (double)t->size[t->obj[i]] * 1e6 /
			    (double)(t->time_us[i] - t->time_us[b - 1]);
		all[n] = v[n].rate;
		n++;
	}
	rc = -EINVAL;
	if (!n)
		goto out;
	qsort(all, n, sizeof(*all), cmp_double);
	uint64_t whole = clamp_rate(n % 2 ? all[n / 2] : (all[n / 2 - 1] + all[n / 2]) / 2);
	for (uint32_t e = 0; e < ne; e++)
		rates[e] = whole;
	qsort(v, n, sizeof(*v), cmp_sample);
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a; b < n && v[b].epoch == v[a].epoch; b++)
			;
		size_t m = b - a;
		const struct sample *g = v + a;
		if (g->epoch < ne)
			rates[g->epoch] = clamp_rate(m % 2 ? g[m / 2].rate
							   : (g[m / 2 - 1].rate + g[m / 2].rate) / 2);
	}
	rc = 0;
out:
	free(prev);
	free(v);
	free(all);
	return rc;
}
