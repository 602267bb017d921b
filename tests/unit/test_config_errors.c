/*
 * Unit tests of cached/conf/config.c, bad input: every kind of bad value with
 * its exact message and line, unknown policies, keys and sections, syntax
 * errors, NUL bytes, dataset names, the cross-checks between sections and
 * many errors reported at once.
 *
 * Each test writes its files into a fresh temporary directory
 * (config_fixture.h). In an expected message '@' stands for the config
 * file's path. Single-threaded.
 */
#include <errno.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "config_fixture.h"
#include "policy.h"

/* ---- bad values: one message each, with the right line ---- */

struct bad_case {
	const char *text;
	const char *errors;
};

static const struct bad_case bad_values[] = {
	{HOT "[daemon]\nlog_level = verbose\n",
	 "@:5: daemon.log_level: \"verbose\" is not a valid log_level (use error, warn, info, debug)\n"},
	{"[daemon]\nmax_clients = 0\n" HOT,
	 "@:2: daemon.max_clients: \"0\" is out of range (use 1..65536)\n"},
	{"[daemon]\nmax_clients = 99999999999999999999999\n" HOT,
	 "@:2: daemon.max_clients: \"99999999999999999999999\" is out of range (use 1..65536)\n"},
	{"[daemon]\nsocket_mode = 0860\n" HOT,
	 "@:2: daemon.socket_mode: \"0860\" is not an octal mode (use 0600, 0660, 0666)\n"},
	{"[daemon]\nsocket_mode = 01777\n" HOT,
	 "@:2: daemon.socket_mode: \"01777\" is not an octal mode (use 0600, 0660, 0666)\n"},
	{"[daemon]\nsocket_group = no-such-group-xyz\n" HOT,
	 "@: daemon.socket_group: no group named \"no-such-group-xyz\" on this system (create it, "
	 "or leave socket_group empty for the daemon's group)\n"},
	{"[daemon]\nmetrics_listen = 127.0.0.1\n" HOT,
	 "@: daemon.metrics_listen: \"127.0.0.1\" has no valid port (use HOST:PORT, e.g. "
	 "127.0.0.1:9464 or [::1]:9464)\n"},
	{"[daemon]\nmetrics_listen = 127.0.0.1:70000\n" HOT,
	 "@: daemon.metrics_listen: \"127.0.0.1:70000\" has no valid port (use HOST:PORT, e.g. "
	 "127.0.0.1:9464 or [::1]:9464)\n"},
	{"[daemon]\nmetrics_listen = example.com:9464\n" HOT,
	 "@: daemon.metrics_listen: \"example.com:9464\" has a host that is not an IP address (use "
	 "HOST:PORT, e.g. "
	 "127.0.0.1:9464 or [::1]:9464)\n"},
	{"[daemon]\nworkers = 65\n" HOT, "@:2: daemon.workers: \"65\" is out of range (use 1..64)\n"},
	{"[daemon]\nworkers = -1\n" HOT, "@:2: daemon.workers: \"-1\" is not a whole number (use 1..64)\n"},
	{"[daemon]\nworkers = 4 threads\n" HOT,
	 "@:2: daemon.workers: \"4 threads\" is not a whole number (use 1..64)\n"},
	{"[daemon]\nprefetch_small_inflight = 0\n" HOT,
	 "@:2: daemon.prefetch_small_inflight: \"0\" is out of range (use 1..1024)\n"},
	{"[daemon]\nprefetch_small_inflight = many\n" HOT,
	 "@:2: daemon.prefetch_small_inflight: \"many\" is not a whole number (use 1..1024)\n"},
	{"[daemon]\nsocket = /run/a-rather-long-directory-name-for-sockets/and-another-level/"
	 "tiercache-daemon-socket-with-a-long-name.sock\n" HOT,
	 "@:2: daemon.socket: \"/run/a-rather-long-directory-name-for-sockets/and-another-level/"
	 "tiercache-daemon-socket-with-a-long-name.sock\" is too long for a Unix socket path (at most 107 bytes "
	 "once resolved; use a shorter path)\n"},
	{"[daemon]\nstate_dir =\n" HOT,
	 "@:2: daemon.state_dir: empty path (give a path, default /var/lib/tiercache)\n"},
	{"[tier hot]\npath = /t/hot\ncapacity = 12Q\n",
	 "@:3: hot.capacity: \"12Q\" is not a size (use 64G, 512M, ...)\n"},
	{"[tier hot]\npath = /t/hot\ncapacity = 512K\n",
	 "@:3: hot.capacity: \"512K\" is too small (at least 1M)\n"},
	{"[tier hot]\npath = /t/hot\ncapacity = 16E\n",
	 "@:3: hot.capacity: \"16E\" is too large (at most 18446744073709551615)\n"},
	{"[tier hot]\npath = /t/hot\ncapacity = -1G\n",
	 "@:3: hot.capacity: \"-1G\" is not a size (use 64G, 512M, ...)\n"},
	{"[tier hot]\npath = /t/hot\ncapacity = 1G\nhigh_water = 101\n",
	 "@:4: hot.high_water: \"101\" is out of range (use 1..100)\n"},
	{"[tier hot]\npath = /t/hot\ncapacity = 1G\nhigh_water = 0\n",
	 "@:4: hot.high_water: \"0\" is out of range (use 1..100)\n"},
	{"[tier hot]\npath = /t/hot\ncapacity = 1G\nhigh_water = 9.5\n",
	 "@:4: hot.high_water: \"9.5\" is not a percentage (use 1..100)\n"},
	{"[tier hot]\npath =\ncapacity = 1G\n", "@:2: hot.path: empty path (give a path)\n"},
	{HOT "[dataset d]\nbackend = nfs\n",
	 "@:5: dataset.d.backend: \"nfs\" is not a valid backend (use posix, rados)\n"},
	{HOT "[dataset d]\npath = /c\nchunk_size = 100000\n",
	 "@:6: dataset.d.chunk_size: \"100000\" is not a multiple of 4K (use 1M, 4M, ...)\n"},
	{HOT "[dataset d]\npath = /c\nchunk_size = 32K\n",
	 "@:6: dataset.d.chunk_size: \"32K\" is too small (at least 64K)\n"},
	{HOT "[dataset d]\npath = /c\nchunk_size = 128M\n",
	 "@:6: dataset.d.chunk_size: \"128M\" is too large (at most 64M)\n"},
	{HOT "[dataset d]\npath = /c\nrevalidate_after = 2d\n",
	 "@:6: dataset.d.revalidate_after: \"2d\" is out of range (use 0s..1d)\n"},
	{HOT "[dataset d]\npath = /c\nrevalidate_after = 5x\n",
	 "@:6: dataset.d.revalidate_after: \"5x\" is not a duration (use 250ms, 30s, 5m, 2h, 1d)\n"},
	{HOT "[dataset r]\nbackend = rados\npool = p\nop_timeout = 1500ms\n",
	 "@:7: dataset.r.op_timeout: \"1500ms\" is not a whole number of seconds (use 1s..1h)\n"},
	{HOT "[dataset r]\nbackend = rados\npool = p\nop_timeout = 2h\n",
	 "@:7: dataset.r.op_timeout: \"2h\" is out of range (use 1s..1h)\n"},
	{HOT "[dataset r]\nbackend = rados\npool = p\nop_timeout = 500ms\n",
	 "@:7: dataset.r.op_timeout: \"500ms\" is out of range (use 1s..1h)\n"},
	{HOT "[dataset r]\nbackend = rados\npool = p\nmax_inflight = 2000\n",
	 "@:7: dataset.r.max_inflight: \"2000\" is out of range (use 1..1024)\n"},
	{HOT "[dataset r]\nbackend = rados\npool = p\nlayout = raid\n",
	 "@:7: dataset.r.layout: \"raid\" is not a valid layout (use plain, striper)\n"},
	{HOT "[dataset r]\nbackend = rados\npool = p\nclient_id =\n",
	 "@:7: dataset.r.client_id: empty value (give a value, default admin)\n"},
	{HOT "[dataset r]\nbackend = rados\npool = "
	     "0123456789012345678901234567890123456789012345678901234567890123"
	     "0123456789012345678901234567890123456789012345678901234567890123\n",
	 "@:6: dataset.r.pool: \"0123456789012345678901234567890123456789012345678901234567890123"
	 "0123456789012345678901234567890123456789012345678901234567890123\" is too long (at most "
	 "127 bytes)\n"},
};
static void test_bad_values(void **state)
{
	struct fx *fx = *state;
	for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++)
		expect_errors(fx, bad_values[i].text, bad_values[i].errors);

	/* control bytes are shown as '?': a config must not write escapes to a log */
	expect_errors(fx, HOT "[dataset r]\nbackend = rados\npool = \x1b[31mred\nlayout = \x1b!\n",
		      "@:7: dataset.r.layout: \"?!\" is not a valid layout (use plain, striper)\n");
}

static void test_bad_policy(void **state)
{
	struct fx *fx = *state;
	char want[512];
	int n = snprintf(want, sizeof(want),
			 "@:5: dataset.d.policy: \"fifo-ish\" is not a known policy (known: ");
	const struct policy_ops *const *all = policy_all();
	for (size_t i = 0; all[i]; i++)
		n += snprintf(want + n, sizeof(want) - (size_t)n, "%s%s", i ? ", " : "", all[i]->name);
	snprintf(want + n, sizeof(want) - (size_t)n, ")\n");
	expect_errors(fx, HOT "[dataset d]\npolicy = fifo-ish\npath = /c\n", want);
}

/* ---- structure: sections, keys, syntax ---- */

static void test_unknown_keys_and_sections(void **state)
{
	struct fx *fx = *state;
	expect_errors(fx, "[daemon]\n\nlog_levl = debug\n" HOT,
		      "@:3: daemon.log_levl: unknown key (keys of [daemon]: socket, state_dir, "
		      "log_level, max_clients, workers, admin_group, socket_mode, socket_group, "
		      "metrics_listen, demote_after, evict_after, plan_grace, prefetch_max_bytes, "
		      "prefetch_inflight, prefetch_small_inflight, readahead_chunks, readahead_files, stat_ahead_inflight, sync_delay, sync_backlog, segment_threshold, segment_size, segment_punch, max_clients_per_uid, "
		      "idle_timeout, max_held_per_client, max_held_per_user, metrics_max_clients, "
		      "scrub_rate)\n");
	expect_errors(fx, HOT "size = 1G\n",
		      "@:4: hot.size: unknown key (keys of [tier hot]: path, capacity, "
		      "high_water, low_water)\n");
	expect_errors(fx, HOT "[dataset d]\npath = /c\ncache = yes\n",
		      "@:6: dataset.d.cache: unknown key (keys of [dataset NAME]: backend, path, "
		      "chunk_size, policy, revalidate_after, demote_after, evict_after, "
		      "serve_stale_on_error, access, allow_users, allow_groups, ceph_conf, "
		      "client_id, keyring, pool, "
		      "namespace, prefix, layout, op_timeout, max_inflight)\n");
	/* keys of a bad section are not reported again */
	expect_errors(fx, HOT "[foo]\nbar = 1\n[tier cold]\npath = /x\n[daemon x]\n[dataset]\n",
		      "@:4: [foo]: unknown section (use [daemon], [tier hot], [tier warm], [cluster] or "
		      "[dataset NAME])\n"
		      "@:6: [tier cold]: unknown tier (use [tier hot] or [tier warm])\n"
		      "@:8: [daemon x]: [daemon] takes no name (use [daemon])\n"
		      "@:9: [dataset]: missing dataset name (use [dataset NAME])\n");
	expect_errors(fx, "workers = 2\n" HOT,
		      "@:1: workers: key before any section (put it under [daemon], [tier hot], "
		      "[tier warm], [cluster] or [dataset NAME])\n");
	expect_errors(fx, "[daemon]\nworkers = 2\nworkers = 3\n" HOT,
		      "@:3: daemon.workers: set twice (first at line 2; keep one)\n");
	expect_errors(fx, "[daemon]\n= 2\n" HOT, "@:2: daemon: missing key name before '='\n");
}

static void test_syntax_errors(void **state)
{
	struct fx *fx = *state;
	expect_errors(fx, "[daemon]\nworkers 4\n" HOT,
		      "@:2: not a \"key = value\" line, [section] or # comment: \"workers 4\"\n");
	/* the keys after a broken header are skipped, not put in [daemon] */
	expect_errors(fx, "[daemon]\n[tier hot\npath = /t/hot\n",
		      "@:2: section header without ']' (write [name]): \"[tier hot\"\n"
		      "@: hot: missing [tier hot] (required; give it a path and a capacity)\n");
	expect_errors(fx, "[tier hot] junk\npath = /t/hot\ncapacity = 1G\n",
		      "@:1: text after the section header: \"junk\"\n");
	char text[600];
	char longv[300];
	memset(longv, 'a', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	snprintf(text, sizeof(text), HOT "[dataset d]\npath = /c\nprefix = %s\n", longv);
	/* Debian's inih reads a line into 200 bytes */
	expect_errors(fx, text, "@:6: line too long (308 bytes; at most 199)\n");
	expect_load_fails(write_conf(fx, "empty.conf", ""), -EINVAL,
			  "@: hot: missing [tier hot] (required; give it a path and a capacity)\n");
}

static void test_nul_byte(void **state)
{
	struct fx *fx = *state;
	static const char text[] = "[daemon]\nwork\0ers = 4\n" HOT;
	snprintf(fx->file, sizeof(fx->file), "%s/nul.conf", fx->dir);
	FILE *f = fopen(fx->file, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, sizeof(text) - 1, f), sizeof(text) - 1);
	assert_int_equal(fclose(f), 0);
	expect_load_fails(fx->file, -EINVAL,
			  "@:2: line contains a NUL byte (is this a text file?)\n");
}

static void test_dataset_names(void **state)
{
	struct fx *fx = *state;
	char name64[65], text[256];
	memset(name64, 'n', 64);
	name64[64] = '\0';
	snprintf(text, sizeof(text), HOT "[dataset %s]\npath = /c\n[dataset a.b_c-D9]\npath = /d\n",
		 name64);
	struct config *cfg = load_ok(write_conf(fx, "t.conf", text));
	assert_non_null(config_dataset(cfg, name64));
	assert_non_null(config_dataset(cfg, "a.b_c-D9"));
	config_free(cfg);

	snprintf(text, sizeof(text), HOT "[dataset %sX]\n[dataset .hidden]\n[dataset a/b]\n", name64);
	char *want = NULL;
	assert_true(asprintf(&want,
			     "@:4: [dataset %sX]: bad dataset name \"%sX\" (use 1..64 of A-Z a-z "
			     "0-9 . _ -, not starting with '.')\n"
			     "@:5: [dataset .hidden]: bad dataset name \".hidden\" (use 1..64 of A-Z "
			     "a-z 0-9 . _ -, not starting with '.')\n"
			     "@:6: [dataset a/b]: bad dataset name \"a/b\" (use 1..64 of A-Z a-z 0-9 . "
			     "_ -, not starting with '.')\n",
			     name64, name64) > 0);
	expect_errors(fx, text, want);
	free(want);

	expect_errors(fx, HOT "[dataset d]\npath = /c\n[dataset e]\npath = /e\n[dataset d]\npath = /f\n",
		      "@:8: dataset.d: duplicate [dataset d] (first at line 4; dataset names must "
		      "be unique)\n");
	expect_errors(fx, HOT "[tier hot]\n",
		      "@:4: hot: [tier hot] appears twice (first at line 1; merge them)\n");
	expect_errors(fx, "[daemon]\n" HOT "[daemon]\n",
		      "@:5: daemon: [daemon] appears twice (first at line 1; merge them)\n");
}

/* ---- cross-checks ---- */

static void test_cross_checks(void **state)
{
	struct fx *fx = *state;
	expect_errors(fx, "[daemon]\n", "@: hot: missing [tier hot] (required; give it a path and a capacity)\n");
	expect_errors(fx, "[tier hot]\n\n[tier warm]\npath = /t/warm\n",
		      "@:1: hot.path: missing (required; e.g. path = /nvme/tiercache)\n"
		      "@:1: hot.capacity: missing (required; e.g. capacity = 64G)\n"
		      "@:3: warm.capacity: missing (required; e.g. capacity = 64G)\n");
	expect_errors(fx, HOT "high_water = 80\nlow_water = 90\n",
		      "@: hot: need low_water < high_water (got 90 >= 80)\n");
	expect_errors(fx, HOT "[tier warm]\npath = /t/w\ncapacity = 1G\nlow_water = 90\n",
		      "@: warm: need low_water < high_water (got 90 >= 90)\n");
	/* a bad water reports itself, not a comparison */
	expect_errors(fx, HOT "high_water = x\nlow_water = 95\n",
		      "@:4: hot.high_water: \"x\" is not a percentage (use 1..100)\n");

	expect_errors(fx, HOT "[dataset r]\nbackend = rados\npath = /c\n",
		      "@:6: dataset.r.path: path is for backend = posix (this dataset has backend = "
		      "rados)\n"
		      "@:4: dataset.r.pool: missing (required for backend = rados; e.g. pool = "
		      "datasets)\n");
	expect_errors(fx, HOT "[dataset p]\npool = x\nmax_inflight = 4\n",
		      "@:5: dataset.p.pool: pool is for backend = rados (this dataset has backend = "
		      "posix)\n"
		      "@:6: dataset.p.max_inflight: max_inflight is for backend = rados (this dataset "
		      "has backend = posix)\n"
		      "@:4: dataset.p.path: missing (required for backend = posix; e.g. path = "
		      "/data/imagenet)\n");
	/* backend may come after the keys it decides */
	struct config *cfg = load_ok(write_conf(fx, "t.conf", HOT "[dataset r]\npool = x\nbackend = rados\n"));
	assert_string_equal(cfg->datasets[0].pool, "x");
	config_free(cfg);
	/* a bad backend: no guessing which keys belong */
	expect_errors(fx, HOT "[dataset r]\nbackend = ceph\npool = x\n",
		      "@:5: dataset.r.backend: \"ceph\" is not a valid backend (use posix, rados)\n");
}

/* allow_users / allow_groups are resolved to ids at load; access = source
 * needs the posix backend */
static void test_allow_lists(void **state)
{
	struct fx *fx = *state;
	expect_errors(fx, HOT "[dataset d]\npath = /c\nallow_users = root, bob_no_such_user\n",
		      "@:6: dataset.d.allow_users: unknown user \"bob_no_such_user\" (use a user name "
		      "known to this system or a numeric id)\n");
	expect_errors(fx, HOT "[dataset d]\npath = /c\nallow_groups = no_such_group_xyz\n",
		      "@:6: dataset.d.allow_groups: unknown group \"no_such_group_xyz\" (use a group name "
		      "known to this system or a numeric id)\n");
	expect_errors(fx, HOT "[dataset r]\nbackend = rados\npool = p\naccess = source\n",
		      "@:7: dataset.r.access: source checks the source file's owner, group and mode, "
		      "which needs backend = posix (this dataset has backend = rados; use access = "
		      "socket with allow_users / allow_groups)\n");
	char many[600] = "allow_users =";
	for (int i = 0; i < CONFIG_ALLOW_MAX + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), " %d", i);
	char text[1024];
	snprintf(text, sizeof(text), HOT "[dataset d]\npath = /c\n%s\n", many);
	expect_errors(fx, text, "@:6: dataset.d.allow_users: more than 64 users (list fewer; a group "
				"admits many users)\n");

	struct config *cfg = load_ok(write_conf(
		fx, "t.conf", HOT "[dataset d]\npath = /c\nallow_users = root,1234\tdaemon\n"
				  "allow_groups = 0\naccess = source\n[dataset e]\npath = /e\n"));
	assert_int_equal(cfg->datasets[0].nallow_uids, 3);
	assert_int_equal(cfg->datasets[0].allow_uids[0], 0);
	assert_int_equal(cfg->datasets[0].allow_uids[1], 1234);
	assert_non_null(getpwnam("daemon"));
	assert_int_equal(cfg->datasets[0].allow_uids[2], getpwnam("daemon")->pw_uid);
	assert_int_equal(cfg->datasets[0].nallow_gids, 1);
	assert_int_equal(cfg->datasets[0].allow_gids[0], 0);
	assert_string_equal(cfg->datasets[0].access, "source");
	assert_int_equal(cfg->datasets[1].nallow_uids, 0);
	assert_int_equal(cfg->datasets[1].nallow_gids, 0);
	config_free(cfg);
}

static void test_path_overlaps(void **state)
{
	struct fx *fx = *state;
	expect_errors(fx, HOT "[tier warm]\npath = /t/hot/warm\ncapacity = 1G\n",
		      "@: warm: path \"/t/hot/warm\" is inside hot.path \"/t/hot\" (give each its own "
		      "directory)\n");
	expect_errors(fx, HOT "[tier warm]\npath = /t\ncapacity = 1G\n",
		      "@: warm: path \"/t\" contains hot.path \"/t/hot\" (give each its own "
		      "directory)\n");
	expect_errors(fx, HOT "[tier warm]\npath = /t/x/../hot/\ncapacity = 1G\n",
		      "@: warm: path \"/t/hot\" is also hot.path (give each its own directory)\n");
	expect_errors(fx, "[daemon]\nstate_dir = /t\n" HOT,
		      "@: hot: path \"/t/hot\" is inside daemon.state_dir \"/t\" (give each its own "
		      "directory)\n");
	expect_errors(fx, "[daemon]\nstate_dir = /t/hot/index\n" HOT,
		      "@: hot: path \"/t/hot\" contains daemon.state_dir \"/t/hot/index\" (give each "
		      "its own directory)\n");
	expect_errors(fx, HOT "[dataset d]\npath = /t\n",
		      "@: dataset.d: path \"/t\" contains hot.path \"/t/hot\" (give each its own "
		      "directory)\n");
	expect_errors(fx, HOT "[dataset d]\npath = /var/lib/tiercache/data\n",
		      "@: dataset.d: path \"/var/lib/tiercache/data\" is inside daemon.state_dir "
		      "\"/var/lib/tiercache\" (give each its own directory)\n");
	/* two datasets may share a cold directory: it is only read */
	struct config *cfg = load_ok(write_conf(fx, "t.conf",
		HOT "[dataset a]\npath = /c\n[dataset b]\npath = /c/train\n"));
	assert_int_equal(cfg->ndatasets, 2);
	config_free(cfg);
}

static void test_many_errors(void **state)
{
	struct fx *fx = *state;
	expect_errors(fx,
		      "[daemon]\n"
		      "log_level = loud\n"
		      "workers = 0\n"
		      "[tier hot]\n"
		      "path = /t/hot\n"
		      "capacity = lots\n"
		      "high_water = 50\n"
		      "low_water = 60\n"
		      "[dataset d]\n"
		      "chunk_size = 1G\n"
		      "colour = blue\n",
		      "@:2: daemon.log_level: \"loud\" is not a valid log_level (use error, warn, info, "
		      "debug)\n"
		      "@:3: daemon.workers: \"0\" is out of range (use 1..64)\n"
		      "@:6: hot.capacity: \"lots\" is not a size (use 64G, 512M, ...)\n"
		      "@:10: dataset.d.chunk_size: \"1G\" is too large (at most 64M)\n"
		      "@:11: dataset.d.colour: unknown key (keys of [dataset NAME]: backend, path, "
		      "chunk_size, policy, revalidate_after, demote_after, evict_after, "
		      "serve_stale_on_error, access, allow_users, allow_groups, ceph_conf, "
		      "client_id, keyring, pool, "
		      "namespace, prefix, layout, op_timeout, max_inflight)\n"
		      "@: hot: need low_water < high_water (got 60 >= 50)\n"
		      "@:9: dataset.d.path: missing (required for backend = posix; e.g. path = "
		      "/data/imagenet)\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
		T(test_bad_values),
		T(test_bad_policy),
		T(test_unknown_keys_and_sections),
		T(test_syntax_errors),
		T(test_nul_byte),
		T(test_dataset_names),
		T(test_cross_checks),
		T(test_allow_lists),
		T(test_path_overlaps),
		T(test_many_errors),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
