/*
 * Shared fixture of the config unit tests (test_config_*.c): a fresh
 * temporary directory per test, a config file written into it, and loads
 * that must succeed or must fail with exactly the expected messages.
 *
 * In an expected message '@' stands for the config file's path as passed
 * to config_load(). Single-threaded; the helpers fail the running cmocka
 * test on any surprise.
 */
#ifndef TIERCACHE_TEST_CONFIG_FIXTURE_H
#define TIERCACHE_TEST_CONFIG_FIXTURE_H

#include <limits.h>

#include "config.h"

/* The smallest valid [tier hot]: most test texts start with it. */
#define HOT "[tier hot]\npath = /t/hot\ncapacity = 1G\n"

struct fx {
	char dir[PATH_MAX];
	char file[PATH_MAX + 32];
};

/* cmocka setup/teardown: *state becomes a struct fx with a fresh dir;
 * teardown removes the dir with everything in it. */
int fx_setup(void **state);
int fx_teardown(void **state);

/* Write TEXT to NAME under the fixture directory; fx->file is its path. */
const char *write_conf(struct fx *fx, const char *name, const char *text);
/* Load FILE, which must succeed without messages; caller config_free()s. */
struct config *load_ok(const char *file);
/* Loading FILE fails with rc and exactly the messages EXPECTED ('@' = FILE). */
void expect_load_fails(const char *file, int rc_want, const char *expected);
/* TEXT written to t.conf fails to load with -EINVAL and EXPECTED. */
void expect_errors(struct fx *fx, const char *text, const char *expected);

#endif
