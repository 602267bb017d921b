/*
 * Replay engine: runs one policy (one instance per tier, placement between
 * them) or the OPT reference over a trace, and counts hits by objects and
 * by bytes, bytes read from cold, hits per tier, and the same per epoch.
 *
 * The policies are the daemon's own code (the policy directory) driven through
 * placement.h exactly as the daemon drives them. `now` is the access
 * number. Plans for clairvoyant come from the trace itself: each job's
 * future reads, the whole trace ahead or plan_epochs epochs ahead.
 *
 * Plan prefetch (prefetch_window > 0; any policy, as the daemon prefetches
 * a registered plan under every policy; the trace is the plan) models the
 * daemon's prefetcher (cached/plan/prefetch.c): after each read of a job,
 * the job's plan entries from its cursor up to prefetch_window bytes per
 * rank (a job whose trace names ranks 0..R-1 has R per-rank plans in the
 * daemon, each with its own window) are loaded onto hot ahead of their
 * reads, counting resident entries against the window as the daemon does.
 * An entry is loaded when hot's policy is under its budget or hot's next
 * victim is next needed later than the entry (or by no plan); otherwise
 * the window stalls there until a later read. Loads are not reads: no
 * admit, no hit, no cold bytes counted as a miss (prefetch_bytes instead).
 * The daemon's loads take time (at most prefetch_inflight in flight). By
 * default the model's are instant, the daemon's best case. With
 * prefetch_rate (bytes/s; the trace must have time_us) they take time too:
 * the cold store is one queue that serves loads in the order issued at
 * that rate, a load starting when the read that issued it happened (its
 * time_us) or when the one before it is done, at most prefetch_inflight
 * loads in flight, the rest of the window waiting for a slot. A load holds
 * its room on hot until it lands; a read of it before then is late: a miss
 * that waits for the load (no second cold read), as the daemon joins a
 * prefetch in flight. Demand misses are not queued (a best case still):
 * the model asks whether the daemon's prefetcher did what a cold store of
 * that rate allows.
 *
 * trace_loads takes the timing from the daemon instead (a `tierctl trace`
 * file's prefetch load rows, trace.h): the model's prefetcher loads its
 * window at once as above, but a chunk it loaded ahead is late (a miss
 * that reads nothing more from cold) when the daemon's prefetcher did not
 * have it in time either: the daemon's read of it missed and no load of
 * it landed (the landed row) since its read before (it landed late, was
 * lost, or was not yet issued: the readers outran the prefetcher). A
 * chunk the model holds from before (not loaded ahead) is a hit or a miss
 * by the model's policies alone. So what is left between daemon and model
 * is what the policies kept, not when the cold store delivered.
 *
 * Single-threaded. Allocates per run, never per access.
 */
#ifndef TIERCACHE_SIM_ENGINE_H
#define TIERCACHE_SIM_ENGINE_H

#include "trace.h"

#include <stdint.h>

#define SIM_NAME_MAX 64

struct sim_counts {
	uint64_t accesses, hits, bytes, hit_bytes;
};

struct sim_result {
	char name[SIM_NAME_MAX];
	struct sim_counts all;
	uint64_t tier_hits[2], tier_hit_bytes[2];
	uint64_t cold_bytes; /* bytes read from cold: every miss */
	uint64_t prefetched, prefetch_bytes; /* plan prefetch loads (not reads) */
	uint64_t prefetch_stalls;            /* windows stopped by a victim needed sooner */
	uint64_t prefetch_late;              /* timed: reads that found their load in flight */
	uint64_t demoted, promoted;          /* moves between tiers (writes a tier pays) */
	struct sim_counts *epoch; /* nepochs entries */
	/* per access when the caller sets it (t->n bytes of malloc, after
	 * sim_result_init; sim_result_free frees it): SIM_OUT_* */
	uint8_t *outcome;
	uint32_t nepochs;
	double seconds; /* CPU time of the replay loop alone (this thread) */
};

/* An access's outcome in the replay (the trace's TRACE_RES_* numbers for
 * miss, hot and warm). */
enum { SIM_OUT_MISS, SIM_OUT_HOT, SIM_OUT_WARM, SIM_OUT_LATE = 4 };

struct sim_config {
	uint64_t hot, warm;     /* bytes; warm 0: one tier */
	/* The mover trailing (0: not, victims go as soon as a tier's
	 * policy holds more than hot/warm, the budget it was created with).
	 * Else the tier holds up to this many bytes, victims going one by
	 * one past it, in the policy's order: the daemon's hot tier fills
	 * to its capacity while the mover's demotions trail the fills
	 * (docs/simulator.md, "The mover trailing"). */
	uint64_t hot_max, warm_max;
	uint32_t plan_epochs;   /* clairvoyant: epochs of plan known ahead; 0 = all */
	uint64_t prefetch_window; /* plan prefetch: bytes per rank's plan; 0 = off */
	uint64_t prefetch_rate;   /* bytes/s prefetch loads arrive at; 0 = instant */
	/* per epoch (t->nepochs entries): the rate of loads issued in that
	 * epoch, overriding prefetch_rate (sim_epoch_rates); NULL: none */
	const uint64_t *prefetch_rates;
	uint32_t prefetch_inflight; /* timed loads in flight at most (0: 8, the daemon's) */
	bool trace_loads;       /* late as the daemon's loads were (above); needs a window */
	const char *tunables;   /* "k=v ..." for the policy, NULL: none */
	const char *placement;  /* "k=v ..." for placement, NULL: none */
};

/* Allocate the per-epoch counters. 0 or -ENOMEM. */
int sim_result_init(struct sim_result *r, const char *name, uint32_t nepochs);
void sim_result_free(struct sim_result *r);

/* Replay the trace through policy `name`. 0, or -errno with err set
 * (unknown policy, bad tunable, out of memory). */
int sim_run_policy(const struct trace *t, const char *name, const struct sim_config *cfg,
		   struct sim_result *r, char *err, size_t errlen);

/* Belady's OPT over hot + warm bytes as one cache (see opt.c). */
int sim_run_opt(const struct trace *t, uint64_t capacity, struct sim_result *r);

static inline double sim_ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

#endif
