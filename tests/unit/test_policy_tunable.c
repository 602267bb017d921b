/*
 * Tunables and switching (policy/tunable.c): every policy rejects an
 * unknown tunable with the standard message, bad values are refused, and
 * policy_create_with() leaves the caller's old policy alone on any error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy.h"

static void test_unknown_tunable_every_policy(void **state)
{
	(void)state;
	struct policy_env env = { .capacity = 100 };
	for (const struct policy_ops *const *o = policy_all(); *o; o++) {
		struct policy *p = NULL;
		char err[256], want[256];
		assert_int_equal(policy_create((*o)->name, &env, &p), 0);
		assert_int_equal(policy_set(p, "bogus", "1", err, sizeof(err)), -EINVAL);
		snprintf(want, sizeof(want), "%s: unknown tunable \"bogus\" (tunables: ",
			 (*o)->name);
		assert_memory_equal(err, want, strlen(want));
		policy_destroy(p);
	}
}

static void test_epoch_message_lists_tunables(void **state)
{
	(void)state;
	struct policy *p;
	char err[256];
	assert_int_equal(policy_create("epoch", NULL, &p), 0);
	assert_int_equal(policy_set(p, "x", "1", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "epoch: unknown tunable \"x\" (tunables: dead_factor first_epoch "
				 "quantile rate size_ratio)");
	assert_int_equal(policy_set(p, "dead_factor", "abc", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "dead_factor: \"abc\" is not a number"));
	assert_int_equal(policy_set(p, "dead_factor", "0.5", err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_set(p, "dead_factor", "", err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_set(p, "dead_factor", "4", err, sizeof(err)), 0);
	char d[256];
	policy_describe(p, d, sizeof(d));
	assert_non_null(strstr(d, "dead_factor=4 "));
	policy_destroy(p);
}

static void test_create_with(void **state)
{
	(void)state;
	struct policy *old, *p;
	char err[256];
	struct policy_env env = { .capacity = 10 };
	assert_int_equal(policy_create("lru", &env, &old), 0);
	p = old;
	assert_int_equal(policy_create_with("lfu", "", &env, &p, err, sizeof(err)), -ENOENT);
	assert_ptr_equal(p, old);
	assert_string_equal(err, "unknown policy \"lfu\" (policies: lru arc epoch clairvoyant)");
	assert_int_equal(policy_create_with("epoch", "dead_factor=3 x=1", &env, &p, err,
					    sizeof(err)),
			 -EINVAL);
	assert_ptr_equal(p, old);
	assert_non_null(strstr(err, "epoch: unknown tunable \"x\""));
	assert_int_equal(policy_create_with("epoch", "novalue", &env, &p, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "epoch: \"novalue\" is not key=value");
	assert_int_equal(policy_create_with("clairvoyant", "unplanned=maybe", &env, &p, err,
					    sizeof(err)),
			 -EINVAL);
	assert_ptr_equal(p, old);
	assert_int_equal(policy_create_with("epoch", "dead_factor=3, quantile=0.9", &env, &p, err,
					    sizeof(err)),
			 0);
	assert_ptr_not_equal(p, old);
	assert_string_equal(policy_name(p), "epoch");
	char d[256];
	policy_describe(p, d, sizeof(d));
	assert_non_null(strstr(d, "dead_factor=3 "));
	assert_non_null(strstr(d, "quantile=0.9 "));
	policy_destroy(p);
	/* arc needs a capacity to size its lists */
	struct policy_env none = { 0 };
	p = old;
	assert_int_equal(policy_create_with("arc", NULL, &none, &p, err, sizeof(err)), -EINVAL);
	assert_ptr_equal(p, old);
	assert_non_null(strstr(err, "arc: cannot create"));
	policy_destroy(old);
}

static void test_parse_helpers(void **state)
{
	(void)state;
	struct policy *p;
	char err[256];
	uint64_t u;
	double d;
	assert_int_equal(policy_create("lru", NULL, &p), 0);
	assert_int_equal(policy_parse_u64(p, "k", "42", 1, 100, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 42);
	assert_int_equal(policy_parse_u64(p, "k", "-1", 0, 100, &u, err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_parse_u64(p, "k", "101", 0, 100, &u, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "lru: k: \"101\" is not an integer in [0, 100]");
	assert_int_equal(policy_parse_u64(p, "k", "1x", 0, 100, &u, err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_parse_double(p, "k", "nan", 0, 1, &d, err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_parse_double(p, "k", "0.25", 0, 1, &d, err, sizeof(err)), 0);
	assert_true(d == 0.25);
	policy_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unknown_tunable_every_policy),
		cmocka_unit_test(test_epoch_message_lists_tunables),
		cmocka_unit_test(test_create_with),
		cmocka_unit_test(test_parse_helpers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
