/*
 * Unit tests of cached/conf/config.c, values: the defaults, every key set to a
 * non-default value, line numbers through comments/CRLF/BOM, the service
 * keys and `config show` values, lifecycle inheritance and policy tunables.
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
#include "log.h"
#include "policy.h"

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
		      "@:5: dataset.d.policy: placement: demote: \"2\" is not 0, 1, reread or flat\n");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
		T(test_defaults),
		T(test_every_key),
		T(test_line_numbers),
		T(test_service_keys),
		T(test_lifecycle_inherit),
		T(test_policy_tunables),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
