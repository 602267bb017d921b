/*
 * Loads the daemon's INI configuration (format: docs/config.md).
 *
 * One table, config_keys[] (config_keys.c), drives every key: its section kind, type, bounds,
 * default and where it lands in struct config. The default is written as
 * text and goes through the very parser a file value goes through, so a
 * default can never break the rules it documents. Loading runs three
 * phases: defaults, parse, cross-checks. Every problem is collected, one
 * line each: "FILE:LINE: SECTION.KEY: reason (hint)", or "FILE: SECTION:
 * reason (hint)" for a cross-check.
 *
 * libinih splits lines into section, key and value. Debian's build neither
 * passes line numbers to the handler (INI_HANDLER_LINENO is 0) nor calls it
 * at a section header, so the text goes through our own line reader: it
 * counts lines (the handler runs between two reader calls, so the count is
 * the handler's line), sees every section header (an empty section too),
 * reports what inih would only count as "first error line", and trims each
 * line's indentation so that an indented key is a key, not a continuation
 * of the previous value. The reader gives inih exactly one physical line
 * per call, so its count is right whether or not inih counts too.
 *
 * Threading: no global state. Any thread may load, and a reload can parse
 * a new file beside the config in use.
 */
#include "config.h"
#include "config_int.h"
#include "config_keys.h"
#include "config_value.h"

#include "log.h"
#include "policy.h"
#include "policy_spec.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <ini.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define LINE_BUF 4096 /* longest line we copy; inih's own buffer is smaller */


/* Start a message "FILE:LINE: " ("FILE: " for line 0, a cross-check).
 * Returns the stream to finish it on, NULL once out of memory; call
 * msg_end() either way. */
static FILE *msg_begin(struct load *ld, int line)
{
	ld->nerr++;
	if (ld->err) {
		if (line > 0)
			fprintf(ld->err, "%s:%d: ", ld->file, line);
		else
			fprintf(ld->err, "%s: ", ld->file);
	}
	return ld->err;
}

static void msg_end(struct load *ld)
{
	if (ld->err)
		fputc('\n', ld->err);
}

/* Start a message about key K of section LABEL: "FILE:LINE: label.key: ". */
static FILE *key_begin(struct load *ld, int line, const char *label, const struct key_def *k)
{
	FILE *f = msg_begin(ld, line);
	if (f)
		fprintf(f, "%s.%s: ", label, k->name);
	return f;
}

void config_msg(struct load *ld, int line, const char *fmt, ...)
{
	FILE *f = msg_begin(ld, line);
	if (f) {
		va_list ap;
		va_start(ap, fmt);
		vfprintf(f, fmt, ap);
		va_end(ap);
	}
	msg_end(ld);
}

const char *config_shown(char *buf, size_t n, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 1 < n; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
	if (s[i] && n > 4)
		memcpy(buf + n - 4, "...", 4);
	return buf;
}

/* ", "-joined names of the keys of KIND, into a message. */
static void put_key_names(FILE *f, enum section_kind kind)
{
	const char *sep = "";
	for (size_t i = 0; i < config_nkeys; i++)
		if (config_keys[i].sect == kind) {
			fprintf(f, "%s%s", sep, config_keys[i].name);
			sep = ", ";
		}
}

/* Parse VALUE for key K into the section struct BASE. Reports and returns
 * -EINVAL if the value is bad; line 0 while applying defaults. */
static int key_set(struct load *ld, const struct key_def *k, const char *label, int line,
		   void *base, const char *v)
{
	char *field = (char *)base + k->off;
	char q[160], lo[32], hi[32], joined[2 * PATH_MAX], norm[PATH_MAX];
	const char *dflt = k->def ? k->def : "";
	const char *comma = k->def ? ", default " : "";
	uint64_t x = 0;
	int rc;
	FILE *f;

	config_shown(q, sizeof(q), v); /* the value as messages quote it */
	switch (k->type) {
	case KEY_STRING:
		if (!*v && (k->flags & KEY_NONEMPTY)) {
			key_msg(ld, line, label, k, "empty value (give a value%s%s)", comma, dflt);
			return -EINVAL;
		}
		if (strlen(v) >= k->size) {
			key_msg(ld, line, label, k, "\"%s\" is too long (at most %zu bytes)", q,
				k->size - 1);
			return -EINVAL;
		}
		strcpy(field, v);
		return 0;

	case KEY_PATH:
		if (!*v && (k->flags & KEY_NONEMPTY)) {
			key_msg(ld, line, label, k, "empty path (give a path%s%s)", comma, dflt);
			return -EINVAL;
		}
		if (!*v) {
			field[0] = '\0';
			return 0;
		}
		if (v[0] != '/' && (k->flags & KEY_ABSOLUTE)) {
			key_msg(ld, line, label, k, "\"%s\" is not an absolute path (give the full "
				"path, e.g. /etc/tiercache/%s)", q, k->name);
			return -EINVAL;
		}
		rc = snprintf(joined, sizeof(joined), "%s%s%s", v[0] == '/' ? "" : ld->dir,
			      v[0] == '/' ? "" : "/", v);
		rc = rc < 0 || (size_t)rc >= sizeof(joined) ? -ENAMETOOLONG
							     : config_path_normalize(joined, norm, sizeof(norm));
		if (rc < 0 || (size_t)rc >= k->size) {
			key_msg(ld, line, label, k, "\"%s\" is too long%s (at most %zu bytes once "
						    "resolved%s)",
				q, k->flags & KEY_SUN_PATH ? " for a Unix socket path" : "",
				k->size - 1, k->flags & KEY_SUN_PATH ? "; use a shorter path" : "");
			return -EINVAL;
		}
		memcpy(field, norm, (size_t)rc + 1);
		return 0;

	case KEY_SIZE:
		rc = config_parse_size(v, &x);
		config_fmt_size(lo, sizeof(lo), k->min);
		config_fmt_size(hi, sizeof(hi), k->max);
		if (rc == -EINVAL)
			key_msg(ld, line, label, k, "\"%s\" is not a size (use 64G, 512M, ...)", q);
		else if (rc == -ERANGE || x > k->max)
			key_msg(ld, line, label, k, "\"%s\" is too large (at most %s)", q, hi);
		else if (x < k->min)
			key_msg(ld, line, label, k, "\"%s\" is too small (at least %s)", q, lo);
		else if (k->align && x % k->align)
			key_msg(ld, line, label, k, "\"%s\" is not a multiple of %s (use 1M, 4M, ...)",
				q, config_fmt_size(lo, sizeof(lo), k->align));
		else
			break;
		return -EINVAL;

	case KEY_PERCENT:
	case KEY_UINT: {
		const char *p = v;
		rc = config_parse_digits(&p, &x);
		if (k->type == KEY_PERCENT && *p == '%')
			p++;
		if (rc == -EINVAL || *p)
			key_msg(ld, line, label, k, "\"%s\" is not %s (use %" PRIu64 "..%" PRIu64 ")", q,
				k->type == KEY_PERCENT ? "a percentage" : "a whole number", k->min,
				k->max);
		else if (rc == -ERANGE || x < k->min || x > k->max)
			key_msg(ld, line, label, k, "\"%s\" is out of range (use %" PRIu64 "..%" PRIu64 ")",
				q, k->min, k->max);
		else
			break;
		return -EINVAL;
	}

	case KEY_DURATION:
		if ((k->flags & KEY_OFF) && strcmp(v, "off") == 0) {
			x = 0;
			break;
		}
		rc = config_parse_duration_ms(v, &x);
		config_fmt_duration(lo, sizeof(lo), k->min);
		config_fmt_duration(hi, sizeof(hi), k->max);
		if (rc == -EINVAL)
			key_msg(ld, line, label, k,
				"\"%s\" is not a duration (use 250ms, 30s, 5m, 2h, 1d)", q);
		else if (rc == -ERANGE || x < k->min || x > k->max)
			key_msg(ld, line, label, k, "\"%s\" is out of range (use %s..%s)", q, lo, hi);
		else if ((k->flags & KEY_SECONDS) && x % SEC_MS)
			key_msg(ld, line, label, k,
				"\"%s\" is not a whole number of seconds (use %s..%s)", q, lo, hi);
		else
			break;
		return -EINVAL;

	case KEY_ENUM:
		for (size_t i = 0; k->values[i]; i++)
			if (strcmp(v, k->values[i]) == 0) {
				assert(strlen(v) < k->size);
				strcpy(field, v);
				return 0;
			}
		if ((f = key_begin(ld, line, label, k))) {
			fprintf(f, "\"%s\" is not a valid %s (use ", q, k->name);
			for (size_t i = 0; k->values[i]; i++)
				fprintf(f, "%s%s", i ? ", " : "", k->values[i]);
			fputc(')', f);
		}
		msg_end(ld);
		return -EINVAL;

	case KEY_LOG_LEVEL:
		rc = log_level_parse(v);
		if (rc < 0) {
			key_msg(ld, line, label, k,
				"\"%s\" is not a valid log_level (use %s, %s, %s, %s)", q,
				log_level_name(LOG_ERR), log_level_name(LOG_WARN),
				log_level_name(LOG_INFO), log_level_name(LOG_DEBUG));
			return -EINVAL;
		}
		memcpy(field, &rc, sizeof(rc));
		return 0;

	case KEY_MODE: {
		const char *p = v;
		x = 0;
		while (*p >= '0' && *p <= '7' && p - v < 5)
			x = x * 8 + (uint64_t)(*p++ - '0');
		if (p == v || *p || x > k->max) {
			key_msg(ld, line, label, k,
				"\"%s\" is not an octal mode (use 0600, 0660, 0666)", q);
			return -EINVAL;
		}
		break;
	}

	case KEY_POLICY: {
		/* "NAME [key=value ...]": checked as `tierctl policy set` is */
		struct policy_spec spec;
		char why[256], word[160], name[160];
		const char *w = v + strspn(v, " \t,");
		snprintf(word, sizeof(word), "%.*s", (int)strcspn(w, " \t,"), w);
		if (strlen(v) >= k->size) {
			key_msg(ld, line, label, k, "\"%s\" is too long (at most %zu bytes)", q,
				k->size - 1);
			return -EINVAL;
		}
		if (policy_find(word)) {
			rc = policy_spec_parse(v, &spec, why, sizeof(why));
			if (rc == 0)
				rc = policy_spec_check(&spec, why, sizeof(why));
			if (rc < 0) {
				config_shown(q, sizeof(q), why);
				key_msg(ld, line, label, k, "%s", q);
				return -EINVAL;
			}
			strcpy(field, v);
			return 0;
		}
		config_shown(name, sizeof(name), word); /* the name alone, as messages quote it */
		if ((f = key_begin(ld, line, label, k))) {
			const struct policy_ops *const *all = policy_all();
			fprintf(f, "\"%s\" is not a known policy (known: ", name);
			for (size_t i = 0; all[i]; i++)
				fprintf(f, "%s%s", i ? ", " : "", all[i]->name);
			fputc(')', f);
		}
		msg_end(ld);
		return -EINVAL;
	}
	}
	/* a number that passed its checks */
	config_store_uint(field, k->size, (k->flags & KEY_SECONDS) ? x / SEC_MS : x);
	return 0;
}

static void section_defaults(struct load *ld, enum section_kind kind, const char *label,
			     void *base)
{
	for (size_t i = 0; i < config_nkeys; i++)
		if (config_keys[i].sect == kind && config_keys[i].def)
			key_set(ld, &config_keys[i], label, 0, base, config_keys[i].def);
}

/* ---- sections ---- */

static bool dataset_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > CONFIG_NAME_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return false;
	return true;
}

static void section_enter(struct load *ld, enum section_kind kind, void *base,
			  struct sect_state *st, const char *label)
{
	ld->kind = kind;
	ld->base = base;
	ld->state = st;
	snprintf(ld->label, sizeof(ld->label), "%s", label);
}

static void section_dataset(struct load *ld, const char *name, int line, const char *hdr)
{
	struct config *cfg = ld->cfg;
	char sb[160];
	if (!*name) {
		config_msg(ld, line, "[%s]: missing dataset name (use [dataset NAME])", hdr);
		return;
	}
	if (!dataset_name_ok(name)) {
		config_msg(ld, line,
			 "[%s]: bad dataset name \"%s\" (use 1..%d of A-Z a-z 0-9 . _ -, not "
			 "starting with '.')",
			 hdr, config_shown(sb, sizeof(sb), name), CONFIG_NAME_MAX);
		return;
	}
	for (unsigned i = 0; i < cfg->ndatasets; i++)
		if (strcmp(cfg->datasets[i].name, name) == 0) {
			/* still parsed below, so its keys are checked too */
			config_msg(ld, line, "dataset.%s: duplicate [dataset %s] (first at line %d; "
					   "dataset names must be unique)",
				 name, name, cfg->datasets[i].line);
			break;
		}
	if (cfg->ndatasets >= CONFIG_DATASETS_MAX) {
		config_msg(ld, line, "dataset.%s: too many datasets (at most %d)", name,
			 CONFIG_DATASETS_MAX);
		return;
	}
	if (cfg->ndatasets == ld->ds_cap) {
		size_t cap = ld->ds_cap ? 2 * ld->ds_cap : 8;
		struct dataset_conf *d = realloc(cfg->datasets, cap * sizeof(*d));
		if (d)
			cfg->datasets = d;
		struct sect_state *s = d ? realloc(ld->ds, cap * sizeof(*s)) : NULL;
		if (!s) {
			ld->oom = true;
			return;
		}
		ld->ds = s;
		ld->ds_cap = cap;
	}
	struct dataset_conf *ds = &cfg->datasets[cfg->ndatasets];
	struct sect_state *st = &ld->ds[cfg->ndatasets];
	cfg->ndatasets++;
	memset(ds, 0, sizeof(*ds));
	memset(st, 0, sizeof(*st));
	strcpy(ds->name, name);
	ds->line = line;
	st->line = line;
	char label[CONFIG_NAME_MAX + 16];
	snprintf(label, sizeof(label), "dataset.%s", ds->name);
	section_defaults(ld, SECT_DATASET, label, ds);
	section_enter(ld, SECT_DATASET, ds, st, label);
}

/* A header "[TEXT]" on LINE: pick the struct its keys go to. A bad header
 * makes its keys be skipped: they would only add noise to its message. */
static void section_begin(struct load *ld, char *text, int line)
{
	char hdr[160];
	ld->kind = SECT_SKIP;
	/* "[ tier   hot ]" is "[tier hot]" */
	char *word = text;
	while (isspace((unsigned char)*word))
		word++;
	char *end = word + strlen(word);
	while (end > word && isspace((unsigned char)end[-1]))
		*--end = '\0';
	config_shown(hdr, sizeof(hdr), word);
	char *name = word;
	while (*name && !isspace((unsigned char)*name))
		name++;
	if (*name) {
		*name++ = '\0';
		while (isspace((unsigned char)*name))
			name++;
	}

	if (strcmp(word, "daemon") == 0) {
		if (*name) {
			config_msg(ld, line, "[%s]: [daemon] takes no name (use [daemon])", hdr);
			return;
		}
		if (ld->daemon.line)
			config_msg(ld, line, "daemon: [daemon] appears twice (first at line %d; merge them)",
				 ld->daemon.line);
		else
			ld->daemon.line = line;
		section_enter(ld, SECT_DAEMON, ld->cfg, &ld->daemon, "daemon");
	} else if (strcmp(word, "tier") == 0) {
		for (int t = 0; t < TIER_COUNT; t++) {
			if (strcmp(name, tier_names[t]) != 0)
				continue;
			struct tier_conf *tc = &ld->cfg->tiers[t];
			if (tc->present) {
				config_msg(ld, line,
					 "%s: [tier %s] appears twice (first at line %d; merge them)",
					 tier_names[t], tier_names[t], tc->line);
			} else {
				tc->present = true;
				tc->line = line;
				ld->tiers[t].line = line;
			}
			section_enter(ld, SECT_TIER, tc, &ld->tiers[t], tier_names[t]);
			return;
		}
		config_msg(ld, line, "[%s]: unknown tier (use [tier hot] or [tier warm])", hdr);
	} else if (strcmp(word, "dataset") == 0) {
		section_dataset(ld, name, line, hdr);
	} else if (strcmp(word, "cluster") == 0) {
		if (*name) {
			config_msg(ld, line, "[%s]: [cluster] takes no name (use [cluster])", hdr);
			return;
		}
		if (ld->cluster.line) {
			config_msg(ld, line, "cluster: [cluster] appears twice (first at line %d; merge "
				 "them)", ld->cluster.line);
		} else {
			ld->cluster.line = ld->cfg->cluster.line = line;
			ld->cfg->cluster.enabled = true;
			section_defaults(ld, SECT_CLUSTER, "cluster", ld->cfg);
		}
		section_enter(ld, SECT_CLUSTER, ld->cfg, &ld->cluster, "cluster");
	} else {
		config_msg(ld, line,
			 "[%s]: unknown section (use [daemon], [tier hot], [tier warm], [cluster] "
			 "or [dataset NAME])",
			 hdr);
	}
}

/* ---- the line reader and the inih handler ---- */

/* Where inih's find_chars_or_comment() stops: at one of CHARS, at an
 * inline comment (';' after a space), or at the end. Mirrored so that we
 * reject exactly the lines inih rejects, with our own message. */
static char *scan_to(char *s, const char *chars)
{
	bool was_space = false;
	while (*s && !strchr(chars, *s) && !(was_space && *s == ';')) {
		was_space = isspace((unsigned char)*s);
		s++;
	}
	return s;
}

static void syntax_error(struct load *ld, const char *what, const char *line_text)
{
	char sb[80];
	if (!ld->first_syntax_line)
		ld->first_syntax_line = ld->line;
	config_msg(ld, ld->line, "%s: \"%s\"", what, config_shown(sb, sizeof(sb), line_text));
}

/* Look at one trimmed line before inih does. */
static void line_classify(struct load *ld, const char *str)
{
	char buf[LINE_BUF];
	if (!*str || strchr(";#", *str))
		return;
	snprintf(buf, sizeof(buf), "%s", str);
	if (*buf == '[') {
		char *end = scan_to(buf + 1, "]");
		if (*end != ']') {
			ld->kind = SECT_SKIP;
			syntax_error(ld, "section header without ']' (write [name])", str);
			return;
		}
		*end = '\0';
		const char *rest = end + 1;
		while (isspace((unsigned char)*rest))
			rest++;
		if (*rest && !strchr(";#", *rest)) {
			/* inih ignores it; a typo may hide there, so say so */
			char sb[80];
			config_msg(ld, ld->line, "text after the section header: \"%s\"",
				 config_shown(sb, sizeof(sb), rest));
		}
		section_begin(ld, buf + 1, ld->line);
		return;
	}
	char *sep = scan_to(buf, "=:");
	if (*sep != '=' && *sep != ':')
		syntax_error(ld, "not a \"key = value\" line, [section] or # comment", str);
}

/* inih's fgets: one physical line per call, trimmed, counted. */
static char *config_reader(char *str, int num, void *stream)
{
	struct load *ld = stream;
	if (ld->pos >= ld->len)
		return NULL;
	const char *s = ld->text + ld->pos;
	const char *nl = memchr(s, '\n', ld->len - ld->pos);
	size_t n = nl ? (size_t)(nl - s) : ld->len - ld->pos;
	ld->pos += n + (nl ? 1 : 0);
	ld->line++;
	if (ld->line == 1 && n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
		s += 3;
		n -= 3;
	}
	while (n && isspace((unsigned char)*s))
		s++, n--;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	str[0] = '\0'; /* a rejected line reaches inih as a blank one */
	if (memchr(s, '\0', n)) {
		config_msg(ld, ld->line, "line contains a NUL byte (is this a text file?)");
		return str;
	}
	size_t room = num <= 0 ? 0 : (size_t)num < LINE_BUF ? (size_t)num : LINE_BUF;
	if (n >= room) {
		if (*s == '[')
			ld->kind = SECT_SKIP; /* its keys would land in the section before */
		config_msg(ld, ld->line, "line too long (%zu bytes; at most %zu)", n, room ? room - 1 : 0);
		return str;
	}
	memcpy(str, s, n);
	str[n] = '\0';
	line_classify(ld, str);
	return str;
}

static void on_key(struct load *ld, const char *name, const char *value)
{
	int line = ld->line;
	char sb[80];
	if (ld->kind == SECT_SKIP)
		return;
	if (ld->kind == SECT_NONE) {
		config_msg(ld, line,
			 "%s: key before any section (put it under [daemon], [tier hot], [tier "
			 "warm], [cluster] or [dataset NAME])",
			 config_shown(sb, sizeof(sb), name));
		return;
	}
	if (!*name) {
		config_msg(ld, line, "%s: missing key name before '='", ld->label);
		return;
	}
	const struct key_def *k = config_key_find(ld->kind, name);
	if (!k) {
		FILE *f = msg_begin(ld, line);
		if (f) {
			fprintf(f, "%s.%s: unknown key (keys of ", ld->label, config_shown(sb, sizeof(sb), name));
			if (ld->kind == SECT_TIER)
				fprintf(f, "[tier %s]: ", ld->label);
			else
				fputs(ld->kind == SECT_DAEMON	 ? "[daemon]: "
				      : ld->kind == SECT_CLUSTER ? "[cluster]: "
								 : "[dataset NAME]: ",
				      f);
			put_key_names(f, ld->kind);
			fputc(')', f);
		}
		msg_end(ld);
		return;
	}
	size_t ki = (size_t)(k - config_keys);
	struct sect_state *st = ld->state;
	if (st->key_line[ki]) {
		key_msg(ld, line, ld->label, k, "set twice (first at line %d; keep one)",
			st->key_line[ki]);
		return;
	}
	st->key_line[ki] = line;
	if (key_set(ld, k, ld->label, line, ld->base, value ? value : "") < 0)
		st->key_bad[ki] = true;
}

#if INI_HANDLER_LINENO
static int config_handler(void *user, const char *section, const char *name, const char *value,
			  int lineno)
{
	(void)lineno; /* the reader's count: same line, and right in either build */
#else
static int config_handler(void *user, const char *section, const char *name, const char *value)
{
#endif
	(void)section; /* the reader tracks sections, including empty ones */
	on_key(user, name, value);
	return 1; /* errors are ours to collect; never let inih stop */
}

/* ---- loading ---- */

/* cfg->file (absolute, normalised) and ld->dir, its directory. */
static int load_locate(struct load *ld)
{
	char joined[2 * PATH_MAX], cwd[PATH_MAX];
	int n;
	if (ld->file[0] == '/') {
		n = snprintf(joined, sizeof(joined), "%s", ld->file);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		n = snprintf(joined, sizeof(joined), "%s/%s", cwd, ld->file);
	}
	if (n < 0 || (size_t)n >= sizeof(joined) ||
	    config_path_normalize(joined, ld->cfg->file, sizeof(ld->cfg->file)) < 0)
		return -ENAMETOOLONG;
	snprintf(ld->dir, sizeof(ld->dir), "%s", ld->cfg->file);
	char *slash = strrchr(ld->dir, '/');
	if (slash == ld->dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	return 0;
}

int config_load(const char *file, struct config **out, char **errors)
{
	struct load ld = {.file = file, .kind = SECT_NONE};
	char *text = NULL, *errbuf = NULL;
	size_t errlen = 0;
	int rc;

	*out = NULL;
	if (errors)
		*errors = NULL;
	ld.err = open_memstream(&errbuf, &errlen);
	ld.cfg = calloc(1, sizeof(*ld.cfg));
	if (!ld.err || !ld.cfg) {
		rc = -ENOMEM;
		goto out;
	}

	rc = load_locate(&ld);
	if (rc == 0)
		rc = config_read_file(file, CONFIG_FILE_MAX, &text, &ld.len);
	if (rc < 0) {
		if (rc == -EFBIG)
			config_msg(&ld, 0, "cannot read: larger than %d bytes", CONFIG_FILE_MAX);
		else
			config_msg(&ld, 0, "cannot read: %s", strerror(-rc));
		goto out;
	}
	ld.text = text;

	/* phase 1: defaults */
	section_defaults(&ld, SECT_DAEMON, "daemon", ld.cfg);
	for (int t = 0; t < TIER_COUNT; t++)
		section_defaults(&ld, SECT_TIER, tier_names[t], &ld.cfg->tiers[t]);

	/* phase 2: parse */
	int line = ini_parse_stream(config_reader, &ld, config_handler, &ld);
	if (line == -2)
		ld.oom = true;
	else if (line > 0 && line != ld.first_syntax_line)
		config_msg(&ld, line, "syntax error"); /* inih saw what our reader did not */

	/* phase 3: cross-checks */
	if (!ld.oom)
		config_cross_check(&ld);

	rc = ld.oom ? -ENOMEM : ld.nerr ? -EINVAL : 0;
out:
	if (ld.err && fclose(ld.err) != 0 && rc == 0)
		rc = -ENOMEM;
	ld.err = NULL;
	if (rc == 0) {
		*out = ld.cfg;
		ld.cfg = NULL;
	} else if (errors && errbuf && errlen) {
		*errors = errbuf;
		errbuf = NULL;
	}
	config_free(ld.cfg);
	free(ld.ds);
	free(text);
	free(errbuf);
	return rc;
}

void config_free(struct config *cfg)
{
	if (!cfg)
		return;
	free(cfg->datasets);
	free(cfg);
}

const struct dataset_conf *config_dataset(const struct config *cfg, const char *name)
{
	for (unsigned i = 0; i < cfg->ndatasets; i++)
		if (strcmp(cfg->datasets[i].name, name) == 0)
			return &cfg->datasets[i];
	return NULL;
}

int config_key_default(const struct config *cfg, const struct key_def *k, void *out)
{
	struct load ld = {.file = cfg->file, .cfg = out};
	return key_set(&ld, k, "", 0, out, k->def);
}
