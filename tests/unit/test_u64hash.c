/*
 * util/u64hash.c: the intrusive table every chunk and fill lookup goes
 * through, and the removal-safe walk every scan of the chunks uses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "u64hash.h"

struct item {
	int payload;
	struct u64h_node hn;
	uint64_t key; /* after the node, as in struct chunk */
	bool seen;
};

#define KEY_OFF ((ptrdiff_t)offsetof(struct item, key) - (ptrdiff_t)offsetof(struct item, hn))
#define N 5000u

static struct item *item_of(struct u64h_node *n)
{
	return n ? (struct item *)(void *)((char *)n - offsetof(struct item, hn)) : NULL;
}

/* keys whose low bits collide a lot, so chains are long */
static uint64_t key_of(unsigned i)
{
	return ((uint64_t)i << 20) | 7u;
}

static void test_add_find_del_grow(void **state)
{
	(void)state;
	struct u64h h;
	assert_int_equal(u64h_init(&h, 3, KEY_OFF), 0);
	assert_int_equal(h.nb, 4); /* rounded up to a power of two */
	struct item *v = calloc(N, sizeof(*v));
	assert_non_null(v);
	for (unsigned i = 0; i < N; i++) {
		v[i].key = key_of(i);
		v[i].payload = (int)i;
		u64h_add(&h, &v[i].hn);
	}
	assert_int_equal(h.n, N);
	assert_true(h.nb >= N); /* doubled as it filled */
	for (unsigned i = 0; i < N; i++) {
		struct item *it = item_of(u64h_find(&h, key_of(i)));
		assert_non_null(it);
		assert_int_equal(it->payload, (int)i);
	}
	assert_null(u64h_find(&h, key_of(N)));
	for (unsigned i = 0; i < N; i += 2)
		u64h_del(&h, &v[i].hn);
	assert_int_equal(h.n, N / 2);
	for (unsigned i = 0; i < N; i++)
		assert_true((u64h_find(&h, key_of(i)) != NULL) == (i % 2 == 1));
	u64h_free(&h);
	free(v);
}

static void test_walk_removing_each(void **state)
{
	(void)state;
	struct u64h h;
	assert_int_equal(u64h_init(&h, 16, KEY_OFF), 0);
	struct item *v = calloc(N, sizeof(*v));
	assert_non_null(v);
	for (unsigned i = 0; i < N; i++) {
		v[i].key = key_of(i);
		u64h_add(&h, &v[i].hn);
	}
	/* remove every third element as it is returned: the rest are still
	 * returned exactly once */
	struct u64h_iter it;
	u64h_iter_init(&it, &h);
	unsigned seen = 0;
	for (struct u64h_node *n; (n = u64h_next(&it));) {
		struct item *x = item_of(n);
		assert_false(x->seen);
		x->seen = true;
		seen++;
		if ((x - v) % 3 == 0)
			u64h_del(&h, n);
	}
	assert_int_equal(seen, N);
	assert_int_equal(h.n, N - (N + 2) / 3);
	/* a second walk sees exactly the ones left */
	unsigned left = 0;
	u64h_iter_init(&it, &h);
	for (struct u64h_node *n; (n = u64h_next(&it));) {
		assert_true((item_of(n) - v) % 3 != 0);
		left++;
	}
	assert_int_equal(left, h.n);
	assert_null(u64h_next(&it)); /* stays at the end */
	u64h_free(&h);
	free(v);
}

static void test_empty(void **state)
{
	(void)state;
	struct u64h h;
	assert_int_equal(u64h_init(&h, 1, KEY_OFF), 0);
	struct u64h_iter it;
	u64h_iter_init(&it, &h);
	assert_null(u64h_next(&it));
	assert_null(u64h_find(&h, 42));
	u64h_free(&h);
	u64h_iter_init(&it, &h); /* a freed table walks as empty */
	assert_null(u64h_next(&it));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_find_del_grow),
		cmocka_unit_test(test_walk_removing_each),
		cmocka_unit_test(test_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
