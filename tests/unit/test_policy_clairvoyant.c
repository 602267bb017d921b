/*
 * clairvoyant (policy/clairvoyant.c) fed by the plan store: with the whole
 * future planned it makes Belady's choices (same hits as the OPT of the
 * simulator); it refuses what would be evicted before its next use; with
 * no plans it is LRU; a dropped plan does not pin entries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "policy.h"
#include "policy_rig.h"
#include "sim/engine.h"
#include "sim/rng.h"
#include "sim/trace.h"

#define NOBJ 64

_Static_assert(NOBJ <= RIG_NOBJ, "the rig holds every object");

static uint64_t key_of(int i)
{
	return 0xabcdef12345ULL * (uint64_t)(i + 1);
}

static void test_cv_equals_belady(void **state)
{
	(void)state;
	struct rng g;
	rng_seed(&g, 11);
	for (int round = 0; round < 40; round++) {
		struct rig *r = calloc(1, sizeof(*r));
		struct trace t;
		uint32_t nobj = 4 + (uint32_t)rng_below(&g, NOBJ - 4);
		size_t len = 50 + rng_below(&g, 400);
		uint64_t cap = 1 + rng_below(&g, nobj);
		trace_init(&t);
		for (uint32_t o = 0; o < nobj; o++)
			assert_true(trace_object_add(&t, 1) >= 0);
		uint64_t *keys = malloc(len * sizeof(*keys));
		for (size_t i = 0; i < len; i++) {
			/* some skew so there is something to choose */
			uint32_t o = (uint32_t)(rng_below(&g, 3) ? rng_below(&g, nobj / 2 + 1)
								 : rng_below(&g, nobj));
			assert_int_equal(trace_push(&t, o, 0, 0, 0), 0);
			keys[i] = key_of((int)o);
		}
		t.has_epochs = true;
		trace_finish(&t);

		rig_init(r, "clairvoyant", cap, 1, key_of, true);
		assert_int_equal(plan_store_set(r->ps, 0, keys, len), 0);
		uint64_t hits = 0;
		for (size_t i = 0; i < len; i++)
			hits += rig_read(r, (int)t.obj[i]);

		struct sim_result opt;
		assert_int_equal(sim_result_init(&opt, "opt", 1), 0);
		assert_int_equal(sim_run_opt(&t, cap, &opt), 0);
		assert_int_equal(hits, opt.all.hits);
		sim_result_free(&opt);
		rig_free(r);
		trace_free(&t);
		free(keys);
		free(r);
	}
}

/* 1 2 3 1 2 3 with room for two: 3 is needed after 1 and 2, so taking it
 * in would evict something needed sooner: refused. */
static void test_cv_refuses_what_would_go_first(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	rig_init(r, "clairvoyant", 2, 1, key_of, true);
	const int seq[] = { 1, 2, 3, 1, 2, 3 };
	uint64_t keys[6];
	for (int i = 0; i < 6; i++)
		keys[i] = key_of(seq[i]);
	assert_int_equal(plan_store_set(r->ps, 0, keys, 6), 0);
	bool adm;
	int hits = 0;
	for (int i = 0; i < 6; i++) {
		hits += rig_read_admitted(r, seq[i], &adm);
		if (i == 2)
			assert_false(adm);
	}
	assert_int_equal(hits, 2);
	char d[256];
	policy_describe(r->p, d, sizeof(d));
	assert_non_null(strstr(d, "oracle=yes"));
	rig_free(r);
	free(r);
}

/* No plans at all: every next use is unknown and it behaves as LRU. */
static void test_cv_without_plans_is_lru(void **state)
{
	(void)state;
	struct rng g;
	rng_seed(&g, 2);
	struct rig *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	rig_init(a, "clairvoyant", 10, 1, key_of, false);
	rig_init(b, "lru", 10, 1, key_of, false);
	int ha = 0, hb = 0;
	for (int i = 0; i < 5000; i++) {
		int k = (int)rng_below(&g, 30);
		bool x = rig_read(a, k), y = rig_read(b, k);
		assert_int_equal(x, y);
		ha += x;
		hb += y;
	}
	assert_int_equal(ha, hb);
	assert_true(ha > 0);
	rig_free(a);
	rig_free(b);
	free(a);
	free(b);
}

static void test_cv_unplanned_skip(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	char err[128];
	rig_init(r, "clairvoyant", 2, 1, key_of, false);
	assert_int_equal(policy_set(r->p, "unplanned", "skip", err, sizeof(err)), 0);
	bool adm;
	rig_read_admitted(r, 1, &adm);
	assert_true(adm); /* free room: taken */
	rig_read_admitted(r, 2, &adm);
	assert_true(adm);
	rig_read_admitted(r, 3, &adm);
	assert_false(adm); /* full, unknown future: skipped */
	rig_free(r);
	free(r);
}

/* Entries planned for later must not stay pinned once the plan is gone. */
static void test_cv_dropped_plan_requeried(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	rig_init(r, "clairvoyant", 2, 1, key_of, true);
	uint64_t keys[] = { key_of(1), key_of(2), key_of(1), key_of(2) };
	assert_int_equal(plan_store_set(r->ps, 0, keys, 4), 0);
	rig_read(r, 1);
	rig_read(r, 2);
	assert_false(policy_admit(r->p, key_of(3), 1, r->now)); /* unplanned vs planned */
	assert_int_equal(plan_store_drop(r->ps, 0), 0);
	assert_true(policy_admit(r->p, key_of(3), 1, r->now)); /* all unknown now */
	rig_free(r);
	free(r);
}

/* The caller may remove any entry at any time; victims stay consistent. */
static void test_cv_remove_anytime(void **state)
{
	(void)state;
	struct rng g;
	rng_seed(&g, 4);
	struct rig *r = calloc(1, sizeof(*r));
	rig_init(r, "clairvoyant", 8, 1, key_of, true);
	uint64_t keys[3000];
	int seq[3000];
	for (int i = 0; i < 3000; i++) {
		seq[i] = (int)rng_below(&g, NOBJ);
		keys[i] = key_of(seq[i]);
	}
	assert_int_equal(plan_store_set(r->ps, 0, keys, 3000), 0);
	for (int i = 0; i < 3000; i++) {
		rig_read(r, seq[i]);
		if (i % 7 == 0) { /* pinned or moved away */
			int k = (int)rng_below(&g, NOBJ);
			if (r->ents[k].in) {
				policy_remove(r->p, &r->ents[k].e);
				r->ents[k].in = false;
			}
		}
		struct pol_entry *v = policy_victim(r->p, r->now);
		if (r->p->entries)
			assert_true(v && ((struct rig_ent *)v)->in);
		else
			assert_null(v);
	}
	uint64_t n = 0;
	for (int k = 0; k < NOBJ; k++)
		n += r->ents[k].in;
	assert_int_equal(n, r->p->entries);
	rig_free(r);
	free(r);
}

/* The daemon frees an entry right after removing it, or inserts it into
 * the other tier's instance: the heap must never take a stale node's word
 * from the entry it points to. Here the entry moves from a to b and gets
 * there the very stamp and sequence its old node in a has. */
static void test_cv_moved_entry_not_named_by_old_instance(void **state)
{
	(void)state;
	struct policy *a = NULL, *b = NULL;
	struct policy_env env = {.capacity = 10}; /* no oracle: all unplanned */
	struct pol_entry *e = calloc(1, sizeof(*e)), f = {.key = 2, .size = 1};
	e->key = 1;
	e->size = 1;
	assert_int_equal(policy_create("clairvoyant", &env, &a), 0);
	assert_int_equal(policy_create("clairvoyant", &env, &b), 0);
	policy_insert(a, e, 1); /* a's first node: seq 0 */
	policy_insert(a, &f, 2);
	policy_remove(a, e);
	policy_insert(b, e, 3); /* b's first node: seq 0 too, same next use */
	assert_ptr_equal(policy_victim(a, 4), &f);
	assert_ptr_equal(policy_victim(b, 4), e);
	policy_remove(b, e);
	free(e); /* gone: a's and b's stale nodes must not read it */
	assert_ptr_equal(policy_victim(a, 5), &f);
	assert_null(policy_victim(b, 5));
	policy_destroy(a);
	policy_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cv_equals_belady),
		cmocka_unit_test(test_cv_refuses_what_would_go_first),
		cmocka_unit_test(test_cv_without_plans_is_lru),
		cmocka_unit_test(test_cv_unplanned_skip),
		cmocka_unit_test(test_cv_dropped_plan_requeried),
		cmocka_unit_test(test_cv_remove_anytime),
		cmocka_unit_test(test_cv_moved_entry_not_named_by_old_instance),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
