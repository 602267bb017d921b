/*
 * Unit tests of cached/conf/config.c, files: a config that cannot be read,
 * relative paths, two configs loaded side by side, and the reference
 * conf/tiercache.conf (it loads, and documents every key of the table in
 * order with its default and its reload class).
 *
 * Each test writes its files into a fresh temporary directory
 * (config_fixture.h). Single-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "config_fixture.h"

/* ---- files and paths ---- */

static void test_cannot_read(void **state)
{
	struct fx *fx = *state;
	snprintf(fx->file, sizeof(fx->file), "%s/absent.conf", fx->dir);
	expect_load_fails(fx->file, -ENOENT, "@: cannot read: No such file or directory\n");
	expect_load_fails(fx->dir, -EISDIR, "@: cannot read: Is a directory\n");
}

static void test_relative_paths(void **state)
{
	struct fx *fx = *state;
	char sub[PATH_MAX + 16], want[PATH_MAX + 64];
	snprintf(sub, sizeof(sub), "%s/conf", fx->dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	write_conf(fx, "conf/demo.conf",
		   "[daemon]\nsocket = ../run/t.sock\nstate_dir = state/./x/\n"
		   "[tier hot]\npath = ../build//demo/hot/\ncapacity = 64M\n"
		   "[dataset demo]\npath = ../build/demo/cold\n"
		   "[dataset r]\nbackend = rados\npool = p\nceph_conf = ceph.conf\nkeyring = /k\n");

	/* load by a relative name, as `tiercached -c conf/demo.conf` would */
	int cwd = open(".", O_RDONLY | O_DIRECTORY);
	assert_true(cwd >= 0);
	assert_int_equal(chdir(fx->dir), 0);
	struct config *cfg = NULL;
	char *errors = NULL;
	int rc = config_load("conf/demo.conf", &cfg, &errors);
	/* a bad one names the file as given */
	write_conf(fx, "conf/bad.conf", "[daemon]\nworkers = x\n" HOT);
	struct config *bad = NULL;
	char *bad_errors = NULL;
	int bad_rc = config_load("conf/../conf/bad.conf", &bad, &bad_errors);
	assert_int_equal(fchdir(cwd), 0);
	close(cwd);

	assert_int_equal(rc, 0);
	assert_null(errors);
	snprintf(want, sizeof(want), "%s/conf/demo.conf", fx->dir);
	assert_string_equal(cfg->file, want);
	snprintf(want, sizeof(want), "%s/run/t.sock", fx->dir);
	assert_string_equal(cfg->socket, want);
	snprintf(want, sizeof(want), "%s/conf/state/x", fx->dir);
	assert_string_equal(cfg->state_dir, want);
	snprintf(want, sizeof(want), "%s/build/demo/hot", fx->dir);
	assert_string_equal(cfg->tiers[TIER_HOT].path, want);
	snprintf(want, sizeof(want), "%s/build/demo/cold", fx->dir);
	assert_string_equal(config_dataset(cfg, "demo")->path, want);
	snprintf(want, sizeof(want), "%s/conf/ceph.conf", fx->dir);
	assert_string_equal(config_dataset(cfg, "r")->ceph_conf, want);
	assert_string_equal(config_dataset(cfg, "r")->keyring, "/k");
	config_free(cfg);

	assert_int_equal(bad_rc, -EINVAL);
	assert_null(bad);
	assert_string_equal(bad_errors,
			    "conf/../conf/bad.conf:2: daemon.workers: \"x\" is not a whole number (use "
			    "1..64)\n");
	free(bad_errors);
}

static void test_two_configs(void **state)
{
	struct fx *fx = *state;
	struct config *a = load_ok(write_conf(fx, "a.conf", HOT "[dataset x]\npath = /x\n"));
	struct config *b = load_ok(write_conf(fx, "b.conf",
		"[daemon]\nworkers = 2\n[tier hot]\npath = /u/hot\ncapacity = 2G\n"));
	assert_int_equal(a->workers, 4);
	assert_int_equal(b->workers, 2);
	assert_int_equal(a->ndatasets, 1);
	assert_int_equal(b->ndatasets, 0);
	assert_string_equal(a->tiers[TIER_HOT].path, "/t/hot");
	assert_string_equal(b->tiers[TIER_HOT].path, "/u/hot");
	assert_null(config_dataset(b, "x"));
	config_free(a);
	config_free(b);
	config_free(NULL);
}

/* ---- the reference configuration ---- */

static const char *reference_path(char *buf, size_t n)
{
	const char *src = getenv("TIERCACHE_SRCDIR");
	if (src && *src)
		snprintf(buf, n, "%s/conf/tiercache.conf", src);
	else
		snprintf(buf, n, "conf/tiercache.conf");
	return buf;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *text = calloc(1, 1 << 20);
	assert_non_null(text);
	size_t n = fread(text, 1, (1 << 20) - 1, f);
	assert_true(n > 0);
	fclose(f);
	return text;
}

static void test_reference_conf_loads(void **state)
{
	(void)state;
	char path[PATH_MAX];
	struct config *cfg = load_ok(reference_path(path, sizeof(path)));
	/* its active lines are the defaults plus a hot tier */
	assert_string_equal(cfg->socket, "/run/tiercache/tiercached.sock");
	assert_true(cfg->tiers[TIER_HOT].present);
	assert_int_equal(cfg->ndatasets, 0);
	config_free(cfg);
}

/* The paragraph of TEXT around AT (a key's line; paragraphs end at blank
 * lines) states the key's reload class once: "(reload: CLASS" followed by
 * ')', ',' or ';'. A paragraph may document several keys of one class. */
static void expect_reload_class(const char *text, const char *at, const struct config_key_info *k)
{
	const char *start = at, *end = strstr(at + 1, "\n\n");
	while (start > text && !(start[0] == '\n' && start[-1] == '\n'))
		start--;
	if (!end)
		end = at + strlen(at);
	const char *tag = "(reload: ";
	const char *r = memmem(start, (size_t)(end - start), tag, strlen(tag));
	const char *want = config_reload_name(k->reload);
	size_t n = strlen(want);
	bool ok = r && r + strlen(tag) + n < end && strncmp(r + strlen(tag), want, n) == 0 &&
		  strchr("),;", r[strlen(tag) + n]) &&
		  !memmem(r + 1, (size_t)(end - r - 1), tag, strlen(tag));
	if (!ok)
		print_error("[%s] %s: its paragraph must say (reload: %s) once\n", k->section, k->name,
			    want);
	assert_true(ok);
}

/* "#key = value" lines show defaults and examples: with the '#' removed
 * the file must still load, and every key of the table must be shown, in
 * table order, with its default and its reload class. */
static void test_reference_conf_documents_every_key(void **state)
{
	struct fx *fx = *state;
	char path[PATH_MAX];
	char *text = slurp(reference_path(path, sizeof(path)));
	char *open = calloc(1, strlen(text) + 1), *o = open;
	assert_non_null(open);
	for (char *line = text; *line;) {
		char *nl = strchrnul(line, '\n');
		if (line[0] == '#' && (line[1] == '[' || (line[1] >= 'a' && line[1] <= 'z')))
			line++;
		memcpy(o, line, (size_t)(nl - line));
		o += nl - line;
		if (*nl)
			*o++ = '\n';
		line = *nl ? nl + 1 : nl;
	}
	struct config *cfg = load_ok(write_conf(fx, "open.conf", open));
	assert_true(cfg->tiers[TIER_WARM].present);
	assert_int_equal(cfg->ndatasets, 2);
	assert_int_equal(cfg->workers, 4);
	config_free(cfg);

	/* keys in table order, each "key = default" where it has one */
	const char *at = open;
	const char *section = NULL;
	struct config_key_info k;
	size_t nkeys = 0;
	for (size_t i = 0; config_key_at(i, &k) == 0; i++, nkeys++) {
		char want[256];
		if (!section || strcmp(section, k.section) != 0) {
			snprintf(want, sizeof(want), "\n[%s", k.section);
			const char *s = strstr(at, want);
			if (!s)
				print_error("section [%s not found in order\n", k.section);
			assert_non_null(s);
			at = s + 1;
			section = k.section;
		}
		if (k.default_value)
			snprintf(want, sizeof(want), "\n%s = %s\n", k.name, k.default_value);
		else
			snprintf(want, sizeof(want), "\n%s = ", k.name);
		const char *s = strstr(at, want);
		if (!s)
			print_error("\"%s\" not found in order in %s\n", want + 1, path);
		assert_non_null(s);
		expect_reload_class(open, s + 1, &k);
		at = s + 1;
	}
	assert_int_equal(nkeys, 70);
	assert_int_equal(config_key_at(nkeys, &k), -ENOENT);
	free(open);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
		T(test_cannot_read),
		T(test_relative_paths),
		T(test_two_configs),
		T(test_reference_conf_loads),
		T(test_reference_conf_documents_every_key),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
