/*
 * A dataset's policy choice as an admin states it: a policy name and
 * key=value tunables, split into the policy's own and placement's (demote,
 * promote, hot_max_size); the index record that keeps a runtime choice
 * across restarts; and the rule that says which choice applies at startup.
 *
 * Precedence: a choice made with `tierctl policy set` is persisted and wins
 * over the config file's `policy =` line, until either
 *   - the admin returns to the file's value (`tierctl policy set DS --config`),
 *   - or the file's `policy =` line for the dataset changes: an edit of the
 *     file made after the runtime choice is the newer intent.
 * The record keeps the file's value from when the choice was made so that
 * the second case can be recognised.
 *
 * Pure: no I/O, no daemon state; any thread.
 */
#ifndef TIERCACHE_POLICY_SPEC_H
#define TIERCACHE_POLICY_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define POLICY_SPEC_NAME_MAX 31u     /* bytes of a policy name */
#define POLICY_SPEC_PAIR_MAX 255u    /* bytes of one "key=value" */
#define POLICY_SPEC_PAIRS_MAX 32u    /* tunables in one choice */
#define POLICY_SPEC_LIST_MAX 1023u   /* bytes of a joined "k=v k=v" list */

struct policy_spec {
	char name[POLICY_SPEC_NAME_MAX + 1];
	char tunables[POLICY_SPEC_LIST_MAX + 1];  /* the policy's, "k=v k=v" */
	char placement[POLICY_SPEC_LIST_MAX + 1]; /* placement's, "k=v k=v" */
};

/* Is key (n bytes) one of placement's tunables? */
bool policy_spec_placement_key(const char *key, size_t n);

/* From a name and "key=value" words (tierctl). Checks the shape only (a
 * known policy and valid values are for the policy to judge): a name of
 * [a-z0-9_], pairs with a non-empty key, no blanks or commas, within the
 * limits above. 0, or -EINVAL with a message in err. */
int policy_spec_from_pairs(const char *name, const char *const *pairs, size_t n,
			   struct policy_spec *out, char *err, size_t errlen);

/* From "NAME [k=v ...]" (the config file's value; blanks or commas between
 * tunables). Same checks. */
int policy_spec_parse(const char *s, struct policy_spec *out, char *err, size_t errlen);

/* Would the daemon accept it? The policy exists, and its tunables and
 * placement's are accepted by scratch instances (so a config file's
 * `policy = epoch dead_factor=x` fails at load, naming the tunable, not
 * at startup). 0, -ENOENT (unknown policy) or -EINVAL, with err set. */
int policy_spec_check(const struct policy_spec *s, char *err, size_t errlen);

/* "NAME k=v k=v" with the policy's tunables first, as `policy show` and
 * the logs print it. */
void policy_spec_format(const struct policy_spec *s, char *buf, size_t n);

bool policy_spec_equal(const struct policy_spec *a, const struct policy_spec *b);

/* The persisted runtime choice (index namespace "policy", key: dataset). */
struct policy_record {
	struct policy_spec spec;
	char config_policy[POLICY_SPEC_LIST_MAX + 1]; /* the file's value when it was set */
	int64_t set_at_s;                              /* wall clock, seconds */
};

/* Append the record's bytes to w (check w->oom). */
void policy_record_encode(const struct policy_record *r, struct proto_wr *w);
/* 0, or -EBADMSG if the bytes are not a record this build understands. */
int policy_record_decode(const void *p, size_t n, struct policy_record *out);

/* Startup: does the persisted choice still apply, given the config file's
 * current value for the dataset? (See the precedence rule above.) */
bool policy_record_applies(const struct policy_record *r, const char *config_policy);

#endif
