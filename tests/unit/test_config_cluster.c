/*
 * Unit tests of the [cluster] section (cached/conf/config.c,
 * config_cluster.c): a good section and its derived fields, node_id's
 * default, every bad value with its message and line, required keys, lease
 * against heartbeat, wildcard peer addresses, a file without the section,
 * `config show` values and the reload diff of cluster keys.
 *
 * Each test writes its files into a fresh temporary directory
 * (config_fixture.h); '@' in an expected message is the file's path.
 * Single-threaded.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "config_fixture.h"

/* the required keys; line 5 is [cluster] */
#define CLUSTER                                                                                    \
	"[cluster]\nname = train-a\nredis = 127.0.0.1:6379\npeer_listen = 127.0.0.2:7070\n"       \
	"key_file = /etc/tiercache/cluster.key\n"

static void test_good_section(void **state)
{
	struct fx *fx = *state;
	struct config *cfg = load_ok(write_conf(fx, "t.conf",
		HOT CLUSTER "node_id = gpu-07\nredis_user = tc\n"
		"redis_password_file = /etc/tiercache/redis.pass\nheartbeat = 200ms\n"
		"lease = 600ms\nredis_timeout = 50ms\npeer_connect_timeout = 300ms\n"
		"peer_first_byte_timeout = 3s\npeer_transfer_timeout = 1m\npeer_suspect = 30s\n"
		"peer_max_clients = 8\npeer_conns = 2\n"));
	const struct cluster_conf *cc = &cfg->cluster;
	assert_true(cc->enabled);
	assert_int_equal(cc->line, 4);
	assert_string_equal(cc->name, "train-a");
	assert_string_equal(cc->node_id, "gpu-07");
	assert_string_equal(cc->redis_host, "127.0.0.1");
	assert_int_equal(cc->redis_port, 6379);
	assert_string_equal(cc->redis_unix, "");
	assert_string_equal(cc->redis_user, "tc");
	assert_string_equal(cc->redis_password_file, "/etc/tiercache/redis.pass");
	assert_string_equal(cc->peer_host, "127.0.0.2");
	assert_int_equal(cc->peer_port, 7070);
	assert_string_equal(cc->key_file, "/etc/tiercache/cluster.key");
	assert_int_equal(cc->heartbeat_ms, 200);
	assert_int_equal(cc->lease_ms, 600);
	assert_int_equal(cc->redis_timeout_ms, 50);
	assert_int_equal(cc->peer_connect_ms, 300);
	assert_int_equal(cc->peer_first_byte_ms, 3000);
	assert_int_equal(cc->peer_transfer_ms, 60000);
	assert_int_equal(cc->peer_suspect_ms, 30000);
	assert_int_equal(cc->peer_max_clients, 8);
	assert_int_equal(cc->peer_conns, 2);
	config_free(cfg);
}

static void test_defaults_and_forms(void **state)
{
	struct fx *fx = *state;
	struct config *cfg = load_ok(write_conf(fx, "t.conf",
		HOT "[cluster]\nname = c.1_x\nredis = unix:/run/redis/r.sock\n"
		"peer_listen = localhost:7070\nkey_file = /k\n"));
	const struct cluster_conf *cc = &cfg->cluster;
	char host[256] = "";
	assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
	host[CONFIG_NAME_MAX] = '\0';
	assert_string_equal(cc->node_id, host); /* the default */
	assert_string_equal(cc->redis_unix, "/run/redis/r.sock");
	assert_string_equal(cc->redis_host, "");
	assert_string_equal(cc->peer_host, "127.0.0.1");
	assert_string_equal(cc->peer_addr, "127.0.0.1:7070");
	assert_int_equal(cc->heartbeat_ms, 1000);
	assert_int_equal(cc->lease_ms, 5000);
	assert_int_equal(cc->redis_timeout_ms, 1000);
	assert_int_equal(cc->peer_connect_ms, 1000);
	assert_int_equal(cc->peer_first_byte_ms, 2000);
	assert_int_equal(cc->peer_transfer_ms, 10000);
	assert_int_equal(cc->peer_suspect_ms, 10000);
	assert_int_equal(cc->peer_max_clients, 64);
	assert_int_equal(cc->peer_conns, 4);
	assert_int_equal(cc->prev_home_window_ms, 60000);
	assert_string_equal(cc->redis_password_file, "");
	config_free(cfg);

	cfg = load_ok(write_conf(fx, "t.conf", HOT "[cluster]\nname = a\nredis = redis.example:6380\n"
				 "peer_listen = [fd00::7]:7070\nkey_file = /k\n"));
	assert_string_equal(cfg->cluster.redis_host, "redis.example");
	assert_int_equal(cfg->cluster.redis_port, 6380);
	assert_string_equal(cfg->cluster.peer_host, "fd00::7");
	assert_string_equal(cfg->cluster.peer_addr, "[fd00::7]:7070");
	config_free(cfg);
}

/* Without [cluster]: nothing of it, as before the section existed. */
static void test_no_section(void **state)
{
	struct fx *fx = *state;
	struct config *cfg = load_ok(write_conf(fx, "t.conf", HOT "[dataset d]\npath = /c\n"));
	struct cluster_conf zero;
	memset(&zero, 0, sizeof(zero));
	assert_false(cfg->cluster.enabled);
	assert_memory_equal(&cfg->cluster, &zero, sizeof(zero));
	/* config show has no cluster keys to show */
	struct config_key_info k;
	char buf[256];
	bool dflt;
	unsigned ncluster = 0;
	for (size_t i = 0; config_key_at(i, &k) == 0; i++)
		if (strcmp(k.section, "cluster") == 0) {
			ncluster++;
			assert_int_equal(k.reload, CONFIG_RELOAD_RESTART);
			assert_int_equal(config_key_value(cfg, i, 0, buf, sizeof(buf), &dflt),
					 -ENOENT);
		}
	assert_int_equal(ncluster, 17);
	config_free(cfg);
}

static const struct {
	const char *text;
	const char *errors;
} bad[] = {
	{HOT CLUSTER "heartbeat = 50ms\n",
	 "@:9: cluster.heartbeat: \"50ms\" is out of range (use 100ms..10s)\n"},
	{HOT CLUSTER "lease = 2m\n", "@:9: cluster.lease: \"2m\" is out of range (use 300ms..1m)\n"},
	{HOT CLUSTER "redis_timeout = soon\n",
	 "@:9: cluster.redis_timeout: \"soon\" is not a duration (use 250ms, 30s, 5m, 2h, 1d)\n"},
	{HOT CLUSTER "peer_conns = 0\n",
	 "@:9: cluster.peer_conns: \"0\" is out of range (use 1..64)\n"},
	{HOT CLUSTER "peer_max_clients = many\n",
	 "@:9: cluster.peer_max_clients: \"many\" is not a whole number (use 1..4096)\n"},
	{HOT CLUSTER "redis_password_file = redis.pass\n",
	 "@:9: cluster.redis_password_file: \"redis.pass\" is not an absolute path (give the full "
	 "path, e.g. /etc/tiercache/redis_password_file)\n"},
	{HOT "[cluster]\nname = a\nredis = r:1\npeer_listen = 127.0.0.2:7\nkey_file = k\n",
	 "@:8: cluster.key_file: \"k\" is not an absolute path (give the full path, e.g. "
	 "/etc/tiercache/key_file)\n"},
	{HOT CLUSTER "node_id = gpu 7\n",
	 "@:9: cluster.node_id: \"gpu 7\" is not a valid node id (use 1..64 of A-Z a-z 0-9 . _ -)\n"},
	{HOT "[cluster]\nname = {a}\nredis = r:1\npeer_listen = 127.0.0.2:7\nkey_file = /k\n",
	 "@:5: cluster.name: \"{a}\" is not a valid cluster name (use 1..64 of A-Z a-z 0-9 . _ "
	 "-)\n"},
	{HOT "[cluster]\nname = a\nredis = 10.0.0.5\npeer_listen = 127.0.0.2:7\nkey_file = /k\n",
	 "@:6: cluster.redis: \"10.0.0.5\" has no valid port (1..65535) (use HOST:PORT or "
	 "unix:/PATH, e.g. 10.0.0.5:6379 or unix:/run/redis/redis.sock)\n"},
	{HOT "[cluster]\nname = a\nredis = unix:r.sock\npeer_listen = 127.0.0.2:7\nkey_file = /k\n",
	 "@:6: cluster.redis: \"unix:r.sock\" needs an absolute socket path (use HOST:PORT or "
	 "unix:/PATH, e.g. 10.0.0.5:6379 or unix:/run/redis/redis.sock)\n"},
	{HOT "[cluster]\nname = a\nredis = bad_host:1\npeer_listen = 127.0.0.2:7\nkey_file = /k\n",
	 "@:6: cluster.redis: \"bad_host:1\" has a host that is neither an IP address nor a host "
	 "name (use HOST:PORT or unix:/PATH, e.g. 10.0.0.5:6379 or unix:/run/redis/redis.sock)\n"},
	{HOT "[cluster]\nname = a\nredis = r:1\npeer_listen = node7.example:7070\nkey_file = /k\n",
	 "@:7: cluster.peer_listen: \"node7.example:7070\" names a host; give its IP address (other "
	 "nodes connect to the address as published, and a daemon never looks a name up on its event "
	 "loop), e.g. 10.0.0.7:7070\n"},
	{HOT "[cluster]\nname = a\nredis = r:1\npeer_listen = 127.0.0.2\nkey_file = /k\n",
	 "@:7: cluster.peer_listen: \"127.0.0.2\" has no valid port (1..65535) (use HOST:PORT, "
	 "e.g. 10.0.0.7:7070)\n"},
	/* missing required keys: at the section's line */
	{HOT "[cluster]\nname = a\n",
	 "@:4: cluster.redis: missing (required; e.g. redis = 10.0.0.5:6379)\n"
	 "@:4: cluster.peer_listen: missing (required; e.g. peer_listen = 10.0.0.7:7070)\n"
	 "@:4: cluster.key_file: missing (required; e.g. key_file = /etc/tiercache/cluster.key)\n"},
	{HOT "[cluster]\n",
	 "@:4: cluster.name: missing (required; e.g. name = train-a)\n"
	 "@:4: cluster.redis: missing (required; e.g. redis = 10.0.0.5:6379)\n"
	 "@:4: cluster.peer_listen: missing (required; e.g. peer_listen = 10.0.0.7:7070)\n"
	 "@:4: cluster.key_file: missing (required; e.g. key_file = /etc/tiercache/cluster.key)\n"},
	{HOT CLUSTER "name = b\n", "@:9: cluster.name: set twice (first at line 5; keep one)\n"},
	{HOT CLUSTER "peers = 3\n",
	 "@:9: cluster.peers: unknown key (keys of [cluster]: name, node_id, redis, redis_user, "
	 "redis_password_file, peer_listen, key_file, heartbeat, lease, redis_timeout, "
	 "peer_connect_timeout, peer_first_byte_timeout, peer_transfer_timeout, peer_suspect, "
	 "peer_max_clients, peer_conns, prev_home_window)\n"},
	{HOT CLUSTER "[cluster]\n", "@:9: cluster: [cluster] appears twice (first at line 4; merge "
				    "them)\n"},
	{HOT "[cluster x]\n", "@:4: [cluster x]: [cluster] takes no name (use [cluster])\n"},
	/* lease against heartbeat: a cross-check of the section */
	{HOT CLUSTER "heartbeat = 2s\n",
	 "@: cluster: need lease >= 3 x heartbeat, so that a late heartbeat does not drop a live "
	 "node (got lease 5s, heartbeat 2s)\n"},
	{HOT CLUSTER "heartbeat = 500ms\nlease = 1s\n",
	 "@: cluster: need lease >= 3 x heartbeat, so that a late heartbeat does not drop a live "
	 "node (got lease 1s, heartbeat 500ms)\n"},
};

static void test_bad_values(void **state)
{
	struct fx *fx = *state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_errors(fx, bad[i].text, bad[i].errors);
}

/* Every interface is refused, in each spelling. */
static void test_wildcard_peer_listen(void **state)
{
	struct fx *fx = *state;
	static const char *const wild[] = {"0.0.0.0:7070", "[::]:7070", ":::7070", "*:7070",
					   ":7070"};
	char text[512], want[512];
	for (size_t i = 0; i < sizeof(wild) / sizeof(wild[0]); i++) {
		snprintf(text, sizeof(text), HOT "[cluster]\nname = a\nredis = r:1\n"
			 "peer_listen = %s\nkey_file = /k\n", wild[i]);
		snprintf(want, sizeof(want), "@:7: cluster.peer_listen: \"%s\" binds the peer port to "
			 "every interface; give the address peers reach this node at (e.g. "
			 "10.0.0.7:7070)\n", wild[i]);
		expect_errors(fx, text, want);
	}
}

static int record(void *arg, const struct config_change *ch)
{
	char *out = arg;
	size_t n = strlen(out);
	snprintf(out + n, 1024 - n, "%s %s %s %s;", ch->name, config_reload_name(ch->reload),
		 ch->was, ch->now);
	return 0;
}

/* config show prints the values; a reload sees the changes, all restart. */
static void test_show_and_diff(void **state)
{
	struct fx *fx = *state;
	struct config *a = load_ok(write_conf(fx, "a.conf", HOT CLUSTER "node_id = n1\n"));
	struct config *b = load_ok(write_conf(fx, "b.conf", HOT CLUSTER "node_id = n2\n"
					      "heartbeat = 500ms\n"));
	struct config_key_info k;
	char buf[256], changes[1024] = "";
	bool dflt;
	unsigned seen = 0;
	for (size_t i = 0; config_key_at(i, &k) == 0; i++) {
		if (strcmp(k.section, "cluster") != 0)
			continue;
		assert_int_equal(config_key_value(b, i, 0, buf, sizeof(buf), &dflt), 0);
		if (strcmp(k.name, "heartbeat") == 0) {
			assert_string_equal(buf, "500ms");
			assert_false(dflt);
			seen++;
		} else if (strcmp(k.name, "lease") == 0) {
			assert_string_equal(buf, "5s");
			assert_true(dflt);
			seen++;
		} else if (strcmp(k.name, "redis") == 0) {
			assert_string_equal(buf, "127.0.0.1:6379");
			seen++;
		}
	}
	assert_int_equal(seen, 3);
	assert_int_equal(config_diff_cluster(a, b, record, changes), 0);
	assert_string_equal(changes, "node_id restart \"n1\" \"n2\";heartbeat restart 1s 500ms;");
	changes[0] = '\0';
	assert_int_equal(config_diff_cluster(a, a, record, changes), 0);
	assert_string_equal(changes, "");
	/* [daemon] keys are not mixed with them */
	assert_int_equal(config_diff_daemon(a, b, record, changes), 0);
	assert_string_equal(changes, "");
	config_free(a);
	config_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
		T(test_good_section),
		T(test_defaults_and_forms),
		T(test_no_section),
		T(test_bad_values),
		T(test_wildcard_peer_listen),
		T(test_show_and_diff),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
