/*
 * Policy choices, their persisted record and the startup precedence rule:
 * see policy_spec.h. Pure; any thread.
 */
#include "policy_spec.h"

#include "placement.h"
#include "policy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define RECORD_FORMAT 1u

static const char *const placement_keys[] = {"demote", "promote", "hot_max_size"};

bool policy_spec_placement_key(const char *key, size_t n)
{
	for (size_t i = 0; i < sizeof(placement_keys) / sizeof(placement_keys[0]); i++)
		if (strlen(placement_keys[i]) == n && memcmp(placement_keys[i], key, n) == 0)
			return true;
	return false;
}

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n > POLICY_SPEC_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return true;
}

/* Printable, no blank and no comma: the joined list splits on those. */
static bool pair_char_ok(char c)
{
	return (unsigned char)c > 0x20 && (unsigned char)c < 0x7f && c != ',';
}

/* Append one pair (n bytes at p) to the list it belongs to. */
static int add_pair(struct policy_spec *out, const char *p, size_t n, char *err, size_t errlen)
{
	const char *eq = memchr(p, '=', n);
	if (n > POLICY_SPEC_PAIR_MAX) {
		snprintf(err, errlen, "tunable \"%.40s...\" is longer than %u bytes", p,
			 POLICY_SPEC_PAIR_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!pair_char_ok(p[i])) {
			snprintf(err, errlen,
				 "tunable \"%.*s\": blanks, commas and control characters are not allowed",
				 (int)n, p);
			return -EINVAL;
		}
	}
	if (!eq || eq == p) {
		snprintf(err, errlen, "\"%.*s\" is not key=value", (int)n, p);
		return -EINVAL;
	}
	char *list = policy_spec_placement_key(p, (size_t)(eq - p)) ? out->placement : out->tunables;
	size_t at = strlen(list);
	if (at + (at ? 1 : 0) + n > POLICY_SPEC_LIST_MAX) {
		snprintf(err, errlen, "tunables longer than %u bytes in all", POLICY_SPEC_LIST_MAX);
		return -EINVAL;
	}
	if (at)
		list[at++] = ' ';
	memcpy(list + at, p, n);
	list[at + n] = '\0';
	return 0;
}

static int set_name(struct policy_spec *out, const char *s, size_t n, char *err, size_t errlen)
{
	if (!name_ok(s, n)) {
		snprintf(err, errlen, "\"%.*s\" is not a policy name (lower-case letters, digits, _)",
			 (int)(n > 64 ? 64 : n), s);
		return -EINVAL;
	}
	memcpy(out->name, s, n);
	out->name[n] = '\0';
	return 0;
}

int policy_spec_from_pairs(const char *name, const char *const *pairs, size_t n,
			   struct policy_spec *out, char *err, size_t errlen)
{
	int rc;
	memset(out, 0, sizeof(*out));
	rc = set_name(out, name, strlen(name), err, errlen);
	if (rc < 0)
		goto out;
	if (n > POLICY_SPEC_PAIRS_MAX) {
		snprintf(err, errlen, "at most %u tunables at once", POLICY_SPEC_PAIRS_MAX);
		rc = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		rc = add_pair(out, pairs[i], strlen(pairs[i]), err, errlen);
		if (rc < 0)
			goto out;
	}
out:
	return rc;
}

static bool sep(char c)
{
	return c == ' ' || c == '\t' || c == ',';
}

int policy_spec_parse(const char *s, struct policy_spec *out, char *err, size_t errlen)
{
	int rc;
	size_t pairs = 0;
	memset(out, 0, sizeof(*out));
	while (sep(*s))
		s++;
	size_t n = strcspn(s, " \t,");
	rc = set_name(out, s, n, err, errlen);
	if (rc < 0)
		goto out;
	s += n;
	for (;;) {
		while (sep(*s))
			s++;
		if (!*s)
			break;
		n = strcspn(s, " \t,");
		if (++pairs > POLICY_SPEC_PAIRS_MAX) {
			snprintf(err, errlen, "at most %u tunables at once", POLICY_SPEC_PAIRS_MAX);
			rc = -EINVAL;
			goto out;
		}
		rc = add_pair(out, s, n, err, errlen);
		if (rc < 0)
			goto out;
		s += n;
	}
out:
	return rc;
}

void policy_spec_format(const struct policy_spec *s, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s%s%s%s", s->name, *s->tunables ? " " : "", s->tunables,
		 *s->placement ? " " : "", s->placement);
}

bool policy_spec_equal(const struct policy_spec *a, const struct policy_spec *b)
{
	return strcmp(a->name, b->name) == 0 && strcmp(a->tunables, b->tunables) == 0 &&
	       strcmp(a->placement, b->placement) == 0;
}

void policy_record_encode(const struct policy_record *r, struct proto_wr *w)
{
	proto_wr_u8(w, RECORD_FORMAT);
	proto_wr_str(w, r->spec.name);
	proto_wr_str(w, r->spec.tunables);
	proto_wr_str(w, r->spec.placement);
	proto_wr_str(w, r->config_policy);
	proto_wr_i64(w, r->set_at_s);
}

int policy_record_decode(const void *p, size_t n, struct policy_record *out)
{
	struct proto_rd r;
	char err[64];
	struct policy_spec check;
	memset(out, 0, sizeof(*out));
	proto_rd_init(&r, p, n);
	if (proto_rd_u8(&r) != RECORD_FORMAT)
		return -EBADMSG;
	proto_rd_str_copy(&r, out->spec.name, sizeof(out->spec.name));
	proto_rd_str_copy(&r, out->spec.tunables, sizeof(out->spec.tunables));
	proto_rd_str_copy(&r, out->spec.placement, sizeof(out->spec.placement));
	proto_rd_str_copy(&r, out->config_policy, sizeof(out->config_policy));
	out->set_at_s = proto_rd_i64(&r);
	if (!proto_rd_done(&r))
		return -EBADMSG;
	/* the strings must be what from_pairs would have made: re-parse */
	char joined[3 * (POLICY_SPEC_LIST_MAX + 1)];
	policy_spec_format(&out->spec, joined, sizeof(joined));
	if (policy_spec_parse(joined, &check, err, sizeof(err)) < 0 ||
	    !policy_spec_equal(&check, &out->spec))
		return -EBADMSG;
	return 0;
}

/* The file's value, normalised (blanks and commas), or as is if it does
 * not parse. */
static void normalise(const char *s, char *buf, size_t n)
{
	struct policy_spec sp;
	char err[64];
	if (policy_spec_parse(s, &sp, err, sizeof(err)) == 0)
		policy_spec_format(&sp, buf, n);
	else
		snprintf(buf, n, "%s", s);
}

bool policy_record_applies(const struct policy_record *r, const char *config_policy)
{
	char a[3 * (POLICY_SPEC_LIST_MAX + 1)], b[3 * (POLICY_SPEC_LIST_MAX + 1)];
	normalise(r->config_policy, a, sizeof(a));
	normalise(config_policy, b, sizeof(b));
	return strcmp(a, b) == 0;
}

int policy_spec_check(const struct policy_spec *s, char *err, size_t errlen)
{
	/* Any capacity: some policies (arc) need one to be created at all. */
	struct policy_env env = {.capacity = 1ull << 30};
	struct policy *p = NULL;
	struct placement pl;
	char pair[POLICY_SPEC_PAIR_MAX + 1];
	int rc = policy_create_with(s->name, s->tunables, &env, &p, err, errlen);
	if (rc < 0)
		return rc;
	policy_destroy(p);
	placement_init(&pl, NULL, NULL);
	for (const char *l = s->placement; *l;) {
		size_t n = strcspn(l, " ");
		if (n && n < sizeof(pair)) {
			memcpy(pair, l, n);
			pair[n] = '\0';
			char *eq = strchr(pair, '=');
			if (!eq) { /* add_pair() lets none through */
				snprintf(err, errlen, "placement: \"%s\" is not key=value", pair);
				return -EINVAL;
			}
			*eq = '\0';
			rc = placement_set(&pl, pair, eq + 1, err, errlen);
			if (rc < 0)
				return rc;
		}
		l += n;
		l += strspn(l, " ");
	}
	return 0;
}
