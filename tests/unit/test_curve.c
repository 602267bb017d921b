/*
 * What-if curves (policy/sim/curve.c): the OPT column is the simulator's
 * own OPT at each size, a policy column its own replay, OPT never falls as
 * the cache grows, and sampling at rate 1 changes nothing while a rate
 * below 1 keeps whole objects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "sim/curve.h"
#include "sim/engine.h"
#include "sim/gen.h"

static const char *const all_policies[] = { "lru", "arc", "epoch", "clairvoyant" };
#define NPOL (sizeof(all_policies) / sizeof(all_policies[0]))

static void gen(struct trace *t, enum gen_kind kind, const char *size, uint64_t seed)
{
	struct gen_opts o;
	char err[256];
	gen_opts_default(&o);
	o.kind = kind;
	o.objects = 600;
	o.epochs = 4;
	o.seed = seed;
	assert_int_equal(gen_size_parse(&o, size, err, sizeof(err)), 0);
	trace_init(t);
	assert_int_equal(gen_trace(&o, t, err, sizeof(err)), 0);
}

/* n sizes k/n of the data set, split by share. */
static void run_curve(const struct trace *t, size_t n, double share, double sample,
		      struct curve *c, uint64_t *hot, uint64_t *warm)
{
	char err[256];
	for (size_t k = 0; k < n; k++)
		curve_split(t->dataset_bytes * (k + 1) / n, share, &hot[k], &warm[k]);
	struct curve_opts o = {
		.hot = hot,
		.warm = warm,
		.npoints = n,
		.policies = all_policies,
		.npolicies = NPOL,
		.sample = sample,
	};
	assert_int_equal(curve_run(t, &o, c, err, sizeof(err)), 0);
	assert_int_equal(c->npoints, n);
	assert_int_equal(c->ncols, NPOL + 1);
	assert_string_equal(c->names[0], "opt");
}

static void test_opt_column_is_sim_opt(void **state)
{
	(void)state;
	static const char *const sizes[] = { "64K", "uniform:20K:200K" };
	for (size_t s = 0; s < 2; s++) {
		struct trace t;
		struct curve c;
		uint64_t hot[6], warm[6];
		gen(&t, GEN_SHUFFLE, sizes[s], 3 + s);
		run_curve(&t, 6, 0.7, 1.0, &c, hot, warm);
		for (size_t p = 0; p < c.npoints; p++) {
			struct sim_result r;
			assert_int_equal(sim_result_init(&r, "opt", t.nepochs), 0);
			assert_int_equal(sim_run_opt(&t, hot[p] + warm[p], &r), 0);
			const struct sim_counts *x = curve_cell(&c, p, 0);
			assert_int_equal(x->accesses, t.n);
			assert_int_equal(x->hits, r.all.hits);
			assert_int_equal(x->hit_bytes, r.all.hit_bytes);
			assert_int_equal(curve_rank(&c, p, 0), 0);
			sim_result_free(&r);
		}
		assert_true(curve_cell(&c, 2, 0)->hits > 0);
		curve_free(&c);
		trace_free(&t);
	}
}

/* A policy's column is that policy's replay at the point's hot and warm. */
static void test_policy_column_is_its_replay(void **state)
{
	(void)state;
	struct trace t;
	struct curve c;
	uint64_t hot[4], warm[4];
	char err[256];
	gen(&t, GEN_ZIPF, "uniform:20K:200K", 7);
	run_curve(&t, 4, 0.5, 1.0, &c, hot, warm);
	for (size_t p = 0; p < c.npoints; p++) {
		assert_true(warm[p] > 0 && hot[p] > 0);
		for (size_t k = 0; k < NPOL; k++) {
			struct sim_result r;
			struct sim_config cfg = { .hot = hot[p], .warm = warm[p] };
			assert_int_equal(sim_result_init(&r, all_policies[k], t.nepochs), 0);
			assert_int_equal(sim_run_policy(&t, all_policies[k], &cfg, &r, err,
							sizeof(err)), 0);
			assert_int_equal(curve_cell(&c, p, k + 1)->hits, r.all.hits);
			assert_int_equal(curve_cell(&c, p, k + 1)->hit_bytes, r.all.hit_bytes);
			sim_result_free(&r);
		}
		/* the best column has rank 1 and no column has more hits */
		int best = curve_best(&c, p);
		assert_true(best >= 1);
		assert_int_equal(curve_rank(&c, p, (size_t)best), 1);
		for (size_t col = 1; col < c.ncols; col++)
			assert_true(curve_cell(&c, p, col)->hits <= curve_cell(&c, p, (size_t)best)->hits);
	}
	curve_free(&c);
	trace_free(&t);
}

/* Equal sizes: OPT is exact, so more room never means fewer hits. */
static void test_opt_monotone(void **state)
{
	(void)state;
	static const enum gen_kind kinds[] = { GEN_SHUFFLE, GEN_ZIPF, GEN_MULTIJOB };
	for (size_t k = 0; k < 3; k++) {
		struct trace t;
		struct curve c;
		uint64_t hot[20], warm[20];
		gen(&t, kinds[k], "64K", 11 + k);
		run_curve(&t, 20, 0.0, 1.0, &c, hot, warm);
		for (size_t p = 1; p < c.npoints; p++)
			assert_true(curve_cell(&c, p, 0)->hits >= curve_cell(&c, p - 1, 0)->hits);
		/* a cache the size of the data set misses only first reads */
		size_t distinct = 0;
		bool seen[600] = { false };
		for (size_t i = 0; i < t.n; i++)
			if (!seen[t.obj[i]]) {
				seen[t.obj[i]] = true;
				distinct++;
			}
		assert_int_equal(curve_cell(&c, 19, 0)->hits, t.n - distinct);
		curve_free(&c);
		trace_free(&t);
	}
}

static void test_sample_rate_one_is_unsampled(void **state)
{
	(void)state;
	struct trace t, s;
	struct curve a, b;
	uint64_t hot[5], warm[5];
	gen(&t, GEN_SHUFFLE, "uniform:20K:200K", 5);
	assert_int_equal(curve_sample(&t, 1.0, &s), 0);
	assert_int_equal(s.n, t.n);
	assert_int_equal(s.nobj, t.nobj);
	assert_int_equal(s.dataset_bytes, t.dataset_bytes);
	run_curve(&t, 5, 0.3, 1.0, &a, hot, warm);
	run_curve(&s, 5, 0.3, 1.0, &b, hot, warm);
	assert_int_equal(a.sample, 1.0);
	for (size_t p = 0; p < a.npoints; p++)
		for (size_t col = 0; col < a.ncols; col++)
			assert_memory_equal(curve_cell(&a, p, col), curve_cell(&b, p, col),
					    sizeof(struct sim_counts));
	curve_free(&a);
	curve_free(&b);
	trace_free(&s);
	trace_free(&t);
}

/* A rate below 1 keeps whole objects (every read of each), about R of them. */
static void test_sample_keeps_whole_objects(void **state)
{
	(void)state;
	struct trace t, s;
	struct curve c;
	uint64_t hot[3], warm[3];
	gen(&t, GEN_SHUFFLE, "64K", 9);
	assert_int_equal(curve_sample(&t, 0.25, &s), 0);
	assert_true(s.nobj > t.nobj / 8 && s.nobj < t.nobj / 2);
	/* a shuffle reads every object once per epoch */
	assert_int_equal(s.n, (size_t)s.nobj * t.nepochs);
	assert_int_equal(s.nepochs, t.nepochs);
	run_curve(&t, 3, 0.0, 0.25, &c, hot, warm);
	assert_int_equal(c.accesses, s.n);
	/* OPT of a shuffle at cache c: c per epoch after the first, sampled too */
	double full = 2.0 / 3.0 * 3.0 / 4.0; /* point 1: 2/3 of the data set */
	double got = sim_ratio(curve_cell(&c, 1, 0)->hits, curve_cell(&c, 1, 0)->accesses);
	assert_true(got > full - 0.08 && got < full + 0.08);
	curve_free(&c);
	trace_free(&s);
	trace_free(&t);
}

static void test_errors(void **state)
{
	(void)state;
	struct trace t;
	struct curve c;
	char err[256];
	uint64_t hot[1] = { 1 << 20 }, warm[1] = { 0 };
	static const char *const bad[] = { "no-such-policy" };
	gen(&t, GEN_SHUFFLE, "64K", 1);
	struct curve_opts o = { .hot = hot, .warm = warm, .npoints = 1, .policies = bad,
				.npolicies = 1, .sample = 1.0 };
	assert_true(curve_run(&t, &o, &c, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "no-such-policy"));
	curve_free(&c);
	o.policies = all_policies;
	o.sample = 0;
	assert_int_equal(curve_run(&t, &o, &c, err, sizeof(err)), -EINVAL);
	curve_free(&c);
	o.sample = 1e-9; /* keeps nothing of 600 objects */
	assert_int_equal(curve_run(&t, &o, &c, err, sizeof(err)), -ENODATA);
	assert_non_null(strstr(err, "--sample"));
	curve_free(&c);
	o.npoints = 0;
	assert_int_equal(curve_run(&t, &o, &c, err, sizeof(err)), -EINVAL);
	curve_free(&c);
	trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opt_column_is_sim_opt),
		cmocka_unit_test(test_policy_column_is_its_replay),
		cmocka_unit_test(test_opt_monotone),
		cmocka_unit_test(test_sample_rate_one_is_unsampled),
		cmocka_unit_test(test_sample_keeps_whole_objects),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
