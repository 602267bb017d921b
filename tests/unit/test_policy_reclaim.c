/*
 * What the daemon's segment reclaim relies on in the policies
 * (cached/cache/reclaim_rank.h):
 *   - next_victims (policy.h): for the policies that say their order (lru,
 *     arc), the list it gives is exactly what victim() and remove() in
 *     turn give up, after a workload with hits, ghost hits and evictions;
 *     it stops at the bytes asked for, at max entries, and changes
 *     nothing. A policy without an order (epoch) gives none.
 *   - a kept item is copied within its tier: removed, then inserted
 *     again without admit(). arc puts an entry that was in T2 back in T2
 *     (not in T1, as if seen once), one from T1 back in T1, and leaves no
 *     ghost of a resident key behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_rig.h"

#define NV_OBJ 200

static uint64_t nv_key(int i)
{
	return 5000 + (uint64_t)i;
}

/* A skewed workload with a loop in it: both of arc's lists fill, ghosts
 * are hit, p moves. Deterministic. */
static void run_workload(struct rig *r)
{
	uint64_t x = 12345;
	for (int i = 0; i < 3000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		int k = (x >> 33) % 4 == 0 ? (int)((x >> 40) % NV_OBJ) : (int)((x >> 40) % 24);
		rig_read(r, k);
	}
}

static void check_order(const char *name)
{
	struct rig *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	rig_init(r, name, 60, 1, nv_key, false);
	run_workload(r);
	struct policy *p = r->p;
	assert_true(policy_has_order(p));
	uint64_t entries = p->entries, bytes = p->bytes;
	assert_true(entries > 10);

	struct pol_entry *list[RIG_NOBJ];
	/* stops at the bytes asked for (each entry is 1 byte here) and at max */
	assert_int_equal(policy_next_victims(p, r->now, 5, list, RIG_NOBJ), 5);
	assert_int_equal(policy_next_victims(p, r->now, 1000, list, 3), 3);
	size_t n = policy_next_victims(p, r->now, UINT64_MAX, list, RIG_NOBJ);
	assert_int_equal(n, entries);
	/* nothing changed by asking */
	assert_int_equal(p->entries, entries);
	assert_int_equal(p->bytes, bytes);
	/* the order victim() + remove() gives */
	for (size_t i = 0; i < n; i++) {
		struct pol_entry *v = policy_victim(p, r->now);
		assert_ptr_equal(v, list[i]);
		policy_remove(p, v);
		((struct rig_ent *)v)->in = false;
	}
	assert_null(policy_victim(p, r->now));
	rig_free(r);
	free(r);
}

static void test_lru_order(void **state)
{
	(void)state;
	check_order("lru");
}

static void test_arc_order(void **state)
{
	(void)state;
	check_order("arc");
}

static void test_no_order(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	rig_init(r, "epoch", 60, 1, nv_key, false);
	run_workload(r);
	struct pol_entry *list[4];
	assert_false(policy_has_order(r->p));
	assert_int_equal(policy_next_victims(r->p, r->now, 10, list, 4), 0);
	rig_free(r);
	free(r);
}

/* The list (T1 or T2) arc's describe() reports bytes for. */
static uint64_t arc_list_bytes(struct policy *p, const char *list)
{
	char buf[256], *at;
	unsigned long long v = 0;
	assert_int_equal(policy_describe(p, buf, sizeof(buf)), 0);
	assert_non_null(at = strstr(buf, list));
	assert_int_equal(sscanf(at + strlen(list), "%llu", &v), 1);
	return v;
}

static void test_arc_copy_keeps_list(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	rig_init(r, "arc", 10, 1, nv_key, false);
	struct policy *p = r->p;
	for (int i = 0; i < 6; i++)
		rig_read(r, i);
	rig_read(r, 2); /* a second read: entry 2 is in T2 */
	rig_read(r, 3);
	assert_int_equal(arc_list_bytes(p, "t2="), 2);
	assert_int_equal(arc_list_bytes(p, "t1="), 4);
	/* a copy within the tier: remove, insert again (no admit) */
	struct pol_entry *e2 = &r->ents[2].e, *e0 = &r->ents[0].e;
	policy_remove(p, e2);
	policy_insert(p, e2, ++r->now);
	policy_remove(p, e0);
	policy_insert(p, e0, ++r->now);
	assert_int_equal(arc_list_bytes(p, "t2="), 2);
	assert_int_equal(arc_list_bytes(p, "t1="), 4);
	/* no ghost left for them: the ghost lists are as before (empty) */
	assert_int_equal(arc_list_bytes(p, "b1="), 0);
	assert_int_equal(arc_list_bytes(p, "b2="), 0);
	rig_free(r);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lru_order),
		cmocka_unit_test(test_arc_order),
		cmocka_unit_test(test_no_order),
		cmocka_unit_test(test_arc_copy_keeps_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
