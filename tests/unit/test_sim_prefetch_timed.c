/*
 * The simulator's timed plan prefetch (tiercache-sim --prefetch-rate,
 * policy/sim/engine.c): loads take size / rate on one cold-store queue,
 * from the time of the read that issued them; a read before its load lands
 * is late (a miss, no second cold read). Tiny traces counted by hand in
 * the comments. Objects are 100 bytes; the trace is the plan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sim/engine.h"

#define SZ 100

/* A B C D read at 0, 500, 2500 and 2600 us. */
static const uint32_t order[] = { 0, 1, 2, 3 };
static const uint64_t when[] = { 0, 500, 2500, 2600 };

static void build(struct trace *t, bool timed)
{
	trace_init(t);
	t->has_time = timed;
	for (uint32_t o = 0; o < 4; o++)
		assert_int_equal(trace_object_add(t, SZ), o);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(trace_push_at(t, order[i], 0, 0, 0, when[i]), 0);
	trace_finish(t);
}

static struct sim_result run(const struct trace *t, uint64_t rate, uint32_t inflight)
{
	struct sim_result r;
	char err[256];
	struct sim_config cfg = { .hot = 4 * SZ, .prefetch_window = 3 * SZ,
				  .prefetch_rate = rate, .prefetch_inflight = inflight };
	assert_int_equal(sim_result_init(&r, "clairvoyant", t->nepochs), 0);
	assert_int_equal(sim_run_policy(t, "clairvoyant", &cfg, &r, err, sizeof(err)), 0);
	assert_int_equal(r.all.accesses, t->n);
	return r;
}

/* 100,000 bytes/s: a load of 100 bytes takes 1000 us.
 *   A @0     miss; loads B (lands 1000), C (2000), D (3000): the window
 *   B @500   in flight: late
 *   C @2500  B and C have landed: hit
 *   D @2600  lands at 3000: late
 * 1 hit, 2 late, 3 loads, cold bytes A's only. Instant loads: 3 hits. */
static void test_timed_hand_counted(void **state)
{
	(void)state;
	struct trace t;
	build(&t, true);
	struct sim_result r = run(&t, 100000, 0);
	assert_int_equal(r.all.hits, 1);
	assert_int_equal(r.prefetch_late, 2);
	assert_int_equal(r.prefetched, 3);
	assert_int_equal(r.cold_bytes, SZ);
	sim_result_free(&r);

	r = run(&t, 0, 0);
	assert_int_equal(r.all.hits, 3);
	assert_int_equal(r.prefetch_late, 0);
	sim_result_free(&r);

	/* a cold store far faster than the reads: the instant model */
	r = run(&t, 1000000000000ULL, 0);
	assert_int_equal(r.all.hits, 3);
	assert_int_equal(r.prefetch_late, 0);
	sim_result_free(&r);
	trace_free(&t);
}

/* One load in flight at most, same rate:
 *   A @0     miss; loads B (lands 1000); C waits for the slot
 *   B @500   late
 *   C @2500  B lands; C was never loaded: a demand miss (cold read);
 *            then D is loaded (lands 3500)
 *   D @2600  late
 * No hit, 2 late, 2 loads, cold bytes A's and C's. */
static void test_inflight_bound(void **state)
{
	(void)state;
	struct trace t;
	build(&t, true);
	struct sim_result r = run(&t, 100000, 1);
	assert_int_equal(r.all.hits, 0);
	assert_int_equal(r.prefetch_late, 2);
	assert_int_equal(r.prefetched, 2);
	assert_int_equal(r.cold_bytes, 2 * SZ);
	sim_result_free(&r);
	trace_free(&t);
}

/* A timed model needs the trace's times: a clear error without them. */
static void test_needs_times(void **state)
{
	(void)state;
	struct trace t;
	build(&t, false);
	assert_null(t.time_us);
	struct sim_result r;
	char err[256] = "";
	struct sim_config cfg = { .hot = 4 * SZ, .prefetch_window = 3 * SZ, .prefetch_rate = 100000 };
	assert_int_equal(sim_result_init(&r, "clairvoyant", t.nepochs), 0);
	assert_int_equal(sim_run_policy(&t, "clairvoyant", &cfg, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "time_us"));
	sim_result_free(&r);
	trace_free(&t);
}

/* The daemon's CSV (tierctl trace) carries time_us: read and kept; a
 * positional trace has none; a bad time names its line. */
static void test_csv_times(void **state)
{
	(void)state;
	static const char csv[] = "object,size,rank,job,epoch,time_us,dataset,chunk,result\n"
				  "d/a#0,100,,,,7,d,0,miss\n"
				  "d/b#0,100,,,,900,d,0,hot\n";
	struct trace t;
	char err[256];
	trace_init(&t);
	FILE *f = fmemopen((void *)csv, sizeof(csv) - 1, "r");
	assert_non_null(f);
	assert_int_equal(trace_read_csv_stream(&t, f, "t.csv", err, sizeof(err)), 0);
	fclose(f);
	assert_non_null(t.time_us);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.time_us[0], 7);
	assert_int_equal(t.time_us[1], 900);
	trace_free(&t);

	static const char pos[] = "a,100\nb,100\n";
	trace_init(&t);
	f = fmemopen((void *)pos, sizeof(pos) - 1, "r");
	assert_int_equal(trace_read_csv_stream(&t, f, "p.csv", err, sizeof(err)), 0);
	fclose(f);
	assert_null(t.time_us);
	trace_free(&t);

	static const char bad[] = "object,size,time_us\na,100,soon\n";
	trace_init(&t);
	f = fmemopen((void *)bad, sizeof(bad) - 1, "r");
	assert_int_equal(trace_read_csv_stream(&t, f, "b.csv", err, sizeof(err)), -EINVAL);
	fclose(f);
	assert_non_null(strstr(err, "b.csv:2: time_us"));
	trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timed_hand_counted),
		cmocka_unit_test(test_inflight_bound),
		cmocka_unit_test(test_needs_times),
		cmocka_unit_test(test_csv_times),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
