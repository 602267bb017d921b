/*
 * Plan store (policy/plan.c): next-use answers as cursors move, skipping
 * ahead, appended epochs, several plans, unknown jobs, compaction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "plan.h"

/* distance from now (store ticks) to the next planned read */
static uint64_t dist(struct plan_store *ps, uint64_t key)
{
	uint64_t t = plan_store_next_use(ps, key);
	return t == PLAN_NONE ? PLAN_NONE : t - plan_store_ticks(ps);
}

static void test_plan_next_use(void **state)
{
	(void)state;
	struct plan_store *ps;
	assert_int_equal(plan_store_create(&ps), 0);
	const uint64_t k[] = { 10, 20, 30, 10, 40 };
	assert_int_equal(plan_store_set(ps, 7, k, 5), 0);
	assert_int_equal(plan_store_count(ps), 1);
	assert_int_equal(dist(ps, 10), 0);
	assert_int_equal(dist(ps, 30), 2);
	assert_int_equal(dist(ps, 40), 4);
	assert_int_equal(dist(ps, 99), PLAN_NONE);
	plan_store_access(ps, 7, 10);
	assert_int_equal(dist(ps, 10), 2); /* its second read, 2 steps on */
	assert_int_equal(dist(ps, 20), 0);
	plan_store_access(ps, 7, 20);
	plan_store_access(ps, 7, 30);
	plan_store_access(ps, 7, 10);
	assert_int_equal(dist(ps, 10), PLAN_NONE);
	assert_int_equal(dist(ps, 20), PLAN_NONE);
	assert_int_equal(plan_store_remaining(ps, 7), 1);
	/* an access the plan does not have changes nothing but the clock */
	plan_store_access(ps, 7, 555);
	assert_int_equal(plan_store_remaining(ps, 7), 1);
	assert_int_equal(dist(ps, 40), 0);
	plan_store_destroy(ps);
}

static void test_plan_skip_ahead(void **state)
{
	(void)state;
	struct plan_store *ps;
	assert_int_equal(plan_store_create(&ps), 0);
	const uint64_t k[] = { 1, 2, 3, 4, 5, 6 };
	assert_int_equal(plan_store_set(ps, 1, k, 6), 0);
	uint64_t v = plan_store_version(ps);
	plan_store_access(ps, 1, 4); /* 1..3 were served elsewhere */
	assert_int_equal(plan_store_remaining(ps, 1), 2);
	assert_int_equal(dist(ps, 1), PLAN_NONE);
	assert_int_equal(dist(ps, 5), 0);
	assert_true(plan_store_version(ps) != v);
	/* beyond the window: ignored */
	plan_store_set_window(ps, 0);
	plan_store_access(ps, 1, 6);
	assert_int_equal(plan_store_remaining(ps, 1), 2);
	plan_store_destroy(ps);
}

static void test_plan_append_epochs(void **state)
{
	(void)state;
	struct plan_store *ps;
	assert_int_equal(plan_store_create(&ps), 0);
	const uint64_t e0[] = { 1, 2, 3 }, e1[] = { 3, 1, 2 };
	assert_int_equal(plan_store_append(ps, 5, e0, 3), 0);
	plan_store_access(ps, 5, 1);
	assert_int_equal(dist(ps, 1), PLAN_NONE);
	uint64_t v = plan_store_version(ps);
	assert_int_equal(plan_store_append(ps, 5, e1, 3), 0);
	assert_true(plan_store_version(ps) != v);
	assert_int_equal(dist(ps, 1), 3); /* cursor at 1; 1 is at 4 */
	assert_int_equal(dist(ps, 3), 1); /* the first 3, not the second */
	plan_store_access(ps, 5, 2);
	plan_store_access(ps, 5, 3);
	assert_int_equal(dist(ps, 3), 0); /* the appended one */
	plan_store_destroy(ps);
}

static void test_plan_many_plans(void **state)
{
	(void)state;
	struct plan_store *ps;
	assert_int_equal(plan_store_create(&ps), 0);
	const uint64_t a[] = { 1, 2, 3, 4 }, b[] = { 4, 3, 2, 1 };
	assert_int_equal(plan_store_set(ps, 1, a, 4), 0);
	assert_int_equal(plan_store_set(ps, 2, b, 4), 0);
	assert_int_equal(plan_store_set(ps, PLAN_JOB_ANY, a, 4), -EINVAL);
	assert_int_equal(dist(ps, 4), 0); /* b reads it first */
	assert_int_equal(dist(ps, 2), 1);
	/* job unknown: whichever plan expects the key moves */
	plan_store_access(ps, PLAN_JOB_ANY, 1);
	plan_store_access(ps, PLAN_JOB_ANY, 4);
	assert_int_equal(plan_store_remaining(ps, 1), 3);
	assert_int_equal(plan_store_remaining(ps, 2), 3);
	assert_int_equal(plan_store_drop(ps, 2), 0);
	assert_int_equal(plan_store_drop(ps, 2), -ENOENT);
	assert_int_equal(plan_store_count(ps), 1);
	assert_int_equal(plan_store_remaining(ps, 2), 0);
	plan_store_destroy(ps);
}

/* Two jobs interleaved at different speeds: distances scale with ticks
 * per step, so the slow job's reads look further away. */
static void test_plan_rates(void **state)
{
	(void)state;
	struct plan_store *ps;
	assert_int_equal(plan_store_create(&ps), 0);
	uint64_t a[200], b[200];
	for (int i = 0; i < 200; i++) {
		a[i] = 1000 + (uint64_t)i;
		b[i] = 5000 + (uint64_t)i;
	}
	assert_int_equal(plan_store_set(ps, 1, a, 200), 0);
	assert_int_equal(plan_store_set(ps, 2, b, 200), 0);
	int ia = 0, ib = 0;
	for (int t = 0; t < 90; t++) {
		/* job 1 reads twice as often as job 2 */
		if (t % 3 == 2)
			plan_store_access(ps, 2, b[ib++]);
		else
			plan_store_access(ps, 1, a[ia++]);
	}
	uint64_t da = dist(ps, a[ia + 10]), db = dist(ps, b[ib + 10]);
	assert_true(da >= 14 && da <= 16);  /* 10 steps x 1.5 ticks */
	assert_true(db >= 29 && db <= 31);  /* 10 steps x 3 ticks */
	plan_store_destroy(ps);
}

/* Long plans appended one read at a time while the cursor follows: the
 * consumed prefix is compacted and answers stay right. */
static void test_plan_compaction(void **state)
{
	(void)state;
	struct plan_store *ps;
	assert_int_equal(plan_store_create(&ps), 0);
	for (uint64_t i = 0; i < 100000; i++) {
		uint64_t k = i % 1000;
		assert_int_equal(plan_store_append(ps, 3, &k, 1), 0);
		if (i >= 10) {
			uint64_t r = (i - 10) % 1000;
			assert_int_equal(dist(ps, r), 0);
			plan_store_access(ps, 3, r);
		}
	}
	assert_int_equal(plan_store_remaining(ps, 3), 10);
	assert_int_equal(dist(ps, 990), 0);
	assert_int_equal(dist(ps, 999), 9);
	plan_store_destroy(ps);
}

static void test_plan_oracle_shape(void **state)
{
	(void)state;
	struct plan_store *ps;
	assert_int_equal(plan_store_create(&ps), 0);
	const uint64_t k[] = { 8, 9 };
	assert_int_equal(plan_store_set(ps, 0, k, 2), 0);
	assert_int_equal(plan_store_oracle(ps, 9, 12345), plan_store_next_use(ps, 9));
	assert_int_equal(plan_store_version_cb(ps), plan_store_version(ps));
	plan_store_destroy(ps);
	plan_store_destroy(NULL);
}

/* seek: reads reported out of order elsewhere move the cursor without
 * ticking; next_use follows, and seeking back or past the end is harmless. */
static void test_plan_seek(void **state)
{
	(void)state;
	struct plan_store *ps;
	assert_int_equal(plan_store_create(&ps), 0);
	const uint64_t k[] = { 1, 2, 3, 1, 4 };
	assert_int_equal(plan_store_set(ps, 3, k, 5), 0);
	plan_store_access(ps, PLAN_JOB_ANY, 2); /* out of order: no move */
	assert_int_equal(plan_store_cursor(ps, 3), 0);
	uint64_t ticks = plan_store_ticks(ps);
	uint64_t v = plan_store_version(ps);
	plan_store_seek(ps, 3, 3); /* 1, 2, 3 are read */
	assert_int_equal(plan_store_ticks(ps), ticks);
	assert_int_equal(plan_store_cursor(ps, 3), 3);
	assert_true(plan_store_version(ps) != v);
	assert_int_equal(dist(ps, 1), 0); /* its second read is next */
	assert_int_equal(dist(ps, 2), PLAN_NONE);
	assert_int_equal(plan_store_remaining(ps, 3), 2);
	plan_store_seek(ps, 3, 1); /* backwards: nothing */
	assert_int_equal(plan_store_cursor(ps, 3), 3);
	plan_store_seek(ps, 3, 99); /* past the end: stops there */
	assert_int_equal(plan_store_cursor(ps, 3), 5);
	assert_int_equal(plan_store_remaining(ps, 3), 0);
	assert_int_equal(dist(ps, 4), PLAN_NONE);
	plan_store_seek(ps, 42, 1); /* unknown job: nothing */
	assert_int_equal(plan_store_cursor(ps, 42), 0);
	plan_store_destroy(ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_next_use),
		cmocka_unit_test(test_plan_skip_ahead),
		cmocka_unit_test(test_plan_append_epochs),
		cmocka_unit_test(test_plan_many_plans),
		cmocka_unit_test(test_plan_rates),
		cmocka_unit_test(test_plan_compaction),
		cmocka_unit_test(test_plan_oracle_shape),
		cmocka_unit_test(test_plan_seek),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
