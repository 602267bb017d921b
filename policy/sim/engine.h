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
	struct sim_counts *epoch; /* nepochs entries */
	uint32_t nepochs;
	double seconds; /* CPU time of the replay loop alone (this thread) */
};

struct sim_config {
	uint64_t hot, warm;     /* bytes; warm 0: one tier */
	uint32_t plan_epochs;   /* clairvoyant: epochs of plan known ahead; 0 = all */
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
