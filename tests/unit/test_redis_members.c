/*
 * Unit tests of cached/cluster/redis_conn.c and members.c against a real
 * redis-server (started per test on a Unix socket in a fresh directory,
 * killed by pid in teardown), on one libevent loop:
 *   - commands round trip, an error reply is -EPROTO, free cancels;
 *   - a SIGSTOPped Redis: commands fail with -ETIMEDOUT / -ECONNRESET, the
 *     connection goes down, and comes back up after SIGCONT;
 *   - two members see each other with the right fields; a node that only
 *     heartbeated once drops out after the lease; Redis killed and
 *     restarted empty gets both members back; members_free removes one;
 *   - the reply parser refuses malformed replies (hand-built).
 * Every callback is counted: each command's exactly once. Waits are loops
 * with generous deadlines, never fixed sleeps.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "log.h"
#include "members.h"
#include "members_reply.h"
#include "redis_conn.h"
#include "workers.h"

#define REDIS_SERVER "/usr/bin/redis-server"
#define WAIT_MS 8000u /* generous: CI is a loaded 2-core machine */

struct fx {
	char dir[64];
	char sock[96];
	char port[8]; /* it listens on 127.0.0.1:port too */
	pid_t redis;
	struct event_base *base;
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool sock_accepts(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* A TCP port free now on 127.0.0.1. */
static void pick_port(struct fx *fx)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	close(fd);
	snprintf(fx->port, sizeof(fx->port), "%u", (unsigned)ntohs(a.sin_port));
}

static void redis_start(struct fx *fx)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execl(REDIS_SERVER, REDIS_SERVER, "--port", fx->port, "--bind", "127.0.0.1", "--unixsocket", fx->sock,
		      "--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--dir", fx->dir,
		      (char *)NULL);
		_exit(127);
	}
	fx->redis = pid;
	uint64_t end = now_ms() + WAIT_MS;
	while (!sock_accepts(fx->sock)) {
		int st;
		assert_int_equal(waitpid(pid, &st, WNOHANG), 0); /* still running */
		assert_true(now_ms() < end);
		usleep(10000);
	}
}

static void redis_kill(struct fx *fx)
{
	if (fx->redis <= 0)
		return;
	kill(fx->redis, SIGCONT);
	kill(fx->redis, SIGKILL);
	waitpid(fx->redis, NULL, 0);
	fx->redis = 0;
}

static int fx_setup(void **state)
{
	if (access(REDIS_SERVER, X_OK) != 0) {
		print_message("test_redis_members: %s is missing (apt-get install redis-server); "
			      "skipped\n", REDIS_SERVER);
		*state = NULL;
		return 0;
	}
	struct fx *fx = calloc(1, sizeof(*fx));
	assert_non_null(fx);
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/tc-redis-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->sock, sizeof(fx->sock), "%s/redis.sock", fx->dir);
	fx->base = event_base_new();
	assert_non_null(fx->base);
	*state = fx;
	pick_port(fx);
	redis_start(fx);
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;
	if (!fx)
		return 0;
	redis_kill(fx);
	event_base_free(fx->base);
	char path[256];
	snprintf(path, sizeof(path), "%s/redis.sock", fx->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/dump.rdb", fx->dir);
	unlink(path);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

#define NEED_REDIS(fx)                                                                             \
	do {                                                                                       \
		if (!(fx))                                                                         \
			skip();                                                                    \
	} while (0)

/* Run the loop until cond(arg) holds (true) or ms pass (false). */
static bool run_until(struct fx *fx, bool (*cond)(void *), void *arg, unsigned ms)
{
	uint64_t end = now_ms() + ms;
	while (!cond(arg)) {
		if (now_ms() > end)
			return false;
		struct timeval tv = {.tv_sec = 0, .tv_usec = 20000};
		event_base_loopexit(fx->base, &tv);
		event_base_dispatch(fx->base);
	}
	return true;
}

/* ---- redis_conn ---- */

struct conn_state {
	int ups, downs;
	bool up;
};

static void on_state(void *arg, bool up)
{
	struct conn_state *s = arg;
	if (up)
		s->ups++;
	else
		s->downs++;
	s->up = up;
}

static bool is_up(void *arg)
{
	return ((struct conn_state *)arg)->up;
}

static bool is_down(void *arg)
{
	return !((struct conn_state *)arg)->up;
}

struct cmd_res {
	int calls; /* must end at exactly 1 */
	int err;
	char text[128];
};

static void on_cmd(void *arg, struct redisReply *r, int err)
{
	struct cmd_res *c = arg;
	c->calls++;
	c->err = err;
	c->text[0] = '\0';
	if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
		  r->type == REDIS_REPLY_ERROR))
		snprintf(c->text, sizeof(c->text), "%.*s", (int)r->len, r->str);
	else if (r && r->type == REDIS_REPLY_INTEGER)
		snprintf(c->text, sizeof(c->text), "%lld", r->integer);
}

static bool answered(void *arg)
{
	return ((struct cmd_res *)arg)->calls > 0;
}

static int cmd(struct redis_conn *rc, struct cmd_res *res, const char *a0, const char *a1,
	       const char *a2)
{
	const char *argv[] = {a0, a1, a2};
	int argc = a2 ? 3 : a1 ? 2 : 1;
	memset(res, 0, sizeof(*res));
	return redis_conn_cmd(rc, on_cmd, res, argc, argv, NULL);
}

static struct redis_conn *conn_new(struct fx *fx, struct conn_state *cs, uint64_t timeout_ms)
{
	struct redis_conn_conf conf = {.unix_path = fx->sock, .timeout_ms = timeout_ms};
	struct redis_conn *rc = NULL;
	memset(cs, 0, sizeof(*cs));
	assert_int_equal(redis_conn_new(fx->base, &conf, on_state, cs, &rc), 0);
	assert_true(run_until(fx, is_up, cs, WAIT_MS));
	assert_true(redis_conn_up(rc));
	assert_string_equal(redis_conn_why(rc), "");
	return rc;
}

/* A host name is looked up on a worker thread (never on the loop), then
 * connected to; a name that is not an address without workers is refused. */
static void test_host_name(void **state)
{
	struct fx *fx = *state;
	NEED_REDIS(fx);
	struct workers *w = NULL;
	assert_int_equal(workers_start(&w, fx->base, 1), 0);
	struct redis_conn_conf conf = {.host = "localhost", .port = (uint16_t)atoi(fx->port),
				       .timeout_ms = 1000, .workers = w};
	struct conn_state cs = {0};
	struct redis_conn *rc = NULL;
	assert_int_equal(redis_conn_new(fx->base, &conf, on_state, &cs, &rc), 0);
	assert_true(run_until(fx, is_up, &cs, WAIT_MS));
	struct cmd_res res;
	assert_int_equal(cmd(rc, &res, "PING", NULL, NULL), 0);
	assert_true(run_until(fx, answered, &res, WAIT_MS));
	assert_int_equal(res.err, 0);
	assert_string_equal(res.text, "PONG");
	redis_conn_free(rc);
	conf.workers = NULL;
	assert_int_equal(redis_conn_new(fx->base, &conf, on_state, &cs, &rc), -EINVAL);
	conf.host = "127.0.0.1"; /* an address needs no lookup */
	assert_int_equal(redis_conn_new(fx->base, &conf, on_state, &cs, &rc), 0);
	redis_conn_free(rc);
	workers_stop(w);
}

static void test_round_trip(void **state)
{
	struct fx *fx = *state;
	NEED_REDIS(fx);
	struct conn_state cs;
	struct redis_conn *rc = conn_new(fx, &cs, 1000);
	struct cmd_res set, get, bad, pending;

	assert_int_equal(cmd(rc, &set, "SET", "k", "hello"), 0);
	assert_int_equal(cmd(rc, &get, "GET", "k", NULL), 0);
	assert_int_equal(cmd(rc, &bad, "INCR", "k", NULL), 0);
	assert_true(run_until(fx, answered, &bad, WAIT_MS));
	assert_int_equal(set.calls, 1);
	assert_int_equal(set.err, 0);
	assert_string_equal(set.text, "OK");
	assert_int_equal(get.calls, 1);
	assert_string_equal(get.text, "hello");
	assert_int_equal(bad.calls, 1);
	assert_int_equal(bad.err, -EPROTO);
	assert_non_null(strstr(bad.text, "not an integer"));
	assert_int_equal(redis_conn_connects(rc), 1);
	assert_int_equal(redis_conn_timeouts(rc), 0);

	/* free with a command pending: answered once, -ECANCELED */
	assert_int_equal(cmd(rc, &pending, "PING", NULL, NULL), 0);
	redis_conn_free(rc);
	assert_int_equal(pending.calls, 1);
	assert_int_equal(pending.err, -ECANCELED);
	/* the loop runs on: nothing more is called */
	struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
	event_base_loopexit(fx->base, &tv);
	event_base_dispatch(fx->base);
	assert_int_equal(pending.calls, 1);
	assert_int_equal(cs.downs, 0); /* freeing is not going down */
}

static bool all_answered(void *arg)
{
	struct cmd_res *r = arg;
	return r[0].calls && r[1].calls && r[2].calls;
}

static void test_stalled_redis(void **state)
{
	struct fx *fx = *state;
	NEED_REDIS(fx);
	struct conn_state cs;
	struct redis_conn *rc = conn_new(fx, &cs, 200);
	struct cmd_res r[3], late, after;

	assert_int_equal(kill(fx->redis, SIGSTOP), 0);
	assert_int_equal(cmd(rc, &r[0], "PING", NULL, NULL), 0);
	assert_int_equal(cmd(rc, &r[1], "SET", "a", "1"), 0);
	assert_int_equal(cmd(rc, &r[2], "GET", "a", NULL), 0);
	uint64_t t0 = now_ms();
	assert_true(run_until(fx, all_answered, r, WAIT_MS));
	assert_true(now_ms() - t0 < WAIT_MS);
	assert_int_equal(r[0].err, -ETIMEDOUT);
	assert_int_equal(r[1].err, -ECONNRESET);
	assert_int_equal(r[2].err, -ECONNRESET);
	assert_true(run_until(fx, is_down, &cs, WAIT_MS));
	assert_false(redis_conn_up(rc));
	assert_int_equal(cs.downs, 1);
	assert_true(redis_conn_timeouts(rc) >= 1);
	assert_true(strlen(redis_conn_why(rc)) > 0);
	/* down: refused at once, never called */
	assert_int_equal(cmd(rc, &late, "PING", NULL, NULL), -ENOTCONN);

	/* reconnects keep failing while it is stopped, quietly */
	struct timeval tv = {.tv_sec = 0, .tv_usec = 600000};
	event_base_loopexit(fx->base, &tv);
	event_base_dispatch(fx->base);
	assert_false(redis_conn_up(rc));

	assert_int_equal(kill(fx->redis, SIGCONT), 0);
	assert_true(run_until(fx, is_up, &cs, WAIT_MS));
	assert_int_equal(cs.ups, 2);
	assert_int_equal(redis_conn_connects(rc), 2);
	assert_int_equal(cmd(rc, &after, "PING", NULL, NULL), 0);
	assert_true(run_until(fx, answered, &after, WAIT_MS));
	assert_int_equal(after.err, 0);
	assert_string_equal(after.text, "PONG");
	redis_conn_free(rc);
	/* each command was answered exactly once, the late one never */
	for (int i = 0; i < 3; i++)
		assert_int_equal(r[i].calls, 1);
	assert_int_equal(late.calls, 0);
	assert_int_equal(after.calls, 1);
	assert_int_equal(cs.downs, 1);
}

static bool auth_refused(void *arg)
{
	return strstr(redis_conn_why(arg), "AUTH refused") != NULL;
}

/* AUTH: a wrong password keeps it down with a reason; the right one, and
 * an ACL user with its password, bring it up. */
static void test_auth(void **state)
{
	struct fx *fx = *state;
	NEED_REDIS(fx);
	struct conn_state cs, bad_cs, ok_cs, user_cs;
	struct redis_conn *admin = conn_new(fx, &cs, 1000), *bad = NULL, *ok = NULL, *user = NULL;
	struct cmd_res r1 = {0}, r2;
	const char *acl[] = {"ACL", "SETUSER", "tc", "on", ">pw2", "~*", "+@all"};
	assert_int_equal(redis_conn_cmd(admin, on_cmd, &r1, 7, acl, NULL), 0);
	assert_int_equal(cmd(admin, &r2, "CONFIG", "SET", NULL), 0); /* an error reply */
	assert_true(run_until(fx, answered, &r2, WAIT_MS));
	assert_int_equal(r1.err, 0);
	assert_int_equal(r2.err, -EPROTO);
	const char *pass[] = {"CONFIG", "SET", "requirepass", "secret"};
	memset(&r1, 0, sizeof(r1));
	assert_int_equal(redis_conn_cmd(admin, on_cmd, &r1, 4, pass, NULL), 0);
	assert_true(run_until(fx, answered, &r1, WAIT_MS));
	assert_int_equal(r1.err, 0);

	struct redis_conn_conf conf = {.unix_path = fx->sock, .timeout_ms = 500, .password = "wrong"};
	memset(&bad_cs, 0, sizeof(bad_cs));
	assert_int_equal(redis_conn_new(fx->base, &conf, on_state, &bad_cs, &bad), 0);
	conf.password = "secret";
	memset(&ok_cs, 0, sizeof(ok_cs));
	assert_int_equal(redis_conn_new(fx->base, &conf, on_state, &ok_cs, &ok), 0);
	conf.user = "tc";
	conf.password = "pw2";
	memset(&user_cs, 0, sizeof(user_cs));
	assert_int_equal(redis_conn_new(fx->base, &conf, on_state, &user_cs, &user), 0);
	assert_true(run_until(fx, is_up, &ok_cs, WAIT_MS));
	assert_true(run_until(fx, is_up, &user_cs, WAIT_MS));
	assert_int_equal(cmd(user, &r1, "PING", NULL, NULL), 0);
	assert_true(run_until(fx, answered, &r1, WAIT_MS));
	assert_string_equal(r1.text, "PONG");
	assert_false(redis_conn_up(bad));
	assert_int_equal(bad_cs.ups, 0);
	assert_true(run_until(fx, auth_refused, bad, WAIT_MS));
	assert_int_equal(cmd(bad, &r2, "PING", NULL, NULL), -ENOTCONN);
	redis_conn_free(bad);
	redis_conn_free(ok);
	redis_conn_free(user);
	redis_conn_free(admin);
}

/* ---- members ---- */

struct node {
	struct conn_state cs;
	struct redis_conn *rc;
	struct members *m;
	int changes;
	char addr[32];
};

static void on_changed(void *arg)
{
	((struct node *)arg)->changes++;
}

static void on_stats(void *arg, char *buf, size_t n)
{
	(void)arg;
	snprintf(buf, n, "{\"hits\":1}");
}

static void node_start(struct fx *fx, struct node *nd, const char *id, unsigned i)
{
	struct cluster_conf cc = {.enabled = true, .heartbeat_ms = 100, .lease_ms = 500};
	snprintf(cc.name, sizeof(cc.name), "t1");
	memset(nd, 0, sizeof(*nd));
	snprintf(nd->addr, sizeof(nd->addr), "127.0.0.%u:7070", i + 2);
	nd->rc = conn_new(fx, &nd->cs, 500);
	struct members_self self = {.id = id, .addr = nd->addr, .capacity = (i + 1) * 1000ull,
				    .incarnation = 100 + i};
	struct members_hooks hooks = {.arg = nd, .changed = on_changed, .stats = on_stats};
	assert_int_equal(members_new(fx->base, nd->rc, &cc, &self, &hooks, &nd->m), 0);
	size_t n;
	const struct member *l = members_list(nd->m, &n);
	assert_int_equal(n, 1); /* itself until Redis answers */
	assert_string_equal(l[0].id, id);
	assert_int_equal(members_age_ms(nd->m), UINT64_MAX);
	assert_int_equal(members_start(nd->m), 0);
}

static void node_stop(struct node *nd)
{
	members_free(nd->m);
	redis_conn_free(nd->rc);
}

struct want_ids {
	struct members *m;
	const char *ids; /* "a,b" */
};

static bool list_is(void *arg)
{
	struct want_ids *w = arg;
	size_t n;
	const struct member *l = members_list(w->m, &n);
	char got[256] = "";
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(got);
		snprintf(got + len, sizeof(got) - len, "%s%s", i ? "," : "", l[i].id);
	}
	return strcmp(got, w->ids) == 0;
}

/* One heartbeat of node ID, then silence: the script run once by hand. */
static void ghost_heartbeat(struct fx *fx, struct redis_conn *rc, const char *id)
{
	const char *argv[] = {"EVAL", members_script, "1", "tc:{t1}:members", id, "127.0.0.9:7070",
			      "5", "up", "1", "", "500", "tc:{t1}:node:"};
	struct cmd_res res = {0};
	assert_int_equal(redis_conn_cmd(rc, on_cmd, &res, 12, argv, NULL), 0);
	assert_true(run_until(fx, answered, &res, WAIT_MS));
	assert_int_equal(res.err, 0);
}

static void test_members(void **state)
{
	struct fx *fx = *state;
	NEED_REDIS(fx);
	struct node a, b;
	node_start(fx, &a, "node-a", 0);
	node_start(fx, &b, "node-b", 1);

	struct want_ids both = {a.m, "node-a,node-b"}, both_b = {b.m, "node-a,node-b"};
	assert_true(run_until(fx, list_is, &both, WAIT_MS));
	assert_true(run_until(fx, list_is, &both_b, WAIT_MS));
	size_t n;
	const struct member *l = members_list(a.m, &n);
	assert_string_equal(l[1].id, "node-b");
	assert_string_equal(l[1].addr, "127.0.0.3:7070");
	assert_int_equal(l[1].capacity, 2000);
	assert_int_equal(l[1].incarnation, 101);
	assert_true(l[1].state == MEMBER_JOINING || l[1].state == MEMBER_UP);
	/* a new node is joining until it has read MEMBERS_JOIN_LISTS lists, then up */
	uint64_t up_by = now_ms() + WAIT_MS;
	for (;;) {
		l = members_list(a.m, &n);
		if (n == 2 && l[1].state == MEMBER_UP && members_self_state(b.m) == MEMBER_UP)
			break;
		assert_true(now_ms() < up_by);
		struct timeval tv = {.tv_sec = 0, .tv_usec = 20000};
		event_base_loopexit(fx->base, &tv);
		event_base_dispatch(fx->base);
	}
	assert_string_equal(l[1].stats, "{\"hits\":1}");
	assert_true(l[0].lease_age_ms <= 500 && l[1].lease_age_ms <= 500);
	assert_true(members_age_ms(a.m) < WAIT_MS);
	assert_true(a.changes >= 1);

	/* a state change reaches the others */
	members_set_state(b.m, MEMBER_DRAINING);
	assert_int_equal(members_self_state(b.m), MEMBER_DRAINING);
	uint64_t end = now_ms() + WAIT_MS;
	for (;;) {
		l = members_list(a.m, &n);
		if (n == 2 && l[1].state == MEMBER_DRAINING)
			break;
		assert_true(now_ms() < end);
		struct timeval tv = {.tv_sec = 0, .tv_usec = 20000};
		event_base_loopexit(fx->base, &tv);
		event_base_dispatch(fx->base);
	}

	/* a node that heartbeated once and went silent: in, then out after
	 * the lease, with no one removing it */
	struct want_ids three = {a.m, "ghost,node-a,node-b"};
	ghost_heartbeat(fx, a.rc, "ghost");
	assert_true(run_until(fx, list_is, &three, WAIT_MS));
	assert_true(run_until(fx, list_is, &both, WAIT_MS));

	/* Redis killed: the lists stay; restarted empty: both come back */
	redis_kill(fx);
	assert_true(run_until(fx, is_down, &a.cs, WAIT_MS));
	uint64_t failures = members_failures(a.m);
	l = members_list(a.m, &n);
	assert_int_equal(n, 2);
	redis_start(fx);
	assert_true(run_until(fx, is_up, &a.cs, WAIT_MS));
	assert_true(run_until(fx, is_up, &b.cs, WAIT_MS));
	/* Redis has both again (not just the lists kept), and a's list was
	 * read from it since */
	struct cmd_res card;
	end = now_ms() + WAIT_MS;
	for (;;) {
		assert_int_equal(cmd(a.rc, &card, "ZCARD", "tc:{t1}:members", NULL), 0);
		assert_true(run_until(fx, answered, &card, WAIT_MS));
		if (strcmp(card.text, "2") == 0)
			break;
		assert_true(now_ms() < end);
	}
	uint64_t back = now_ms();
	while (members_age_ms(a.m) > now_ms() - back) {
		assert_true(now_ms() < back + WAIT_MS);
		struct timeval tv = {.tv_sec = 0, .tv_usec = 20000};
		event_base_loopexit(fx->base, &tv);
		event_base_dispatch(fx->base);
	}
	assert_true(list_is(&both));
	assert_true(members_failures(a.m) >= failures);

	/* members_free removes b at once (no lease to wait for) */
	node_stop(&b);
	struct want_ids only_a = {a.m, "node-a"};
	assert_true(run_until(fx, list_is, &only_a, WAIT_MS));
	struct cmd_res hash;
	assert_int_equal(cmd(a.rc, &hash, "EXISTS", "tc:{t1}:node:node-b", NULL), 0);
	assert_true(run_until(fx, answered, &hash, WAIT_MS));
	assert_string_equal(hash.text, "0");
	node_stop(&a);
}

/* ---- the reply parser, on hand-built replies ---- */

struct built {
	redisReply top;
	redisReply *ptrs[1 + 7 * (MEMBERS_MAX + 1)];
	redisReply items[1 + 7 * (MEMBERS_MAX + 1)];
	char ids[MEMBERS_MAX + 1][16];
};

static void set_str(redisReply *r, const char *s)
{
	memset(r, 0, sizeof(*r));
	r->type = REDIS_REPLY_STRING;
	r->str = (char *)s;
	r->len = strlen(s);
}

static void set_int(redisReply *r, long long v)
{
	memset(r, 0, sizeof(*r));
	r->type = REDIS_REPLY_INTEGER;
	r->integer = v;
}

/* count members "m<i>" (in reverse order), all valid */
static void build(struct built *b, size_t count)
{
	memset(&b->top, 0, sizeof(b->top));
	b->top.type = REDIS_REPLY_ARRAY;
	b->top.elements = 1 + 7 * count;
	b->top.element = b->ptrs;
	for (size_t i = 0; i < b->top.elements; i++)
		b->ptrs[i] = &b->items[i];
	set_int(&b->items[0], 1700000000000);
	for (size_t i = 0; i < count; i++) {
		redisReply *e = &b->items[1 + 7 * i];
		snprintf(b->ids[i], sizeof(b->ids[i]), "m%03u", (unsigned)((count - i) % 1000u));
		set_str(&e[0], b->ids[i]);
		set_int(&e[1], 40);
		set_str(&e[2], "10.0.0.1:7070");
		set_str(&e[3], "1073741824");
		set_str(&e[4], "joining");
		set_str(&e[5], "18446744073709551615");
		set_str(&e[6], "{}");
	}
}

static int parse(struct built *b, struct member *out, size_t *n)
{
	uint64_t now;
	char why[160];
	return members_parse_reply(&b->top, out, MEMBERS_MAX, n, &now, why, sizeof(why));
}

static void test_parser(void **state)
{
	(void)state;
	struct built *b = calloc(1, sizeof(*b));
	struct member *out = calloc(MEMBERS_MAX, sizeof(*out));
	char long_id[CONFIG_NAME_MAX + 2], long_stats[MEMBER_STATS_MAX + 1];
	size_t n = 0;
	assert_non_null(b);
	assert_non_null(out);

	build(b, 3);
	assert_int_equal(parse(b, out, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].id, "m001"); /* sorted */
	assert_string_equal(out[2].id, "m003");
	assert_int_equal(out[0].capacity, 1073741824);
	assert_int_equal(out[0].incarnation, UINT64_MAX);
	assert_int_equal(out[0].state, MEMBER_JOINING);
	assert_int_equal(out[0].lease_age_ms, 40);
	build(b, MEMBERS_MAX);
	assert_int_equal(parse(b, out, &n), 0);
	assert_int_equal(n, MEMBERS_MAX);
	build(b, 0);
	assert_int_equal(parse(b, out, &n), 0);
	assert_int_equal(n, 0);

	/* refused, each */
	build(b, MEMBERS_MAX + 1);
	assert_int_equal(parse(b, out, &n), -EPROTO);
	build(b, 2);
	b->top.elements--; /* not 1 + 7k */
	assert_int_equal(parse(b, out, &n), -EPROTO);
	memset(long_id, 'x', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	build(b, 2);
	set_str(&b->items[1], long_id);
	assert_int_equal(parse(b, out, &n), -EPROTO);
	build(b, 2);
	set_str(&b->items[8], "a b");
	assert_int_equal(parse(b, out, &n), -EPROTO);
	build(b, 2);
	set_str(&b->items[4], "12x"); /* capacity */
	assert_int_equal(parse(b, out, &n), -EPROTO);
	build(b, 2);
	set_str(&b->items[6], "184467440737095516160"); /* incarnation past 64 bits */
	assert_int_equal(parse(b, out, &n), -EPROTO);
	build(b, 2);
	set_str(&b->items[5], "sleeping");
	assert_int_equal(parse(b, out, &n), -EPROTO);
	build(b, 2);
	set_int(&b->items[2], -1); /* lease age */
	assert_int_equal(parse(b, out, &n), -EPROTO);
	build(b, 2);
	set_str(&b->items[3], ""); /* addr */
	assert_int_equal(parse(b, out, &n), -EPROTO);
	memset(long_stats, 's', sizeof(long_stats) - 1);
	long_stats[sizeof(long_stats) - 1] = '\0';
	build(b, 2);
	set_str(&b->items[7], long_stats);
	assert_int_equal(parse(b, out, &n), -EPROTO);
	build(b, 2);
	set_str(&b->items[8], "m002"); /* twice */
	assert_int_equal(parse(b, out, &n), -EPROTO);
	build(b, 2);
	set_str(&b->items[0], "now"); /* the time */
	assert_int_equal(parse(b, out, &n), -EPROTO);
	build(b, 1);
	b->top.type = REDIS_REPLY_STRING;
	assert_int_equal(parse(b, out, &n), -EPROTO);
	assert_int_equal(n, 0); /* untouched by the refusals */
	free(b);
	free(out);
}

int main(void)
{
	log_set_level(LOG_ERR);
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_host_name, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_stalled_redis, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_auth, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_members, fx_setup, fx_teardown),
		cmocka_unit_test(test_parser),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
