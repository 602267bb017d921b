/*
 * Cancels of shared plans kept while Redis cannot be reached
 * (plan_share.h): at most PLAN_CANCELS_MAX, one per plan (a newer cancel
 * of the same plan replaces the older), the oldest given up when full.
 *
 * Pure bookkeeping: no I/O, no clock (times are passed in).
 */
#ifndef TIERCACHE_PLAN_CANCELS_H
#define TIERCACHE_PLAN_CANCELS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#define PLAN_CANCELS_MAX 64u /* cancels kept while Redis is away */

struct plan_cancel {
	char dataset[CONFIG_NAME_MAX + 1];
	uint64_t job;
	uint32_t rank;	    /* TC_JOB_RANK_ANY: a whole-job plan; else a per-rank plan */
	uint64_t gen, hash; /* the registration cancelled: its version and list hash */
	uint64_t since_ns;  /* when it was cancelled */
};

struct plan_cancels {
	struct plan_cancel v[PLAN_CANCELS_MAX];
	unsigned n;
};

/* Keep c (replacing a kept cancel of the same plan). true if the table was
 * full and the oldest was given up for it (copied to *lost). */
bool plan_cancels_keep(struct plan_cancels *k, const struct plan_cancel *c,
		       struct plan_cancel *lost);
/* Forget the kept cancel of (dataset, job, rank), if any (a new
 * registration of that plan replaces the cancelled one). */
void plan_cancels_forget(struct plan_cancels *k, const char *dataset, uint64_t job, uint32_t rank);
/* Is the registration (dataset, job, rank) at gen or with hash cancelled
 * here, not yet told to Redis? */
bool plan_cancels_match(const struct plan_cancels *k, const char *dataset, uint64_t job,
			uint32_t rank, uint64_t gen, uint64_t hash);
/* Take one kept cancel out (false: none). */
bool plan_cancels_pop(struct plan_cancels *k, struct plan_cancel *out);

#endif
