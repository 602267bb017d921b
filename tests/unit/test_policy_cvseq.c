/*
 * clairvoyant's node sequences are 32 bits and are renumbered when they run
 * out (policy/clairvoyant.c, cv_renumber). Here the policy is compiled with
 * a limit of 2500, so a trace of ten thousand reads renumbers a few times, and
 * run in lockstep with the registry's clairvoyant on the same plans: every
 * admit and every victim must be the same, with whole plans and with plans
 * appended an epoch at a time (stale answers, sweeps, re-asked tops).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define CV_SEQ_LIMIT 2500
#define policy_clairvoyant_ops test_cvseq_ops
#include "clairvoyant.c"

#include "plan.h"
#include "sim/rng.h"

#define NOBJ 48
#define EPOCHS 200

struct side {
	struct policy *p;
	struct pol_entry e[NOBJ];
	bool in[NOBJ];
};

static uint64_t key_of(int i)
{
	return 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
}

static void side_init(struct side *s, const struct policy_ops *ops, uint64_t cap,
		      struct plan_store *ps)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < NOBJ; i++) {
		s->e[i].key = key_of(i);
		s->e[i].size = 1 + (uint64_t)(i % 3);
	}
	struct policy_env env = {
		.capacity = cap,
		.next_use = plan_store_oracle,
		.version = plan_store_version_cb,
		.ctx = ps,
	};
	assert_int_equal(ops->create(&env, &s->p), 0);
	s->p->ops = ops;
}

static int side_index(const struct side *s, const struct pol_entry *v)
{
	return (int)(v - s->e);
}

/* One read; writes the admit answer and the victims, in order, to out[]
 * (admit first: 1 yes, 0 no, -1 hit). Returns how many it wrote. */
static int side_read(struct side *s, int k, uint64_t cap, uint64_t now, int *out)
{
	int n = 0;
	if (s->in[k]) {
		policy_hit(s->p, &s->e[k], now);
		out[n++] = -1;
		return n;
	}
	bool ok = policy_admit(s->p, s->e[k].key, s->e[k].size, now);
	out[n++] = ok;
	if (!ok)
		return n;
	policy_insert(s->p, &s->e[k], now);
	s->in[k] = true;
	while (s->p->bytes > cap) {
		struct pol_entry *v = policy_victim(s->p, now);
		assert_non_null(v);
		policy_remove(s->p, v);
		s->in[side_index(s, v)] = false;
		out[n++] = side_index(s, v);
	}
	return n;
}

static void lockstep(uint32_t seed, uint32_t ahead)
{
	struct rng g;
	rng_seed(&g, seed);
	struct plan_store *ps;
	assert_int_equal(plan_store_create(&ps), 0);
	uint64_t cap = 12 + rng_below(&g, 20);
	int order[EPOCHS][NOBJ];
	for (int e = 0; e < EPOCHS; e++) {
		for (int i = 0; i < NOBJ; i++)
			order[e][i] = i;
		for (int i = NOBJ - 1; i > 0; i--) {
			int j = (int)rng_below(&g, (uint64_t)i + 1), x = order[e][i];
			order[e][i] = order[e][j];
			order[e][j] = x;
		}
	}
	uint64_t keys[NOBJ];
	for (uint32_t e = 0; e < EPOCHS && (ahead == 0 || e <= ahead); e++) {
		for (int i = 0; i < NOBJ; i++)
			keys[i] = key_of(order[e][i]);
		assert_int_equal(plan_store_append(ps, 0, keys, NOBJ), 0);
	}
	struct side *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	side_init(a, policy_find("clairvoyant"), cap, ps);
	side_init(b, &test_cvseq_ops, cap, ps);
	uint64_t now = 0, hits = 0;
	for (uint32_t e = 0; e < EPOCHS; e++) {
		if (ahead && e + ahead < EPOCHS) {
			for (int i = 0; i < NOBJ; i++)
				keys[i] = key_of(order[e + ahead][i]);
			if (e > 0)
				assert_int_equal(plan_store_append(ps, 0, keys, NOBJ), 0);
		}
		for (int i = 0; i < NOBJ; i++) {
			/* now and then a read off the plan: answers move */
			int k = rng_below(&g, 16) ? order[e][i] : (int)rng_below(&g, NOBJ);
			int da[NOBJ + 1], db[NOBJ + 1];
			plan_store_access(ps, 0, key_of(k));
			int na = side_read(a, k, cap, now, da);
			int nb = side_read(b, k, cap, now, db);
			assert_int_equal(na, nb);
			for (int x = 0; x < na; x++)
				assert_int_equal(da[x], db[x]);
			hits += da[0] == -1;
			now++;
		}
	}
	/* it did renumber, many times, and still chose as Belady does */
	const struct clairvoyant *cb = (const struct clairvoyant *)b->p;
	const struct clairvoyant *ca = (const struct clairvoyant *)a->p;
	assert_true(ca->seq > 2 * CV_SEQ_LIMIT);
	assert_true(cb->seq < CV_SEQ_LIMIT);
	assert_true(hits > 0);
	policy_destroy(a->p);
	policy_destroy(b->p);
	free(a);
	free(b);
	plan_store_destroy(ps);
}

static void test_cvseq_whole_plans(void **state)
{
	(void)state;
	for (uint32_t seed = 1; seed <= 6; seed++)
		lockstep(seed, 0);
}

static void test_cvseq_plans_appended(void **state)
{
	(void)state;
	for (uint32_t seed = 1; seed <= 6; seed++) {
		lockstep(seed, 1);
		lockstep(seed + 100, 2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cvseq_whole_plans),
		cmocka_unit_test(test_cvseq_plans_appended),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
