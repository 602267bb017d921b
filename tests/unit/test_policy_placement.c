/*
 * Placement across tiers (policy/placement.c): where fills go, demote or
 * drop, promote, per policy; sizes; tunables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "placement.h"
#include "placement_rig.h"
#include "policy.h"

static void test_lru_fill_demote_promote(void **state)
{
	(void)state;
	struct placement_rig *r = calloc(1, sizeof(*r));
	char err[128];
	placement_rig_init(r, "lru", 2, 2);
	/* lru's default is demote=flat (test_policy_placement_flat.c) */
	assert_true(r->pl.demote_flat);
	assert_int_equal(placement_set(&r->pl, "demote", "1", err, sizeof(err)), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(placement_rig_read(r, i), TIER_NONE);
	/* newest two hot, the two before demoted to warm */
	assert_int_equal(r->ents[3].tier, TIER_HOT);
	assert_int_equal(r->ents[2].tier, TIER_HOT);
	assert_int_equal(r->ents[1].tier, TIER_WARM);
	assert_int_equal(r->ents[0].tier, TIER_WARM);
	/* a warm hit comes back hot; hot's LRU goes down */
	assert_int_equal(placement_rig_read(r, 0), TIER_WARM);
	assert_int_equal(r->ents[0].tier, TIER_HOT);
	assert_int_equal(r->ents[2].tier, TIER_WARM);
	assert_int_equal(r->pl.promoted, 1);
	/* a fifth object: warm's LRU (1) is dropped */
	assert_int_equal(placement_rig_read(r, 4), TIER_NONE);
	assert_int_equal(r->ents[1].tier, TIER_NONE);
	placement_rig_free(r);
	free(r);
}

/* epoch: hot full of live entries refuses, the fill goes to warm; both
 * full: not admitted at all; nothing moves between tiers after that. */
static void test_epoch_stable_tiers(void **state)
{
	(void)state;
	struct placement_rig *r = calloc(1, sizeof(*r));
	placement_rig_init(r, "epoch", 3, 5);
	for (int e = 0; e < 5; e++) {
		int hot = 0, warm = 0;
		for (int i = 0; i < 20; i++) {
			int s = placement_rig_read(r, (i * 7 + e * 3) % 20);
			hot += s == TIER_HOT;
			warm += s == TIER_WARM;
		}
		if (e > 0) {
			assert_int_equal(hot, 3);
			assert_int_equal(warm, 5);
		}
	}
	assert_int_equal(r->pl.fills[TIER_HOT], 3);
	assert_int_equal(r->pl.fills[TIER_WARM], 5);
	assert_int_equal(r->pl.promoted, 0);
	assert_int_equal(r->pl.demoted, 0);
	assert_true(r->pl.refused > 0);
	placement_rig_free(r);
	free(r);
}

static void test_hot_only_and_sizes(void **state)
{
	(void)state;
	struct placement_rig *r = calloc(1, sizeof(*r));
	char err[128];
	placement_rig_init(r, "lru", 100, 1000);
	assert_int_equal(placement_set(&r->pl, "hot_max_size", "10", err, sizeof(err)), 0);
	r->ents[5].e.size = 50;
	assert_int_equal(placement_rig_read(r, 5), TIER_NONE);
	assert_int_equal(r->ents[5].tier, TIER_WARM); /* too big for hot */
	assert_int_equal(placement_rig_read(r, 5), TIER_WARM);
	assert_int_equal(r->ents[5].tier, TIER_WARM); /* and never promoted */
	assert_int_equal(placement_rig_read(r, 6), TIER_NONE);
	assert_int_equal(r->ents[6].tier, TIER_HOT);
	placement_rig_free(r);

	placement_rig_init(r, "lru", 2, 0); /* no warm: victims are dropped */
	for (int i = 0; i < 3; i++)
		placement_rig_read(r, i);
	assert_int_equal(r->ents[0].tier, TIER_NONE);
	assert_int_equal(r->pl.dropped, 1);
	placement_rig_free(r);
	free(r);
}

static void test_no_demote_no_promote(void **state)
{
	(void)state;
	struct placement_rig *r = calloc(1, sizeof(*r));
	char err[128];
	placement_rig_init(r, "lru", 1, 2);
	assert_int_equal(placement_set(&r->pl, "demote", "0", err, sizeof(err)), 0);
	assert_int_equal(placement_set(&r->pl, "promote", "off", err, sizeof(err)), 0);
	placement_rig_read(r, 0);
	placement_rig_read(r, 1); /* 0 is dropped, not demoted */
	assert_int_equal(r->ents[0].tier, TIER_NONE);
	assert_int_equal(r->pl.demoted, 0);
	placement_rig_free(r);
	free(r);
}

/* demote=reread: a hot victim read once since it came in is dropped, one
 * read again is demoted, and a promoted entry needs a new hit in hot
 * before it is demoted again. */
static void test_demote_reread(void **state)
{
	(void)state;
	char err[128];
	struct placement_rig *r = calloc(1, sizeof(*r));
	placement_rig_init(r, "lru", 2, 2);
	assert_int_equal(placement_set(&r->pl, "demote", "reread", err, sizeof(err)), 0);
	assert_true(r->pl.demote && r->pl.demote_reread);
	assert_int_equal(placement_rig_read(r, 0), TIER_NONE);
	assert_int_equal(placement_rig_read(r, 1), TIER_NONE);
	assert_int_equal(placement_rig_read(r, 1), TIER_HOT); /* 1 is read again */
	assert_int_equal(placement_rig_read(r, 2), TIER_NONE); /* victim 0, never hit */
	assert_int_equal(r->ents[0].tier, TIER_NONE);
	assert_int_equal(r->pl.demoted, 0);
	assert_int_equal(r->pl.dropped_unread, 1);
	assert_int_equal(placement_rig_read(r, 3), TIER_NONE); /* victim 1, hit once */
	assert_int_equal(r->ents[1].tier, TIER_WARM);
	assert_int_equal(r->pl.demoted, 1);
	/* the move in cleared it: 1 comes back hot on a warm hit ... */
	assert_int_equal(placement_rig_read(r, 1), TIER_WARM);
	assert_int_equal(r->ents[1].tier, TIER_HOT);
	assert_int_equal(r->pl.promoted, 1);
	assert_int_equal(r->ents[2].tier, TIER_NONE); /* hot's victim 2: never hit */
	/* ... and, not read again in hot, is dropped, not demoted again */
	assert_int_equal(placement_rig_read(r, 4), TIER_NONE); /* victim 3 */
	assert_int_equal(r->ents[3].tier, TIER_NONE);
	assert_int_equal(placement_rig_read(r, 5), TIER_NONE); /* victim 1 */
	assert_int_equal(r->ents[1].tier, TIER_NONE);
	assert_int_equal(r->pl.demoted, 1);
	/* a new hit in hot makes it worth keeping again */
	assert_int_equal(placement_rig_read(r, 1), TIER_NONE); /* refilled hot, victim 4 */
	assert_int_equal(placement_rig_read(r, 1), TIER_HOT);
	assert_int_equal(placement_rig_read(r, 6), TIER_NONE); /* victim 5 dropped */
	assert_int_equal(placement_rig_read(r, 7), TIER_NONE); /* victim 1 demoted */
	assert_int_equal(r->ents[1].tier, TIER_WARM);
	assert_int_equal(r->pl.demoted, 2);
	assert_int_equal(r->pl.dropped_unread, 6);
	/* demote=1 again: every victim warm admits goes down */
	assert_int_equal(placement_set(&r->pl, "demote", "1", err, sizeof(err)), 0);
	assert_false(r->pl.demote_reread);
	assert_int_equal(placement_rig_read(r, 8), TIER_NONE); /* victim 6, never hit */
	assert_int_equal(r->ents[6].tier, TIER_WARM);
	placement_rig_free(r);
	free(r);
}

/* A chunk loaded ahead of its read: that read is its first hit, not a read
 * again, so with demote=reread it is still dropped unless read twice. */
static void test_demote_reread_ahead(void **state)
{
	(void)state;
	char err[128];
	struct placement_rig *r = calloc(1, sizeof(*r));
	placement_rig_init(r, "lru", 2, 2);
	assert_int_equal(placement_set(&r->pl, "demote", "reread", err, sizeof(err)), 0);
	struct placement_rig_ent *a = &r->ents[0], *b = &r->ents[1];
	for (int i = 0; i < 2; i++) {
		struct placement_rig_ent *x = i ? b : a;
		assert_true(placement_ahead_hot(&r->pl, x->e.key, 1, ++r->now));
		policy_insert(r->t[TIER_HOT], &x->e, r->now);
		policy_loaded_ahead(r->t[TIER_HOT], &x->e);
		x->tier = TIER_HOT;
	}
	assert_int_equal(placement_rig_read(r, 0), TIER_HOT); /* the read a was loaded for */
	assert_int_equal(placement_rig_read(r, 1), TIER_HOT); /* the read b was loaded for */
	assert_int_equal(placement_rig_read(r, 1), TIER_HOT); /* b read again */
	assert_int_equal(placement_rig_read(r, 2), TIER_NONE); /* victim a: dropped */
	assert_int_equal(a->tier, TIER_NONE);
	assert_int_equal(placement_rig_read(r, 3), TIER_NONE); /* victim b: demoted */
	assert_int_equal(b->tier, TIER_WARM);
	assert_int_equal(r->pl.demoted, 1);
	assert_int_equal(r->pl.dropped_unread, 1);
	placement_rig_free(r);
	free(r);
}

/* An entry back in its tier without a fill or a move in (a failed move,
 * a policy switch, a reclaim keeping it in place: policy_reinsert) keeps
 * its mark: read again before, it is still demoted; policy_insert clears
 * it. */
static void test_demote_reread_reinsert(void **state)
{
	(void)state;
	char err[128];
	struct placement_rig *r = calloc(1, sizeof(*r));
	placement_rig_init(r, "lru", 2, 2);
	assert_int_equal(placement_set(&r->pl, "demote", "reread", err, sizeof(err)), 0);
	assert_int_equal(placement_rig_read(r, 0), TIER_NONE);
	assert_int_equal(placement_rig_read(r, 0), TIER_HOT); /* 0 is read again */
	policy_remove(r->t[TIER_HOT], &r->ents[0].e);
	policy_reinsert(r->t[TIER_HOT], &r->ents[0].e, ++r->now);
	assert_int_equal(placement_rig_read(r, 1), TIER_NONE);
	assert_int_equal(placement_rig_read(r, 2), TIER_NONE); /* victim 0: still marked */
	assert_int_equal(r->ents[0].tier, TIER_WARM);
	assert_int_equal(r->pl.demoted, 1);
	assert_int_equal(placement_rig_read(r, 1), TIER_HOT); /* 1 is read again */
	policy_remove(r->t[TIER_HOT], &r->ents[1].e);
	policy_insert(r->t[TIER_HOT], &r->ents[1].e, ++r->now); /* a move in */
	assert_int_equal(placement_rig_read(r, 3), TIER_NONE); /* victim 2, never hit */
	assert_int_equal(r->ents[2].tier, TIER_NONE);
	assert_int_equal(placement_rig_read(r, 4), TIER_NONE); /* victim 1: the insert cleared it */
	assert_int_equal(r->ents[1].tier, TIER_NONE);
	assert_int_equal(r->pl.demoted, 1);
	placement_rig_free(r);
	free(r);
}

static void test_placement_tunables(void **state)
{
	(void)state;
	struct placement pl;
	char err[256];
	placement_init(&pl, NULL, NULL);
	assert_true(pl.demote && pl.promote);
	assert_int_equal(placement_set(&pl, "x", "1", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "placement: unknown tunable \"x\" (tunables: demote promote "
				 "hot_max_size)");
	assert_int_equal(placement_set(&pl, "demote", "maybe", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "placement: demote: \"maybe\" is not 0, 1, reread or flat");
	assert_int_equal(placement_set(&pl, "demote", NULL, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "placement: demote: \"\" is not 0, 1, reread or flat");
	assert_false(pl.demote_reread);
	assert_int_equal(placement_set(&pl, "promote", "reread", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "placement: promote: \"reread\" is not 0 or 1");
	assert_int_equal(placement_set(&pl, "hot_max_size", "12k", err, sizeof(err)), -EINVAL);
	assert_int_equal(placement_set(&pl, "hot_max_size", "", err, sizeof(err)), -EINVAL);
	assert_true(pl.demote);
	assert_int_equal(pl.hot_max_size, 0);
	/* nowhere to go without tiers */
	assert_int_equal(placement_fill(&pl, 1, 1, 0), TIER_NONE);
}

/* An asynchronous caller (the daemon) admits several fills before any is
 * inserted: what is in flight counts as held, so they do not all take the
 * same free room and overfill the tier (then evicting what was kept). */
static void test_inflight_counts_as_held(void **state)
{
	(void)state;
	struct placement_rig *r = calloc(1, sizeof(*r));
	placement_rig_init(r, "epoch", 4, 4);
	for (int i = 0; i < 3; i++)
		assert_int_equal(placement_rig_read(r, i), TIER_NONE); /* hot: 3 of 4 */
	struct placement_rig_ent *a = &r->ents[10], *b = &r->ents[11];
	int ta = placement_fill(&r->pl, a->e.key, 1, ++r->now);
	assert_int_equal(ta, TIER_HOT); /* the last free unit */
	r->pl.inflight[TIER_HOT] += 1;  /* its fill starts */
	int tb = placement_fill(&r->pl, b->e.key, 1, ++r->now);
	assert_int_equal(tb, TIER_WARM); /* hot's room is taken */
	r->pl.inflight[TIER_WARM] += 1;
	assert_int_equal(r->t[TIER_HOT]->bytes, 3); /* untouched by the asking */
	/* both fills end */
	r->pl.inflight[TIER_HOT] -= 1;
	policy_insert(r->t[TIER_HOT], &a->e, ++r->now);
	r->pl.inflight[TIER_WARM] -= 1;
	policy_insert(r->t[TIER_WARM], &b->e, ++r->now);
	assert_int_equal(r->t[TIER_HOT]->bytes, 4);
	/* a demotion in flight to warm holds room there too */
	r->pl.inflight[TIER_WARM] = 3; /* warm: 1 held + 3 arriving = full */
	assert_int_equal(placement_demote(&r->pl, &r->ents[0].e, ++r->now), TIER_NONE);
	r->pl.inflight[TIER_WARM] = 2;
	assert_int_equal(placement_demote(&r->pl, &r->ents[0].e, ++r->now), TIER_WARM);
	placement_rig_free(r);
	free(r);
}

/* Hot admitted a fill but has no room at this moment (the daemon's bytes in
 * flight): the fill goes to warm when warm's policy takes it, hot no longer
 * counts it, and with no later tier (or a later tier that refuses) it is
 * kept nowhere. */
static void test_fill_instead(void **state)
{
	(void)state;
	struct placement_rig *r = calloc(1, sizeof(*r));
	placement_rig_init(r, "lru", 2, 2);
	int to = placement_fill(&r->pl, 5, 1, ++r->now);
	assert_int_equal(to, TIER_HOT);
	assert_int_equal(placement_fill_instead(&r->pl, to, 5, 1, ++r->now), TIER_WARM);
	assert_int_equal(r->pl.fills[TIER_HOT], 0);
	assert_int_equal(r->pl.fills[TIER_WARM], 1);
	assert_int_equal(r->pl.instead, 1);
	/* warm cannot take it either: the last tier, kept nowhere */
	assert_int_equal(placement_fill_instead(&r->pl, TIER_WARM, 5, 1, ++r->now), TIER_NONE);
	assert_int_equal(r->pl.fills[TIER_WARM], 0);
	assert_int_equal(r->pl.refused, 1);
	/* nonsense in: nothing out, nothing counted */
	assert_int_equal(placement_fill_instead(&r->pl, TIER_NONE, 5, 1, ++r->now), TIER_NONE);
	assert_int_equal(placement_fill_instead(&r->pl, TIER_COUNT, 5, 1, ++r->now), TIER_NONE);
	assert_int_equal(r->pl.refused, 1);
	placement_rig_free(r);
	free(r);
	/* epoch: warm full of live entries refuses, so the fill is kept nowhere */
	r = calloc(1, sizeof(*r));
	placement_rig_init(r, "epoch", 1, 1);
	assert_int_equal(placement_rig_read(r, 0), TIER_NONE); /* hot */
	r->pl.inflight[TIER_WARM] = 1;                /* warm's one unit arriving */
	assert_int_equal(placement_fill_instead(&r->pl, TIER_HOT, 99, 1, ++r->now), TIER_NONE);
	r->pl.inflight[TIER_WARM] = 0;
	assert_int_equal(placement_fill_instead(&r->pl, TIER_HOT, 99, 1, ++r->now), TIER_WARM);
	placement_rig_free(r);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lru_fill_demote_promote),
		cmocka_unit_test(test_epoch_stable_tiers),
		cmocka_unit_test(test_hot_only_and_sizes),
		cmocka_unit_test(test_no_demote_no_promote),
		cmocka_unit_test(test_demote_reread),
		cmocka_unit_test(test_demote_reread_ahead),
		cmocka_unit_test(test_demote_reread_reinsert),
		cmocka_unit_test(test_placement_tunables),
		cmocka_unit_test(test_inflight_counts_as_held),
		cmocka_unit_test(test_fill_instead),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
