/*
 * Unit tests of cached/config.c: defaults, every key, every kind of bad
 * value with its exact message and line, cross-checks, relative paths,
 * size and duration parsing, and the reference conf/tiercache.conf.
 *
 * Each test writes its files into a fresh temporary directory. In an
 * expected message '@' stands for the config file's path as passed to
 * config_load(). Single-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "log.h"
#include "policy.h"

#define HOT "[tier hot]\npath = /t/hot\ncapacity = 1G\n"

struct fx {
	char dir[PATH_MAX];
	char file[PATH_MAX + 32];
};

static int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	if (!fx)
		return -1;
	const char *tmp = getenv("TMPDIR");
	snprintf(fx->dir, sizeof(fx->dir), "%s/tc-config-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(fx->dir)) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(path);
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;
	int rc = nftw(fx->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(fx);
	return rc;
}

/* Write TEXT to NAME under the fixture directory; fx->file is its path. */
static const char *write_conf(struct fx *fx, const char *name, const char *text)
{
	snprintf(fx->file, sizeof(fx->file), "%s/%s", fx->dir, name);
	FILE *f = fopen(fx->file, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	return fx->file;
}

static struct config *load_ok(const char *file)
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

/* Loading FILE fails with rc and exactly the messages EXPECTED ('@' = FILE). */
static void expect_load_fails(const char *file, int rc_want, const char *expected)
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

static void expect_errors(struct fx *fx, const char *text, const char *expected)
{
	expect_load_fails(write_conf(fx, "t.conf", text), -EINVAL, expected);
}

/* ---- defaults and values ---- */

static void test_defaults(void **state)
{
	struct fx *fx = *state;
	struct config *cfg = load_ok(write_conf(fx, "t.conf", HOT "[dataset d]\npath = /c\n"));
	assert_string_equal(cfg->file, fx->file);
	assert_string_equal(cfg->socket, "/run/tiercache/tiercached.sock");
	assert_string_equal(cfg->state_dir, "/var/lib/tiercache");
	assert_int_equal(cfg->log_level, LOG_INFO);
	assert_int_equal(cfg->max_clients, 1024);
	assert_int_equal(cfg->workers, 4);
	assert_int_equal(cfg->socket_mode, 0660);
	assert_int_equal(cfg->socket_gid, (gid_t)-1);
	assert_string_equal(cfg->metrics_listen, "");

	const struct tier_conf *hot = &cfg->tiers[TIER_HOT];
	assert_true(hot->present);
	assert_int_equal(hot->line, 1);
	assert_string_equal(hot->path, "/t/hot");
	assert_int_equal(hot->capacity, UINT64_C(1) << 30);
	assert_int_equal(hot->high_water, 90);
	assert_int_equal(hot->low_water, 80);
	assert_false(cfg->tiers[TIER_WARM].present);

	assert_int_equal(cfg->ndatasets, 1);
	const struct dataset_conf *ds = config_dataset(cfg, "d");
	assert_ptr_equal(ds, &cfg->datasets[0]);
	assert_int_equal(ds->line, 4);
	assert_string_equal(ds->backend, "posix");
	assert_string_equal(ds->path, "/c");
	assert_int_equal(ds->chunk_size, 4u << 20);
	assert_string_equal(ds->policy, "lru");
	assert_int_equal(ds->revalidate_after_ms, 5000);
	assert_string_equal(ds->ceph_conf, "/etc/ceph/ceph.conf");
	assert_string_equal(ds->client_id, "admin");
	assert_string_equal(ds->keyring, "");
	assert_string_equal(ds->pool, "");
	assert_string_equal(ds->rados_namespace, "");
	assert_string_equal(ds->prefix, "");
	assert_string_equal(ds->layout, "plain");
	assert_int_equal(ds->op_timeout_s, 30);
	assert_int_equal(ds->max_inflight, 16);
	assert_null(config_dataset(cfg, "e"));
	config_free(cfg);
}

static void test_every_key(void **state)
{
	struct fx *fx = *state;
	struct config *cfg = load_ok(write_conf(fx, "t.conf",
		"# every key, none at its default\n"
		"[daemon]\n"
		"socket = /tmp/tc.sock\n"
		"state_dir = /srv/state/\n"
		"log_level = debug\n"
		"max_clients = 65536\n"
		"workers = 64\n"
		"[tier hot]\n"
		"path = /nvme/hot\n"
		"capacity = 1.5T\n"
		"high_water = 100%\n"
		"low_water = 0\n"
		"[tier warm]\n"
		"path = /ssd/warm\n"
		"capacity = 1M\n"
		"high_water = 1\n"
		"low_water = 0%\n"
		"[dataset imagenet]\n"
		"backend = posix\n"
		"path = /data//imagenet/./train/..\n"
		"chunk_size = 64K\n"
		"policy = lru\n"
		"revalidate_after = 0\n"
		"[dataset laion_2B-en.v1]\n"
		"backend = rados\n"
		"chunk_size = 64MiB\n"
		"revalidate_after = 1d\n"
		"ceph_conf = /etc/ceph/other.conf\n"
		"client_id = trainer\n"
		"keyring = /etc/ceph/trainer.keyring\n"
		"pool = datasets\n"
		"namespace = laion\n"
		"prefix = shards/\n"
		"layout = striper\n"
		"op_timeout = 1h\n"
		"max_inflight = 1024\n"));
	assert_string_equal(cfg->socket, "/tmp/tc.sock");
	assert_string_equal(cfg->state_dir, "/srv/state");
	assert_int_equal(cfg->log_level, LOG_DEBUG);
	assert_int_equal(cfg->max_clients, 65536);
	assert_int_equal(cfg->workers, 64);
	assert_string_equal(cfg->tiers[TIER_HOT].path, "/nvme/hot");
	assert_int_equal(cfg->tiers[TIER_HOT].capacity, UINT64_C(3) << 39);
	assert_int_equal(cfg->tiers[TIER_HOT].high_water, 100);
	assert_int_equal(cfg->tiers[TIER_HOT].low_water, 0);
	assert_true(cfg->tiers[TIER_WARM].present);
	assert_int_equal(cfg->tiers[TIER_WARM].line, 13);
	assert_string_equal(cfg->tiers[TIER_WARM].path, "/ssd/warm");
	assert_int_equal(cfg->tiers[TIER_WARM].capacity, 1 << 20);
	assert_int_equal(cfg->tiers[TIER_WARM].high_water, 1);
	assert_int_equal(cfg->tiers[TIER_WARM].low_water, 0);

	assert_int_equal(cfg->ndatasets, 2);
	const struct dataset_conf *a = config_dataset(cfg, "imagenet");
	assert_non_null(a);
	assert_string_equal(a->path, "/data/imagenet");
	assert_int_equal(a->chunk_size, 64 << 10);
	assert_int_equal(a->revalidate_after_ms, 0);
	const struct dataset_conf *b = config_dataset(cfg, "laion_2B-en.v1");
	assert_non_null(b);
	assert_int_equal(b->line, 24);
	assert_string_equal(b->backend, "rados");
	assert_string_equal(b->path, "");
	assert_int_equal(b->chunk_size, 64 << 20);
	assert_int_equal(b->revalidate_after_ms, 86400000);
	assert_string_equal(b->ceph_conf, "/etc/ceph/other.conf");
	assert_string_equal(b->client_id, "trainer");
	assert_string_equal(b->keyring, "/etc/ceph/trainer.keyring");
	assert_string_equal(b->pool, "datasets");
	assert_string_equal(b->rados_namespace, "laion");
	assert_string_equal(b->prefix, "shards/");
	assert_string_equal(b->layout, "striper");
	assert_int_equal(b->op_timeout_s, 3600);
	assert_int_equal(b->max_inflight, 1024);
	config_free(cfg);
}

/* Comments, blank lines, indentation, CRLF, a BOM, inline comments and
 * "key: value" do not shift line numbers or values. */
static void test_line_numbers(void **state)
{
	struct fx *fx = *state;
	write_conf(fx, "t.conf",
		   "\xEF\xBB\xBF; a comment\r\n"
		   "\r\n"
		   "  [daemon]   ; inline\r\n"
		   "\tworkers: 8\r\n"
		   "    max_clients = 10 ; inline\r\n"
		   "# comment\n"
		   "[ tier   hot ]\n"
		   "  path = /t/hot\n"
		   "  capacity = 1G\n"
		   "  high_water = 95\n"
		   "  low_water = zz\n");
	expect_load_fails(fx->file, -EINVAL,
			  "@:11: hot.low_water: \"zz\" is not a percentage (use 0..99)\n");
	struct config *cfg = load_ok(write_conf(fx, "t.conf",
		"\xEF\xBB\xBF[daemon]\r\n\tworkers: 8\r\n    max_clients = 10 ; inline\r\n" HOT));
	assert_int_equal(cfg->workers, 8);
	assert_int_equal(cfg->max_clients, 10);
	assert_int_equal(cfg->tiers[TIER_HOT].line, 4);
	config_free(cfg);
}

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

/* socket_mode, metrics_listen forms, and config_key_value() (config show) */
static void test_service_keys(void **state)
{
	struct fx *fx = *state;
	struct config *cfg = load_ok(write_conf(fx, "t.conf",
		"[daemon]\nsocket_mode = 666\nmetrics_listen = [::1]:9464\nworkers = 4\n"
		"log_level = debug\n" HOT "[dataset d]\npath = /c\nrevalidate_after = 2m\n"));
	assert_int_equal(cfg->socket_mode, 0666);
	assert_string_equal(cfg->metrics_host, "::1");
	assert_int_equal(cfg->metrics_port, 9464);
	struct config_key_info k;
	char buf[256];
	bool dflt;
	size_t i;
	int seen = 0;
	for (i = 0; config_key_at(i, &k) == 0; i++) {
		unsigned which = strcmp(k.section, "tier") == 0 ? TIER_WARM : 0;
		int rc = config_key_value(cfg, i, which, buf, sizeof(buf), &dflt);
		if (strcmp(k.section, "tier") == 0) {
			assert_int_equal(rc, -ENOENT); /* no [tier warm] */
			assert_int_equal(config_key_value(cfg, i, TIER_HOT, buf, sizeof(buf), &dflt), 0);
		}
		if (strcmp(k.name, "socket_mode") == 0) {
			assert_string_equal(buf, "0666");
			assert_false(dflt);
			seen++;
		} else if (strcmp(k.name, "workers") == 0) {
			assert_string_equal(buf, "4");
			assert_true(dflt); /* written, but the default value */
			seen++;
		} else if (strcmp(k.name, "log_level") == 0) {
			assert_string_equal(buf, "debug");
			assert_false(dflt);
			seen++;
		} else if (strcmp(k.name, "capacity") == 0) {
			assert_string_equal(buf, "1G");
			seen++;
		} else if (strcmp(k.name, "revalidate_after") == 0) {
			assert_string_equal(buf, "2m");
			assert_false(dflt);
			seen++;
		} else if (strcmp(k.name, "chunk_size") == 0) {
			assert_string_equal(buf, "4M");
			assert_true(dflt);
			seen++;
		} else if (strcmp(k.name, "pool") == 0) {
			assert_int_equal(rc, -ENOENT); /* rados key of a posix dataset */
			seen++;
		} else if (strcmp(k.name, "socket_group") == 0) {
			assert_string_equal(buf, "");
			assert_true(dflt);
			seen++;
		}
	}
	assert_int_equal(seen, 8);
	assert_int_equal(config_key_value(cfg, i, 0, buf, sizeof(buf), &dflt), -ENOENT);
	config_free(cfg);
}

/* Lifecycle thresholds: [daemon] gives the default of every dataset that
 * does not set its own; "off" is 0 (never). */
static void test_lifecycle_inherit(void **state)
{
	struct fx *fx = *state;
	struct config *cfg = load_ok(write_conf(fx, "t.conf",
		"[daemon]\ndemote_after = 2h\nevict_after = 7d\n" HOT
		"[dataset a]\npath = /a\n"
		"[dataset b]\npath = /b\ndemote_after = 30m\nevict_after = off\n"));
	assert_int_equal(cfg->demote_after_s, 7200);
	assert_int_equal(cfg->evict_after_s, 7 * 86400);
	assert_int_equal(cfg->datasets[0].demote_after_s, 7200);
	assert_int_equal(cfg->datasets[0].evict_after_s, 7 * 86400);
	assert_int_equal(cfg->datasets[1].demote_after_s, 1800);
	assert_int_equal(cfg->datasets[1].evict_after_s, 0);
	config_free(cfg);

	/* the defaults: never */
	cfg = load_ok(write_conf(fx, "u.conf", HOT "[dataset a]\npath = /a\n"));
	assert_int_equal(cfg->datasets[0].demote_after_s, 0);
	assert_int_equal(cfg->datasets[0].evict_after_s, 0);
	config_free(cfg);

	expect_errors(fx, HOT "[dataset d]\npath = /c\ndemote_after = soon\n",
		      "@:6: dataset.d.demote_after: \"soon\" is not a duration (use 250ms, 30s, 5m, "
		      "2h, 1d)\n");
	expect_errors(fx, HOT "[dataset d]\npath = /c\nevict_after = 1500ms\n",
		      "@:6: dataset.d.evict_after: \"1500ms\" is not a whole number of seconds (use "
		      "0s..3650d)\n");
}

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

/* `policy = NAME key=value ...`: the tunables are checked at load, by the
 * policy and by placement, and the line is kept whole for the daemon. */
static void test_policy_tunables(void **state)
{
	struct fx *fx = *state;
	struct config *cfg = load_ok(write_conf(
		fx, "t.conf",
		HOT "[dataset d]\npolicy = epoch dead_factor=3, promote=0\npath = /c\n"));
	assert_string_equal(cfg->datasets[0].policy, "epoch dead_factor=3, promote=0");
	config_free(cfg);
	char want[256];
	snprintf(want, sizeof(want),
		 "@:5: dataset.d.policy: epoch: unknown tunable \"bogus\" (tunables: %s)\n",
		 policy_find("epoch")->tunables);
	expect_errors(fx, HOT "[dataset d]\npolicy = epoch bogus=1\npath = /c\n", want);
	expect_errors(fx, HOT "[dataset d]\npolicy = clairvoyant unplanned=maybe\npath = /c\n",
		      "@:5: dataset.d.policy: clairvoyant: unplanned: \"maybe\" is not admit or "
		      "skip\n");
	expect_errors(fx, HOT "[dataset d]\npolicy = lru demote=2\npath = /c\n",
		      "@:5: dataset.d.policy: placement: demote: \"2\" is not 0 or 1\n");
	expect_errors(fx, HOT "[dataset d]\npolicy = lru demote\npath = /c\n",
		      "@:5: dataset.d.policy: \"demote\" is not key=value\n");
	/* an unknown name is named alone, before its tunables are looked at */
	int n = snprintf(want, sizeof(want),
			 "@:5: dataset.d.policy: \"fifo\" is not a known policy (known: ");
	const struct policy_ops *const *all = policy_all();
	for (size_t i = 0; all[i]; i++)
		n += snprintf(want + n, sizeof(want) - (size_t)n, "%s%s", i ? ", " : "", all[i]->name);
	snprintf(want + n, sizeof(want) - (size_t)n, ")\n");
	expect_errors(fx, HOT "[dataset d]\npolicy = fifo x=1\npath = /c\n", want);
}

/* ---- structure: sections, keys, syntax ---- */

static void test_unknown_keys_and_sections(void **state)
{
	struct fx *fx = *state;
	expect_errors(fx, "[daemon]\n\nlog_levl = debug\n" HOT,
		      "@:3: daemon.log_levl: unknown key (keys of [daemon]: socket, state_dir, "
		      "log_level, max_clients, workers, admin_group, socket_mode, socket_group, "
		      "metrics_listen, demote_after, evict_after, plan_grace, prefetch_max_bytes, "
		      "prefetch_inflight, readahead_chunks, sync_delay, sync_backlog)\n");
	expect_errors(fx, HOT "size = 1G\n",
		      "@:4: hot.size: unknown key (keys of [tier hot]: path, capacity, "
		      "high_water, low_water)\n");
	expect_errors(fx, HOT "[dataset d]\npath = /c\ncache = yes\n",
		      "@:6: dataset.d.cache: unknown key (keys of [dataset NAME]: backend, path, "
		      "chunk_size, policy, revalidate_after, demote_after, evict_after, ceph_conf, "
		      "client_id, keyring, pool, "
		      "namespace, prefix, layout, op_timeout, max_inflight)\n");
	/* keys of a bad section are not reported again */
	expect_errors(fx, HOT "[foo]\nbar = 1\n[tier cold]\npath = /x\n[daemon x]\n[dataset]\n",
		      "@:4: [foo]: unknown section (use [daemon], [tier hot], [tier warm] or "
		      "[dataset NAME])\n"
		      "@:6: [tier cold]: unknown tier (use [tier hot] or [tier warm])\n"
		      "@:8: [daemon x]: [daemon] takes no name (use [daemon])\n"
		      "@:9: [dataset]: missing dataset name (use [dataset NAME])\n");
	expect_errors(fx, "workers = 2\n" HOT,
		      "@:1: workers: key before any section (put it under [daemon], [tier hot], "
		      "[tier warm] or [dataset NAME])\n");
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
		      "chunk_size, policy, revalidate_after, demote_after, evict_after, ceph_conf, "
		      "client_id, keyring, pool, "
		      "namespace, prefix, layout, op_timeout, max_inflight)\n"
		      "@: hot: need low_water < high_water (got 60 >= 50)\n"
		      "@:9: dataset.d.path: missing (required for backend = posix; e.g. path = "
		      "/data/imagenet)\n");
}

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

/* ---- sizes and durations ---- */

static void test_parse_size(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int rc;
		uint64_t v;
	} cases[] = {
		{"0", 0, 0},
		{"4096", 0, 4096},
		{"4096B", 0, 4096},
		{"512K", 0, 512 << 10},
		{"512k", 0, 512 << 10},
		{"1KiB", 0, 1024},
		{"1KB", 0, 1024},
		{"64M", 0, UINT64_C(64) << 20},
		{"64G", 0, UINT64_C(64) << 30},
		{"64GiB", 0, UINT64_C(64) << 30},
		{"1T", 0, UINT64_C(1) << 40},
		{"2P", 0, UINT64_C(2) << 50},
		{"15E", 0, UINT64_C(15) << 60},
		{"1.5G", 0, UINT64_C(3) << 29},
		{"0.5K", 0, 512},
		{"1.3K", 0, 1331}, /* 1331.2, rounded down */
		{"1.000000001G", 0, (UINT64_C(1) << 30) + 1},
		{"18446744073709551615", 0, UINT64_MAX},
		{"17179869183G", 0, UINT64_C(17179869183) << 30},
		{"18446744073709551616", -ERANGE, 0},
		{"16E", -ERANGE, 0},
		{"17179869184G", -ERANGE, 0},
		{"15.5E", 0, UINT64_C(31) << 59},
		{"16.0E", -ERANGE, 0},
		{"", -EINVAL, 0},
		{"-1", -EINVAL, 0},
		{"+1", -EINVAL, 0},
		{"G", -EINVAL, 0},
		{"1.5", -EINVAL, 0}, /* a fraction of a byte */
		{"1.G", -EINVAL, 0},
		{".5G", -EINVAL, 0},
		{"1.0000000001G", -EINVAL, 0},
		{"1 G", -EINVAL, 0},
		{" 1G", -EINVAL, 0},
		{"1GG", -EINVAL, 0},
		{"1Q", -EINVAL, 0},
		{"1iB", -EINVAL, 0},
		{"1Gi", -EINVAL, 0},
		{"1GBB", -EINVAL, 0},
		{"0x10", -EINVAL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int rc = config_parse_size(cases[i].s, &v);
		if (rc != cases[i].rc || (rc == 0 && v != cases[i].v))
			print_error("size \"%s\": rc %d v %llu\n", cases[i].s, rc,
				    (unsigned long long)v);
		assert_int_equal(rc, cases[i].rc);
		if (rc == 0)
			assert_int_equal(v, cases[i].v);
		else
			assert_int_equal(v, 12345); /* untouched on error */
	}
}

static void test_parse_duration(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int rc;
		uint64_t ms;
	} cases[] = {
		{"0", 0, 0},
		{"250ms", 0, 250},
		{"30", 0, 30000},
		{"30s", 0, 30000},
		{"5m", 0, 300000},
		{"2h", 0, 7200000},
		{"1d", 0, 86400000},
		{"213503982334d", 0, UINT64_C(213503982334) * 86400000},
		{"18446744073709551615ms", 0, UINT64_MAX},
		{"213503982335d", -ERANGE, 0},
		{"18446744073709551616ms", -ERANGE, 0},
		{"18446744073709552s", -ERANGE, 0},
		{"", -EINVAL, 0},
		{"s", -EINVAL, 0},
		{"-5s", -EINVAL, 0},
		{"1.5s", -EINVAL, 0},
		{"5 s", -EINVAL, 0},
		{"5S", -EINVAL, 0},
		{"5sec", -EINVAL, 0},
		{"5w", -EINVAL, 0},
		{"5mss", -EINVAL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int rc = config_parse_duration_ms(cases[i].s, &v);
		if (rc != cases[i].rc || (rc == 0 && v != cases[i].ms))
			print_error("duration \"%s\": rc %d v %llu\n", cases[i].s, rc,
				    (unsigned long long)v);
		assert_int_equal(rc, cases[i].rc);
		if (rc == 0)
			assert_int_equal(v, cases[i].ms);
		else
			assert_int_equal(v, 12345);
	}
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

/* "#key = value" lines show defaults and examples: with the '#' removed
 * the file must still load, and every key of the table must be shown, in
 * table order, with its default. */
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
		at = s + 1;
	}
	assert_int_equal(nkeys, 37);
	assert_int_equal(config_key_at(nkeys, &k), -ENOENT);
	free(open);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
		T(test_defaults),
		T(test_every_key),
		T(test_line_numbers),
		T(test_bad_values),
		T(test_service_keys),
		T(test_lifecycle_inherit),
		T(test_bad_policy),
		T(test_policy_tunables),
		T(test_unknown_keys_and_sections),
		T(test_syntax_errors),
		T(test_nul_byte),
		T(test_dataset_names),
		T(test_cross_checks),
		T(test_path_overlaps),
		T(test_many_errors),
		T(test_cannot_read),
		T(test_relative_paths),
		T(test_two_configs),
		T(test_parse_size),
		T(test_parse_duration),
		T(test_reference_conf_loads),
		T(test_reference_conf_documents_every_key),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
