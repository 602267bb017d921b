/*
 * Plan store: the future reads that jobs on this node have announced, so a
 * plan-aware policy (clairvoyant) can ask "when is this key read next?".
 *
 * A plan is the ordered list of keys one job will read (a DistributedSampler
 * knows every epoch's order from its seed; a job can publish one epoch at a
 * time). The store follows each job with a cursor: every access the caller
 * sees is reported with plan_store_access(), which moves the job's cursor
 * past the key when it is next in the plan, or skips ahead to it when it is
 * within a small window (reads served elsewhere never reach the store).
 *
 * next_use(key) answers in store ticks (one tick per reported access): the
 * soonest planned read of the key over every plan, a plan's distance scaled
 * by how many ticks that job has taken per step so far (jobs reading at
 * different rates, or interleaved ranks, compare fairly). O(1) per access
 * and O(plans) per query: one hash lookup (cached for the key just
 * accessed), then one array read per plan.
 *
 * Pure and single-threaded (the daemon's loop thread owns it); memory grows
 * with plan lengths and is compacted as cursors move on.
 */
#ifndef TIERCACHE_POLICY_PLAN_H
#define TIERCACHE_POLICY_PLAN_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define PLAN_NONE UINT64_MAX
/* plan_store_access(): the job is unknown; a plan moves only if the key is
 * exactly its next read (no skipping ahead on a guess). */
#define PLAN_JOB_ANY UINT64_MAX

struct plan_store;

int plan_store_create(struct plan_store **out);
void plan_store_destroy(struct plan_store *ps);

/* Register a job's plan, replacing any it had. 0, -EINVAL (job ==
 * PLAN_JOB_ANY) or -ENOMEM. */
int plan_store_set(struct plan_store *ps, uint64_t job, const uint64_t *keys, size_t n);
/* Add reads at the end of a job's plan (creating it if needed): the next
 * epoch's order, published as the job gets to it. */
int plan_store_append(struct plan_store *ps, uint64_t job, const uint64_t *keys, size_t n);
/* Forget a job's plan. -ENOENT if it had none. */
int plan_store_drop(struct plan_store *ps, uint64_t job);

/* Report one access (every access, planned or not: it is the store's clock). */
void plan_store_access(struct plan_store *ps, uint64_t job, uint64_t key);

/* Move a job's cursor forward to absolute position pos (positions count
 * from the job's first plan_store_set, appends continuing them), as if the
 * reads before it were done, without counting accesses: the caller already
 * reported those reads, possibly out of order (a tracker that tolerates
 * reordering decides when a position is passed). No-op if the cursor is at
 * or past pos; stops at the plan's end. */
void plan_store_seek(struct plan_store *ps, uint64_t job, uint64_t pos);
/* Absolute position of a job's cursor (0 if it has no plan). */
uint64_t plan_store_cursor(const struct plan_store *ps, uint64_t job);

/* Store tick of the next planned read of key, or PLAN_NONE. (Not const:
 * it caches the last key's id, as access() then next_use() ask the same.) */
uint64_t plan_store_next_use(struct plan_store *ps, uint64_t key);
/* The same, shaped as struct policy_env's next_use (ctx = the store). */
uint64_t plan_store_oracle(void *ctx, uint64_t key, uint64_t now);

/* May a prefetch of a chunk next used at `use` displace a victim next used
 * at victim_use (both plan_store_next_use)? Yes when no plan needs the
 * victim; never for a chunk no plan names; else when the victim is needed
 * later. The daemon's prefetcher and the simulator's model of it. */
static inline bool plan_use_displaces(uint64_t victim_use, uint64_t use)
{
	if (victim_use == PLAN_NONE)
		return true;
	return use != PLAN_NONE && victim_use > use;
}

/* Changes whenever an answer may have moved other than by the clock: a plan
 * set, appended or dropped, or a cursor that skipped reads. A policy that
 * keeps old answers re-asks when it changes. Shaped for policy_env.version. */
uint64_t plan_store_version(const struct plan_store *ps);
uint64_t plan_store_version_cb(void *ctx);

/* Reads left in a job's plan (0 if none); accesses seen; plans held. */
uint64_t plan_store_remaining(const struct plan_store *ps, uint64_t job);
uint64_t plan_store_ticks(const struct plan_store *ps);
size_t plan_store_count(const struct plan_store *ps);

/* Tunable: how far ahead of its cursor a read may match a plan (default 64). */
void plan_store_set_window(struct plan_store *ps, uint32_t window);

#endif
