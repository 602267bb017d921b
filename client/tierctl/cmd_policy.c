/*
 * tierctl policy: show a dataset's cache policy and what it is doing, or
 * switch it (with tunables) while the daemon runs. The daemon checks the
 * choice and keeps it across restarts; an unknown policy or a bad tunable
 * is refused with the daemon's message and the old policy stays.
 *
 *   tierctl policy show [--json] [DATASET]
 *   tierctl policy set [--json] DATASET NAME [key=value ...]
 *   tierctl policy set [--json] DATASET --config    (back to the file's)
 *
 * Single-threaded (tierctl).
 */
#include "cmd_policy.h"
#include "tierctl.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *field_str(const struct proto_record *r, const char *key)
{
	const struct proto_field *f = proto_record_find(r, key);
	return f && f->type == TC_VAL_STR && f->v.s ? f->v.s : "";
}

static uint64_t field_u64(const struct proto_record *r, const char *key)
{
	const struct proto_field *f = proto_record_find(r, key);
	return f && f->type == TC_VAL_U64 ? f->v.u : 0;
}

static bool field_bool(const struct proto_record *r, const char *key)
{
	const struct proto_field *f = proto_record_find(r, key);
	return f && f->type == TC_VAL_BOOL && f->v.b;
}

/* Print s with control characters made harmless. */
static void put_safe(const char *s)
{
	for (; *s; s++)
		putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

static void show_tier(const struct proto_record *r, const char *tier)
{
	char key[32], used[32], budget[32];
	snprintf(key, sizeof(key), "%s_state", tier);
	if (!proto_record_find(r, key))
		return; /* the tier is not configured */
	const char *state = field_str(r, key);
	snprintf(key, sizeof(key), "%s_bytes", tier);
	tierctl_human_bytes(used, sizeof(used), field_u64(r, key));
	snprintf(key, sizeof(key), "%s_budget_bytes", tier);
	tierctl_human_bytes(budget, sizeof(budget), field_u64(r, key));
	snprintf(key, sizeof(key), "%s_entries", tier);
	printf("  %-10s %" PRIu64 " chunks, %s of %s", tier, field_u64(r, key), used, budget);
	if (*state) {
		fputs("; ", stdout);
		put_safe(state);
	}
	putchar('\n');
}

static void show_dataset(const struct proto_record *r)
{
	char when[64], maxb[32];
	const char *source = field_str(r, "source");
	const struct proto_field *at = proto_record_find(r, "set_at_s");
	put_safe(field_str(r, "dataset"));
	fputs(": ", stdout);
	put_safe(field_str(r, "policy"));
	if (strcmp(source, "tierctl") == 0) {
		tierctl_format_time(when, sizeof(when),
				    at && at->type == TC_VAL_I64 ? at->v.i * 1000000000 : 0);
		printf(" (set with tierctl at %.19s UTC; the config file says ", when);
		put_safe(field_str(r, "config_policy"));
		fputs(")\n", stdout);
	} else {
		fputs(" (from the config file)\n", stdout);
	}
	printf("  %-10s ", "summary");
	put_safe(field_str(r, "summary"));
	printf("\n  %-10s ", "tunables");
	put_safe(*field_str(r, "tunables") ? field_str(r, "tunables") : "(defaults)");
	uint64_t hms = field_u64(r, "hot_max_size_bytes");
	tierctl_human_bytes(maxb, sizeof(maxb), hms);
	printf("\n  %-10s demote=%s promote=%s hot_max_size=%s\n", "placement",
	       field_bool(r, "demote_reread") ? "reread"
	       : field_bool(r, "demote_flat") ? "flat"
	       : field_bool(r, "demote")      ? "1"
					      : "0",
	       field_bool(r, "promote") ? "1" : "0",
	       hms ? maxb : "0 (no limit)");
	show_tier(r, "hot");
	show_tier(r, "warm");
	printf("  %-10s hot %" PRIu64 ", warm %" PRIu64 ", not admitted %" PRIu64
	       " (served without keeping: %" PRIu64 ")\n",
	       "fills", field_u64(r, "fills_hot"), field_u64(r, "fills_warm"),
	       field_u64(r, "not_admitted"), field_u64(r, "served_unkept"));
	printf("  %-10s demoted %" PRIu64 ", dropped %" PRIu64, "moves", field_u64(r, "demoted"),
	       field_u64(r, "dropped"));
	if (field_bool(r, "demote_reread"))
		printf(" (%" PRIu64 " not read again)", field_u64(r, "dropped_unread"));
	if (field_bool(r, "demote_flat"))
		printf(" (%" PRIu64 " read before warm's victim)", field_u64(r, "dropped_older"));
	printf(", promoted %" PRIu64 "\n", field_u64(r, "promoted"));
}

static void show_known(const struct proto_section *known)
{
	printf("policies:\n");
	for (uint32_t i = 0; i < known->nrecords; i++) {
		const struct proto_record *r = &known->records[i];
		const char *tun = field_str(r, "tunables");
		char name[32];
		snprintf(name, sizeof(name), "%s", field_str(r, "name"));
		for (char *p = name; *p; p++)
			*p = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
		printf("  %-13s ", name);
		put_safe(field_str(r, "summary"));
		fputs("\n                tunables: ", stdout);
		put_safe(*tun ? tun : "none");
		putchar('\n');
	}
}

static int render(const struct proto_recset *rs, bool json, bool with_known)
{
	if (json) {
		tierctl_render_json(stdout, rs);
		return TIERCTL_EXIT_OK;
	}
	const struct proto_section *pol = proto_recset_find(rs, "policies");
	const struct proto_section *known = proto_recset_find(rs, "known");
	if (!pol) {
		tierctl_err("policy: malformed reply from tiercached");
		return TIERCTL_EXIT_FAIL;
	}
	for (uint32_t i = 0; i < pol->nrecords; i++) {
		if (i)
			putchar('\n');
		show_dataset(&pol->records[i]);
	}
	if (with_known && known) {
		if (pol->nrecords)
			putchar('\n');
		show_known(known);
	}
	return TIERCTL_EXIT_OK;
}

static bool dataset_name_ok(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && n <= TC_DATASET_NAME_MAX && !strchr(s, '/');
}

/* Build a request in w (after proto_wr_begin) and call op. */
static int call(struct tiercache *tc, unsigned op, struct proto_wr *w, const char *what,
		struct proto_recset *rs)
{
	if (w->oom) {
		tierctl_err("%s: out of memory", what);
		return TIERCTL_EXIT_FAIL;
	}
	return tierctl_call_recset(tc, op, w->buf + TC_HDR_SIZE, w->len - TC_HDR_SIZE, what, rs);
}

static int policy_show(struct tiercache *tc, int argc, char **argv)
{
	bool json;
	int npos;
	int rc = tierctl_parse_json(argc, argv, &json, &npos);
	if (rc)
		return rc;
	if (npos > 1)
		return tierctl_usage_error("policy show: at most one DATASET");
	const char *ds = npos ? argv[1] : "";
	if (npos && !dataset_name_ok(ds))
		return tierctl_usage_error("policy show: '%s' is not a dataset name", ds);
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	struct proto_wr w;
	struct proto_recset rs;
	char what[128];
	snprintf(what, sizeof(what), "policy show%s%.64s", *ds ? " " : "", ds);
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, ds);
	rc = call(tc, TC_OP_POLICY_GET, &w, what, &rs);
	proto_wr_free(&w);
	if (rc)
		return rc;
	rc = render(&rs, json, !*ds);
	proto_recset_free(&rs);
	return rc;
}

static int policy_set(struct tiercache *tc, int argc, char **argv)
{
	bool json = false, to_config = false;
	const struct tierctl_flag flags[] = {
		{"--json", &json},
		{"--config", &to_config},
		{NULL, NULL},
	};
	int npos;
	int rc = tierctl_parse_flags(argc, argv, flags, &npos);
	if (rc)
		return rc;
	if (to_config ? npos != 1 : npos < 2)
		return tierctl_usage_error(to_config ? "policy set --config: need exactly one DATASET"
						     : "policy set: need DATASET and a policy NAME");
	const char *ds = argv[1];
	if (!dataset_name_ok(ds))
		return tierctl_usage_error("policy set: '%s' is not a dataset name", ds);
	uint32_t n = to_config ? 0 : (uint32_t)(npos - 2);
	if (n > TC_POLICY_TUNABLES_MAX)
		return tierctl_usage_error("policy set: at most %u tunables", TC_POLICY_TUNABLES_MAX);
	for (uint32_t i = 0; i < n; i++) {
		const char *kv = argv[3 + i];
		if (!strchr(kv, '=') || strlen(kv) > TC_POLICY_TUNABLE_MAX)
			return tierctl_usage_error("policy set: '%s' is not key=value", kv);
	}
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	struct proto_wr w;
	struct proto_recset rs;
	char what[128];
	snprintf(what, sizeof(what), "policy set %.64s", ds);
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, ds);
	proto_wr_str(&w, to_config ? "" : argv[2]);
	proto_wr_u32(&w, n);
	for (uint32_t i = 0; i < n; i++)
		proto_wr_str(&w, argv[3 + i]);
	rc = call(tc, TC_OP_POLICY_SET, &w, what, &rs);
	proto_wr_free(&w);
	if (rc)
		return rc;
	rc = render(&rs, json, false);
	proto_recset_free(&rs);
	return rc;
}

int tierctl_cmd_policy(struct tiercache *tc, int argc, char **argv)
{
	if (argc < 2)
		return tierctl_usage_error("policy: say show or set");
	/* the subcommand's words follow it: argv[1] becomes their argv[0],
	 * named in full for the flag parsers' messages */
	static char show_name[] = "policy show", set_name[] = "policy set";
	if (strcmp(argv[1], "show") == 0) {
		argv[1] = show_name;
		return policy_show(tc, argc - 1, argv + 1);
	}
	if (strcmp(argv[1], "set") == 0) {
		argv[1] = set_name;
		return policy_set(tc, argc - 1, argv + 1);
	}
	return tierctl_usage_error("policy: unknown subcommand '%s' (show, set)", argv[1]);
}
