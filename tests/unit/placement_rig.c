/*
 * The placement rig of placement_rig.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "placement_rig.h"

void placement_rig_init(struct placement_rig *r, const char *name, uint64_t hot, uint64_t warm)
{
	memset(r, 0, sizeof(*r));
	r->cap[TIER_HOT] = hot;
	r->cap[TIER_WARM] = warm;
	for (int i = 0; i < PLACEMENT_RIG_NOBJ; i++) {
		r->ents[i].e.key = 77 * (uint64_t)(i + 1);
		r->ents[i].e.size = 1;
		r->ents[i].tier = TIER_NONE;
	}
	for (int t = 0; t < TIER_COUNT; t++) {
		struct policy_env env = {.capacity = r->cap[t]};
		if (r->cap[t])
			assert_int_equal(policy_create(name, &env, &r->t[t]), 0);
	}
	placement_init(&r->pl, r->t[TIER_HOT], r->t[TIER_WARM]);
	r->pl.cap[TIER_HOT] = hot;
	r->pl.cap[TIER_WARM] = warm;
}

void placement_rig_free(struct placement_rig *r)
{
	policy_destroy(r->t[TIER_HOT]);
	policy_destroy(r->t[TIER_WARM]);
}

/* The loop placement.h documents. */
static void make_room(struct placement_rig *r, int t)
{
	while (r->t[t]->bytes > r->cap[t]) {
		struct pol_entry *v = policy_victim(r->t[t], r->now);
		assert_non_null(v);
		struct placement_rig_ent *x = (struct placement_rig_ent *)v;
		policy_remove(r->t[t], v);
		int to = t == TIER_HOT ? placement_demote(&r->pl, v, r->now) : TIER_NONE;
		x->tier = TIER_NONE;
		if (to == TIER_WARM) {
			placement_demoted_insert(&r->pl, v, r->now);
			x->tier = TIER_WARM;
			make_room(r, TIER_WARM);
		}
	}
}

int placement_rig_read(struct placement_rig *r, int k)
{
	struct placement_rig_ent *x = &r->ents[k];
	r->now++;
	int served = x->tier, to;
	if (served != TIER_NONE) {
		r->hits++;
		to = placement_hit(&r->pl, served, &x->e, r->now);
		if (to == served)
			return served;
		policy_remove(r->t[served], &x->e);
	} else {
		to = placement_fill(&r->pl, x->e.key, x->e.size, r->now);
		if (to == TIER_NONE)
			return served;
	}
	policy_insert(r->t[to], &x->e, r->now);
	x->tier = to;
	make_room(r, to);
	for (int t = 0; t < TIER_COUNT; t++)
		if (r->t[t])
			assert_true(r->t[t]->bytes <= r->cap[t]);
	return served;
}
