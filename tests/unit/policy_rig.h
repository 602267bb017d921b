/*
 * A replay rig for the policy unit tests (test_policy_*.c): one policy
 * instance over a fixed set of entries, and a read that does what the
 * daemon does with a chunk: hit if cached, else ask admit, insert and
 * evict victims until the bytes fit the capacity again.
 *
 * Time is the read counter (r->now), so a replay is deterministic.
 * Single-threaded; the rig fails the running cmocka test on a surprise
 * (a policy that names no victim while over capacity).
 */
#ifndef TIERCACHE_TEST_POLICY_RIG_H
#define TIERCACHE_TEST_POLICY_RIG_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"

struct plan_store;

/* Entries of a rig: enough for the largest test (arc's zipf replay). */
#define RIG_NOBJ 2000

struct rig_ent {
	struct pol_entry e; /* first: a victim casts back to its rig_ent */
	bool in;            /* cached: inserted and not yet removed */
};

struct rig {
	struct policy *p;
	struct plan_store *ps; /* NULL unless made with plans */
	struct rig_ent ents[RIG_NOBJ];
	uint64_t cap, now;
	uint64_t admitted; /* reads that missed and were admitted */
};

/* Policy NAME of capacity CAP over RIG_NOBJ entries of SIZE bytes, entry
 * i keyed KEY_OF(i) (tests pick keys that suit their policy). With PLANS
 * a plan store answers the policy's next_use/version callbacks and hears
 * of every read (job 0). The rig is large: allocate it, do not put it on
 * the stack. */
void rig_init(struct rig *r, const char *name, uint64_t cap, uint64_t size,
	      uint64_t (*key_of)(int i), bool plans);
/* Destroy the policy and plan store; r itself stays the caller's. */
void rig_free(struct rig *r);

/* One read of entry K; true on a hit. */
bool rig_read(struct rig *r, int k);
/* rig_read(), and *ADMITTED tells whether a miss was admitted. */
bool rig_read_admitted(struct rig *r, int k, bool *admitted);

#endif
