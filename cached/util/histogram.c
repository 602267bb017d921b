/*
 * Fixed log buckets: see histogram.h.
 */
#include "histogram.h"

/* 1-2.5-5 per decade, from 10 us to 10 s */
static const uint64_t bounds_ns[HISTOGRAM_BUCKETS] = {
	10000,      25000,      50000,      100000,     250000,      500000,     1000000,
	2500000,    5000000,    10000000,   25000000,   50000000,    100000000,  250000000,
	500000000,  1000000000, 2500000000, 5000000000, 10000000000,
};

uint64_t histogram_bound_ns(size_t i)
{
	return i < HISTOGRAM_BUCKETS ? bounds_ns[i] : UINT64_MAX;
}

void histogram_observe(struct histogram *h, uint64_t ns)
{
	size_t i = 0;
	while (i < HISTOGRAM_BUCKETS && ns > bounds_ns[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum_ns += ns;
}
