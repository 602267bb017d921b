/*
 * The simulator's model of the daemon's plan prefetch (tiercache-sim
 * --prefetch-window, policy/sim/engine.c): tiny traces whose hits, loads
 * and stalls are counted by hand in the comments. Objects are 100 bytes;
 * the trace is the plan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "sim/engine.h"

#define SZ 100

/* A trace over n objects of SZ bytes: order[i] read by rank ranks[i]
 * (NULL: rank 0), one job. */
static void build(struct trace *t, uint32_t nobj, const uint32_t *order, const uint32_t *ranks,
		  size_t n)
{
	trace_init(t);
	for (uint32_t o = 0; o < nobj; o++)
		assert_int_equal(trace_object_add(t, SZ), o);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(trace_push(t, order[i], 0, ranks ? ranks[i] : 0, 0), 0);
	trace_finish(t);
}

static struct sim_result run(const struct trace *t, const char *policy, uint64_t hot,
			     uint64_t window)
{
	struct sim_result r;
	char err[256];
	struct sim_config cfg = { .hot = hot, .prefetch_window = window };
	assert_int_equal(sim_result_init(&r, policy, t->nepochs), 0);
	assert_int_equal(sim_run_policy(t, policy, &cfg, &r, err, sizeof(err)), 0);
	assert_int_equal(r.all.accesses, t->n);
	return r;
}

/* A B C D A B C D, hot 400 (all four fit), window 200 (two entries).
 * Demand only: the second pass hits, 4. With prefetch: A misses; after
 * it B and C are loaded (window full); after B the window has room for
 * D; C and D hit, A..D stay: 7 hits, 3 loads, no stall. The same under
 * lru: the daemon prefetches a plan whatever the policy. */
static void test_window_hand_counted(void **state)
{
	(void)state;
	static const uint32_t order[] = { 0, 1, 2, 3, 0, 1, 2, 3 };
	struct trace t;
	build(&t, 4, order, NULL, 8);
	const char *pols[] = { "clairvoyant", "lru" };
	for (size_t k = 0; k < 2; k++) {
		struct sim_result r = run(&t, pols[k], 4 * SZ, 0);
		assert_int_equal(r.all.hits, 4);
		assert_int_equal(r.prefetched, 0);
		sim_result_free(&r);
		r = run(&t, pols[k], 4 * SZ, 2 * SZ);
		assert_int_equal(r.all.hits, 7);
		assert_int_equal(r.prefetched, 3);
		assert_int_equal(r.prefetch_bytes, 3 * SZ);
		assert_int_equal(r.prefetch_stalls, 0);
		assert_int_equal(r.cold_bytes, SZ); /* only A's read */
		sim_result_free(&r);
	}
	trace_free(&t);
}

/* A..F once, ranks 0 1 2 0 1 2 (three plans in the daemon: three
 * windows), hot 200, window 100 per rank: 300 ahead, more than hot holds.
 * The daemon gives every window together at most half of hot's budget
 * (prefetch_window): 100 / 3 = 33 per rank, 99 for the job, so one entry
 * is ahead at a time. Clairvoyant, counted:
 *   read A (miss). load B (room: hot holds A B)
 *   read B (hit).  load C in place of A or B (no plan needs them)
 *   read C, D, E (hits), each loading the next the same way
 *   read F (hit)
 * 5 hits, 5 loads, no stall; demand only: 0 hits. Were the three windows
 * 100 each (the old bound, half of hot per plan), loads would displace
 * one another's unread entries: stalls (3 of them, with 5 hits). A window
 * of 1000 gives the same. */
static void test_stall_hand_counted(void **state)
{
	(void)state;
	static const uint32_t order[] = { 0, 1, 2, 3, 4, 5 };
	static const uint32_t ranks[] = { 0, 1, 2, 0, 1, 2 };
	struct trace t;
	build(&t, 6, order, ranks, 6);
	struct sim_result r = run(&t, "clairvoyant", 2 * SZ, 0);
	assert_int_equal(r.all.hits, 0);
	sim_result_free(&r);
	const uint64_t windows[] = { SZ, 1000 };
	for (size_t k = 0; k < 2; k++) {
		r = run(&t, "clairvoyant", 2 * SZ, windows[k]);
		assert_int_equal(r.all.hits, 5);
		assert_int_equal(r.prefetched, 5);
		assert_int_equal(r.prefetch_stalls, 0);
		assert_int_equal(r.tier_hits[0], 5);
		sim_result_free(&r);
	}
	/* one rank: one window of 100, never past hot: no stall, and still
	 * every read after A hits (B..F each loaded one read ahead) */
	static const uint32_t one[] = { 0, 0, 0, 0, 0, 0 };
	struct trace t1;
	build(&t1, 6, order, one, 6);
	r = run(&t1, "clairvoyant", 2 * SZ, SZ);
	assert_int_equal(r.all.hits, 5);
	assert_int_equal(r.prefetch_stalls, 0);
	sim_result_free(&r);
	trace_free(&t1);
	trace_free(&t);
}

/* epoch gives up its newest entry when nothing is dead; a load is the
 * newest, so it must wait for its read (policy loaded_ahead), as in the
 * daemon. A..F once, one rank, hot 300, window 100, epoch. Counted:
 *   read A (miss, admitted: room). load B (room).
 *   read B (hit). load C (room: hot holds A B C).
 *   read C (hit). load D: over budget, the victim C (just read, no plan
 *     needs it again) may go: D lands, C goes (not D, loaded ahead).
 *   read D, E, F the same way: hits, each loading the next.
 * 5 hits, 5 loads, no stall. Were the load the victim (D given up at
 * once, then E, F), only B and C would hit. */
static void test_epoch_load_waits_for_its_read(void **state)
{
	(void)state;
	static const uint32_t order[] = { 0, 1, 2, 3, 4, 5 };
	struct trace t;
	build(&t, 6, order, NULL, 6);
	struct sim_result r = run(&t, "epoch", 3 * SZ, 0);
	assert_int_equal(r.all.hits, 0);
	sim_result_free(&r);
	r = run(&t, "epoch", 3 * SZ, SZ);
	assert_int_equal(r.all.hits, 5);
	assert_int_equal(r.prefetched, 5);
	assert_int_equal(r.prefetch_stalls, 0);
	assert_int_equal(r.cold_bytes, SZ);
	sim_result_free(&r);
	trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_hand_counted),
		cmocka_unit_test(test_stall_hand_counted),
		cmocka_unit_test(test_epoch_load_waits_for_its_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
