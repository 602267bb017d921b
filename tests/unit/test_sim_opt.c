/*
 * OPT (Belady MIN with bypass, sim/opt.c) against an exhaustive search on
 * tiny traces: equal for unit sizes, never above it with mixed sizes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"
#include "sim/rng.h"
#include "sim/trace.h"

#define MAXOBJ 7

/* Best hit count over every choice of what to keep after each read
 * (no prefetch: only what was just read may come in). */
static uint64_t brute_force(const struct trace *t, uint64_t cap)
{
	const uint32_t nstates = 1u << t->nobj;
	int64_t *best = malloc(nstates * sizeof(*best)), *nb = malloc(nstates * sizeof(*nb));
	uint64_t *bytes = malloc(nstates * sizeof(*bytes));
	for (uint32_t s = 0; s < nstates; s++) {
		best[s] = -1;
		bytes[s] = 0;
		for (uint32_t o = 0; o < t->nobj; o++)
			if (s & (1u << o))
				bytes[s] += t->size[o];
	}
	best[0] = 0;
	for (size_t i = 0; i < t->n; i++) {
		uint32_t o = t->obj[i];
		for (uint32_t s = 0; s < nstates; s++)
			nb[s] = -1;
		for (uint32_t s = 0; s < nstates; s++) {
			if (best[s] < 0)
				continue;
			int64_t v = best[s] + ((s >> o) & 1);
			uint32_t u = s | (1u << o);
			/* every subset of u that fits */
			for (uint32_t sub = u;; sub = (sub - 1) & u) {
				if (bytes[sub] <= cap && nb[sub] < v)
					nb[sub] = v;
				if (!sub)
					break;
			}
		}
		memcpy(best, nb, nstates * sizeof(*best));
	}
	int64_t m = 0;
	for (uint32_t s = 0; s < nstates; s++)
		if (best[s] > m)
			m = best[s];
	free(best);
	free(nb);
	free(bytes);
	return (uint64_t)m;
}

static void make_trace(struct trace *t, struct rng *r, uint32_t nobj, size_t len, bool sizes)
{
	trace_init(t);
	for (uint32_t o = 0; o < nobj; o++)
		assert_true(trace_object_add(t, sizes ? 1 + rng_below(r, 4) : 1) >= 0);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(trace_push(t, (uint32_t)rng_below(r, nobj), 0, 0, 0), 0);
	t->has_epochs = true;
	trace_finish(t);
}

static uint64_t opt_hits(const struct trace *t, uint64_t cap)
{
	struct sim_result r;
	assert_int_equal(sim_result_init(&r, "opt", t->nepochs), 0);
	assert_int_equal(sim_run_opt(t, cap, &r), 0);
	uint64_t h = r.all.hits;
	assert_int_equal(r.all.accesses, t->n);
	sim_result_free(&r);
	return h;
}

static void test_opt_unit_sizes_exact(void **state)
{
	(void)state;
	struct rng r;
	rng_seed(&r, 42);
	for (int round = 0; round < 300; round++) {
		struct trace t;
		uint32_t nobj = 2 + (uint32_t)rng_below(&r, MAXOBJ - 1);
		make_trace(&t, &r, nobj, 4 + rng_below(&r, 14), false);
		uint64_t cap = 1 + rng_below(&r, nobj);
		assert_int_equal(opt_hits(&t, cap), brute_force(&t, cap));
		trace_free(&t);
	}
}

static void test_opt_sizes_never_above_optimum(void **state)
{
	(void)state;
	struct rng r;
	rng_seed(&r, 7);
	int below = 0;
	for (int round = 0; round < 300; round++) {
		struct trace t;
		uint32_t nobj = 2 + (uint32_t)rng_below(&r, MAXOBJ - 1);
		make_trace(&t, &r, nobj, 4 + rng_below(&r, 14), true);
		uint64_t cap = 2 + rng_below(&r, 8);
		uint64_t o = opt_hits(&t, cap), b = brute_force(&t, cap);
		assert_true(o <= b);
		below += o < b;
		trace_free(&t);
	}
	/* Belady is a heuristic once sizes differ: it must sometimes lose. */
	assert_true(below > 0);
}

/* A hand-worked trace: a b c a b d a b, two slots. Belady keeps a and b
 * once both are in: hits on a, b, a, b = 4. */
static void test_opt_known_answer(void **state)
{
	(void)state;
	struct trace t;
	trace_init(&t);
	for (int i = 0; i < 4; i++)
		assert_true(trace_object_add(&t, 1) >= 0);
	const uint32_t seq[] = { 0, 1, 2, 0, 1, 3, 0, 1 };
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
		assert_int_equal(trace_push(&t, seq[i], 0, 0, 0), 0);
	t.has_epochs = true;
	trace_finish(&t);
	assert_int_equal(opt_hits(&t, 2), 4);
	assert_int_equal(brute_force(&t, 2), 4);
	assert_int_equal(opt_hits(&t, 1), 0 + brute_force(&t, 1));
	trace_free(&t);
}

/* An object larger than the cache is never kept; one read once is never kept. */
static void test_opt_bypass(void **state)
{
	(void)state;
	struct trace t;
	trace_init(&t);
	assert_true(trace_object_add(&t, 10) >= 0);
	assert_true(trace_object_add(&t, 1) >= 0);
	const uint32_t seq[] = { 0, 1, 0, 1, 0, 1 };
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(trace_push(&t, seq[i], 0, 0, 0), 0);
	t.has_epochs = true;
	trace_finish(&t);
	assert_int_equal(opt_hits(&t, 5), 2);
	trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opt_unit_sizes_exact),
		cmocka_unit_test(test_opt_sizes_never_above_optimum),
		cmocka_unit_test(test_opt_known_answer),
		cmocka_unit_test(test_opt_bypass),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
