/*
 * Policy choices (cached/conf/policy_spec.c): tunables split between the policy
 * and placement, shape checks with their messages, the persisted record's
 * round trip and its rejection of bad bytes, and the startup precedence
 * rule (the runtime choice wins until the file's policy line changes).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy_spec.h"

static void pairs_split_between_policy_and_placement(void **state)
{
	(void)state;
	struct policy_spec s;
	char err[256] = "";
	const char *pairs[] = {"dead_factor=3", "demote=0", "quantile=0.9", "hot_max_size=4096"};
	assert_int_equal(policy_spec_from_pairs("epoch", pairs, 4, &s, err, sizeof(err)), 0);
	assert_string_equal(s.name, "epoch");
	assert_string_equal(s.tunables, "dead_factor=3 quantile=0.9");
	assert_string_equal(s.placement, "demote=0 hot_max_size=4096");
	char buf[512];
	policy_spec_format(&s, buf, sizeof(buf));
	assert_string_equal(buf, "epoch dead_factor=3 quantile=0.9 demote=0 hot_max_size=4096");
	assert_true(policy_spec_placement_key("promote", 7));
	assert_false(policy_spec_placement_key("promoted", 8));
	assert_false(policy_spec_placement_key("dead_factor", 11));
}

static void bad_shapes_are_refused_with_a_message(void **state)
{
	(void)state;
	struct policy_spec s;
	char err[256];
	const char *no_eq[] = {"dead_factor"};
	const char *empty_key[] = {"=3"};
	const char *blank[] = {"a=b c"};
	const char *comma[] = {"a=b,c"};
	char big[400];
	memset(big, 'x', sizeof(big) - 1);
	big[0] = 'k';
	big[1] = '=';
	big[sizeof(big) - 1] = '\0';
	const char *toolong[] = {big};

	err[0] = '\0';
	assert_int_equal(policy_spec_from_pairs("Epoch", NULL, 0, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a policy name"));
	assert_int_equal(policy_spec_from_pairs("", NULL, 0, &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_spec_from_pairs("epoch", no_eq, 1, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "\"dead_factor\" is not key=value"));
	assert_int_equal(policy_spec_from_pairs("epoch", empty_key, 1, &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_spec_from_pairs("epoch", blank, 1, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "blanks"));
	assert_int_equal(policy_spec_from_pairs("epoch", comma, 1, &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_spec_from_pairs("epoch", toolong, 1, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "longer than"));

	const char *many[POLICY_SPEC_PAIRS_MAX + 1];
	for (size_t i = 0; i <= POLICY_SPEC_PAIRS_MAX; i++)
		many[i] = "a=1";
	assert_int_equal(policy_spec_from_pairs("lru", many, POLICY_SPEC_PAIRS_MAX + 1, &s, err,
						sizeof(err)),
			 -EINVAL);
	assert_int_equal(policy_spec_from_pairs("lru", many, POLICY_SPEC_PAIRS_MAX, &s, err, sizeof(err)),
			 0);
}

static void config_values_parse_like_pairs(void **state)
{
	(void)state;
	struct policy_spec a, b;
	char err[256];
	const char *pairs[] = {"unplanned=skip", "promote=0"};
	assert_int_equal(policy_spec_parse("  clairvoyant unplanned=skip,promote=0 ", &a, err,
					   sizeof(err)),
			 0);
	assert_int_equal(policy_spec_from_pairs("clairvoyant", pairs, 2, &b, err, sizeof(err)), 0);
	assert_true(policy_spec_equal(&a, &b));
	assert_int_equal(policy_spec_parse("lru", &a, err, sizeof(err)), 0);
	assert_string_equal(a.name, "lru");
	assert_string_equal(a.tunables, "");
	assert_int_equal(policy_spec_parse("lru x", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(policy_spec_parse("", &a, err, sizeof(err)), -EINVAL);
}

static void record_round_trips(void **state)
{
	(void)state;
	struct policy_record r = {.set_at_s = 1700000000}, back;
	char err[256];
	const char *pairs[] = {"dead_factor=2.5", "demote=0"};
	assert_int_equal(policy_spec_from_pairs("epoch", pairs, 2, &r.spec, err, sizeof(err)), 0);
	snprintf(r.config_policy, sizeof(r.config_policy), "lru");
	struct proto_wr w;
	proto_wr_init(&w);
	policy_record_encode(&r, &w);
	assert_false(w.oom);
	assert_int_equal(policy_record_decode(w.buf, w.len, &back), 0);
	assert_true(policy_spec_equal(&r.spec, &back.spec));
	assert_string_equal(back.config_policy, "lru");
	assert_int_equal(back.set_at_s, 1700000000);

	/* truncated, trailing bytes, unknown format: refused */
	assert_int_equal(policy_record_decode(w.buf, w.len - 1, &back), -EBADMSG);
	uint8_t longer[2048];
	memcpy(longer, w.buf, w.len);
	longer[w.len] = 0;
	assert_int_equal(policy_record_decode(longer, w.len + 1, &back), -EBADMSG);
	w.buf[0] = 99;
	assert_int_equal(policy_record_decode(w.buf, w.len, &back), -EBADMSG);
	assert_int_equal(policy_record_decode(NULL, 0, &back), -EBADMSG);
	proto_wr_free(&w);
}

static void record_with_bad_strings_is_refused(void **state)
{
	(void)state;
	struct policy_record r = {0}, back;
	/* a record whose name is not a policy name (written by something
	 * else, or corrupt) must not be applied */
	snprintf(r.spec.name, sizeof(r.spec.name), "ep och");
	snprintf(r.config_policy, sizeof(r.config_policy), "lru");
	struct proto_wr w;
	proto_wr_init(&w);
	policy_record_encode(&r, &w);
	assert_int_equal(policy_record_decode(w.buf, w.len, &back), -EBADMSG);
	proto_wr_free(&w);

	memset(&r, 0, sizeof(r));
	snprintf(r.spec.name, sizeof(r.spec.name), "epoch");
	snprintf(r.spec.tunables, sizeof(r.spec.tunables), "demote=0"); /* placement's, misfiled */
	proto_wr_init(&w);
	policy_record_encode(&r, &w);
	assert_int_equal(policy_record_decode(w.buf, w.len, &back), -EBADMSG);
	proto_wr_free(&w);
}

static void runtime_choice_applies_until_the_file_changes(void **state)
{
	(void)state;
	struct policy_record r = {0};
	snprintf(r.spec.name, sizeof(r.spec.name), "epoch");
	snprintf(r.config_policy, sizeof(r.config_policy), "lru");
	assert_true(policy_record_applies(&r, "lru"));
	assert_true(policy_record_applies(&r, " lru ")); /* same value, other blanks */
	assert_false(policy_record_applies(&r, "arc"));   /* the file was edited since */
	assert_false(policy_record_applies(&r, "lru x=1"));
	snprintf(r.config_policy, sizeof(r.config_policy), "epoch dead_factor=3");
	assert_true(policy_record_applies(&r, "epoch,dead_factor=3"));
	assert_false(policy_record_applies(&r, "epoch dead_factor=4"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pairs_split_between_policy_and_placement),
		cmocka_unit_test(bad_shapes_are_refused_with_a_message),
		cmocka_unit_test(config_values_parse_like_pairs),
		cmocka_unit_test(record_round_trips),
		cmocka_unit_test(record_with_bad_strings_is_refused),
		cmocka_unit_test(runtime_choice_applies_until_the_file_changes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
