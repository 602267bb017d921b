/*
 * The table of known policies. Adding a policy: one file in policy/, its
 * ops declared here and listed in `all`.
 */
#include "policy.h"

#include <errno.h>
#include <string.h>

extern const struct policy_ops policy_lru_ops;
extern const struct policy_ops policy_arc_ops;
extern const struct policy_ops policy_epoch_ops;
extern const struct policy_ops policy_clairvoyant_ops;

static const struct policy_ops *const all[] = {
	&policy_lru_ops,
	&policy_arc_ops,
	&policy_epoch_ops,
	&policy_clairvoyant_ops,
	NULL,
};

const struct policy_ops *const *policy_all(void)
{
	return all;
}

const struct policy_ops *policy_find(const char *name)
{
	for (size_t i = 0; all[i]; i++)
		if (strcmp(all[i]->name, name) == 0)
			return all[i];
	return NULL;
}

int policy_create(const char *name, const struct policy_env *env, struct policy **out)
{
	const struct policy_ops *ops = policy_find(name);
	if (!ops)
		return -ENOENT;
	int rc = ops->create(env, out);
	if (rc == 0) {
		(*out)->ops = ops;
		(*out)->bytes = 0;
		(*out)->entries = 0;
	}
	return rc;
}
