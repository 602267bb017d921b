/*
 * Unit tests of cached/cluster/home.c (weighted rendezvous homes): the
 * same inputs give the same home whatever the list's order; equal and 1:3
 * weights share 100k keys as they should; removing a node moves only its
 * own keys, adding one moves about 1/N of the keys and only to it; the
 * second choice is the home once the first is gone; skipped nodes are
 * never chosen; no node gives -1. Pure computation, single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "home.h"

#define NKEYS 100000u

/* chunk keys as callers make them: hashes, here of a counter */
static uint64_t key_of(unsigned i)
{
	uint64_t x = (uint64_t)i * UINT64_C(0x9E3779B97F4A7C15) + 12345;
	x ^= x >> 31;
	return x * UINT64_C(0xBF58476D1CE4E5B9);
}

static int home_of(const struct home_node *nodes, size_t n, uint64_t key)
{
	int first = -2, second = -2;
	home_pick(nodes, n, key, &first, &second);
	return first;
}

/* fraction of NKEYS within want +- 0.02 */
static void expect_share(unsigned count, double want, const char *what)
{
	double got = (double)count / NKEYS;
	if (got < want - 0.02 || got > want + 0.02)
		print_error("%s: share %.4f, want %.2f +- 0.02\n", what, got, want);
	assert_true(got >= want - 0.02 && got <= want + 0.02);
}

static void test_deterministic(void **state)
{
	(void)state;
	struct home_node a[] = {{"n1", 10, 0}, {"n2", 10, 0}, {"n3", 20, 0}, {"n4", 5, 0}};
	struct home_node b[] = {{"n4", 5, 0}, {"n3", 20, 0}, {"n1", 10, 0}, {"n2", 10, 0}};
	for (unsigned i = 0; i < 1000; i++) {
		int f1, s1, f2, s2, f3, s3;
		home_pick(a, 4, key_of(i), &f1, &s1);
		home_pick(a, 4, key_of(i), &f2, &s2);
		assert_int_equal(f1, f2);
		assert_int_equal(s1, s2);
		assert_true(f1 >= 0 && s1 >= 0 && f1 != s1);
		/* another order: the same nodes by id */
		home_pick(b, 4, key_of(i), &f3, &s3);
		assert_string_equal(a[f1].id, b[f3].id);
		assert_string_equal(a[s1].id, b[s3].id);
	}
}

static void test_equal_weights(void **state)
{
	(void)state;
	struct home_node nodes[] = {{"gpu-01", 1000, 0}, {"gpu-02", 1000, 0}, {"gpu-03", 1000, 0},
				    {"gpu-04", 1000, 0}};
	unsigned count[4] = {0};
	for (unsigned i = 0; i < NKEYS; i++) {
		int h = home_of(nodes, 4, key_of(i));
		assert_true(h >= 0 && h < 4);
		count[h]++;
	}
	for (int i = 0; i < 4; i++)
		expect_share(count[i], 0.25, nodes[i].id);
}

static void test_weights(void **state)
{
	(void)state;
	/* weight 0 counts as 1: {0, 3} is 1:3 as well */
	struct home_node sets[2][2] = {{{"small", UINT64_C(64) << 30, 0}, {"big", UINT64_C(192) << 30, 0}},
				       {{"small", 0, 0}, {"big", 3, 0}}};
	for (int s = 0; s < 2; s++) {
		unsigned count[2] = {0};
		for (unsigned i = 0; i < NKEYS; i++)
			count[home_of(sets[s], 2, key_of(i))]++;
		expect_share(count[0], 0.25, "weight 1");
		expect_share(count[1], 0.75, "weight 3");
	}
}

static void test_leave_and_join(void **state)
{
	(void)state;
	struct home_node five[] = {{"a", 1, 0}, {"b", 1, 0}, {"c", 1, 0}, {"d", 1, 0}, {"e", 1, 0}};
	struct home_node four[] = {{"a", 1, 0}, {"b", 1, 0}, {"d", 1, 0}, {"e", 1, 0}}; /* no c */
	struct home_node six[] = {{"a", 1, 0}, {"b", 1, 0}, {"c", 1, 0},
				  {"d", 1, 0}, {"e", 1, 0}, {"f", 1, 0}};
	unsigned moved_leave = 0, moved_join = 0;
	for (unsigned i = 0; i < NKEYS; i++) {
		uint64_t k = key_of(i);
		int first, second;
		home_pick(five, 5, k, &first, &second);
		const char *before = five[first].id;
		/* c leaves: only c's keys move, each to its second choice */
		const char *after = four[home_of(four, 4, k)].id;
		if (strcmp(before, "c") == 0) {
			assert_string_equal(after, five[second].id);
			moved_leave++;
		} else {
			assert_string_equal(after, before);
		}
		/* f joins: a key moves only to f */
		const char *joined = six[home_of(six, 6, k)].id;
		if (strcmp(joined, before) != 0) {
			assert_string_equal(joined, "f");
			moved_join++;
		}
	}
	expect_share(moved_leave, 0.2, "keys of the node that left");
	expect_share(moved_join, 1.0 / 6, "keys moved to the node that joined");
}

static void test_skip_and_none(void **state)
{
	(void)state;
	struct home_node nodes[] = {{"a", 1, 1}, {"b", 1, 0}, {"c", 1, 1}, {"d", 1, 0}};
	unsigned count[4] = {0};
	for (unsigned i = 0; i < 10000; i++) {
		int first, second;
		home_pick(nodes, 4, key_of(i), &first, &second);
		assert_true(first == 1 || first == 3);
		assert_true(second == 1 || second == 3);
		assert_int_not_equal(first, second);
		count[first]++;
	}
	assert_int_equal(count[0] + count[2], 0);
	assert_true(count[1] > 4000 && count[3] > 4000);

	/* one eligible node: home, no second */
	int first = -2, second = -2;
	home_pick(nodes, 2, 42, &first, &second);
	assert_int_equal(first, 1);
	assert_int_equal(second, -1);
	/* none eligible, none at all */
	home_pick(nodes, 1, 42, &first, &second);
	assert_int_equal(first, -1);
	assert_int_equal(second, -1);
	first = second = -2;
	home_pick(NULL, 0, 42, &first, &second);
	assert_int_equal(first, -1);
	assert_int_equal(second, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_equal_weights),
		cmocka_unit_test(test_weights),
		cmocka_unit_test(test_leave_and_join),
		cmocka_unit_test(test_skip_and_none),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
