/*
 * The simulator's per-epoch timed prefetch (tiercache-sim --prefetch-rate
 * epoch): the cold store's per-stream rate per epoch measured from the
 * trace's misses (policy/sim/rate.c), prefetch_inflight loads served at
 * once (policy/sim/engine.c), the outcome of each access (--explain), and
 * the daemon's result column read from its CSV. Tiny traces counted by
 * hand in the comments. Objects are 100 bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"
#include "sim/explain.h"
#include "sim/rate.h"

#define SZ 100

/* A B C D read at 0, 500, 2500 and 2600 us, one epoch. */
static void build(struct trace *t)
{
	static const uint64_t when[] = { 0, 500, 2500, 2600 };
	trace_init(t);
	t->has_time = true;
	for (uint32_t o = 0; o < 4; o++)
		assert_int_equal(trace_object_add(t, SZ), o);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(trace_push_at(t, i, 0, 0, 0, when[i]), 0);
	trace_finish(t);
}

static struct sim_result run(const struct trace *t, const uint64_t *rates, uint32_t inflight)
{
	struct sim_result r;
	char err[256];
	struct sim_config cfg = { .hot = 4 * SZ, .prefetch_window = 3 * SZ,
				  .prefetch_rates = rates, .prefetch_inflight = inflight };
	assert_int_equal(sim_result_init(&r, "clairvoyant", t->nepochs), 0);
	r.outcome = malloc(t->n);
	assert_non_null(r.outcome);
	assert_int_equal(sim_run_policy(t, "clairvoyant", &cfg, &r, err, sizeof(err)), 0);
	assert_int_equal(r.all.accesses, t->n);
	return r;
}

/* 100,000 bytes/s per stream: a load of 100 bytes takes 1000 us, and up
 * to 8 go at once (the daemon's prefetch_inflight):
 *   A @0     miss; loads B, C, D at once: all land at 1000
 *   B @500   in flight: late
 *   C @2500  hit
 *   D @2600  hit
 * 2 hits, 1 late, 3 loads. (One queue at the same rate: B 1000, C 2000,
 * D 3000: 1 hit, 2 late; test_sim_prefetch_timed.) */
static void test_slots_hand_counted(void **state)
{
	(void)state;
	struct trace t;
	build(&t);
	const uint64_t rates[] = { 100000 };
	struct sim_result r = run(&t, rates, 0);
	assert_int_equal(r.all.hits, 2);
	assert_int_equal(r.prefetch_late, 1);
	assert_int_equal(r.prefetched, 3);
	assert_int_equal(r.cold_bytes, SZ);
	assert_int_equal(r.outcome[0], SIM_OUT_MISS);
	assert_int_equal(r.outcome[1], SIM_OUT_LATE);
	assert_int_equal(r.outcome[2], SIM_OUT_HOT);
	assert_int_equal(r.outcome[3], SIM_OUT_HOT);
	sim_result_free(&r);
	trace_free(&t);
}

/* --explain on the same replay, with the daemon's outcomes A miss, B hot,
 * C hot, D miss beside the model's A miss, B late, C hot, D hot: 4
 * accesses, daemon 2 hits (B C), model 2 (C D), both 1 (C), daemon only
 * where the model was late 1 (B), daemon only where it plainly missed 0,
 * model only 1 (D), different tiers 0. */
static void test_explain_hand_counted(void **state)
{
	(void)state;
	static const uint64_t when[] = { 0, 500, 2500, 2600 };
	static const uint8_t daemon[] = { TRACE_RES_MISS, TRACE_RES_HOT, TRACE_RES_HOT,
					  TRACE_RES_MISS };
	struct trace t;
	trace_init(&t);
	t.has_time = t.has_result = true;
	for (uint32_t o = 0; o < 4; o++)
		assert_int_equal(trace_object_add(&t, SZ), o);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(trace_push_full(&t, i, 0, 0, 0, when[i], daemon[i]), 0);
	trace_finish(&t);
	const uint64_t rates[] = { 100000 };
	struct sim_result r = run(&t, rates, 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	explain_print(f, &t, &r);
	fclose(f);
	/* epoch accesses d_hits s_hits both d_only:L d_only:M s_only tier!= */
	unsigned v[8];
	const char *row = strstr(buf, "\n  1 ");
	assert_non_null(row);
	assert_int_equal(sscanf(row, " 1 %u %u %u %u %u %u %u %u", &v[0], &v[1], &v[2], &v[3],
				&v[4], &v[5], &v[6], &v[7]),
			 8);
	const unsigned want[8] = { 4, 2, 2, 1, 1, 0, 1, 0 };
	for (int k = 0; k < 8; k++)
		assert_int_equal(v[k], want[k]);
	free(buf);
	sim_result_free(&r);
	trace_free(&t);
}

/* Two slots, same rate:
 *   A @0     miss; loads B, C (land 1000); D waits: both slots busy
 *   B @500   late; still two in flight, D waits
 *   C @2500  B and C landed: hit; D loaded (lands 3500)
 *   D @2600  late
 * 1 hit, 2 late, 3 loads. A slow epoch's rate (10,000 bytes/s: 10 ms a
 * load) makes B, C and D all late with 8 slots: no hit. */
static void test_slots_bound_and_rate(void **state)
{
	(void)state;
	struct trace t;
	build(&t);
	const uint64_t rates[] = { 100000 };
	struct sim_result r = run(&t, rates, 2);
	assert_int_equal(r.all.hits, 1);
	assert_int_equal(r.prefetch_late, 2);
	assert_int_equal(r.prefetched, 3);
	assert_int_equal(r.outcome[2], SIM_OUT_HOT);
	assert_int_equal(r.outcome[3], SIM_OUT_LATE);
	sim_result_free(&r);

	const uint64_t slow[] = { 10000 };
	r = run(&t, slow, 0);
	assert_int_equal(r.all.hits, 0);
	assert_int_equal(r.prefetch_late, 3);
	sim_result_free(&r);
	trace_free(&t);
}

/* Rates from misses, less the client's own time (the epoch's median gap
 * before a hit). Epoch 0: rank 0 reads a (hot) @0, b (miss) @1100, c
 * (miss) @1600, d (hot) @1700; rank 1 reads e (miss) @100 (its first
 * access: no gap), f (miss) @300. Hit gaps: d's 100. Samples: b 100 B /
 * (1100 - 100) us = 100,000 B/s, c 100 / (500 - 100) = 250,000, f 100 /
 * (200 - 100) = 1,000,000: median 250,000. Epoch 1: rank 0 reads a (miss)
 * @5000 (its access before was in epoch 0: no gap), b (warm) @5200 (hit
 * gap 200), c (miss) @6200: 100 / (1000 - 200) = 125,000. Epoch 2: rank
 * 0 reads d (hot) @9000: no miss, so the whole trace's median of {100k,
 * 125k, 250k, 1M} = 187,500. */
static void test_rates_hand_counted(void **state)
{
	(void)state;
	static const struct {
		uint32_t obj, rank, epoch;
		uint64_t us;
		uint8_t res;
	} acc[] = {
		{ 0, 0, 0, 0, TRACE_RES_HOT },     { 4, 1, 0, 100, TRACE_RES_MISS },
		{ 5, 1, 0, 300, TRACE_RES_MISS },  { 1, 0, 0, 1100, TRACE_RES_MISS },
		{ 2, 0, 0, 1600, TRACE_RES_MISS }, { 3, 0, 0, 1700, TRACE_RES_HOT },
		{ 0, 0, 1, 5000, TRACE_RES_MISS }, { 1, 0, 1, 5200, TRACE_RES_WARM },
		{ 2, 0, 1, 6200, TRACE_RES_MISS }, { 3, 0, 2, 9000, TRACE_RES_HOT },
	};
	struct trace t;
	trace_init(&t);
	t.has_time = t.has_result = t.has_epochs = true;
	for (uint32_t o = 0; o < 6; o++)
		assert_int_equal(trace_object_add(&t, SZ), o);
	for (size_t i = 0; i < sizeof(acc) / sizeof(acc[0]); i++)
		assert_int_equal(trace_push_full(&t, acc[i].obj, 0, acc[i].rank, acc[i].epoch,
						 acc[i].us, acc[i].res),
				 0);
	trace_finish(&t);
	assert_int_equal(t.nepochs, 3);
	uint64_t rates[3] = { 0, 0, 0 };
	assert_int_equal(sim_epoch_rates(&t, rates), 0);
	assert_int_equal(rates[0], 250000);
	assert_int_equal(rates[1], 125000);
	assert_int_equal(rates[2], 187500);
	trace_free(&t);

	/* no result column: nothing to measure */
	build(&t);
	assert_int_equal(sim_epoch_rates(&t, rates), -EINVAL);
	trace_free(&t);
}

/* The daemon's result column: read when the header names it; a value
 * that is not hot, warm, miss or unkept names its line. */
static void test_csv_result(void **state)
{
	(void)state;
	static const char csv[] = "object,size,rank,job,epoch,time_us,dataset,chunk,result\n"
				  "d/a#0,100,,,,7,d,0,miss\n"
				  "d/b#0,100,,,,900,d,0,hot\n"
				  "d/c#0,100,,,,950,d,0,warm\n"
				  "d/d#0,100,,,,990,d,0,unkept\n";
	struct trace t;
	char err[256];
	trace_init(&t);
	FILE *f = fmemopen((void *)csv, sizeof(csv) - 1, "r");
	assert_non_null(f);
	assert_int_equal(trace_read_csv_stream(&t, f, "t.csv", err, sizeof(err)), 0);
	fclose(f);
	assert_non_null(t.result);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.result[0], TRACE_RES_MISS);
	assert_int_equal(t.result[1], TRACE_RES_HOT);
	assert_int_equal(t.result[2], TRACE_RES_WARM);
	assert_int_equal(t.result[3], TRACE_RES_UNKEPT);
	trace_free(&t);

	static const char bad[] = "object,size,result\na,100,hit\n";
	trace_init(&t);
	f = fmemopen((void *)bad, sizeof(bad) - 1, "r");
	assert_int_equal(trace_read_csv_stream(&t, f, "b.csv", err, sizeof(err)), -EINVAL);
	fclose(f);
	assert_non_null(strstr(err, "b.csv:2: result"));
	trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots_hand_counted),
		cmocka_unit_test(test_slots_bound_and_rate),
		cmocka_unit_test(test_explain_hand_counted),
		cmocka_unit_test(test_rates_hand_counted),
		cmocka_unit_test(test_csv_result),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
