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
#include <string.h>

#include "policy.h"

#define N 8

struct ent {
	struct pol_entry e;
	bool in;
};

/* Replay keys 0..N-1 through one instance holding `cap` unit entries;
 * returns hits. */
static int replay(struct policy *p, struct ent *ents, const int *seq, size_t n, uint64_t cap)
{
	int hits = 0;
	for (size_t i = 0; i < n; i++) {
		struct ent *x = &ents[seq[i]];
		if (x->in) {
			policy_hit(p, &x->e, i);
			hits++;
			continue;
		}
		if (!policy_admit(p, x->e.key, x->e.size, i))
			continue;
		policy_insert(p, &x->e, i);
		x->in = true;
		while (p->bytes > cap) {
			struct pol_entry *v = policy_victim(p, i);
			assert_non_null(v);
			policy_remove(p, v);
			((struct ent *)v)->in = false;
		}
	}
	return hits;
}

static void ents_init(struct ent *ents)
{
	memset(ents, 0, N * sizeof(*ents));
	for (int i = 0; i < N; i++) {
		ents[i].e.key = 1000 + (uint64_t)i;
		ents[i].e.size = 1;
	}
}

static void test_lru_victim_is_least_recent(void **state)
{
	(void)state;
	struct policy *p;
	struct policy_env env = { .capacity = 3 };
	struct ent ents[N];
	ents_init(ents);
	assert_int_equal(policy_create("lru", &env, &p), 0);
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
	policy_destroy(p);
}

/* The classic: a loop one larger than the cache never hits under LRU. */
static void test_lru_loop_thrashes(void **state)
{
	(void)state;
	struct policy *p;
	struct policy_env env = { .capacity = 3 };
	struct ent ents[N];
	ents_init(ents);
	assert_int_equal(policy_create("lru", &env, &p), 0);
	int seq[40];
	for (int i = 0; i < 40; i++)
		seq[i] = i % 4;
	assert_int_equal(replay(p, ents, seq, 40, 3), 0);
	policy_destroy(p);
}

static void test_lru_known_hits(void **state)
{
	(void)state;
	struct policy *p;
	struct policy_env env = { .capacity = 2 };
	struct ent ents[N];
	ents_init(ents);
	assert_int_equal(policy_create("lru", &env, &p), 0);
	/* 0 miss, 1 miss, 0 hit, 2 miss (evicts 1), 0 hit, 1 miss (evicts 2),
	 * 1 hit: 3 hits */
	const int seq[] = { 0, 1, 0, 2, 0, 1, 1 };
	assert_int_equal(replay(p, ents, seq, 7, 2), 3);
	policy_destroy(p);
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
