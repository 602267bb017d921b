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

/* The median of the sorted samples g[0..m), m > 0. */
static double sample_median(const struct sample *g, size_t m)
{
	return m % 2 ? g[m / 2].rate : (g[m / 2 - 1].rate + g[m / 2].rate) / 2;
}

/* Per (job, rank) stream, each access's gap since the stream's access
 * before in the same epoch (us; 0: none). */
static void stream_gaps(const struct trace *t, size_t *prev, uint64_t *gap)
{
	uint32_t nr = t->nranks ? t->nranks : 1;
	for (size_t i = 0; i < t->n; i++) {
		size_t s = (size_t)t->job[i] * nr + t->rank[i];
		size_t b = prev[s];
		prev[s] = i + 1;
		gap[i] = b && t->epoch[b - 1] == t->epoch[i] && t->time_us[i] > t->time_us[b - 1]
				 ? t->time_us[i] - t->time_us[b - 1]
				 : 0;
	}
}

int sim_epoch_rates(const struct trace *t, uint64_t *rates)
{
	if (!t->time_us || !t->result || !t->n)
		return -EINVAL;
	uint32_t ne = t->nepochs ? t->nepochs : 1;
	size_t streams = (size_t)(t->njobs ? t->njobs : 1) * (t->nranks ? t->nranks : 1);
	size_t *prev = calloc(streams, sizeof(*prev));
	uint64_t *gap = malloc(t->n * sizeof(*gap));
	struct sample *v = malloc(t->n * sizeof(*v));
	double *hit = calloc(ne, sizeof(*hit)); /* median hit gap per epoch, us */
	int rc = -ENOMEM;
	if (!prev || !gap || !v || !hit)
		goto out;
	stream_gaps(t, prev, gap);
	/* what a read costs the client besides the cold store: its hits' gaps */
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++)
		if (gap[i] && (t->result[i] == TRACE_RES_HOT || t->result[i] == TRACE_RES_WARM))
			v[n++] = (struct sample){ .epoch = t->epoch[i], .rate = (double)gap[i] };
	qsort(v, n, sizeof(*v), cmp_sample);
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a; b < n && v[b].epoch == v[a].epoch; b++)
			;
		if (v[a].epoch < ne)
			hit[v[a].epoch] = sample_median(v + a, b - a);
	}
	/* a miss: its gap less that is one cold read of its size */
	n = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (!gap[i] || t->result[i] != TRACE_RES_MISS || (double)gap[i] <= hit[t->epoch[i]])
			continue;
		v[n].epoch = t->epoch[i];
		v[n].rate = (double)t->size[t->obj[i]] * 1e6 / ((double)gap[i] - hit[t->epoch[i]]);
		n++;
	}
	rc = -EINVAL;
	if (!n)
		goto out;
	double *all = (double *)gap; /* reused: n doubles fit in t->n u64s */
	for (size_t k = 0; k < n; k++)
		all[k] = v[k].rate;
	qsort(all, n, sizeof(*all), cmp_double);
	uint64_t whole = clamp_rate(n % 2 ? all[n / 2] : (all[n / 2 - 1] + all[n / 2]) / 2);
	for (uint32_t e = 0; e < ne; e++)
		rates[e] = whole;
	qsort(v, n, sizeof(*v), cmp_sample);
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a; b < n && v[b].epoch == v[a].epoch; b++)
			;
		if (v[a].epoch < ne)
			rates[v[a].epoch] = clamp_rate(sample_median(v + a, b - a));
	}
	rc = 0;
out:
	free(prev);
	free(gap);
	free(v);
	free(hit);
	return rc;
}
