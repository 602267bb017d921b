/*
 * Output of tiercache-sim: one table (hit ratio by objects and bytes, bytes
 * read from cold, ratio to OPT, throughput), optional per-epoch rows, or the
 * same as JSON for programs (docs/simulator.md lists the fields).
 * Single-threaded; writes to the FILE given.
 */
#ifndef TIERCACHE_SIM_REPORT_H
#define TIERCACHE_SIM_REPORT_H

#include "curve.h"
#include "engine.h"

#include <stdbool.h>
#include <stdio.h>

struct report_info {
	const char *source; /* "gen:shuffle" or the trace path */
	const struct trace *t;
	uint64_t hot, warm;
	uint64_t hot_max, warm_max; /* the mover trailing (engine.h), 0: not */
	const struct sim_result *opt; /* NULL if not run */
	uint32_t plan_epochs;
	uint64_t prefetch_window; /* plan prefetch per rank's plan, 0: off */
	uint64_t prefetch_rate;   /* timed loads: bytes/s, 0: instant */
	const uint64_t *prefetch_rates; /* per epoch (t->nepochs), or NULL */
	bool trace_timed;   /* --prefetch-rate trace (engine.h: trace_loads) */
	size_t trace_loads; /* ... and the trace's prefetch load events */
};

void report_table(FILE *f, const struct report_info *ri, const struct sim_result *res, size_t n,
		  bool epochs);
void report_json(FILE *f, const struct report_info *ri, const struct sim_result *res, size_t n,
		 bool epochs);

/* What-if curves (--curve): a table of hit% (and byte hit%) per size and
 * column, the same as JSON, or as CSV (one row per size and column, the
 * format scripts/plot-curve and `tierctl advise` read; docs/simulator.md).
 * warm_share < 0: the sizes were given as HOT:WARM pairs. */
void report_curve_table(FILE *f, const struct report_info *ri, const struct curve *c,
			double warm_share);
void report_curve_json(FILE *f, const struct report_info *ri, const struct curve *c,
		       double warm_share);
void report_curve_csv(FILE *f, const struct report_info *ri, const struct curve *c);

#endif
