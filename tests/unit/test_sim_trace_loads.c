/*
 * The daemon's prefetch load rows in a `tierctl trace` file (load, landed,
 * landed_late, load_lost) and their replay (tiercache-sim --prefetch-rate
 * trace: policy/sim/trace.c keeps them apart from the accesses as events;
 * policy/sim/engine.c makes a chunk the model loaded ahead late when the
 * daemon's load of it was). Tiny traces
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
				uint64_t window, bool trace_loads)
{
	struct sim_result r;
	char err[256];
	struct sim_config cfg = { .hot = hot, .prefetch_window = window, .trace_loads = trace_loads };
	assert_int_equal(sim_result_init(&r, pol, t->nepochs), 0);
	r.outcome = malloc(t->n);
	assert_non_null(r.outcome);
	assert_int_equal(sim_run_policy(t, pol, &cfg, &r, err, sizeof(err)), 0);
	assert_int_equal(r.all.accesses, t->n);
	return r;
}

/* The mixed trace, hot with room for all, the model's window 300 bytes
 * (3 chunks): after a's read (a miss, cold 100) the model loads b, c and d
 * ahead at once. With the daemon's load timing:
 *   b: its load landed before its read (landed): a hit;
 *   c: its load landed late (landed_late), the daemon's read missed: late;
 *   d: its load was lost, the daemon's read missed: late.
 * 1 hit, 2 late, 3 loaded, cold 100 -- the daemon's outcomes, for every
 * policy. Instant loads (no trace timing): b, c and d hit. */
static void test_replay_daemon_timing(void **state)
{
	(void)state;
	struct trace t;
	char err[256] = "";
	assert_int_equal(read_csv(&t, mixed, err, sizeof(err)), 0);
	const char *pols[] = { "lru", "arc", "epoch", "clairvoyant" };
	for (size_t k = 0; k < 4; k++) {
		struct sim_result r = replay(&t, pols[k], 4 * SZ, 3 * SZ, true);
		assert_int_equal(r.all.hits, 1);
		assert_int_equal(r.prefetch_late, 2);
		assert_int_equal(r.prefetched, 3);
		assert_int_equal(r.cold_bytes, SZ);
		assert_int_equal(r.outcome[0], SIM_OUT_MISS);
		assert_int_equal(r.outcome[1], SIM_OUT_HOT);
		assert_int_equal(r.outcome[2], SIM_OUT_LATE);
		assert_int_equal(r.outcome[3], SIM_OUT_LATE);
		sim_result_free(&r);
		r = replay(&t, pols[k], 4 * SZ, 3 * SZ, false);
		assert_int_equal(r.all.hits, 3);
		assert_int_equal(r.prefetch_late, 0);
		assert_int_equal(r.cold_bytes, SZ);
		sim_result_free(&r);
	}
	trace_free(&t);
}

/* Readers faster than the prefetcher: the daemon missed b with no load of
 * it yet (then loaded it: its load landed late), and hit c, which it
 * held: window 200, hot 400.
 *   a miss (cold 100); the model loads b and c ahead;
 *   b: loaded ahead, the daemon missed it and had no load landed: late;
 *   c: loaded ahead, the daemon hit it (held it): a hit;
 *   b again: read already (not ahead): a hit on its own merits.
 * 2 hits, 1 late, cold 100. */
static void test_replay_reader_ahead(void **state)
{
	(void)state;
	struct trace t;
	char err[256] = "";
	static const char csv[] = HEADER
		"ds/a#0,100,0,0,,0,ds,0,miss\n"
		"ds/b#0,100,,,,10,ds,0,load\n"
		"ds/b#0,100,0,0,,50,ds,0,miss\n"
		"ds/b#0,100,,,,50,ds,0,landed_late\n"
		"ds/c#0,100,0,0,,60,ds,0,hot\n"
		"ds/b#0,100,0,0,,70,ds,0,hot\n";
	assert_int_equal(read_csv(&t, csv, err, sizeof(err)), 0);
	struct sim_result r = replay(&t, "lru", 4 * SZ, 2 * SZ, true);
	assert_int_equal(r.all.hits, 2);
	assert_int_equal(r.prefetch_late, 1);
	assert_int_equal(r.cold_bytes, SZ);
	assert_int_equal(r.outcome[1], SIM_OUT_LATE);
	assert_int_equal(r.outcome[2], SIM_OUT_HOT);
	assert_int_equal(r.outcome[3], SIM_OUT_HOT);
	sim_result_free(&r);
	trace_free(&t);
}

/* What the model holds from before is the model's policies' alone: hot
 * has room for one chunk (lru), no window. The daemon hit x twice (it held
 * more); the model keeps only the last chunk read:
 *   x miss, y miss (x evicted), x miss, y miss; with or without the load
 *   rows (a load landed on time for y changes nothing: the model did not
 *   load y ahead). 0 hits, cold 400. */
static void test_replay_policy_decides(void **state)
{
	(void)state;
	struct trace t;
	char err[256] = "";
	static const char csv[] = HEADER
		"ds/x#0,100,0,0,,1,ds,0,miss\n"
		"ds/y#0,100,0,0,,2,ds,0,miss\n"
		"ds/x#0,100,0,0,,3,ds,0,hot\n"
		"ds/y#0,100,,,,4,ds,0,load\n"
		"ds/y#0,100,,,,5,ds,0,landed\n"
		"ds/y#0,100,0,0,,6,ds,0,hot\n";
	assert_int_equal(read_csv(&t, csv, err, sizeof(err)), 0);
	for (int on = 0; on < 2; on++) {
		struct sim_result r = replay(&t, "lru", SZ, 0, on);
		assert_int_equal(r.all.hits, 0);
		assert_int_equal(r.prefetch_late, 0);
		assert_int_equal(r.cold_bytes, 4 * SZ);
		sim_result_free(&r);
	}
	trace_free(&t);
}

/* An old trace (no load rows) with a window: a chunk loaded ahead whose
 * read missed in the daemon is late; one the daemon hit is a hit.
 *   a miss; model loads b: the daemon missed b: late;
 *   model loads a? no: a is resident. a: hot in both.
 * 1 hit, 1 late. */
static void test_old_trace(void **state)
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
	struct sim_result on = replay(&t, "lru", 2 * SZ, SZ, true);
	struct sim_result off = replay(&t, "lru", 2 * SZ, SZ, false);
	assert_int_equal(on.all.hits, 1);
	assert_int_equal(on.prefetch_late, 1);
	assert_int_equal(on.outcome[1], SIM_OUT_LATE);
	assert_int_equal(off.all.hits, 2);
	sim_result_free(&on);
	sim_result_free(&off);
	trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_load_rows),
		cmocka_unit_test(test_parse_bad_result_names_line),
		cmocka_unit_test(test_replay_daemon_timing),
		cmocka_unit_test(test_replay_reader_ahead),
		cmocka_unit_test(test_replay_policy_decides),
		cmocka_unit_test(test_old_trace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
