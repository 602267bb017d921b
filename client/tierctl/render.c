/*
 * tierctl output: record sets (status, datasets, and whatever the daemon
 * reports later) rendered generically as JSON or as human tables. Nothing
 * here knows a field name: the daemon decides what to report, and a key
 * ending in "_bytes" is the only convention (human sizes in human mode).
 *
 * Single-threaded (tierctl).
 */
#include "tierctl.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void tierctl_human_bytes(char *buf, size_t n, uint64_t v)
{
	static const char units[] = "KMGTPE";
	if (v < 1024) {
		snprintf(buf, n, "%" PRIu64 "B", v);
		return;
	}
	double d = (double)v;
	int u = -1;
	while (d >= 1024 && u < (int)sizeof(units) - 2) {
		d /= 1024;
		u++;
	}
	if (d < 9.95)
		snprintf(buf, n, "%.1f%c", d, units[u]);
	else
		snprintf(buf, n, "%.0f%c", d, units[u]);
}

void tierctl_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f); /* UTF-8 passes through untouched */
		}
	}
	fputc('"', f);
}

void tierctl_format_time(char *buf, size_t n, int64_t ns)
{
	int64_t sec = ns / 1000000000;
	int64_t frac = ns % 1000000000;
	if (frac < 0) {
		frac += 1000000000;
		sec--;
	}
	time_t t = (time_t)sec;
	struct tm tm;
	char day[32];
	if (!gmtime_r(&t, &tm) || !strftime(day, sizeof(day), "%Y-%m-%d %H:%M:%S", &tm)) {
		snprintf(buf, n, "%" PRId64 " ns", ns);
		return;
	}
	snprintf(buf, n, "%s.%09" PRId64 " UTC", day, frac);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void json_field(FILE *f, const struct proto_field *fl)
{
	tierctl_json_str(f, fl->key);
	fputs(": ", f);
	switch (fl->type) {
	case TC_VAL_U64: fprintf(f, "%" PRIu64, fl->v.u); break;
	case TC_VAL_I64: fprintf(f, "%" PRId64, fl->v.i); break;
	case TC_VAL_STR: tierctl_json_str(f, fl->v.s); break;
	case TC_VAL_BOOL: fputs(fl->v.b ? "true" : "false", f); break;
	default: fputs("null", f);
	}
}

static void json_record(FILE *f, const struct proto_record *r, const char *indent, bool oneline)
{
	if (r->nfields == 0) {
		fputs("{}", f);
		return;
	}
	fputs(oneline ? "{" : "{\n", f);
	for (uint32_t i = 0; i < r->nfields; i++) {
		if (!oneline)
			fprintf(f, "%s  ", indent);
		json_field(f, &r->fields[i]);
		if (i + 1 < r->nfields)
			fputs(oneline ? ", " : ",\n", f);
	}
	if (oneline)
		fputs("}", f);
	else
		fprintf(f, "\n%s}", indent);
}

/* An object section with exactly one record is an object; anything else
 * (arrays, and a malformed object with several records) is an array, so
 * no record the daemon sent is ever dropped. */
static bool is_object(const struct proto_section *s)
{
	return s->shape == TC_SHAPE_OBJECT && s->nrecords <= 1;
}

void tierctl_render_json(FILE *f, const struct proto_recset *rs)
{
	fputs("{", f);
	for (uint32_t s = 0; s < rs->nsections; s++) {
		const struct proto_section *sec = &rs->sections[s];
		fputs(s ? ",\n  " : "\n  ", f);
		tierctl_json_str(f, sec->name);
		fputs(": ", f);
		if (is_object(sec)) {
			static const struct proto_record empty = {0};
			json_record(f, sec->nrecords ? &sec->records[0] : &empty, "  ", false);
			continue;
		}
		if (sec->nrecords == 0) {
			fputs("[]", f);
			continue;
		}
		fputs("[\n", f);
		for (uint32_t i = 0; i < sec->nrecords; i++) {
			fputs("    ", f);
			json_record(f, &sec->records[i], "    ", true);
			fputs(i + 1 < sec->nrecords ? ",\n" : "\n", f);
		}
		fputs("  ]", f);
	}
	fputs(rs->nsections ? "\n}\n" : "}\n", f);
}

/* The text of a value for a human: sizes readable, control characters
 * made visible-safe so a name cannot drive the terminal. */
static void human_value(char *buf, size_t n, const struct proto_field *fl)
{
	switch (fl->type) {
	case TC_VAL_U64:
		if (ends_with(fl->key, "_bytes"))
			tierctl_human_bytes(buf, n, fl->v.u);
		else
			snprintf(buf, n, "%" PRIu64, fl->v.u);
		break;
	case TC_VAL_I64:
		if (ends_with(fl->key, "_bytes") && fl->v.i >= 0)
			tierctl_human_bytes(buf, n, (uint64_t)fl->v.i);
		else
			snprintf(buf, n, "%" PRId64, fl->v.i);
		break;
	case TC_VAL_BOOL:
		snprintf(buf, n, "%s", fl->v.b ? "yes" : "no");
		break;
	case TC_VAL_STR: {
		const char *s = fl->v.s && *fl->v.s ? fl->v.s : "-";
		size_t i = 0;
		for (; s[i] && i + 1 < n; i++) {
			unsigned char c = (unsigned char)s[i];
			buf[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
		}
		buf[i] = '\0';
		break;
	}
	default:
		snprintf(buf, n, "?");
	}
}

/* Columns a string takes: UTF-8 continuation bytes take none. */
static size_t text_width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

static void pad(FILE *f, size_t n)
{
	while (n--)
		fputc(' ', f);
}

#define CELL_MAX 512

static void human_object(FILE *f, const struct proto_record *r)
{
	size_t kw = 0;
	for (uint32_t i = 0; i < r->nfields; i++) {
		size_t w = text_width(r->fields[i].key);
		kw = w > kw ? w : kw;
	}
	for (uint32_t i = 0; i < r->nfields; i++) {
		char v[CELL_MAX];
		human_value(v, sizeof(v), &r->fields[i]);
		fprintf(f, "  %s", r->fields[i].key);
		pad(f, kw - text_width(r->fields[i].key) + 2);
		fprintf(f, "%s\n", v);
	}
}

struct column {
	const char *key;
	size_t width;
	bool numeric;
};

/* A table: one column per key seen in any record, in first-seen order. */
static int human_table(FILE *f, const struct proto_section *sec)
{
	struct column *cols = NULL;
	size_t ncols = 0, cap = 0;
	for (uint32_t i = 0; i < sec->nrecords; i++) {
		const struct proto_record *r = &sec->records[i];
		for (uint32_t j = 0; j < r->nfields; j++) {
			const struct proto_field *fl = &r->fields[j];
			size_t c = 0;
			while (c < ncols && strcmp(cols[c].key, fl->key) != 0)
				c++;
			if (c == ncols) {
				if (ncols == cap) {
					cap = cap ? cap * 2 : 16;
					struct column *n = realloc(cols, cap * sizeof(*n));
					if (!n) {
						free(cols);
						return -1;
					}
					cols = n;
				}
				cols[ncols++] = (struct column){
					.key = fl->key,
					.width = text_width(fl->key),
					.numeric = true,
				};
			}
			char v[CELL_MAX];
			human_value(v, sizeof(v), fl);
			size_t w = text_width(v);
			cols[c].width = w > cols[c].width ? w : cols[c].width;
			if (fl->type != TC_VAL_U64 && fl->type != TC_VAL_I64)
				cols[c].numeric = false;
		}
	}
	fputs(" ", f);
	for (size_t c = 0; c < ncols; c++) {
		fputc(' ', f);
		size_t w = text_width(cols[c].key);
		if (cols[c].numeric)
			pad(f, cols[c].width - w);
		fputs(cols[c].key, f);
		if (!cols[c].numeric && c + 1 < ncols)
			pad(f, cols[c].width - w);
		if (c + 1 < ncols)
			fputc(' ', f);
	}
	fputc('\n', f);
	for (uint32_t i = 0; i < sec->nrecords; i++) {
		fputs(" ", f);
		for (size_t c = 0; c < ncols; c++) {
			const struct proto_field *fl = proto_record_find(&sec->records[i], cols[c].key);
			char v[CELL_MAX] = "-";
			if (fl)
				human_value(v, sizeof(v), fl);
			size_t w = text_width(v);
			fputc(' ', f);
			if (cols[c].numeric)
				pad(f, cols[c].width - w);
			fputs(v, f);
			if (!cols[c].numeric && c + 1 < ncols)
				pad(f, cols[c].width - w);
			if (c + 1 < ncols)
				fputc(' ', f);
		}
		fputc('\n', f);
	}
	free(cols);
	return 0;
}

void tierctl_render_human(FILE *f, const struct proto_recset *rs)
{
	for (uint32_t s = 0; s < rs->nsections; s++) {
		const struct proto_section *sec = &rs->sections[s];
		if (s)
			fputc('\n', f);
		fprintf(f, "%s\n", sec->name);
		if (is_object(sec)) {
			if (sec->nrecords)
				human_object(f, &sec->records[0]);
		} else if (sec->nrecords == 0) {
			fputs("  (none)\n", f);
		} else if (human_table(f, sec) < 0) {
			fputs("  (out of memory)\n", f);
		}
	}
}
