/*
 * The simulator's model of the mover trailing the fills (tiercache-sim
 * --hot-max / --warm-max, policy/sim/engine.c): a tier holds up to its
 * max before its victims go, in its policy's order, while the policy's
 * budget stays --hot / --warm. Tiny traces of 100-byte objects, counted
 * by hand in the comments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "sim/engine.h"
#include "sim/gen.h"

#define SZ 100

static void build(struct trace *t, uint32_t nobj, const uint32_t *order, size_t n)
{
	trace_init(t);
	for (uint32_t o = 0; o < nobj; o++)
		assert_int_equal(trace_object_add(t, SZ), o);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(trace_push(t, order[i], 0, 0, 0), 0);
	trace_finish(t);
}

static struct sim_result run(const struct trace *t, const char *policy, const struct sim_config *cfg)
{
	struct sim_result r;
	char err[256];
	assert_int_equal(sim_result_init(&r, policy, t->nepochs), 0);
	assert_int_equal(sim_run_policy(t, policy, cfg, &r, err, sizeof(err)), 0);
	assert_int_equal(r.all.accesses, t->n);
	assert_int_equal(r.tier_hits[0] + r.tier_hits[1], r.all.hits);
	return r;
}

/* One tier, lru, A B C A B C D A.
 * hot 200, no max: every read a miss (three objects cycling through two
 * places): 0 hits.
 * hot 200, max 300: A B C fill hot to 300, not past it; A B C hit (3);
 * D takes it to 400: one victim, the least recently read (A), not down
 * to the budget: hot B C D; A misses. 3 hits, all on hot. */
static void test_one_tier_holds_to_max(void **state)
{
	(void)state;
	static const uint32_t order[] = { 0, 1, 2, 0, 1, 2, 3, 0 };
	struct trace t;
	build(&t, 4, order, 8);
	struct sim_config cfg = { .hot = 2 * SZ };
	struct sim_result r = run(&t, "lru", &cfg);
	assert_int_equal(r.all.hits, 0);
	sim_result_free(&r);
	cfg.hot_max = 3 * SZ;
	r = run(&t, "lru", &cfg);
	assert_int_equal(r.all.hits, 3);
	assert_int_equal(r.tier_hits[0], 3);
	/* the last read: had the victim gone down to the budget (B too),
	 * a second A would find B gone; here B C D stay, so B hits */
	sim_result_free(&r);
	static const uint32_t order2[] = { 0, 1, 2, 0, 1, 2, 3, 1 };
	struct trace t2;
	build(&t2, 4, order2, 8);
	r = run(&t2, "lru", &cfg);
	assert_int_equal(r.all.hits, 4);
	sim_result_free(&r);
	trace_free(&t2);
	trace_free(&t);
}

/* Two tiers, lru, A B C D A B C D (demote=1, named: lru's default is
 * demote=flat, which puts C and D on warm at once and hits A B on hot).
 * hot 100, warm 200, no max: 300 bytes for four objects read in a cycle:
 * A->hot; B->hot, A->warm; C->hot, B->warm; D->hot, C->warm, warm 300:
 * A dropped; A misses, and so on: 0 hits.
 * hot 100 with max 200, warm 200: A B on hot; C: hot 300, A->warm;
 * D: B->warm (warm A B). A: warm hit, promoted: hot C D A, C->warm
 * (warm B C). B: warm hit, D->warm (warm C D). C: warm hit, A->warm.
 * D: warm hit. 4 hits, all on warm; warm never past 200: nothing dropped
 * from it. */
static void test_two_tiers_demote_at_max(void **state)
{
	(void)state;
	static const uint32_t order[] = { 0, 1, 2, 3, 0, 1, 2, 3 };
	struct trace t;
	build(&t, 4, order, 8);
	struct sim_config cfg = { .hot = SZ, .warm = 2 * SZ, .placement = "demote=1" };
	struct sim_result r = run(&t, "lru", &cfg);
	assert_int_equal(r.all.hits, 0);
	sim_result_free(&r);
	cfg.hot_max = 2 * SZ;
	r = run(&t, "lru", &cfg);
	assert_int_equal(r.all.hits, 4);
	assert_int_equal(r.tier_hits[1], 4);
	assert_int_equal(r.cold_bytes, 4 * SZ);
	sim_result_free(&r);
	/* warm_max the same way: hot 100, warm 100 with max 200 is the
	 * same 300 bytes as the first case: 0 hits; with hot max 200 too,
	 * the 400 of the second: 4 hits */
	struct sim_config w = { .hot = SZ, .warm = SZ, .warm_max = 2 * SZ, .placement = "demote=1" };
	r = run(&t, "lru", &w);
	assert_int_equal(r.all.hits, 0);
	sim_result_free(&r);
	w.hot_max = 2 * SZ;
	r = run(&t, "lru", &w);
	assert_int_equal(r.all.hits, 4);
	sim_result_free(&r);
	/* lru's default, demote=flat, holds the same 400 bytes: hot takes
	 * fills up to its max (A B), warm the next (C D): the same 4 hits,
	 * 2 from each tier */
	cfg.placement = NULL;
	r = run(&t, "lru", &cfg);
	assert_int_equal(r.all.hits, 4);
	assert_int_equal(r.tier_hits[0], 2);
	assert_int_equal(r.tier_hits[1], 2);
	sim_result_free(&r);
	trace_free(&t);
}

/* Without a max, or with one at or below the budget, the replay is
 * today's, hit for hit, for every policy (a generated shuffle). */
static void test_no_max_is_unchanged(void **state)
{
	(void)state;
	struct gen_opts o;
	struct trace t;
	char err[256];
	gen_opts_default(&o);
	o.objects = 3000;
	o.epochs = 3;
	o.size_a = 4096;
	trace_init(&t);
	assert_int_equal(gen_trace(&o, &t, err, sizeof(err)), 0);
	const char *pols[] = { "lru", "arc", "epoch", "clairvoyant" };
	uint64_t hot = t.dataset_bytes / 5, warm = t.dataset_bytes / 4;
	for (size_t k = 0; k < 4; k++) {
		struct sim_config a = { .hot = hot, .warm = warm };
		struct sim_config b = { .hot = hot, .warm = warm, .hot_max = hot, .warm_max = warm / 2 };
		struct sim_config c = { .hot = hot, .warm = warm, .hot_max = hot + hot / 3 };
		struct sim_result ra = run(&t, pols[k], &a);
		struct sim_result rb = run(&t, pols[k], &b);
		struct sim_result rc = run(&t, pols[k], &c);
		assert_int_equal(ra.all.hits, rb.all.hits);
		assert_int_equal(ra.tier_hits[0], rb.tier_hits[0]);
		assert_int_equal(ra.cold_bytes, rb.cold_bytes);
		/* more room held never loses hits for lru on a shuffle */
		if (k == 0)
			assert_true(rc.all.hits >= ra.all.hits);
		sim_result_free(&ra);
		sim_result_free(&rb);
		sim_result_free(&rc);
	}
	trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_tier_holds_to_max),
		cmocka_unit_test(test_two_tiers_demote_at_max),
		cmocka_unit_test(test_no_max_is_unchanged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
