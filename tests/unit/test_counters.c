/*
 * counters.c: the one table both `tierctl status` and /metrics walk. The
 * table is consistent (unique status keys, unique metric samples, help on
 * every row, a family's rows together and in agreement), covers every
 * field of struct counters exactly once, renders each value under both of
 * its names, and every metric it names is in docs/operations.md.
 *
 * Single-threaded: a zeroed cache and status stand in for the daemon's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "counters.h"
#include "metrics.h"
#include "proto.h"
#include "status.h"

#define NSLOTS (sizeof(struct counters) / sizeof(uint64_t))

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void test_names_unique(void **state)
{
	(void)state;
	/* keys status_fill writes by hand into the same "daemon" record */
	static const char *const daemon_keys[] = {"version", "pid", "uptime_s", "socket"};
	assert_true(counter_nrows > 0);
	for (size_t i = 0; i < counter_nrows; i++) {
		const struct counter_row *a = &counter_rows[i];
		assert_non_null(a->status);
		assert_non_null(a->metric);
		assert_non_null(a->labels);
		for (size_t d = 0; d < sizeof(daemon_keys) / sizeof(daemon_keys[0]); d++)
			assert_string_not_equal(a->status, daemon_keys[d]);
		for (size_t j = i + 1; j < counter_nrows; j++) {
			const struct counter_row *b = &counter_rows[j];
			if (strcmp(a->status, b->status) == 0)
				fail_msg("status key %s in rows %zu and %zu", a->status, i, j);
			if (strcmp(a->metric, b->metric) == 0 && strcmp(a->labels, b->labels) == 0)
				fail_msg("sample %s{%s} in rows %zu and %zu", a->metric, a->labels, i, j);
		}
	}
}

static void test_rows_well_formed(void **state)
{
	(void)state;
	for (size_t i = 0; i < counter_nrows; i++) {
		const struct counter_row *r = &counter_rows[i];
		if (!r->help || !r->help[0])
			fail_msg("%s: no help text", r->metric);
		assert_null(strchr(r->help, '\n'));
		assert_true(r->section == STATUS_DAEMON || r->section == STATUS_COUNTERS);
		assert_int_equal(strncmp(r->metric, "tiercache_", 10), 0);
		/* Prometheus conventions, as t_metrics.sh checks them on the wire */
		if (r->type == COUNTER_COUNTER && !ends_with(r->metric, "_total"))
			fail_msg("counter %s does not end in _total", r->metric);
		if (r->type == COUNTER_GAUGE && ends_with(r->metric, "_total"))
			fail_msg("gauge %s ends in _total", r->metric);
		/* labels: "" or name="value"[,name="value"...], no braces */
		assert_null(strchr(r->labels, '{'));
		if (r->labels[0]) {
			const char *eq = strstr(r->labels, "=\"");
			assert_non_null(eq);
			assert_true(ends_with(r->labels, "\""));
		}
		if (!r->get) {
			assert_true(r->off % sizeof(uint64_t) == 0);
			assert_true(r->off + sizeof(uint64_t) <= sizeof(struct counters));
		}
	}
}

/* A family's rows are adjacent (its HELP/TYPE print once, before them all)
 * and agree on type and help. */
static void test_families_together(void **state)
{
	(void)state;
	for (size_t i = 1; i < counter_nrows; i++) {
		const struct counter_row *r = &counter_rows[i], *prev = &counter_rows[i - 1];
		if (strcmp(r->metric, prev->metric) == 0) {
			assert_int_equal(r->type, prev->type);
			assert_string_equal(r->help, prev->help);
			/* several samples: each needs labels to tell it apart */
			assert_true(r->labels[0] && prev->labels[0]);
			continue;
		}
		for (size_t j = 0; j + 1 < i; j++)
			if (strcmp(counter_rows[j].metric, r->metric) == 0)
				fail_msg("%s: rows %zu and %zu are apart", r->metric, j, i);
	}
}

/* Every field of struct counters is one row's value, exactly once. */
static void test_struct_covered(void **state)
{
	(void)state;
	/* all fields are uint64_t: no padding, one slot each */
	assert_int_equal(sizeof(struct counters) % sizeof(uint64_t), 0);
	unsigned seen[NSLOTS];
	memset(seen, 0, sizeof(seen));
	for (size_t i = 0; i < counter_nrows; i++)
		if (!counter_rows[i].get)
			seen[counter_rows[i].off / sizeof(uint64_t)]++;
	for (size_t s = 0; s < NSLOTS; s++)
		if (seen[s] != 1)
			fail_msg("struct counters bytes %zu..%zu: in %u rows (want 1)",
				 s * sizeof(uint64_t), (s + 1) * sizeof(uint64_t) - 1, seen[s]);
}

/* ---- rendering ---- */

struct rig {
	struct cache cache;
	struct status st;
};

/* Distinct values everywhere the table reads without a server, mover or
 * sync queue (their getters read 0 from a NULL part). */
static void rig_fill(struct rig *g)
{
	memset(g, 0, sizeof(*g));
	g->st.cache = &g->cache;
	for (size_t s = 0; s < NSLOTS; s++) {
		uint64_t v = 1000003u * (s + 1);
		memcpy((char *)&g->cache.ctr + s * sizeof(v), &v, sizeof(v));
	}
	g->cache.fills.h.n = 71;
	g->cache.revals_inflight = 72;
	g->cache.unkept_ram = 73;
	g->st.reloads = 74;
	g->st.reload_failures = 75;
	g->cache.fills.nspare = 76;
	g->cache.fills.spare_bytes = 77;
}

static void test_values_in_struct(void **state)
{
	(void)state;
	static struct rig g;
	rig_fill(&g);
	for (size_t i = 0; i < counter_nrows; i++) {
		const struct counter_row *r = &counter_rows[i];
		if (!r->get)
			assert_true(counter_value(r, &g.st) ==
				    1000003u * (r->off / sizeof(uint64_t) + 1));
	}
	/* getters read their own fields, not a neighbour's */
	static const struct {
		const char *status;
		uint64_t want;
	} got[] = {
		{"fills_inflight", 71}, {"revalidations_inflight", 72}, {"unkept_ram_bytes", 73},
		{"reloads", 74},        {"reload_failures", 75},
		{"fill_buffers_spare", 76}, {"fill_buffer_spare_bytes", 77},
	};
	for (size_t k = 0; k < sizeof(got) / sizeof(got[0]); k++) {
		size_t i = 0;
		while (i < counter_nrows && strcmp(counter_rows[i].status, got[k].status) != 0)
			i++;
		assert_true(i < counter_nrows);
		assert_true(counter_value(&counter_rows[i], &g.st) == got[k].want);
	}
}

/* The value of name{labels} in Prometheus text, or -1 if absent; fails on
 * a sample that appears twice. */
static long long prom_find(const char *text, const char *name, const char *labels)
{
	char want[256];
	if (labels[0])
		snprintf(want, sizeof(want), "%s{%s} ", name, labels);
	else
		snprintf(want, sizeof(want), "%s ", name);
	long long v = -1;
	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		assert_non_null(nl);
		if (strncmp(line, want, strlen(want)) == 0) {
			assert_true(v == -1);
			v = strtoll(line + strlen(want), NULL, 10);
		}
		line = nl + 1;
	}
	return v;
}

static int count_lines(const char *text, const char *prefix)
{
	int n = 0;
	for (const char *line = text; *line;) {
		if (strncmp(line, prefix, strlen(prefix)) == 0)
			n++;
		line = strchr(line, '\n') + 1;
	}
	return n;
}

static void test_render_both_names(void **state)
{
	(void)state;
	static struct rig g;
	rig_fill(&g);

	/* status: the two sections as status_fill writes them */
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	struct proto_rs rs;
	proto_rs_begin(&rs, &w);
	proto_rs_section(&rs, "daemon", TC_SHAPE_OBJECT);
	proto_rs_record(&rs);
	status_counters(&g.st, &rs, STATUS_DAEMON);
	proto_rs_section(&rs, "counters", TC_SHAPE_OBJECT);
	proto_rs_record(&rs);
	status_counters(&g.st, &rs, STATUS_COUNTERS);
	proto_rs_end(&rs);
	assert_false(w.oom);
	struct proto_recset set;
	assert_int_equal(proto_recset_parse(w.buf + TC_HDR_SIZE, w.len - TC_HDR_SIZE, &set), 0);
	const struct proto_section *sec[2] = {proto_recset_find(&set, "daemon"),
					      proto_recset_find(&set, "counters")};
	assert_non_null(sec[0]);
	assert_non_null(sec[1]);

	/* metrics */
	struct evbuffer *b = evbuffer_new();
	assert_non_null(b);
	metrics_render_counters(&g.st, b);
	size_t n = evbuffer_get_length(b);
	char *text = calloc(1, n + 1);
	assert_non_null(text);
	evbuffer_remove(b, text, n);

	size_t fields = 0;
	for (size_t i = 0; i < counter_nrows; i++) {
		const struct counter_row *r = &counter_rows[i];
		uint64_t want = counter_value(r, &g.st);
		const struct proto_record *rec = &sec[r->section == STATUS_COUNTERS]->records[0];
		const struct proto_field *f = proto_record_find(rec, r->status);
		if (!f)
			fail_msg("status: no %s", r->status);
		assert_int_equal(f->type, TC_VAL_U64);
		assert_true(f->v.u == want);
		if (prom_find(text, r->metric, r->labels) != (long long)want)
			fail_msg("metrics: %s{%s} is not %llu", r->metric, r->labels,
				 (unsigned long long)want);
		fields++;
	}
	/* nothing else in either section */
	assert_int_equal(sec[0]->records[0].nfields + sec[1]->records[0].nfields, fields);

	/* one HELP and one TYPE per family, HELP then TYPE then its samples */
	for (size_t i = 0; i < counter_nrows; i++) {
		const struct counter_row *r = &counter_rows[i];
		char line[512];
		snprintf(line, sizeof(line), "# HELP %s %s\n# TYPE %s %s\n%s", r->metric, r->help,
			 r->metric, counter_type_name(r->type), r->metric);
		if (i == 0 || strcmp(counter_rows[i - 1].metric, r->metric) != 0)
			assert_non_null(strstr(text, line));
		snprintf(line, sizeof(line), "# HELP %s ", r->metric);
		assert_int_equal(count_lines(text, line), 1);
		snprintf(line, sizeof(line), "# TYPE %s ", r->metric);
		assert_int_equal(count_lines(text, line), 1);
	}
	free(text);
	evbuffer_free(b);
	proto_recset_free(&set);
	proto_wr_free(&w);
}

/* Every metric the table names is listed, in full, in the operator docs. */
static void test_docs_list_metrics(void **state)
{
	(void)state;
	char path[4096];
	const char *src = getenv("TIERCACHE_SRCDIR");
	snprintf(path, sizeof(path), "%s/docs/operations.md", src && *src ? src : ".");
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read %s (run from the source tree or set TIERCACHE_SRCDIR)", path);
	char *doc = calloc(1, 1 << 20);
	assert_non_null(doc);
	size_t n = fread(doc, 1, (1 << 20) - 1, f);
	fclose(f);
	assert_true(n > 0);
	for (size_t i = 0; i < counter_nrows; i++) {
		char quoted[256];
		snprintf(quoted, sizeof(quoted), "`%s`", counter_rows[i].metric);
		if (!strstr(doc, quoted))
			fail_msg("docs/operations.md does not list %s", quoted);
	}
	free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_unique),
		cmocka_unit_test(test_rows_well_formed),
		cmocka_unit_test(test_families_together),
		cmocka_unit_test(test_struct_covered),
		cmocka_unit_test(test_values_in_struct),
		cmocka_unit_test(test_render_both_names),
		cmocka_unit_test(test_docs_list_metrics),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
