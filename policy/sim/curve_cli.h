/*
 * tiercache-sim --curve: the options of a what-if curve (--sizes,
 * --points, --sample, --warm-share, --plot, --csv), turning them into
 * sizes for curve.c, printing the result, and drawing it with
 * scripts/plot-curve. The sim's I/O side, like main.c and report.c.
 * Single-threaded.
 */
#ifndef TIERCACHE_SIM_CURVE_CLI_H
#define TIERCACHE_SIM_CURVE_CLI_H

#include "trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum curve_cli_opt {
	CURVE_OPT_CURVE,
	CURVE_OPT_SIZES,
	CURVE_OPT_POINTS,
	CURVE_OPT_SAMPLE,
	CURVE_OPT_WARM_SHARE,
	CURVE_OPT_PLOT,
	CURVE_OPT_CSV,
	CURVE_OPT_COUNT,
};

/* getopt_long rows for the options above, val = base + enum value. */
#define CURVE_CLI_LONGOPTS(base)                                                                   \
	{ "curve", no_argument, NULL, (base) + CURVE_OPT_CURVE },                                  \
	{ "sizes", required_argument, NULL, (base) + CURVE_OPT_SIZES },                            \
	{ "points", required_argument, NULL, (base) + CURVE_OPT_POINTS },                          \
	{ "sample", required_argument, NULL, (base) + CURVE_OPT_SAMPLE },                          \
	{ "warm-share", required_argument, NULL, (base) + CURVE_OPT_WARM_SHARE },                  \
	{ "plot", required_argument, NULL, (base) + CURVE_OPT_PLOT },                              \
	{ "csv", no_argument, NULL, (base) + CURVE_OPT_CSV }

#define CURVE_CLI_USAGE                                                                            \
	"\n"                                                                                       \
	"what-if curve (hit ratio against cache size, docs/simulator.md):\n"                       \
	"  --curve               every policy and OPT at several cache sizes (hot + warm)\n"       \
	"  --sizes LIST          sizes: SIZE, PCT%% of the data set, or HOT:WARM (comma-separated)\n" \
	"  --points N            without --sizes: N sizes, 1/N .. N/N of the data set (default 10)\n" \
	"  --warm-share F        part of each SIZE given to warm, 0..0.99 (default: --warm over\n"  \
	"                        --hot + --warm if given, else 0: hot only, the daemon's default)\n" \
	"  --sample R            SHARDS sampling rate in (0, 1] (default 1, or automatic on\n"      \
	"                        traces over 4M accesses)\n"                                        \
	"  --plot FILE.png       draw the curve (scripts/plot-curve: python3-matplotlib)\n"         \
	"  --csv                 the curve as CSV on standard output\n"

struct curve_cli {
	bool on, csv;
	const char *sizes, *points, *sample, *warm_share, *plot;
};

/* Record one option; 0 or -EINVAL (message printed). */
int curve_cli_opt(struct curve_cli *cc, int which, const char *arg);

/* What the rest of the command line said. */
struct curve_cli_run {
	const char *source;
	const char *hot, *warm; /* may be NULL */
	const char *const *policies;
	const char *const *tunables;
	size_t npolicies;
	uint32_t plan_epochs;
	uint64_t prefetch_window; /* plan prefetch per rank's plan (bytes, full scale) */
	const char *placement;
	bool no_opt, json;
};

/* Compute, print, plot. Returns the exit status (0, 1 failed, 64 usage). */
int curve_cli_main(const struct curve_cli *cc, const struct trace *t,
		   const struct curve_cli_run *run);

#endif
