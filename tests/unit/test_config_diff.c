/*
 * Unit tests of cached/conf/config_diff.c and of the reload class in the key
 * table: every key has a class, chosen consistently; two loaded configs
 * are compared key by key (every changed key named once, with its class and
 * both values, keys of another backend left out); a kept restart key takes
 * what loading derived from it along.
 *
 * Each test writes its files into a fresh temporary directory
 * (config_fixture.h). Single-threaded.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "config_fixture.h"

/* ---- the table ---- */

/* A row that forgot its class has 0, which is none of the three. A source
 * key says where a dataset's bytes come from: no [daemon] or tier key is
 * one. A [daemon] key that datasets inherit (same name) has the dataset
 * key's class: a live dataset key under a restart default would take the
 * new default while [daemon] kept the old one. */
static void test_every_key_has_a_class(void **state)
{
	(void)state;
	struct config_key_info k, d;
	size_t n = 0, per[4] = {0};
	for (size_t i = 0; config_key_at(i, &k) == 0; i++, n++) {
		if (!config_reload_name(k.reload))
			print_error("%s.%s: no reload class\n", k.section, k.name);
		assert_non_null(config_reload_name(k.reload));
		per[k.reload]++;
		if (k.reload == CONFIG_RELOAD_SOURCE)
			assert_string_equal(k.section, "dataset");
		if (strcmp(k.section, "dataset") != 0)
			continue;
		for (size_t j = 0; config_key_at(j, &d) == 0; j++)
			if (strcmp(d.section, "daemon") == 0 && strcmp(d.name, k.name) == 0)
				assert_int_equal(d.reload, k.reload);
	}
	assert_int_equal(per[0], 0);
	assert_int_equal(per[CONFIG_RELOAD_LIVE] + per[CONFIG_RELOAD_RESTART] +
				 per[CONFIG_RELOAD_SOURCE],
			 n);
	assert_null(config_reload_name((enum config_reload)0));
	assert_string_equal(config_reload_name(CONFIG_RELOAD_LIVE), "live");
	assert_string_equal(config_reload_name(CONFIG_RELOAD_RESTART), "restart");
	assert_string_equal(config_reload_name(CONFIG_RELOAD_SOURCE), "source");
}

/* ---- comparing two configs ---- */

/* The changes of one walk as "name class was now" lines. */
struct seen {
	char text[4096];
	size_t len;
	int stop_at; /* return 1 at this change (1-based), 0: never */
	int n;
};

static int record(void *arg, const struct config_change *ch)
{
	struct seen *s = arg;
	int w = snprintf(s->text + s->len, sizeof(s->text) - s->len, "%s %s %s %s\n", ch->name,
			 config_reload_name(ch->reload), ch->was, ch->now);
	assert_true(w > 0 && (size_t)w < sizeof(s->text) - s->len);
	s->len += (size_t)w;
	return ++s->n == s->stop_at;
}

static void test_diff_daemon_and_tiers(void **state)
{
	struct fx *fx = *state;
	struct config *a = load_ok(write_conf(fx, "a.conf", "[daemon]\nworkers = 4\n" HOT));
	struct config *b = load_ok(write_conf(fx, "b.conf",
		"[daemon]\nworkers = 8\nlog_level = debug\nsocket_group = root\ndemote_after = 2h\n"
		"[tier hot]\npath = /t/hot2\ncapacity = 2G\nlow_water = 70\n"));
	struct seen s = {.n = 0};
	assert_int_equal(config_diff_daemon(a, b, record, &s), 0);
	assert_string_equal(s.text, "log_level live info debug\n"
				    "workers restart 4 8\n"
				    "socket_group restart \"\" \"root\"\n"
				    "demote_after live off 2h\n");
	s = (struct seen){.n = 0};
	assert_int_equal(config_diff_tier(&a->tiers[TIER_HOT], &b->tiers[TIER_HOT], record, &s), 0);
	assert_string_equal(s.text, "path restart \"/t/hot\" \"/t/hot2\"\n"
				    "capacity live 1G 2G\n"
				    "low_water live 80 70\n");
	/* the same config: nothing */
	s = (struct seen){.n = 0};
	assert_int_equal(config_diff_daemon(a, a, record, &s), 0);
	assert_int_equal(s.n, 0);
	/* a nonzero return stops the walk and is returned */
	s = (struct seen){.stop_at = 2};
	assert_int_equal(config_diff_daemon(a, b, record, &s), 1);
	assert_int_equal(s.n, 2);
	config_free(a);
	config_free(b);
}

static void test_diff_dataset(void **state)
{
	struct fx *fx = *state;
	struct config *a = load_ok(write_conf(fx, "a.conf",
		HOT "[dataset d]\npath = /c\n[dataset r]\nbackend = rados\npool = p\n"));
	/* d: a live key of its own and one inherited from [daemon]; r: a
	 * source key; e: posix, becomes rados */
	struct config *b = load_ok(write_conf(fx, "b.conf",
		"[daemon]\nevict_after = 1d\n" HOT
		"[dataset d]\npath = /c\ndemote_after = 1h\npolicy = arc\n"
		"[dataset r]\nbackend = rados\npool = q\nevict_after = off\n"));
	const struct dataset_conf *ad = config_dataset(a, "d"), *bd = config_dataset(b, "d");
	const struct dataset_conf *ar = config_dataset(a, "r"), *br = config_dataset(b, "r");
	struct seen s = {.n = 0};
	assert_int_equal(config_diff_dataset(ad, bd, record, &s), 0);
	assert_string_equal(s.text, "policy live lru arc\n"
				    "demote_after live off 1h\n"
				    "evict_after live off 1d\n");
	assert_true(config_same_source(ad, bd));
	s = (struct seen){.n = 0};
	assert_int_equal(config_diff_dataset(ar, br, record, &s), 0);
	assert_string_equal(s.text, "pool source \"p\" \"q\"\n");
	assert_false(config_same_source(ar, br));
	/* another backend: the keys of either backend are compared, those of
	 * neither (none here) left out */
	s = (struct seen){.n = 0};
	config_diff_dataset(ad, br, record, &s);
	assert_non_null(strstr(s.text, "backend source posix rados\n"));
	assert_non_null(strstr(s.text, "path source \"/c\" \"\"\n"));
	assert_non_null(strstr(s.text, "pool source \"\" \"q\"\n"));
	assert_false(config_same_source(ad, br));
	assert_true(config_same_source(ad, ad));
	config_free(a);
	config_free(b);
}

/* Keeping a restart key's running value keeps what loading derived from
 * it (metrics_listen -> metrics_host and metrics_port, socket_group ->
 * socket_gid), so the daemon never sees half of a new value. */
static int keep_restart(void *arg, const struct config_change *ch)
{
	struct config **ab = arg;
	if (ch->reload == CONFIG_RELOAD_RESTART)
		config_change_copy(ch, ab[1], ab[0]);
	return 0;
}

static void test_keep_copies_derived_fields(void **state)
{
	struct fx *fx = *state;
	struct config *a = load_ok(write_conf(fx, "a.conf",
		"[daemon]\nmetrics_listen = 127.0.0.1:9464\n" HOT));
	struct config *b = load_ok(write_conf(fx, "b.conf",
		"[daemon]\nmetrics_listen = [::1]:9465\nsocket_group = root\nmax_clients = 7\n" HOT));
	assert_int_equal(b->socket_gid, 0);
	struct config *ab[2] = {a, b};
	assert_int_equal(config_diff_daemon(a, b, keep_restart, ab), 0);
	assert_string_equal(b->metrics_listen, "127.0.0.1:9464");
	assert_string_equal(b->metrics_host, "127.0.0.1");
	assert_int_equal(b->metrics_port, 9464);
	assert_string_equal(b->socket_group, "");
	assert_int_equal(b->socket_gid, (gid_t)-1);
	assert_int_equal(b->max_clients, 7); /* live: the new value */
	struct seen s = {.n = 0};
	config_diff_daemon(a, b, record, &s);
	assert_string_equal(s.text, "max_clients live 1024 7\n");
	config_free(a);
	config_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
		T(test_every_key_has_a_class),
		T(test_diff_daemon_and_tiers),
		T(test_diff_dataset),
		T(test_keep_copies_derived_fields),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
