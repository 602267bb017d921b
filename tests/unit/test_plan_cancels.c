/*
 * Unit tests of cached/cluster/plan_cancels.c: cancels kept while Redis is
 * away are one per plan, bounded (the oldest given up when full), matched
 * by version or list hash only for their own plan, and forgotten when the
 * plan is registered again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "plan_cancels.h"
#include "tiercache/protocol.h"

static struct plan_cancel mk(const char *ds, uint64_t job, uint32_t rank, uint64_t gen,
			     uint64_t hash, uint64_t since)
{
	struct plan_cancel c = {.job = job,
				.rank = rank,
				.gen = gen,
				.hash = hash,
				.since_ns = since};
	snprintf(c.dataset, sizeof(c.dataset), "%s", ds);
	return c;
}

static void test_one_per_plan(void **state)
{
	(void)state;
	static struct plan_cancels k;
	memset(&k, 0, sizeof(k));
	struct plan_cancel c = mk("ds", 7, TC_JOB_RANK_ANY, 100, 0xabc, 1), lost;
	assert_false(plan_cancels_keep(&k, &c, &lost));
	c = mk("ds", 7, TC_JOB_RANK_ANY, 200, 0xdef, 2); /* the same plan again: replaces */
	assert_false(plan_cancels_keep(&k, &c, &lost));
	assert_int_equal(k.n, 1);
	assert_true(plan_cancels_match(&k, "ds", 7, TC_JOB_RANK_ANY, 200, 1));
	assert_true(plan_cancels_match(&k, "ds", 7, TC_JOB_RANK_ANY, 999, 0xdef)); /* republished */
	assert_false(plan_cancels_match(&k, "ds", 7, TC_JOB_RANK_ANY, 100, 0xabc)); /* replaced */
	assert_false(plan_cancels_match(&k, "ds", 7, 0, 200, 0xdef)); /* another rank's plan */
	assert_false(plan_cancels_match(&k, "ds2", 7, TC_JOB_RANK_ANY, 200, 0xdef));
	assert_false(plan_cancels_match(&k, "ds", 8, TC_JOB_RANK_ANY, 200, 0xdef));
	/* per-rank plans of one job are separate */
	c = mk("ds", 7, 0, 300, 0x1, 3);
	assert_false(plan_cancels_keep(&k, &c, &lost));
	c = mk("ds", 7, 1, 301, 0x2, 4);
	assert_false(plan_cancels_keep(&k, &c, &lost));
	assert_int_equal(k.n, 3);
	plan_cancels_forget(&k, "ds", 7, 0);
	assert_int_equal(k.n, 2);
	assert_false(plan_cancels_match(&k, "ds", 7, 0, 300, 0x1));
	assert_true(plan_cancels_match(&k, "ds", 7, 1, 301, 0x9));
	struct plan_cancel out;
	unsigned popped = 0;
	while (plan_cancels_pop(&k, &out))
		popped++;
	assert_int_equal(popped, 2);
	assert_false(plan_cancels_pop(&k, &out));
}

static void test_bounded(void **state)
{
	(void)state;
	static struct plan_cancels k;
	memset(&k, 0, sizeof(k));
	struct plan_cancel c, lost;
	for (unsigned i = 0; i < PLAN_CANCELS_MAX; i++) {
		c = mk("ds", 1000 + i, TC_JOB_RANK_ANY, i + 1, i + 1, 50 + (i * 7919) % 1000);
		assert_false(plan_cancels_keep(&k, &c, &lost));
	}
	assert_int_equal(k.n, PLAN_CANCELS_MAX);
	uint64_t oldest = UINT64_MAX;
	for (unsigned i = 0; i < k.n; i++)
		oldest = k.v[i].since_ns < oldest ? k.v[i].since_ns : oldest;
	c = mk("ds", 5000, TC_JOB_RANK_ANY, 9, 9, 5000);
	assert_true(plan_cancels_keep(&k, &c, &lost)); /* full: the oldest goes */
	assert_int_equal(lost.since_ns, oldest);
	assert_int_equal(k.n, PLAN_CANCELS_MAX);
	assert_true(plan_cancels_match(&k, "ds", 5000, TC_JOB_RANK_ANY, 9, 0));
	assert_false(
		plan_cancels_match(&k, lost.dataset, lost.job, lost.rank, lost.gen, lost.hash));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_per_plan),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
