/*
 * What-if curves: hit ratio against cache size for OPT and every policy
 * asked for, one replay per (size, policy) on the same trace, optionally
 * on a spatially sampled copy of it (SHARDS: keep the accesses of the
 * objects whose key hashes under a rate R, and scale every cache size by
 * R; the hit ratios of the sample estimate the full trace's).
 *
 * "Cache size" of a point is its hot + warm bytes. A point is either an
 * explicit pair (hot, warm), or a total S split as the daemon would be
 * configured: warm = S * warm_share, hot = the rest (docs/simulator.md).
 *
 * Pure computation: no I/O (main.c and report.c print). Single-threaded.
 */
#ifndef TIERCACHE_SIM_CURVE_H
#define TIERCACHE_SIM_CURVE_H

#include "engine.h"
#include "trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CURVE_MAX_POINTS 64
#define CURVE_MAX_COLS 17 /* OPT + up to 16 policies */

struct curve_opts {
	const uint64_t *hot, *warm; /* npoints sizes, full scale (bytes) */
	size_t npoints;
	const char *const *policies;
	const char *const *tunables; /* per policy, "k=v ..." or NULL */
	size_t npolicies;
	uint32_t plan_epochs;
	uint64_t prefetch_window; /* plan prefetch per rank's plan, full scale; 0: off */
	const char *placement;
	double sample; /* (0, 1]: SHARDS rate; 1 replays the whole trace */
	bool no_opt;
};

struct curve {
	size_t npoints, ncols;
	char names[CURVE_MAX_COLS][SIM_NAME_MAX]; /* column 0 is "opt" unless no_opt */
	bool has_opt;
	uint64_t hot[CURVE_MAX_POINTS], warm[CURVE_MAX_POINTS]; /* full scale */
	struct sim_counts *cells; /* npoints * ncols, cells[p * ncols + c] */
	double sample;            /* the rate used */
	size_t accesses, objects; /* of the trace replayed (the sample) */
};

/* Split total `size` as the daemon's tiers would be: warm = size * share. */
void curve_split(uint64_t size, double warm_share, uint64_t *hot, uint64_t *warm);

/* The objects whose key hashes under `rate`, every access of theirs, in
 * order, epochs kept. 0, -ENOMEM, or -ENODATA if nothing was kept. */
int curve_sample(const struct trace *t, double rate, struct trace *out);

/* Run the curve. 0, or -errno with err set (unknown policy, bad tunable,
 * out of memory, a sample with no accesses). curve_free() either way. */
int curve_run(const struct trace *t, const struct curve_opts *o, struct curve *c, char *err,
	      size_t errlen);
void curve_free(struct curve *c);

static inline const struct sim_counts *curve_cell(const struct curve *c, size_t point, size_t col)
{
	return &c->cells[point * c->ncols + col];
}

/* The policy column with the most hits at a point (OPT excluded; ties go
 * to the earlier column, byte hits break ties first), or -1 if none. */
int curve_best(const struct curve *c, size_t point);
/* 1-based rank of a policy column at a point by the same order; 0 for OPT. */
int curve_rank(const struct curve *c, size_t point, size_t col);

#endif
