/*
 * Tunables: create-and-configure in one step, "k=v k=v" lists, and value
 * parsers that write the messages admins see. Pure; no I/O, no state.
 */
#include "policy.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *policy_tunable_names(const struct policy *p)
{
	const char *t = p->ops->tunables;
	return t && *t ? t : "none";
}

int policy_unknown_tunable(const struct policy *p, const char *key, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: unknown tunable \"%s\" (tunables: %s)", p->ops->name, key,
		 policy_tunable_names(p));
	return -EINVAL;
}

int policy_parse_double(const struct policy *p, const char *key, const char *value, double lo,
			double hi, double *out, char *err, size_t errlen)
{
	char *end = NULL;
	errno = 0;
	double d = value && *value ? strtod(value, &end) : NAN;
	if (!value || !*value || errno || *end || !isfinite(d) || d < lo || d > hi) {
		snprintf(err, errlen, "%s: %s: \"%s\" is not a number in [%g, %g]", p->ops->name, key,
			 value ? value : "", lo, hi);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

int policy_parse_u64(const struct policy *p, const char *key, const char *value, uint64_t lo,
		     uint64_t hi, uint64_t *out, char *err, size_t errlen)
{
	char *end = NULL;
	errno = 0;
	unsigned long long u = 0;
	bool ok = value && isdigit((unsigned char)*value);
	if (ok) {
		u = strtoull(value, &end, 10);
		ok = !errno && !*end && u >= lo && u <= hi;
	}
	if (!ok) {
		snprintf(err, errlen, "%s: %s: \"%s\" is not an integer in [%llu, %llu]",
			 p->ops->name, key, value ? value : "", (unsigned long long)lo,
			 (unsigned long long)hi);
		return -EINVAL;
	}
	*out = u;
	return 0;
}

int policy_set_list(struct policy *p, const char *tunables, char *err, size_t errlen)
{
	char buf[512];
	int rc = 0;
	const char *s = tunables ? tunables : "";

	while (*s) {
		while (*s == ' ' || *s == ',' || *s == '\t')
			s++;
		if (!*s)
			break;
		size_t n = strcspn(s, " ,\t");
		if (n >= sizeof(buf)) {
			snprintf(err, errlen, "%s: tunable too long", p->ops->name);
			rc = -EINVAL;
			goto out;
		}
		memcpy(buf, s, n);
		buf[n] = '\0';
		s += n;
		char *eq = strchr(buf, '=');
		if (!eq || eq == buf) {
			snprintf(err, errlen, "%s: \"%s\" is not key=value", p->ops->name, buf);
			rc = -EINVAL;
			goto out;
		}
		*eq = '\0';
		rc = policy_set(p, buf, eq + 1, err, errlen);
		if (rc < 0)
			goto out;
	}
out:
	return rc;
}

int policy_create_with(const char *name, const char *tunables, const struct policy_env *env,
		       struct policy **out, char *err, size_t errlen)
{
	struct policy *p = NULL;
	int rc = policy_create(name, env, &p);
	if (rc == -ENOENT) {
		size_t off = (size_t)snprintf(err, errlen, "unknown policy \"%s\" (policies:", name);
		for (const struct policy_ops *const *o = policy_all(); *o && off < errlen; o++)
			off += (size_t)snprintf(err + off, errlen - off, " %s", (*o)->name);
		if (off < errlen)
			snprintf(err + off, errlen - off, ")");
		goto out;
	}
	if (rc < 0) {
		snprintf(err, errlen, "%s: cannot create: %s", name, strerror(-rc));
		goto out;
	}
	rc = policy_set_list(p, tunables, err, errlen);
	if (rc < 0) {
		policy_destroy(p);
		goto out;
	}
	*out = p;
out:
	return rc;
}
