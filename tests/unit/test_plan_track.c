/*
 * Plan progress tracking (cached/plan/plan_track.c): in-order reads, reordered
 * reads within the window, skipped positions past the tolerance, reads not
 * in the plan or too far ahead, repeated keys across appended epochs,
 * compaction keeping positions absolute, aux payloads; finding a key at
 * any distance and seeking there (a plan resumed after a daemon restart).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "plan_track.h"

static void test_track_in_order(void **state)
{
	(void)state;
	struct plan_track t;
	plan_track_init(&t, 16, 8);
	const uint64_t k[] = { 10, 20, 30 };
	const uint64_t a[] = { 100, 200, 300 };
	assert_int_equal(plan_track_append(&t, k, a, 3), 0);
	assert_int_equal(plan_track_end(&t), 3);
	assert_int_equal(plan_track_aux(&t, 1), 200);
	uint64_t at;
	assert_true(plan_track_read(&t, 10, &at));
	assert_int_equal(at, 0);
	assert_int_equal(plan_track_pos(&t), 1);
	assert_false(plan_track_read(&t, 10, &at)); /* read already, no second position */
	assert_false(plan_track_read(&t, 99, &at)); /* not planned */
	assert_true(plan_track_read(&t, 20, &at));
	assert_true(plan_track_read(&t, 30, &at));
	assert_int_equal(plan_track_pos(&t), 3);
	assert_int_equal(t.matched, 3);
	assert_int_equal(t.skipped, 0);
	plan_track_free(&t);
}

static void test_track_reordered(void **state)
{
	(void)state;
	struct plan_track t;
	plan_track_init(&t, 16, 8);
	uint64_t k[8];
	for (int i = 0; i < 8; i++)
		k[i] = 100 + (uint64_t)i;
	assert_int_equal(plan_track_append(&t, k, NULL, 8), 0);
	uint64_t at;
	/* workers deliver 1, 2, 0, then 4, 3 */
	assert_true(plan_track_read(&t, 101, &at));
	assert_true(plan_track_read(&t, 102, &at));
	assert_int_equal(plan_track_pos(&t), 0); /* 0 not read yet */
	assert_true(plan_track_done(&t, 1));
	assert_true(plan_track_holds(&t, 100));
	assert_false(plan_track_holds(&t, 101));
	assert_true(plan_track_read(&t, 100, &at));
	assert_int_equal(plan_track_pos(&t), 3);
	assert_true(plan_track_read(&t, 104, &at));
	assert_int_equal(plan_track_pos(&t), 3);
	assert_true(plan_track_read(&t, 103, &at));
	assert_int_equal(plan_track_pos(&t), 5);
	assert_int_equal(t.skipped, 0);
	plan_track_free(&t);
}

static void test_track_skips(void **state)
{
	(void)state;
	struct plan_track t;
	plan_track_init(&t, 64, 4);
	uint64_t k[40];
	for (int i = 0; i < 40; i++)
		k[i] = 1000 + (uint64_t)i;
	assert_int_equal(plan_track_append(&t, k, NULL, 40), 0);
	uint64_t at;
	/* the sampler skips 0 and 1; reads go on from 2 */
	assert_true(plan_track_read(&t, k[2], &at));
	assert_true(plan_track_read(&t, k[3], &at));
	assert_int_equal(plan_track_pos(&t), 0); /* within the tolerance: 0 may still come */
	assert_true(plan_track_read(&t, k[4], &at));
	/* reads ran 5 > 4 past position 0: it counts as skipped */
	assert_int_equal(plan_track_pos(&t), 1);
	assert_int_equal(t.skipped, 1);
	assert_true(plan_track_read(&t, k[5], &at));
	assert_int_equal(plan_track_pos(&t), 6); /* 1 skipped, 2..5 read */
	assert_int_equal(t.skipped, 2);
	assert_false(plan_track_read(&t, k[0], &at)); /* behind the position now */
	plan_track_free(&t);
}

static void test_track_window(void **state)
{
	(void)state;
	struct plan_track t;
	plan_track_init(&t, 4, 2);
	uint64_t k[10];
	for (int i = 0; i < 10; i++)
		k[i] = 50 + (uint64_t)i;
	assert_int_equal(plan_track_append(&t, k, NULL, 10), 0);
	uint64_t at;
	assert_false(plan_track_read(&t, k[9], &at)); /* 9 ahead of 0, window 4 */
	assert_false(plan_track_holds(&t, k[9]));
	assert_true(plan_track_read(&t, k[4], &at));
	assert_int_equal(at, 4);
	plan_track_free(&t);
}

/* The same key in two appended epochs: a read takes its first unread
 * position; the next epoch's is found after it. */
static void test_track_epochs(void **state)
{
	(void)state;
	struct plan_track t;
	plan_track_init(&t, 16, 16);
	const uint64_t e1[] = { 1, 2, 3 }, e2[] = { 3, 1, 2 };
	assert_int_equal(plan_track_append(&t, e1, NULL, 3), 0);
	uint64_t at;
	assert_true(plan_track_read(&t, 1, &at));
	assert_int_equal(plan_track_append(&t, e2, NULL, 3), 0);
	assert_true(plan_track_read(&t, 2, &at));
	assert_int_equal(at, 1);
	assert_true(plan_track_read(&t, 3, &at));
	assert_int_equal(at, 2);
	assert_true(plan_track_read(&t, 3, &at));
	assert_int_equal(at, 3);
	assert_true(plan_track_read(&t, 1, &at));
	assert_int_equal(at, 4); /* key 1's position 0 was read: its next is 4 */
	assert_true(plan_track_read(&t, 2, &at));
	assert_int_equal(at, 5);
	assert_int_equal(plan_track_pos(&t), 6);
	plan_track_free(&t);
}

/* Many epochs appended as the job goes: memory follows the unread part and
 * positions stay absolute. */
static void test_track_compaction(void **state)
{
	(void)state;
	struct plan_track t;
	plan_track_init(&t, 64, 32);
	enum { N = 3000 };
	uint64_t *k = malloc(N * sizeof(*k)), *a = malloc(N * sizeof(*a));
	for (int i = 0; i < N; i++) {
		k[i] = 7 + (uint64_t)i;
		a[i] = (uint64_t)i * 2;
	}
	uint64_t at;
	for (int epoch = 0; epoch < 20; epoch++) {
		assert_int_equal(plan_track_append(&t, k, a, N), 0);
		for (int i = 0; i < N; i++) {
			assert_true(plan_track_read(&t, k[i], &at));
			assert_int_equal(at, (uint64_t)epoch * N + (uint64_t)i);
			assert_int_equal(plan_track_aux(&t, at), a[i]);
		}
	}
	assert_int_equal(plan_track_pos(&t), 20 * N);
	assert_true(t.cap <= 4 * N); /* not 20 epochs' worth */
	free(k);
	free(a);
	plan_track_free(&t);
}

static void test_track_find_and_seek(void **state)
{
	(void)state;
	struct plan_track t;
	plan_track_init(&t, 4, 2);
	uint64_t k[100];
	for (int i = 0; i < 100; i++)
		k[i] = 1000 + (uint64_t)(i % 50); /* two epochs of 50 keys */
	assert_int_equal(plan_track_append(&t, k, NULL, 100), 0);
	uint64_t at;
	assert_false(plan_track_read(&t, 1040, &at)); /* beyond the window */
	assert_true(plan_track_find(&t, 1040, &at));
	assert_int_equal(at, 40); /* its first unread position, any distance */
	assert_false(plan_track_find(&t, 7, &at));
	plan_track_seek(&t, 40);
	assert_int_equal(plan_track_pos(&t), 40);
	assert_int_equal(t.skipped, 0); /* seeking is not skipping */
	assert_int_equal(t.matched, 0);
	assert_true(plan_track_read(&t, 1040, &at));
	assert_int_equal(at, 40);
	assert_int_equal(plan_track_pos(&t), 41);
	/* a key passed by the seek is next expected in the second epoch */
	assert_true(plan_track_find(&t, 1003, &at));
	assert_int_equal(at, 53);
	assert_false(plan_track_holds(&t, 1003));
	/* seeking past the end stops at the end */
	plan_track_seek(&t, 1000);
	assert_int_equal(plan_track_pos(&t), plan_track_end(&t));
	assert_false(plan_track_find(&t, 1003, &at));
	plan_track_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_track_in_order),
		cmocka_unit_test(test_track_reordered),
		cmocka_unit_test(test_track_skips),
		cmocka_unit_test(test_track_window),
		cmocka_unit_test(test_track_epochs),
		cmocka_unit_test(test_track_compaction),
		cmocka_unit_test(test_track_find_and_seek),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
