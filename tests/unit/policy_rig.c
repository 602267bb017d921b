/*
 * The policy replay rig: see policy_rig.h.
 */
#include "policy_rig.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "plan.h"

void rig_init(struct rig *r, const char *name, uint64_t cap, uint64_t size,
	      uint64_t (*key_of)(int i), bool plans)
{
	memset(r, 0, sizeof(*r));
	r->cap = cap;
	for (int i = 0; i < RIG_NOBJ; i++) {
		r->ents[i].e.key = key_of(i);
		r->ents[i].e.size = size;
	}
	if (plans)
		assert_int_equal(plan_store_create(&r->ps), 0);
	struct policy_env env = {
		.capacity = cap,
		.next_use = plans ? plan_store_oracle : NULL,
		.version = plans ? plan_store_version_cb : NULL,
		.ctx = r->ps,
	};
	assert_int_equal(policy_create(name, &env, &r->p), 0);
}

void rig_free(struct rig *r)
{
	policy_destroy(r->p);
	plan_store_destroy(r->ps);
	r->p = NULL;
	r->ps = NULL;
}

bool rig_read_admitted(struct rig *r, int k, bool *admitted)
{
	struct rig_ent *x = &r->ents[k];
	uint64_t now = r->now++;
	if (r->ps)
		plan_store_access(r->ps, 0, x->e.key);
	if (admitted)
		*admitted = false;
	if (x->in) {
		policy_hit(r->p, &x->e, now);
		return true;
	}
	if (!policy_admit(r->p, x->e.key, x->e.size, now))
		return false;
	if (admitted)
		*admitted = true;
	r->admitted++;
	policy_insert(r->p, &x->e, now);
	x->in = true;
	while (r->p->bytes > r->cap) {
		struct pol_entry *v = policy_victim(r->p, now);
		assert_non_null(v);
		policy_remove(r->p, v);
		((struct rig_ent *)v)->in = false;
	}
	return false;
}

bool rig_read(struct rig *r, int k)
{
	return rig_read_admitted(r, k, NULL);
}
