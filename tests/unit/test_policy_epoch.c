/*
 * epoch (policy/epoch.c): a stable subset under per-epoch reshuffles
 * (hits = cache size every epoch after the first, exactly), no admission
 * when full and nothing is dead, MRU victim, turnover when the data set
 * changes, sizes (small entries displace live ones size_ratio times
 * larger, never similar ones), and its tunables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_rig.h"
#include "sim/rng.h"

#define NOBJ 1000

_Static_assert(NOBJ <= RIG_NOBJ, "the rig holds every object");

static uint64_t epoch_key(int i)
{
	return 0x1234567ULL * (uint64_t)(i + 1);
}

static void shuffle(int *a, int n, struct rng *g)
{
	for (int i = n; i > 1; i--) {
		int j = (int)rng_below(g, (uint64_t)i), t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* 200 objects, cache of 50, 6 epochs of fresh permutations: the first
 * epoch fills 50, every later epoch hits exactly those 50 again. */
static void test_epoch_stable_subset(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	struct rng g;
	rng_seed(&g, 3);
	rig_init(r, "epoch", 50, 1, epoch_key, false);
	int perm[200];
	for (int i = 0; i < 200; i++)
		perm[i] = i;
	for (int e = 0; e < 6; e++) {
		shuffle(perm, 200, &g);
		int hits = 0;
		for (int i = 0; i < 200; i++)
			hits += rig_read(r, perm[i]);
		assert_int_equal(hits, e == 0 ? 0 : 50);
	}
	/* never churned: only the first 50 misses were admitted */
	assert_int_equal(r->admitted, 50);
	rig_free(r);
	free(r);
}

/* The same with mixed sizes: the byte budget is never exceeded and the
 * resident set is stable after the first epoch. */
static void test_epoch_sizes(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	struct rng g;
	rng_seed(&g, 5);
	rig_init(r, "epoch", 3000, 1, epoch_key, false);
	for (int i = 0; i < NOBJ; i++)
		r->ents[i].e.size = 1 + rng_below(&g, 100);
	int perm[NOBJ];
	for (int i = 0; i < NOBJ; i++)
		perm[i] = i;
	int last = -1;
	for (int e = 0; e < 5; e++) {
		shuffle(perm, NOBJ, &g);
		int hits = 0;
		for (int i = 0; i < NOBJ; i++) {
			hits += rig_read(r, perm[i]);
			assert_true(r->p->bytes <= r->cap);
		}
		if (e >= 2)
			assert_int_equal(hits, last);
		last = hits;
	}
	assert_true(last > 0);
	rig_free(r);
	free(r);
}

static void test_epoch_victim_mru_when_nothing_dead(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	rig_init(r, "epoch", 3, 1, epoch_key, false);
	for (int i = 0; i < 3; i++)
		rig_read(r, i);
	rig_read(r, 0); /* hit: 0 is most recent */
	assert_false(policy_admit(r->p, r->ents[5].e.key, 1, r->now++));
	assert_ptr_equal(policy_victim(r->p, r->now), &r->ents[0].e);
	rig_free(r);
	free(r);
}

/* The job moves on to other data for good: the old entries go dead and
 * the new data gets in. */
static void test_epoch_turns_over(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	struct rng g;
	rng_seed(&g, 9);
	rig_init(r, "epoch", 20, 1, epoch_key, false);
	int perm[100];
	for (int i = 0; i < 100; i++)
		perm[i] = i;
	for (int e = 0; e < 4; e++) {
		shuffle(perm, 100, &g);
		for (int i = 0; i < 100; i++)
			rig_read(r, perm[i]);
	}
	/* now epochs over objects 500..599 only */
	for (int i = 0; i < 100; i++)
		perm[i] = 500 + i;
	int hits = 0;
	for (int e = 0; e < 8; e++) {
		shuffle(perm, 100, &g);
		hits = 0;
		for (int i = 0; i < 100; i++)
			hits += rig_read(r, perm[i]);
	}
	assert_int_equal(hits, 20);
	for (int i = 0; i < 100; i++)
		assert_false(r->ents[i].in);
	rig_free(r);
	free(r);
}

/* Room for everything: it all stays, every later epoch hits 100%. */
static void test_epoch_fits(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	rig_init(r, "epoch", 100, 1, epoch_key, false);
	for (int e = 0; e < 3; e++) {
		int hits = 0;
		for (int i = 0; i < 100; i++)
			hits += rig_read(r, (i * 37 + e * 11) % 100);
		assert_int_equal(hits, e ? 100 : 0);
	}
	rig_free(r);
	free(r);
}

static void test_epoch_too_big_refused(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	rig_init(r, "epoch", 10, 1, epoch_key, false);
	assert_false(policy_admit(r->p, 1, 11, 0));
	assert_true(policy_admit(r->p, 1, 10, 1));
	rig_free(r);
	free(r);
}

/* Entries move between instances (the daemon's hot and warm, a policy
 * switch). A long idle entry moved in must count as idle there, not as
 * freshly read: else a move would pin dead data and the next hit would
 * report a reuse distance counted from the move. A fresh one stays fresh. */
static void test_epoch_move_keeps_age(void **state)
{
	(void)state;
	struct rig *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	char d[512];
	rig_init(a, "epoch", 100, 1, epoch_key, false);
	rig_init(b, "epoch", 21, 1, epoch_key, false);
	/* both learn an epoch of 20 reads: 20 residents read round-robin */
	for (int round = 0; round < 6; round++) {
		for (int k = 0; k < 20; k++) {
			rig_read(a, k);
			rig_read(b, 100 + k);
		}
	}
	policy_describe(a->p, d, sizeof(d));
	assert_non_null(strstr(d, "epoch_ticks=2")); /* ~20 */
	/* a reads 30 other things: its entry 0 is now ~2.5 epochs idle */
	for (int k = 0; k < 30; k++)
		assert_true(policy_admit(a->p, a->ents[500 + k].e.key, 1, a->now++));
	struct rig_ent *x = &a->ents[0];
	policy_remove(a->p, &x->e);
	x->in = false;
	/* b is full and nothing of its own is dead: it refuses */
	policy_insert(b->p, &b->ents[120].e, b->now++); /* 21 of 21 */
	b->ents[120].in = true;
	assert_false(policy_admit(b->p, 0xabcdef, 1, b->now++));
	policy_remove(b->p, &b->ents[120].e);
	b->ents[120].in = false;
	/* x moves into b: dead there too (idle 2.5 epochs > dead_factor 2), so
	 * b admits a new entry in its place and names it as the victim */
	policy_insert(b->p, &x->e, b->now++);
	assert_true(policy_admit(b->p, 0xabcdef, 1, b->now++));
	assert_ptr_equal(policy_victim(b->p, b->now), &x->e);
	policy_remove(b->p, &x->e);

	/* a fresh entry moves and stays fresh: read now, moved now */
	struct rig_ent *y = &a->ents[1];
	policy_hit(a->p, &y->e, a->now++);
	policy_remove(a->p, &y->e);
	policy_insert(b->p, &y->e, b->now++);
	assert_false(policy_admit(b->p, 0xabcdef, 1, b->now++)); /* b full, nothing dead */
	assert_ptr_equal(policy_victim(b->p, b->now), &y->e);  /* MRU: it was just read */
	rig_free(a);
	rig_free(b);
	free(a);
	free(b);
}

/* Full of one entry of 40 and 60 of 1, nothing dead: a new entry of 1
 * takes the room of the 40 (size_ratio 8), which is the victim; the room
 * it leaves then takes 39 more without a refusal. With size_ratio=0 the
 * same read is refused, as is a new entry of 6 (40 < 8 x 6). */
static void test_epoch_displaces_larger(void **state)
{
	(void)state;
	char err[128];
	for (int off = 0; off < 2; off++) {
		struct rig *r = calloc(1, sizeof(*r));
		rig_init(r, "epoch", 100, 1, epoch_key, false);
		if (off)
			assert_int_equal(policy_set(r->p, "size_ratio", "0", err, sizeof(err)), 0);
		r->ents[0].e.size = 40;
		r->ents[200].e.size = 6;
		for (int i = 0; i <= 60; i++)
			rig_read(r, i);
		assert_int_equal(r->p->bytes, 100);
		bool admitted;
		rig_read_admitted(r, 200, &admitted);
		assert_false(admitted); /* 6: not 8 times smaller */
		if (off) {
			rig_read_admitted(r, 61, &admitted);
			assert_false(admitted);
			assert_true(r->ents[0].in);
		} else {
			assert_true(policy_admit(r->p, r->ents[61].e.key, 1, r->now++));
			policy_insert(r->p, &r->ents[61].e, r->now++);
			r->ents[61].in = true;
			assert_ptr_equal(policy_victim(r->p, r->now), &r->ents[0].e);
			policy_remove(r->p, &r->ents[0].e);
			r->ents[0].in = false;
			for (int i = 62; i < 101; i++) {
				rig_read_admitted(r, i, &admitted);
				assert_true(admitted);
			}
			assert_int_equal(r->p->bytes, 100);
			for (int i = 1; i < 101; i++)
				assert_true(r->ents[i].in);
			char d[512];
			policy_describe(r->p, d, sizeof(d));
			assert_non_null(strstr(d, "size_ratio=8 "));
			assert_non_null(strstr(d, "displacing=1"));
		}
		rig_free(r);
		free(r);
	}
	struct policy *p;
	assert_int_equal(policy_create("epoch", NULL, &p), 0);
	assert_int_equal(policy_set(p, "size_ratio", "1.5", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "epoch: size_ratio: \"1.5\" is not 0 or a number in [2, 1e+09]");
	assert_int_equal(policy_set(p, "size_ratio", "2", err, sizeof(err)), 0);
	policy_destroy(p);
}

/* A plan prefetch loads entries ahead of their read (loaded_ahead). The
 * newest entry is epoch's victim when nothing is dead, so without the
 * ahead list the prefetched entry would go before its read. Hand-counted:
 * capacity 4 of size-1 entries; 0, 1, 2 read (admitted), 3 loaded ahead.
 * Victim: 2 (the most recently read), not 3. 4 loaded ahead too (over
 * budget: the caller gives up 2). Read 3: a hit, now the most recently
 * read, so the next victim; its first read is no reuse sample
 * (epoch_ticks stays 0). Remove 3, 1, 0: only 4 (ahead) is left, the
 * victim then. */
static void test_epoch_loaded_ahead_kept_until_read(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	char d[512];
	rig_init(r, "epoch", 4, 1, epoch_key, false);
	for (int i = 0; i < 3; i++)
		assert_false(rig_read(r, i));
	policy_insert(r->p, &r->ents[3].e, r->now);
	policy_loaded_ahead(r->p, &r->ents[3].e);
	r->ents[3].in = true;
	assert_ptr_equal(policy_victim(r->p, r->now), &r->ents[2].e);
	policy_insert(r->p, &r->ents[4].e, r->now);
	policy_loaded_ahead(r->p, &r->ents[4].e);
	r->ents[4].in = true;
	assert_int_equal(r->p->bytes, 5);
	assert_ptr_equal(policy_victim(r->p, r->now), &r->ents[2].e);
	policy_remove(r->p, &r->ents[2].e);
	r->ents[2].in = false;
	policy_describe(r->p, d, sizeof(d));
	assert_non_null(strstr(d, "loaded_ahead=2 ahead=2"));
	assert_true(rig_read(r, 3));
	assert_ptr_equal(policy_victim(r->p, r->now), &r->ents[3].e);
	policy_describe(r->p, d, sizeof(d));
	assert_non_null(strstr(d, "epoch_ticks=0 "));
	assert_non_null(strstr(d, "ahead=1"));
	policy_remove(r->p, &r->ents[3].e);
	policy_remove(r->p, &r->ents[1].e);
	policy_remove(r->p, &r->ents[0].e);
	assert_ptr_equal(policy_victim(r->p, r->now), &r->ents[4].e);
	policy_remove(r->p, &r->ents[4].e);
	assert_null(policy_victim(r->p, r->now));
	rig_free(r);
	free(r);
}

/* An entry loaded ahead whose read never comes (the plan moved on) is not
 * kept for ever: once idle like a dead entry it is the victim, and it
 * counts as room for an admit. Capacity 2: 0 loaded ahead, then 1 read
 * and hit many times (its reuse distance, 1 tick, is the epoch length
 * learnt; dead after dead_factor x max(that, entries) = 4 ticks). 2 is
 * admitted in place of 0, the victim. */
static void test_epoch_ahead_unread_goes_dead(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	rig_init(r, "epoch", 2, 1, epoch_key, false);
	policy_insert(r->p, &r->ents[0].e, r->now);
	policy_loaded_ahead(r->p, &r->ents[0].e);
	r->ents[0].in = true;
	assert_false(rig_read(r, 1));
	for (int i = 0; i < 40; i++)
		assert_true(rig_read(r, 1));
	assert_ptr_equal(policy_victim(r->p, r->now), &r->ents[0].e);
	bool admitted = false;
	assert_false(rig_read_admitted(r, 2, &admitted));
	assert_true(admitted);
	assert_false(r->ents[0].in);
	assert_true(r->ents[1].in);
	rig_free(r);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_epoch_stable_subset),
		cmocka_unit_test(test_epoch_sizes),
		cmocka_unit_test(test_epoch_victim_mru_when_nothing_dead),
		cmocka_unit_test(test_epoch_turns_over),
		cmocka_unit_test(test_epoch_fits),
		cmocka_unit_test(test_epoch_too_big_refused),
		cmocka_unit_test(test_epoch_move_keeps_age),
		cmocka_unit_test(test_epoch_displaces_larger),
		cmocka_unit_test(test_epoch_loaded_ahead_kept_until_read),
		cmocka_unit_test(test_epoch_ahead_unread_goes_dead),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
