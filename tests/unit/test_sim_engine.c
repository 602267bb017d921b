/*
 * The replay engine (policy/sim/engine.c) on generated traces: the
 * issue's goals at a small scale, tiers, sizes, and its errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "sim/engine.h"
#include "sim/gen.h"

struct run {
	struct trace t;
	struct sim_result opt;
	uint64_t hot, warm;
};

static void run_gen(struct run *r, const struct gen_opts *o, double hot, double warm)
{
	char err[256];
	trace_init(&r->t);
	assert_int_equal(gen_trace(o, &r->t, err, sizeof(err)), 0);
	r->hot = (uint64_t)((double)r->t.dataset_bytes * hot);
	r->warm = (uint64_t)((double)r->t.dataset_bytes * warm);
	assert_int_equal(sim_result_init(&r->opt, "opt", r->t.nepochs), 0);
	assert_int_equal(sim_run_opt(&r->t, r->hot + r->warm, &r->opt), 0);
}

static double run_policy(struct run *r, const char *name, uint32_t plan_epochs,
			 struct sim_result *out)
{
	struct sim_result res;
	char err[256];
	struct sim_config cfg = { .hot = r->hot, .warm = r->warm, .plan_epochs = plan_epochs };
	assert_int_equal(sim_result_init(&res, name, r->t.nepochs), 0);
	assert_int_equal(sim_run_policy(&r->t, name, &cfg, &res, err, sizeof(err)), 0);
	assert_int_equal(res.all.accesses, r->t.n);
	assert_int_equal(res.tier_hits[0] + res.tier_hits[1], res.all.hits);
	assert_int_equal(res.cold_bytes + res.all.hit_bytes, res.all.bytes);
	double ratio = sim_ratio(res.all.hits, res.all.accesses);
	if (out)
		*out = res;
	else
		sim_result_free(&res);
	return ratio;
}

static void run_free(struct run *r)
{
	sim_result_free(&r->opt);
	trace_free(&r->t);
}

/* shuffle, cache 10..90%: epoch within 2% of OPT, LRU far below. */
static void test_goal_shuffle(void **state)
{
	(void)state;
	const double c[] = { 0.1, 0.3, 0.5, 0.7, 0.9 };
	for (size_t i = 0; i < 5; i++) {
		struct run r;
		struct gen_opts o;
		gen_opts_default(&o);
		o.objects = 20000;
		o.epochs = 4;
		o.size_a = 4096;
		run_gen(&r, &o, c[i], 0);
		double opt = sim_ratio(r.opt.all.hits, r.opt.all.accesses);
		double ep = run_policy(&r, "epoch", 0, NULL);
		double lru = run_policy(&r, "lru", 0, NULL);
		/* OPT without prefetch: each epoch after the first hits c */
		assert_true(opt > c[i] * 3 / 4 - 0.001 && opt < c[i] * 3 / 4 + 0.001);
		assert_true(ep >= 0.98 * opt);
		assert_true(lru < ep);
		run_free(&r);
	}
}

/* ddp, P = 4, one node, cache 12.5%: clairvoyant >= 0.95 OPT and >= 2x the
 * best policy without plans. */
static void test_goal_ddp(void **state)
{
	(void)state;
	struct run r;
	struct gen_opts o;
	gen_opts_default(&o);
	o.kind = GEN_DDP;
	o.objects = 40000;
	o.epochs = 8;
	o.ranks = 4;
	o.view = 0;
	o.size_a = 4096;
	run_gen(&r, &o, 0.125, 0);
	double opt = sim_ratio(r.opt.all.hits, r.opt.all.accesses);
	double cv = run_policy(&r, "clairvoyant", 0, NULL);
	double cv2 = run_policy(&r, "clairvoyant", 2, NULL);
	double best = 0;
	const char *noplan[] = { "lru", "arc", "epoch" };
	for (size_t i = 0; i < 3; i++) {
		double h = run_policy(&r, noplan[i], 0, NULL);
		best = h > best ? h : best;
	}
	assert_true(cv >= 0.95 * opt);
	assert_true(cv2 >= 0.95 * opt);
	assert_true(cv >= 2 * best);
	run_free(&r);
}

static void test_goal_zipf(void **state)
{
	(void)state;
	const double alpha[] = { 0.7, 0.9, 1.1 };
	for (size_t i = 0; i < 3; i++) {
		struct run r;
		struct gen_opts o;
		gen_opts_default(&o);
		o.kind = GEN_ZIPF;
		o.objects = 20000;
		o.accesses = 200000;
		o.alpha = alpha[i];
		run_gen(&r, &o, 0.05, 0);
		assert_true(run_policy(&r, "arc", 0, NULL) >= run_policy(&r, "lru", 0, NULL));
		run_free(&r);
	}
}

/* Two tiers: epoch keeps a stable subset on each; hot + warm together
 * reach OPT of the combined size, and both tiers serve hits. */
static void test_two_tiers(void **state)
{
	(void)state;
	struct run r;
	struct gen_opts o;
	struct sim_result res;
	gen_opts_default(&o);
	o.objects = 10000;
	o.epochs = 4;
	run_gen(&r, &o, 0.05, 0.15);
	run_policy(&r, "epoch", 0, &res);
	assert_int_equal(res.all.hits, r.opt.all.hits);
	assert_true(res.tier_hits[0] > 0 && res.tier_hits[1] > 0);
	/* ~1:3, like the tiers' sizes */
	assert_true(res.tier_hits[1] > 2 * res.tier_hits[0]);
	sim_result_free(&res);
	run_free(&r);
}

/* Mixed sizes: byte hit ratio of epoch close to the cached byte share. */
static void test_sizes(void **state)
{
	(void)state;
	struct run r;
	struct gen_opts o;
	struct sim_result res;
	char err[128];
	gen_opts_default(&o);
	o.objects = 20000;
	o.epochs = 5;
	assert_int_equal(gen_size_parse(&o, "lognormal:64K:1.0", err, sizeof(err)), 0);
	run_gen(&r, &o, 0.3, 0);
	run_policy(&r, "epoch", 0, &res);
	double bytes = sim_ratio(res.all.hit_bytes, res.all.bytes);
	assert_true(bytes > 0.3 * 0.8 - 0.01 && bytes <= 0.3 * 0.8 + 0.001);
	assert_true(res.all.hit_bytes <= r.opt.all.hit_bytes + r.opt.all.hit_bytes / 50);
	sim_result_free(&res);
	run_free(&r);
}

static void test_per_epoch_rows(void **state)
{
	(void)state;
	struct run r;
	struct gen_opts o;
	struct sim_result res;
	gen_opts_default(&o);
	o.objects = 1000;
	o.epochs = 3;
	run_gen(&r, &o, 0.2, 0);
	run_policy(&r, "epoch", 0, &res);
	assert_int_equal(res.nepochs, 3);
	assert_int_equal(res.epoch[0].hits, 0);
	assert_int_equal(res.epoch[1].hits, 200);
	assert_int_equal(res.epoch[2].hits, 200);
	assert_int_equal(res.epoch[1].accesses, 1000);
	sim_result_free(&res);
	run_free(&r);
}

static void test_engine_errors(void **state)
{
	(void)state;
	struct run r;
	struct gen_opts o;
	struct sim_result res;
	char err[256];
	gen_opts_default(&o);
	o.objects = 100;
	o.epochs = 1;
	run_gen(&r, &o, 0.1, 0);
	struct sim_config cfg = { .hot = r.hot };
	assert_int_equal(sim_result_init(&res, "x", 1), 0);
	assert_int_equal(sim_run_policy(&r.t, "lfu", &cfg, &res, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "unknown policy \"lfu\""));
	cfg.tunables = "dead_factor=0";
	assert_int_equal(sim_run_policy(&r.t, "epoch", &cfg, &res, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "epoch: dead_factor"));
	cfg.tunables = NULL;
	cfg.placement = "promote=2";
	assert_int_equal(sim_run_policy(&r.t, "lru", &cfg, &res, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "placement: promote"));
	cfg.placement = NULL;
	cfg.hot = 0;
	assert_int_equal(sim_run_policy(&r.t, "lru", &cfg, &res, err, sizeof(err)), -EINVAL);
	sim_result_free(&res);
	run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goal_shuffle),
		cmocka_unit_test(test_goal_ddp),
		cmocka_unit_test(test_goal_zipf),
		cmocka_unit_test(test_two_tiers),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_per_epoch_rows),
		cmocka_unit_test(test_engine_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
