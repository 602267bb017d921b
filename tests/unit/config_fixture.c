/*
 * Shared fixture of the config unit tests: see config_fixture.h.
 */
#include "config_fixture.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_tmpdir.h"

int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	if (!fx)
		return -1;
	const char *tmp = getenv("TMPDIR");
	snprintf(fx->dir, sizeof(fx->dir), "%s/tc-config-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (unit_tmpdir_make(fx->dir) < 0) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

int fx_teardown(void **state)
{
	struct fx *fx = *state;
	int rc = unit_tmpdir_remove(fx->dir);
	free(fx);
	return rc;
}

const char *write_conf(struct fx *fx, const char *name, const char *text)
{
	snprintf(fx->file, sizeof(fx->file), "%s/%s", fx->dir, name);
	FILE *f = fopen(fx->file, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	return fx->file;
}

struct config *load_ok(const char *file)
{
	struct config *cfg = NULL;
	char *errors = NULL;
	int rc = config_load(file, &cfg, &errors);
	if (errors)
		print_error("unexpected errors:\n%s", errors);
	assert_int_equal(rc, 0);
	assert_null(errors);
	assert_non_null(cfg);
	return cfg;
}

/* TMPL with every '@' replaced by FILE; caller frees. */
static char *expand(const char *tmpl, const char *file)
{
	size_t n = 1, fl = strlen(file);
	for (const char *p = tmpl; *p; p++)
		n += *p == '@' ? fl : 1;
	char *out = malloc(n), *o = out;
	assert_non_null(out);
	for (const char *p = tmpl; *p; p++) {
		if (*p == '@') {
			memcpy(o, file, fl);
			o += fl;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return out;
}

void expect_load_fails(const char *file, int rc_want, const char *expected)
{
	struct config *cfg = (struct config *)1;
	char *errors = NULL;
	int rc = config_load(file, &cfg, &errors);
	assert_int_equal(rc, rc_want);
	assert_null(cfg);
	assert_non_null(errors);
	char *want = expand(expected, file);
	assert_string_equal(errors, want);
	free(want);
	free(errors);
}

void expect_errors(struct fx *fx, const char *text, const char *expected)
{
	expect_load_fails(write_conf(fx, "t.conf", text), -EINVAL, expected);
}
