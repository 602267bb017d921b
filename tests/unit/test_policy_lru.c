/*
 * lru (policy/lru.c): known answers on small traces, the registry and the
 * shared calling contract every policy follows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_rig.h"

static uint64_t lru_key(int i)
{
	return 1000 + (uint64_t)i;
}

/* Replay keys SEQ through the rig's fresh instance; returns hits. */
static int replay(struct rig *r, const int *seq, size_t n)
{
	int hits = 0;
	for (size_t i = 0; i < n; i++)
		hits += rig_read(r, seq[i]);
	return hits;
}

static void test_lru_victim_is_least_recent(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	rig_init(r, "lru", 3, 1, lru_key, false);
	struct policy *p = r->p;
	struct rig_ent *ents = r->ents;
	for (int i = 0; i < 3; i++)
		policy_insert(p, &ents[i].e, (uint64_t)i);
	policy_hit(p, &ents[0].e, 10);
	assert_ptr_equal(policy_victim(p, 11), &ents[1].e);
	/* victim() names, it does not remove */
	assert_ptr_equal(policy_victim(p, 11), &ents[1].e);
	assert_int_equal(p->entries, 3);
	policy_remove(p, &ents[1].e);
	assert_ptr_equal(policy_victim(p, 12), &ents[2].e);
	assert_int_equal(p->bytes, 2);
	assert_int_equal(ents[0].e.atime, 10);
	rig_free(r);
	free(r);
}

/* The classic: a loop one larger than the cache never hits under LRU. */
static void test_lru_loop_thrashes(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	rig_init(r, "lru", 3, 1, lru_key, false);
	int seq[40];
	for (int i = 0; i < 40; i++)
		seq[i] = i % 4;
	assert_int_equal(replay(r, seq, 40), 0);
	rig_free(r);
	free(r);
}

static void test_lru_known_hits(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	rig_init(r, "lru", 2, 1, lru_key, false);
	/* 0 miss, 1 miss, 0 hit, 2 miss (evicts 1), 0 hit, 1 miss (evicts 2),
	 * 1 hit: 3 hits */
	const int seq[] = { 0, 1, 0, 2, 0, 1, 1 };
	assert_int_equal(replay(r, seq, 7), 3);
	rig_free(r);
	free(r);
}

static void test_registry(void **state)
{
	(void)state;
	const char *want[] = { "lru", "arc", "epoch", "clairvoyant" };
	for (size_t i = 0; i < 4; i++) {
		const struct policy_ops *o = policy_find(want[i]);
		assert_non_null(o);
		assert_string_equal(o->name, want[i]);
		assert_non_null(o->summary);
	}
	assert_null(policy_find("lfu"));
	size_t n = 0;
	for (const struct policy_ops *const *o = policy_all(); *o; o++)
		n++;
	assert_true(n >= 4);
	struct policy *p = NULL;
	assert_int_equal(policy_create("nope", NULL, &p), -ENOENT);
	assert_null(p);
}

static void test_lru_tunables(void **state)
{
	(void)state;
	struct policy *p;
	char err[256];
	assert_int_equal(policy_create("lru", NULL, &p), 0);
	assert_int_equal(policy_set(p, "x", "1", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "lru: unknown tunable \"x\" (tunables: none)");
	char d[64];
	assert_int_equal(policy_describe(p, d, sizeof(d)), 0);
	assert_string_equal(d, "");
	assert_string_equal(policy_name(p), "lru");
	policy_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lru_victim_is_least_recent),
		cmocka_unit_test(test_lru_loop_thrashes),
		cmocka_unit_test(test_lru_known_hits),
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_lru_tunables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
