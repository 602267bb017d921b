/*
 * The daemon's prefetch load rows in a `tierctl trace` file (load, landed,
 * landed_late, load_lost) and their replay (tiercache-sim --prefetch-rate
 * trace: policy/sim/trace.c keeps them apart from the accesses as events,
 * policy/sim/engine.c applies them in the file's order). Tiny traces
 * counted by hand in the comments; every object is 100 bytes.
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

#define SZ 100
#define HEADER "object,size,rank,job,epoch,time_us,dataset,chunk,result\n"

static int read_csv(struct trace *t, const char *csv, char *err, size_t errlen)
{
	FILE *f = fmemopen((void *)csv, strlen(csv), "r");
	assert_non_null(f);
	trace_init(t);
	int rc = trace_read_csv_stream(t, f, "t.csv", err, errlen);
	fclose(f);
	return rc;
}

/* a: a plain miss. b: loaded, landed, then read (a hit in the daemon).
 * c: loaded, landed late (a read asked while it was in flight), then that
 * read's row (a miss). d: loaded, the load lost (not kept), then read (a
 * miss). 4 accesses, 6 load events. */
static const char mixed[] = HEADER
	"ds/a#0,100,0,0,,0,ds,0,miss\n"
	"ds/b#0,100,,,,10,ds,0,load\n"
	"ds/c#0,100,,,,11,ds,0,load\n"
	"ds/b#0,100,,,,50,ds,0,landed\n"
	"ds/b#0,100,0,0,,60,ds,0,hot\n"
	"ds/c#0,100,,,,70,ds,0,landed_late\n"
	"ds/c#0,100,0,0,,71,ds,0,miss\n"
	"ds/d#0,100,,,,80,ds,0,load\n"
	"ds/d#0,100,,,,90,ds,0,load_lost\n"
	"ds/d#0,100,0,0,,95,ds,0,miss\n";

static void test_parse_load_rows(void **state)
{
	(void)state;
	struct trace t;
	char err[256] = "";
	assert_int_equal(read_csv(&t, mixed, err, sizeof(err)), 0);
	assert_int_equal(t.n, 4);   /* the accesses only */
	assert_int_equal(t.nobj, 4);
	assert_int_equal(t.nev, 6);
	static const uint8_t kind[] = { TRACE_EV_LOAD,        TRACE_EV_LOAD, TRACE_EV_LANDED,
					TRACE_EV_LANDED_LATE, TRACE_EV_LOAD, TRACE_EV_LOST };
	static const uint32_t obj[] = { 1, 2, 1, 2, 3, 3 };
	static const uint32_t at[] = { 1, 1, 1, 2, 3, 3 }; /* accesses read before each */
	for (size_t k = 0; k < 6; k++) {
		assert_int_equal(t.ev_kind[k], kind[k]);
		assert_int_equal(t.ev_obj[k], obj[k]);
		assert_int_equal(t.ev_at[k], at[k]);
	}
	assert_int_equal(t.result[1], TRACE_RES_HOT);
	assert_int_equal(t.result[2], TRACE_RES_MISS);
	trace_free(&t);
}

static void test_parse_bad_result_names_line(void **state)
{
	(void)state;
	struct trace t;
	char err[256] = "";
	static const char bad[] = HEADER "ds/a#0,100,,,,0,ds,0,loaded\n";
	assert_int_equal(read_csv(&t, bad, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.csv:2: result: \"loaded\""));
	assert_non_null(strstr(err, "landed_late")); /* names what it may be */
	trace_free(&t);
}

static struct sim_result replay(const struct trace *t, const char *pol, uint64_t hot,
				bool trace_loads)
{
	struct sim_result r;
	char err[256];
	struct sim_config cfg = { .hot = hot, .trace_loads = trace_loads };
	assert_int_equal(sim_result_init(&r, pol, t->nepochs), 0);
	r.outcome = malloc(t->n);
	assert_non_null(r.outcome);
	assert_int_equal(sim_run_policy(t, pol, &cfg, &r, err, sizeof(err)), 0);
	assert_int_equal(r.all.accesses, t->n);
	return r;
}

/* The mixed trace on a hot tier with room for all, with the daemon's
 * loads: a miss (cold 100); b hot (landed before its read); c late (its
 * load landed late: a miss, no cold read of its own); d miss (its load
 * lost: cold 100). 1 hit, 1 late, 3 loads, cold 200 -- the daemon's own
 * outcomes. Without them (the old replay): every access a miss, cold 400. */
static void test_replay_daemon_loads(void **state)
{
	(void)state;
	struct trace t;
	char err[256] = "";
	assert_int_equal(read_csv(&t, mixed, err, sizeof(err)), 0);
	const char *pols[] = { "lru", "arc", "epoch", "clairvoyant" };
	for (size_t k = 0; k < 4; k++) {
		struct sim_result r = replay(&t, pols[k], 4 * SZ, true);
		assert_int_equal(r.all.hits, 1);
		assert_int_equal(r.prefetch_late, 1);
		assert_int_equal(r.prefetched, 3);
		assert_int_equal(r.cold_bytes, 2 * SZ);
		assert_int_equal(r.outcome[0], SIM_OUT_MISS);
		assert_int_equal(r.outcome[1], SIM_OUT_HOT);
		assert_int_equal(r.outcome[2], SIM_OUT_LATE);
		assert_int_equal(r.outcome[3], SIM_OUT_MISS);
		sim_result_free(&r);
		r = replay(&t, pols[k], 4 * SZ, false);
		assert_int_equal(r.all.hits, 0);
		assert_int_equal(r.prefetched, 0);
		assert_int_equal(r.cold_bytes, 4 * SZ);
		sim_result_free(&r);
	}
	trace_free(&t);
}

/* A late read whose row comes before the load's landed_late row (both at
 * the land, in either order), then a second read:
 *   load b; b miss (in flight: late); b landed_late (lands as a fill);
 *   b hot (a hit)
 * 1 hit, 1 late, cold 0. */
static void test_replay_late_read_first(void **state)
{
	(void)state;
	struct trace t;
	char err[256] = "";
	static const char csv[] = HEADER
		"ds/b#0,100,,,,10,ds,0,load\n"
		"ds/b#0,100,0,0,,50,ds,0,miss\n"
		"ds/b#0,100,,,,50,ds,0,landed_late\n"
		"ds/b#0,100,0,0,,60,ds,0,hot\n";
	assert_int_equal(read_csv(&t, csv, err, sizeof(err)), 0);
	struct sim_result r = replay(&t, "lru", 4 * SZ, true);
	assert_int_equal(r.all.hits, 1);
	assert_int_equal(r.prefetch_late, 1);
	assert_int_equal(r.cold_bytes, 0);
	assert_int_equal(r.outcome[0], SIM_OUT_LATE);
	assert_int_equal(r.outcome[1], SIM_OUT_HOT);
	sim_result_free(&r);
	trace_free(&t);
}

/* The model decides what stays: hot has room for one object (lru).
 *   load a, landed a; load b, landed b (a is lru's victim: dropped);
 *   a: miss in the model (the daemon had it hot: it held more);
 *   b: evicted by a's fill: a miss too.
 * And a load of a chunk the model holds changes nothing:
 *   c miss (on hot); load c, landed c (held: not loaded); c: hot.
 * 1 hit (c), prefetched 2 (a, b), cold 300. */
static void test_replay_model_decides(void **state)
{
	(void)state;
	struct trace t;
	char err[256] = "";
	static const char csv[] = HEADER
		"ds/a#0,100,,,,1,ds,0,load\n"
		"ds/a#0,100,,,,2,ds,0,landed\n"
		"ds/b#0,100,,,,3,ds,0,load\n"
		"ds/b#0,100,,,,4,ds,0,landed\n"
		"ds/a#0,100,0,0,,5,ds,0,hot\n"
		"ds/b#0,100,0,0,,6,ds,0,hot\n"
		"ds/c#0,100,0,0,,7,ds,0,miss\n"
		"ds/c#0,100,,,,8,ds,0,load\n"
		"ds/c#0,100,,,,9,ds,0,landed\n"
		"ds/c#0,100,0,0,,10,ds,0,hot\n";
	assert_int_equal(read_csv(&t, csv, err, sizeof(err)), 0);
	struct sim_result r = replay(&t, "lru", SZ, true);
	assert_int_equal(r.all.hits, 1);
	assert_int_equal(r.prefetched, 2);
	assert_int_equal(r.prefetch_late, 0);
	assert_int_equal(r.cold_bytes, 3 * SZ);
	assert_int_equal(r.outcome[0], SIM_OUT_MISS);
	assert_int_equal(r.outcome[1], SIM_OUT_MISS);
	assert_int_equal(r.outcome[2], SIM_OUT_MISS);
	assert_int_equal(r.outcome[3], SIM_OUT_HOT);
	sim_result_free(&r);
	trace_free(&t);
}

/* An old trace (no load rows) replays as before with trace_loads on. */
static void test_old_trace_unchanged(void **state)
{
	(void)state;
	struct trace t;
	char err[256] = "";
	static const char csv[] = "object,size,rank,job,epoch,time_us,dataset,chunk,result\n"
				  "ds/a#0,100,,,,0,ds,0,miss\n"
				  "ds/b#0,100,,,,1,ds,0,miss\n"
				  "ds/a#0,100,,,,2,ds,0,hot\n";
	assert_int_equal(read_csv(&t, csv, err, sizeof(err)), 0);
	assert_int_equal(t.nev, 0);
	struct sim_result on = replay(&t, "lru", 2 * SZ, true);
	struct sim_result off = replay(&t, "lru", 2 * SZ, false);
	assert_int_equal(on.all.hits, 1);
	assert_int_equal(off.all.hits, 1);
	assert_int_equal(on.cold_bytes, off.cold_bytes);
	sim_result_free(&on);
	sim_result_free(&off);
	trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_load_rows),
		cmocka_unit_test(test_parse_bad_result_names_line),
		cmocka_unit_test(test_replay_daemon_loads),
		cmocka_unit_test(test_replay_late_read_first),
		cmocka_unit_test(test_replay_model_decides),
		cmocka_unit_test(test_old_trace_unchanged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
