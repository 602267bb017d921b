/*
 * histogram.c: bucket boundaries (inclusive upper bounds), sum and count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "histogram.h"

static void test_buckets(void **state)
{
	(void)state;
	struct histogram h;
	memset(&h, 0, sizeof(h));
	histogram_observe(&h, 0);              /* first bucket */
	histogram_observe(&h, 10000);          /* == 10 us: still the first */
	histogram_observe(&h, 10001);          /* 25 us bucket */
	histogram_observe(&h, 1000000000);     /* == 1 s */
	histogram_observe(&h, 20000000000ull); /* past 10 s: +Inf */
	assert_int_equal(h.counts[0], 2);
	assert_int_equal(h.counts[1], 1);
	assert_int_equal(histogram_bound_ns(15), 1000000000);
	assert_int_equal(h.counts[15], 1);
	assert_int_equal(h.counts[HISTOGRAM_BUCKETS], 1);
	assert_int_equal(h.count, 5);
	assert_int_equal(h.sum_ns, 10000 + 10001 + 1000000000 + 20000000000ull);
	for (size_t i = 1; i < HISTOGRAM_BUCKETS; i++)
		assert_true(histogram_bound_ns(i) > histogram_bound_ns(i - 1));
	assert_int_equal(histogram_bound_ns(HISTOGRAM_BUCKETS), UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
