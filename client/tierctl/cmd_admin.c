/*
 * tierctl pin, unpin, evict, demote, verify, lifecycle: residency changes
 * an admin asks for (cached/handlers_admin.c). Each prints what the daemon
 * did, in chunks and bytes, or the record set with --json.
 *
 *   tierctl pin|unpin|evict [--json] DATASET[/PATH]
 *   tierctl demote [--json] DATASET[/PATH] --to warm
 *   tierctl verify [--json] [DATASET]
 *   tierctl lifecycle run [--dry-run] [--older-than DURATION]
 *                         [--dataset NAME] [--as-of TIME] [--json]
 *
 * Single-threaded (tierctl).
 */
#include "cmd_admin.h"
#include "tierctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t tierctl_field_u64(const struct proto_record *r, const char *key)
{
	const struct proto_field *f = proto_record_find(r, key);
	return f && f->type == TC_VAL_U64 ? f->v.u : 0;
}

void tierctl_fails_add(struct tierctl_fails *f, const struct proto_recset *rs)
{
	const struct proto_section *sec = proto_recset_find(rs, "failures");
	for (uint32_t i = 0; sec && i < sec->nrecords; i++) {
		const struct proto_record *r = &sec->records[i];
		uint64_t e = tierctl_field_u64(r, "errno");
		unsigned k = 0;
		while (k < f->n && f->err[k] != e)
			k++;
		if (k == f->n) {
			if (f->n == TIERCTL_FAIL_KINDS) {
				k = f->n - 1;
				f->err[k] = 0;
			} else {
				f->err[f->n++] = e;
			}
		}
		f->chunks[k] += tierctl_field_u64(r, "failed_chunks");
		f->bytes[k] += tierctl_field_u64(r, "failed_bytes");
	}
}

void tierctl_fails_print(const struct tierctl_fails *f, const char *what)
{
	for (unsigned k = 0; k < f->n; k++) {
		char size[32];
		const char *why;
		tierctl_human_bytes(size, sizeof(size), f->bytes[k]);
		switch (f->err[k]) {
		case EBADMSG:
			why = "failed their checksum (the bad copies were dropped; they are read from "
			      "the cold store again on their next read)";
			break;
		case ENOSPC:
			why = "found no room on the tier (free room with tierctl evict or unpin)";
			break;
		case 0:
			why = "failed for other reasons (see the daemon log)";
			break;
		default:
			why = strerror((int)f->err[k]);
		}
		tierctl_err("%s: %" PRIu64 " chunks (%s) %s%s", what, f->chunks[k], size,
			    f->err[k] == EBADMSG || f->err[k] == ENOSPC || !f->err[k] ? "" : "failed: ",
			    why);
	}
}

int tierctl_take_option(int *argc, char **argv, const char *name, const char **value)
{
	size_t n = strlen(name);
	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		const char *v = NULL;
		int used = 1;
		if (strcmp(argv[i], name) == 0) {
			if (i + 1 >= *argc)
				return tierctl_usage_error("%s: %s needs a value", argv[0], name);
			v = argv[i + 1];
			used = 2;
		} else if (strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') {
			v = argv[i] + n + 1;
		} else {
			continue;
		}
		if (*value)
			return tierctl_usage_error("%s: %s given twice", argv[0], name);
		*value = v;
		memmove(argv + i, argv + i + used, (size_t)(*argc - i - used) * sizeof(*argv));
		*argc -= used;
		i--;
	}
	return 0;
}

int tierctl_parse_duration_s(const char *s, int64_t *out)
{
	static const struct {
		const char *suffix;
		int64_t s;
	} units[] = {{"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 604800}};
	char *end;
	if (!*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			if (v > (unsigned long long)INT64_MAX / (unsigned long long)units[i].s)
				return -ERANGE;
			*out = (int64_t)v * units[i].s;
			return 0;
		}
	}
	return -EINVAL;
}

/* --as-of: "+DURATION" from now, "@EPOCH" seconds, or an ISO UTC time
 * "YYYY-MM-DDTHH:MM:SS[Z]". */
static int parse_time(const char *s, int64_t *out)
{
	int64_t d;
	if (*s == '+') {
		int64_t now = (int64_t)time(NULL);
		if (tierctl_parse_duration_s(s + 1, &d) < 0 || d > INT64_MAX - now)
			return -EINVAL;
		*out = now + d;
		return 0;
	}
	if (*s == '@') {
		char *end;
		errno = 0;
		long long v = strtoll(s + 1, &end, 10);
		if (errno || end == s + 1 || *end || v <= 0)
			return -EINVAL;
		*out = v;
		return 0;
	}
	struct tm tm = {0};
	const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end || (*end && strcmp(end, "Z") != 0))
		return -EINVAL;
	time_t t = timegm(&tm);
	if (t <= 0)
		return -EINVAL;
	*out = (int64_t)t;
	return 0;
}

/* One line "  LABEL  N chunks  SIZE" for a count the op used. */
static void show_count(const struct proto_record *r, const char *field, const char *label, bool always)
{
	char key[48], size[32];
	snprintf(key, sizeof(key), "%s_chunks", field);
	uint64_t n = tierctl_field_u64(r, key);
	snprintf(key, sizeof(key), "%s_bytes", field);
	uint64_t b = tierctl_field_u64(r, key);
	if (!n && !always)
		return;
	tierctl_human_bytes(size, sizeof(size), b);
	printf("  %-16s %10" PRIu64 " chunks  %8s  (%" PRIu64 " bytes)\n", label, n, size, b);
}

struct shown {
	const char *field, *label;
	bool always;
};

static int show(const struct proto_recset *rs, bool json, const char *title, const struct shown *v)
{
	if (json) {
		tierctl_render_json(stdout, rs);
		return TIERCTL_EXIT_OK;
	}
	const struct proto_section *sec = proto_recset_find(rs, "result");
	if (!sec || sec->nrecords != 1) {
		tierctl_err("%s: malformed reply from tiercached", title);
		return TIERCTL_EXIT_FAIL;
	}
	printf("%s\n", title);
	for (; v->field; v++)
		show_count(&sec->records[0], v->field, v->label, v->always);
	return TIERCTL_EXIT_OK;
}

static int call_str(struct tiercache *tc, unsigned op, const char *s, int extra_u8, const char *what,
		    struct proto_recset *rs)
{
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, s);
	if (extra_u8 >= 0)
		proto_wr_u8(&w, (uint8_t)extra_u8);
	if (w.oom) {
		proto_wr_free(&w);
		tierctl_err("%s: out of memory", what);
		return TIERCTL_EXIT_FAIL;
	}
	int rc = tierctl_call_recset(tc, op, w.buf + TC_HDR_SIZE, w.len - TC_HDR_SIZE, what, rs);
	proto_wr_free(&w);
	return rc;
}

static bool target_ok(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && n < TC_PATH_MAX && s[0] != '/';
}

/* pin / unpin / evict / demote: one DATASET[/PATH]. */
static int target_cmd(struct tiercache *tc, int argc, char **argv, unsigned op,
		      const struct shown *v)
{
	bool json = false;
	const char *to = NULL;
	int rc;
	if (op == TC_OP_DEMOTE && (rc = tierctl_take_option(&argc, argv, "--to", &to)))
		return rc;
	int npos;
	if ((rc = tierctl_parse_json(argc, argv, &json, &npos)))
		return rc;
	if (npos != 1)
		return tierctl_usage_error("%s: need exactly one DATASET[/PATH]", argv[0]);
	if (!target_ok(argv[1]))
		return tierctl_usage_error("%s: '%s' is not DATASET or DATASET/PATH (relative)", argv[0],
					   argv[1]);
	if (op == TC_OP_DEMOTE && (!to || strcmp(to, "warm") != 0))
		return tierctl_usage_error(to ? "demote: cannot demote to '%s' (only --to warm)"
					      : "demote: say where to: --to warm%s",
					   to ? to : "");
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	char what[TC_PATH_MAX + 32];
	snprintf(what, sizeof(what), "%s %s", argv[0], argv[1]);
	struct proto_recset rs;
	rc = call_str(tc, op, argv[1], op == TC_OP_DEMOTE ? TC_TIER_WARM : -1, what, &rs);
	if (rc)
		return rc;
	rc = show(&rs, json, what, v);
	/* anything that could not be done is a failure of the command: say
	 * which and why, and exit non-zero (scripts check the exit code) */
	const struct proto_section *sec = proto_recset_find(&rs, "result");
	uint64_t failed = sec && sec->nrecords == 1 ? tierctl_field_u64(&sec->records[0], "failed_chunks")
						    : 0;
	if (!rc && failed) {
		struct tierctl_fails f = {0};
		tierctl_fails_add(&f, &rs);
		tierctl_fails_print(&f, what);
		if (!f.n)
			tierctl_err("%s: %" PRIu64 " chunks failed (see the daemon log)", what, failed);
		rc = TIERCTL_EXIT_FAIL;
	}
	proto_recset_free(&rs);
	return rc;
}

int tierctl_cmd_pin(struct tiercache *tc, int argc, char **argv)
{
	static const struct shown v[] = {
		{"pinned", "newly pinned", true},
		{"hot", "pinned on hot", false},
		{"warm", "pinned on warm", false},
		{"filled", "read from cold", false},
		{NULL, NULL, false},
	};
	return target_cmd(tc, argc, argv, TC_OP_PIN, v);
}

int tierctl_cmd_unpin(struct tiercache *tc, int argc, char **argv)
{
	static const struct shown v[] = {{"pinned", "unpinned", true}, {NULL, NULL, false}};
	return target_cmd(tc, argc, argv, TC_OP_UNPIN, v);
}

int tierctl_cmd_evict(struct tiercache *tc, int argc, char **argv)
{
	static const struct shown v[] = {
		{"dropped", "evicted", true},
		{"skipped_pinned", "kept (pinned)", false},
		{NULL, NULL, false},
	};
	return target_cmd(tc, argc, argv, TC_OP_EVICT, v);
}

int tierctl_cmd_demote(struct tiercache *tc, int argc, char **argv)
{
	static const struct shown v[] = {
		{"moved", "demoted to warm", true},
		{"skipped_pinned", "kept (pinned)", false},
		{"failed", "failed", false},
		{NULL, NULL, false},
	};
	return target_cmd(tc, argc, argv, TC_OP_DEMOTE, v);
}

int tierctl_cmd_verify(struct tiercache *tc, int argc, char **argv)
{
	static const struct shown v[] = {
		{"checked", "checked", true},
		{"bad", "bad (dropped)", true},
		{"failed", "unreadable", false},
		{NULL, NULL, false},
	};
	bool json;
	int npos;
	int rc = tierctl_parse_json(argc, argv, &json, &npos);
	if (rc)
		return rc;
	if (npos > 1)
		return tierctl_usage_error("verify: at most one DATASET");
	const char *ds = npos ? argv[1] : "";
	if (strlen(ds) > TC_DATASET_NAME_MAX || strchr(ds, '/'))
		return tierctl_usage_error("verify: '%s' is not a dataset name", ds);
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	char what[128];
	snprintf(what, sizeof(what), "verify%s%.64s", *ds ? " " : "", ds);
	struct proto_recset rs;
	rc = call_str(tc, TC_OP_VERIFY, ds, -1, what, &rs);
	if (rc)
		return rc;
	rc = show(&rs, json, what, v);
	const struct proto_section *sec = proto_recset_find(&rs, "result");
	bool bad = sec && sec->nrecords == 1 &&
		   (tierctl_field_u64(&sec->records[0], "bad_chunks") ||
		    tierctl_field_u64(&sec->records[0], "failed_chunks"));
	struct tierctl_fails f = {0};
	tierctl_fails_add(&f, &rs);
	proto_recset_free(&rs);
	if (!rc && bad) {
		tierctl_fails_print(&f, what);
		tierctl_err("verify: bad chunks were found and dropped; they are read from the cold "
			    "store again on their next read");
		rc = TIERCTL_EXIT_FAIL;
	}
	return rc;
}

static int lifecycle_run(struct tiercache *tc, int argc, char **argv)
{
	static const struct shown v[] = {
		{"moved", "demoted to warm", true},
		{"dropped", "dropped", true},
		{"skipped_pinned", "kept (pinned)", false},
		{"failed", "demote failed", false},
		{NULL, NULL, false},
	};
	bool json = false, dry = false;
	const char *older = NULL, *dsname = NULL, *as_of = NULL;
	int rc;
	if ((rc = tierctl_take_option(&argc, argv, "--older-than", &older)) ||
	    (rc = tierctl_take_option(&argc, argv, "--dataset", &dsname)) ||
	    (rc = tierctl_take_option(&argc, argv, "--as-of", &as_of)))
		return rc;
	const struct tierctl_flag flags[] = {{"--json", &json}, {"--dry-run", &dry}, {NULL, NULL}};
	int npos;
	if ((rc = tierctl_parse_flags(argc, argv, flags, &npos)))
		return rc;
	if (npos)
		return tierctl_usage_error("lifecycle run: unexpected argument '%s'", argv[1]);
	int64_t older_s = -1, as_of_s = 0;
	if (older && (tierctl_parse_duration_s(older, &older_s) < 0 || older_s < 1))
		return tierctl_usage_error("lifecycle run: --older-than '%s' is not a duration of at "
					   "least 1s (use 90s, 30m, 12h, 7d)",
					   older);
	if (as_of && parse_time(as_of, &as_of_s) < 0)
		return tierctl_usage_error("lifecycle run: --as-of '%s' is not a time (use +2h, "
					   "@1700000000 or 2026-01-31T12:00:00Z)",
					   as_of);
	if (dsname && (!*dsname || strlen(dsname) > TC_DATASET_NAME_MAX || strchr(dsname, '/')))
		return tierctl_usage_error("lifecycle run: '%s' is not a dataset name", dsname);
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	struct proto_wr w;
	struct proto_recset rs;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, dsname ? dsname : "");
	proto_wr_u8(&w, dry ? TC_LC_F_DRY_RUN : 0);
	proto_wr_i64(&w, older_s);
	proto_wr_i64(&w, as_of_s);
	rc = w.oom ? TIERCTL_EXIT_FAIL
		   : tierctl_call_recset(tc, TC_OP_LIFECYCLE, w.buf + TC_HDR_SIZE, w.len - TC_HDR_SIZE,
					 "lifecycle run", &rs);
	proto_wr_free(&w);
	if (rc)
		return rc;
	rc = show(&rs, json, dry ? "lifecycle run (dry run: nothing changed; would do)" : "lifecycle run",
		  v);
	const struct proto_section *dss = proto_recset_find(&rs, "datasets");
	if (!rc && !json && dss) {
		for (uint32_t i = 0; i < dss->nrecords; i++) {
			const struct proto_field *n = proto_record_find(&dss->records[i], "name");
			uint64_t de = tierctl_field_u64(&dss->records[i], "demote_after_s");
			uint64_t ev = tierctl_field_u64(&dss->records[i], "evict_after_s");
			char a[32], b[32];
			snprintf(a, sizeof(a), de ? "%" PRIu64 "s" : "off", de);
			snprintf(b, sizeof(b), ev ? "%" PRIu64 "s" : "off", ev);
			printf("  dataset %-20.64s demote_after %-10s evict_after %s\n",
			       n && n->type == TC_VAL_STR ? n->v.s : "?", a, b);
		}
	}
	const struct proto_section *sec = proto_recset_find(&rs, "result");
	bool failed = sec && sec->nrecords == 1 && tierctl_field_u64(&sec->records[0], "failed_chunks");
	struct tierctl_fails f = {0};
	tierctl_fails_add(&f, &rs);
	proto_recset_free(&rs);
	if (!rc && failed) {
		tierctl_fails_print(&f, "lifecycle run: demote");
		tierctl_err("lifecycle run: some chunks could not be demoted%s",
			    f.n ? " (above)" : " (see the daemon log)");
		rc = TIERCTL_EXIT_FAIL;
	}
	return rc;
}

int tierctl_cmd_lifecycle(struct tiercache *tc, int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "run") != 0)
		return tierctl_usage_error("lifecycle: say run (tierctl lifecycle run [--dry-run] ...)");
	static char run_name[] = "lifecycle run"; /* argv[0] of the flag parsers' messages */
	argv[1] = run_name;
	return lifecycle_run(tc, argc - 1, argv + 1);
}
