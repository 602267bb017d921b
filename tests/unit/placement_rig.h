/*
 * A placement rig for the unit tests of policy/placement.c: two tiers of
 * one policy each, PLACEMENT_RIG_NOBJ objects of size 1, and the caller's
 * loop placement.h documents (fill or hit, promote, make room by demoting
 * or dropping), checking after every read that no tier holds more than
 * its capacity.
 */
#ifndef TIERCACHE_TESTS_PLACEMENT_RIG_H
#define TIERCACHE_TESTS_PLACEMENT_RIG_H

#include <stdint.h>

#include "placement.h"
#include "policy.h"

#define PLACEMENT_RIG_NOBJ 64

struct placement_rig_ent {
	struct pol_entry e;
	int tier; /* TIER_NONE: not resident */
};

struct placement_rig {
	struct policy *t[TIER_COUNT];
	struct placement pl;
	struct placement_rig_ent ents[PLACEMENT_RIG_NOBJ];
	uint64_t cap[TIER_COUNT], now, hits;
};

/* Tiers of capacity hot and warm (0: absent) run policy name; the
 * placement's defaults and pl.cap set from the capacities. */
void placement_rig_init(struct placement_rig *r, const char *name, uint64_t hot, uint64_t warm);
void placement_rig_free(struct placement_rig *r);
/* Read object k: returns the tier that served it, TIER_NONE on a miss. */
int placement_rig_read(struct placement_rig *r, int k);

#endif
