/*
 * keymap (policy/keymap.c) against a plain array model under random
 * puts and deletes, including keys that collide in their home slot; and
 * its incremental growth: every key found while two tables are live, no
 * put or del doing more than KEYMAP_STEP units of moving, a reserve that
 * allocates once and a big (mapped) table cleared and refilled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "keymap.h"
#include "sim/rng.h"

#define SPACE 5000

static void test_keymap_model(void **state)
{
	(void)state;
	struct keymap m;
	struct rng g;
	uint64_t *model = malloc(SPACE * sizeof(*model));
	keymap_init(&m);
	rng_seed(&g, 1);
	for (int i = 0; i < SPACE; i++)
		model[i] = KEYMAP_EMPTY;
	size_t count = 0;
	for (int step = 0; step < 200000; step++) {
		uint64_t k = rng_below(&g, SPACE);
		/* keys as sparse 64-bit values, including 0 and ~0 */
		uint64_t key = k == 0 ? 0 : k == 1 ? UINT64_MAX : k * 0x100000001ULL;
		if (rng_below(&g, 3)) {
			uint64_t v = rng_below(&g, 1000000);
			assert_int_equal(keymap_put(&m, key, v), 0);
			count += model[k] == KEYMAP_EMPTY;
			model[k] = v;
		} else {
			bool had = model[k] != KEYMAP_EMPTY;
			assert_int_equal(keymap_del(&m, key), had);
			count -= had;
			model[k] = KEYMAP_EMPTY;
		}
		assert_int_equal(m.count, count);
		if (step % 1000 == 0) {
			for (uint64_t j = 0; j < SPACE; j++) {
				uint64_t kj = j == 0 ? 0 : j == 1 ? UINT64_MAX : j * 0x100000001ULL;
				uint64_t *v = keymap_get(&m, kj);
				if (model[j] == KEYMAP_EMPTY)
					assert_null(v);
				else
					assert_true(v && *v == model[j]);
			}
		}
	}
	assert_int_equal(keymap_put(&m, 5, KEYMAP_EMPTY), -EINVAL);
	keymap_clear(&m);
	assert_int_equal(m.count, 0);
	assert_null(keymap_get(&m, 2 * 0x100000001ULL));
	assert_int_equal(keymap_reserve(&m, 100000), 0);
	keymap_free(&m);
	assert_null(keymap_get(&m, 1));
	assert_false(keymap_del(&m, 1));
	free(model);
}

/* key j of the model's space: sparse 64-bit values, including 0 and ~0 */
static uint64_t model_key(uint64_t j)
{
	return j == 0 ? 0 : j == 1 ? UINT64_MAX : j * 0x100000001ULL;
}

static void model_check(const struct keymap *m, const uint64_t *model, size_t space)
{
	for (uint64_t j = 0; j < space; j++) {
		uint64_t *v = keymap_get(m, model_key(j));
		if (model[j] == KEYMAP_EMPTY)
			assert_null(v);
		else
			assert_true(v && *v == model[j]);
	}
}

/* One put or del, with the growth's work bound checked around it. */
struct growth_watch {
	const struct keymap_slot *old;
	size_t old_count, moved;
	unsigned growths, checked_growing;
};

static void watch_before(struct growth_watch *w, const struct keymap *m)
{
	w->old = m->old;
	w->old_count = m->old_count;
	w->moved = m->moved;
}

static void watch_after(struct growth_watch *w, const struct keymap *m, bool was_del)
{
	if (w->old && m->old == w->old) {
		/* the same growth: at most KEYMAP_STEP units moved (a del of a
		 * key still in the old table takes one more out of it) */
		assert_true(w->old_count - m->old_count <= KEYMAP_STEP + was_del);
		assert_true(m->moved - w->moved <= KEYMAP_STEP);
		assert_true(m->old_count > 0);
	} else if (w->old) {
		/* ended: only the last few keys were left, never a whole rehash */
		assert_null(m->old);
		assert_true(w->old_count <= KEYMAP_STEP + was_del);
	} else if (m->old) {
		/* started: at most one step moved yet */
		w->growths++;
		assert_true(m->moved <= KEYMAP_STEP);
	}
	/* while growing, the new table is never more than half full */
	assert_true(2 * m->count <= m->mask + 1);
}

#define GSPACE 200000

static void test_keymap_growth_model(void **state)
{
	(void)state;
	struct keymap m;
	struct rng g;
	struct growth_watch w = {0};
	uint64_t *model = malloc(GSPACE * sizeof(*model));
	keymap_init(&m);
	rng_seed(&g, 7);
	for (int i = 0; i < GSPACE; i++)
		model[i] = KEYMAP_EMPTY;
	size_t count = 0;
	/* mostly inserts first (so the map doubles many times, up to mapped
	 * tables), then an even mix so growths meet deletes of moved and not
	 * yet moved keys */
	for (int step = 0; step < 600000; step++) {
		uint64_t k = rng_below(&g, GSPACE);
		uint64_t key = model_key(k);
		unsigned put_odds = step < 300000 ? 8 : 2;
		watch_before(&w, &m);
		bool del = rng_below(&g, put_odds + 1) == 0;
		if (!del) {
			uint64_t v = rng_below(&g, 1000000);
			assert_int_equal(keymap_put(&m, key, v), 0);
			count += model[k] == KEYMAP_EMPTY;
			model[k] = v;
		} else {
			bool had = model[k] != KEYMAP_EMPTY;
			assert_int_equal(keymap_del(&m, key), had);
			count -= had;
			model[k] = KEYMAP_EMPTY;
		}
		watch_after(&w, &m, del);
		assert_int_equal(m.count, count);
		/* a random lookup every step, the whole model now and then (more
		 * often while two tables are live) */
		uint64_t q = rng_below(&g, GSPACE);
		uint64_t *v = keymap_get(&m, model_key(q));
		if (model[q] == KEYMAP_EMPTY)
			assert_null(v);
		else
			assert_true(v && *v == model[q]);
		if (keymap_growing(&m) && w.checked_growing < 40 && rng_below(&g, 2000) == 0) {
			model_check(&m, model, GSPACE);
			w.checked_growing++;
		}
	}
	model_check(&m, model, GSPACE);
	assert_true(w.growths >= 10);
	assert_true(w.checked_growing >= 5);
	keymap_free(&m);
	free(model);
}

static void test_keymap_reserve_grows_once(void **state)
{
	(void)state;
	struct keymap m;
	keymap_init(&m);
	const uint64_t first = 50000, more = 400000;
	for (uint64_t i = 1; i <= first; i++)
		assert_int_equal(keymap_put_new(&m, i * 3, i), 0);
	/* a reserve with keys in: the new table at once, keys moved later */
	assert_int_equal(keymap_reserve(&m, first + more), 0);
	assert_true(keymap_growing(&m));
	assert_int_equal(m.old_count, first);
	const struct keymap_slot *table = m.slots;
	struct growth_watch w = {0};
	for (uint64_t i = first + 1; i <= first + more; i++) {
		watch_before(&w, &m);
		assert_int_equal(keymap_put(&m, i * 3, i), 0);
		watch_after(&w, &m, false);
		assert_ptr_equal(m.slots, table); /* reserved: never grown again */
		if (i == first + 10) { /* both tables live: all found */
			assert_true(keymap_growing(&m));
			for (uint64_t j = 1; j <= i; j++)
				assert_true(keymap_get(&m, j * 3) && *keymap_get(&m, j * 3) == j);
		}
	}
	assert_false(keymap_growing(&m));
	for (uint64_t i = 1; i <= first + more; i++) {
		uint64_t *v = keymap_get(&m, i * 3);
		assert_true(v && *v == i);
		assert_null(keymap_get(&m, i * 3 + 1));
	}
	/* a big table cleared gives its pages back and reads empty */
	keymap_clear(&m);
	assert_int_equal(m.count, 0);
	for (uint64_t i = 1; i <= first + more; i += 997)
		assert_null(keymap_get(&m, i * 3));
	for (uint64_t i = 1; i <= 1000; i++)
		assert_int_equal(keymap_put(&m, i * 5, i), 0);
	for (uint64_t i = 1; i <= 1000; i++)
		assert_true(keymap_get(&m, i * 5) && *keymap_get(&m, i * 5) == i);
	/* a clear in the middle of a growth drops the old table */
	keymap_clear(&m);
	keymap_free(&m);
	keymap_init(&m);
	for (uint64_t i = 1; i <= 1000; i++)
		assert_int_equal(keymap_put(&m, i, i), 0);
	assert_int_equal(keymap_reserve(&m, 100000), 0);
	assert_true(keymap_growing(&m));
	keymap_clear(&m);
	assert_false(keymap_growing(&m));
	assert_null(keymap_get(&m, 5));
	assert_int_equal(keymap_put(&m, 5, 6), 0);
	assert_true(keymap_get(&m, 5) && *keymap_get(&m, 5) == 6);
	keymap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keymap_model),
		cmocka_unit_test(test_keymap_growth_model),
		cmocka_unit_test(test_keymap_reserve_grows_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
