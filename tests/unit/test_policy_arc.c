/*
 * arc (policy/arc.c): frequency protects against a scan, ghost hits move
 * the target, byte accounting with sizes, and on a skewed (zipf) workload
 * it does at least as well as LRU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_rig.h"
#include "sim/rng.h"

#define NOBJ 2000

_Static_assert(NOBJ <= RIG_NOBJ, "the rig holds every object");

static uint64_t arc_key(int i)
{
	return 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
}

/* A hot set read twice sits in T2; a long one-pass scan goes through T1
 * and leaves it alone (LRU would lose all of it). */
static void test_arc_scan_resistant(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	rig_init(r, "arc", 10, 1, arc_key, false);
	for (int rep = 0; rep < 3; rep++)
		for (int i = 0; i < 5; i++)
			rig_read(r, i);
	for (int i = 100; i < 600; i++)
		rig_read(r, i);
	int hits = 0;
	for (int i = 0; i < 5; i++)
		hits += rig_read(r, i);
	assert_int_equal(hits, 5);
	rig_free(r);

	rig_init(r, "lru", 10, 1, arc_key, false);
	for (int rep = 0; rep < 3; rep++)
		for (int i = 0; i < 5; i++)
			rig_read(r, i);
	for (int i = 100; i < 600; i++)
		rig_read(r, i);
	hits = 0;
	for (int i = 0; i < 5; i++)
		hits += rig_read(r, i);
	assert_int_equal(hits, 0);
	rig_free(r);
	free(r);
}

static void test_arc_ghost_hit_adapts(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	char d[256];
	rig_init(r, "arc", 4, 1, arc_key, false);
	/* 0 and 1 read twice: T2. 2..5 once: T1 holds two of them, and the
	 * two pushed out are B1 ghosts (|T1| + |B1| <= c). */
	const int seq[] = { 0, 1, 0, 1, 2, 3, 4, 5 };
	for (int i = 0; i < 8; i++)
		rig_read(r, seq[i]);
	assert_false(r->ents[2].in);
	policy_describe(r->p, d, sizeof(d));
	assert_non_null(strstr(d, "p=0 "));
	assert_false(rig_read(r, 2)); /* a B1 ghost: p grows, 2 goes to T2 */
	policy_describe(r->p, d, sizeof(d));
	assert_null(strstr(d, "p=0 "));
	assert_non_null(strstr(d, "ghost_hits=1"));
	assert_int_equal(r->ents[2].e.list, 2); /* T2 */
	assert_true(r->p->bytes <= 4);
	rig_free(r);
	free(r);
}

static void test_arc_sizes(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	struct rng g;
	rng_seed(&g, 1);
	rig_init(r, "arc", 500, 1, arc_key, false);
	for (int i = 0; i < NOBJ; i++)
		r->ents[i].e.size = 1 + rng_below(&g, 50);
	for (int i = 0; i < 20000; i++) {
		rig_read(r, (int)rng_below(&g, 200));
		assert_true(r->p->bytes <= 500);
	}
	uint64_t sum = 0, n = 0;
	for (int i = 0; i < NOBJ; i++)
		if (r->ents[i].in) {
			sum += r->ents[i].e.size;
			n++;
		}
	assert_int_equal(sum, r->p->bytes);
	assert_int_equal(n, r->p->entries);
	rig_free(r);
	free(r);
}

static int zipf_hits(const char *name, uint64_t seed)
{
	struct rig *r = calloc(1, sizeof(*r));
	struct rng g;
	double cdf[NOBJ], sum = 0;
	int perm[NOBJ];
	for (int i = 0; i < NOBJ; i++) {
		sum += pow(i + 1, -0.9);
		cdf[i] = sum;
		perm[i] = i;
	}
	rng_seed(&g, seed);
	for (int i = NOBJ; i > 1; i--) {
		int j = (int)rng_below(&g, (uint64_t)i), t = perm[i - 1];
		perm[i - 1] = perm[j];
		perm[j] = t;
	}
	rig_init(r, name, 100, 1, arc_key, false);
	int hits = 0;
	for (int k = 0; k < 100000; k++) {
		double u = rng_unit(&g) * sum;
		int lo = 0, hi = NOBJ - 1;
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			if (cdf[mid] > u)
				hi = mid;
			else
				lo = mid + 1;
		}
		hits += rig_read(r, perm[lo]);
	}
	rig_free(r);
	free(r);
	return hits;
}

static void test_arc_zipf_beats_lru(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		int arc = zipf_hits("arc", seed), lru = zipf_hits("lru", seed);
		assert_true(arc >= lru);
		assert_true(lru > 0);
	}
}

/* remove() for reasons other than eviction (moved, pinned) keeps the
 * accounting right and does not crash on re-insert. */
static void test_arc_remove_reinsert(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	rig_init(r, "arc", 10, 1, arc_key, false);
	for (int i = 0; i < 5; i++)
		rig_read(r, i);
	policy_remove(r->p, &r->ents[2].e);
	r->ents[2].in = false;
	assert_int_equal(r->p->entries, 4);
	policy_insert(r->p, &r->ents[2].e, r->now++); /* moved back in, no admit */
	r->ents[2].in = true;
	assert_int_equal(r->p->entries, 5);
	assert_true(rig_read(r, 2));
	rig_free(r);
	free(r);
}

/* The daemon admits when a fill starts and inserts when it ends, with
 * other fills admitted in between: a ghost hit must still go to T2. */
static void test_arc_ghost_hit_with_other_admits_between(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	rig_init(r, "arc", 4, 1, arc_key, false);
	const int seq[] = { 0, 1, 0, 1, 2, 3, 4, 5 };
	for (int i = 0; i < 8; i++)
		rig_read(r, seq[i]);
	assert_false(r->ents[2].in); /* a B1 ghost */
	struct rig_ent *g = &r->ents[2], *o = &r->ents[100], *o2 = &r->ents[101];
	assert_true(policy_admit(r->p, g->e.key, 1, r->now++));  /* ghost hit */
	assert_true(policy_admit(r->p, o->e.key, 1, r->now++));  /* another fill */
	policy_insert(r->p, &o->e, r->now++);                   /* ends first */
	assert_true(policy_admit(r->p, o2->e.key, 1, r->now++)); /* and another starts */
	policy_insert(r->p, &g->e, r->now++);
	assert_int_equal(g->e.list, 2); /* T2, as if nothing came between */
	assert_int_equal(o->e.list, 1); /* a plain miss: T1 */
	policy_insert(r->p, &o2->e, r->now++);
	assert_int_equal(o2->e.list, 1);
	rig_free(r);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arc_scan_resistant),
		cmocka_unit_test(test_arc_ghost_hit_adapts),
		cmocka_unit_test(test_arc_sizes),
		cmocka_unit_test(test_arc_zipf_beats_lru),
		cmocka_unit_test(test_arc_remove_reinsert),
		cmocka_unit_test(test_arc_ghost_hit_with_other_admits_between),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
