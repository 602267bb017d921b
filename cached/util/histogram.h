/*
 * Latency histograms with fixed, log-spaced buckets (1-2.5-5 per decade,
 * 10 us .. 10 s), in the shape Prometheus expects: cumulative bucket
 * counts, a sum and a count. Observing is a few comparisons and adds, cheap
 * enough for every request. Loop thread only (no atomics).
 */
#ifndef TIERCACHE_HISTOGRAM_H
#define TIERCACHE_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define HISTOGRAM_BUCKETS 19 /* finite upper bounds; one more counts the rest (+Inf) */

struct histogram {
	uint64_t counts[HISTOGRAM_BUCKETS + 1]; /* per bucket, not cumulative */
	uint64_t count;
	uint64_t sum_ns;
};

/* The i-th finite upper bound, in nanoseconds (i < HISTOGRAM_BUCKETS). */
uint64_t histogram_bound_ns(size_t i);
void histogram_observe(struct histogram *h, uint64_t ns);

#endif
