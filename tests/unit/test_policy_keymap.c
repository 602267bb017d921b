/*
 * keymap (policy/keymap.c) against a plain array model under random
 * puts and deletes, including keys that collide in their home slot.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keymap_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
