/*
 * The [cluster] section's cross-checks (config.c runs them once the file is
 * parsed, when the section exists): the cluster name and node id are
 * Redis key parts, so they keep to a small charset; redis and peer_listen
 * are split into the fields the daemon uses; node_id defaults to the host
 * name; a lease must cover several heartbeats, or one late heartbeat
 * would make a live node look gone.
 *
 * The files named (key_file, redis_password_file) are not opened here: the
 * daemon reads and checks them at start, with the daemon's own rights.
 * Pure apart from gethostname(). Any thread.
 */
#include "config.h"
#include "config_keys.h"
#include "config_value.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SUN_PATH_MAX 107 /* bytes of a Unix socket path without its NUL */

struct check {
	struct config *cfg;
	const int *key_line;
	const bool *key_bad;
	void (*msg)(void *arg, int line, const char *text);
	void *arg;
};

__attribute__((format(printf, 3, 4))) static void say(struct check *c, int line,
						      const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	c->msg(c->arg, line, text);
}

/* S for a message: control bytes become '?', long text ends in "...". */
static const char *shown(char *buf, size_t n, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 1 < n; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
	if (s[i] && n > 4)
		memcpy(buf + n - 4, "...", 4);
	return buf;
}

/* Written in the file and accepted by its parser: its line, else 0. */
static int key_given(const struct check *c, const char *name)
{
	size_t ki = config_key_index(SECT_CLUSTER, name);
	return c->key_bad[ki] ? 0 : c->key_line[ki];
}

/* 1..CONFIG_NAME_MAX of A-Z a-z 0-9 . _ - (a part of Redis key names). */
static bool cluster_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > CONFIG_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return false;
	return true;
}

/* A DNS name: letters, digits, '.', '-'. */
static bool host_name_ok(const char *s)
{
	if (!*s || *s == '-' || *s == '.')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '.' && *s != '-')
			return false;
	return true;
}

/* "HOST:PORT" with HOST an IPv4 address, [IPv6], localhost (stored as
 * 127.0.0.1) or a host name: host (hn bytes with its NUL) and *port. NULL,
 * or what is wrong. *wildcard: the host is every interface (or empty). */
static const char *split_host_port(const char *v, char *host, size_t hn, uint16_t *port,
				   bool *wildcard)
{
	const char *colon = strrchr(v, ':');
	const char *p = colon ? colon + 1 : NULL;
	uint64_t x = 0;
	char h[256];
	*wildcard = false;
	if (!colon || config_parse_digits(&p, &x) < 0 || *p || x < 1 || x > 65535)
		return "has no valid port (1..65535)";
	size_t n = (size_t)(colon - v);
	bool bracketed = n >= 2 && v[0] == '[' && v[n - 1] == ']';
	if (bracketed) {
		v++;
		n -= 2;
	}
	if (n >= sizeof(h))
		return "has a host name that is too long";
	memcpy(h, v, n);
	h[n] = '\0';
	struct in_addr a4;
	struct in6_addr a6;
	if (bracketed) {
		if (inet_pton(AF_INET6, h, &a6) != 1)
			return "has a bracketed host that is not an IPv6 address";
		*wildcard = IN6_IS_ADDR_UNSPECIFIED(&a6);
	} else if (inet_pton(AF_INET, h, &a4) == 1) {
		*wildcard = a4.s_addr == htonl(INADDR_ANY);
	} else if (!*h || strcmp(h, "*") == 0 || inet_pton(AF_INET6, h, &a6) == 1) {
		/* empty, "*", or "::" (an unbracketed IPv6 address is ambiguous) */
		*wildcard = !*h || strcmp(h, "*") == 0 || IN6_IS_ADDR_UNSPECIFIED(&a6);
		if (!*wildcard)
			return "has an IPv6 address without brackets (write [ADDRESS]:PORT)";
	} else if (strcmp(h, "localhost") == 0) {
		snprintf(h, sizeof(h), "127.0.0.1");
	} else if (!host_name_ok(h)) {
		return "has a host that is neither an IP address nor a host name";
	}
	if (strlen(h) >= hn)
		return "has a host name that is too long";
	if (!*wildcard)
		memcpy(host, h, strlen(h) + 1);
	*port = (uint16_t)x;
	return NULL;
}

static void check_redis(struct check *c, int line)
{
	struct cluster_conf *cc = &c->cfg->cluster;
	char sb[160];
	const char *hint = "use HOST:PORT or unix:/PATH, e.g. 10.0.0.5:6379 or "
			   "unix:/run/redis/redis.sock";
	shown(sb, sizeof(sb), cc->redis);
	if (strncmp(cc->redis, "unix:", 5) == 0) {
		const char *path = cc->redis + 5;
		if (path[0] != '/')
			say(c, line, "cluster.redis: \"%s\" needs an absolute socket path (%s)", sb,
			    hint);
		else if (strlen(path) > SUN_PATH_MAX || strlen(path) >= sizeof(cc->redis_unix))
			say(c, line, "cluster.redis: \"%s\" is too long for a Unix socket path (at "
				     "most %d bytes; use a shorter path)", sb, SUN_PATH_MAX);
		else
			snprintf(cc->redis_unix, sizeof(cc->redis_unix), "%s", path);
		return;
	}
	bool wildcard;
	const char *bad = split_host_port(cc->redis, cc->redis_host, sizeof(cc->redis_host),
					  &cc->redis_port, &wildcard);
	if (!bad && wildcard)
		bad = "names no host";
	if (bad)
		say(c, line, "cluster.redis: \"%s\" %s (%s)", sb, bad, hint);
}

static bool ip_literal(const char *h)
{
	struct in6_addr a;
	return inet_pton(AF_INET, h, &a) == 1 || inet_pton(AF_INET6, h, &a) == 1;
}

static void check_peer_listen(struct check *c, int line)
{
	struct cluster_conf *cc = &c->cfg->cluster;
	char sb[160];
	bool wildcard;
	const char *bad = split_host_port(cc->peer_listen, cc->peer_host, sizeof(cc->peer_host),
					  &cc->peer_port, &wildcard);
	shown(sb, sizeof(sb), cc->peer_listen);
	if (bad)
		say(c, line, "cluster.peer_listen: \"%s\" %s (use HOST:PORT, e.g. 10.0.0.7:7070)",
		    sb, bad);
	else if (wildcard)
		say(c, line, "cluster.peer_listen: \"%s\" binds the peer port to every interface; "
			     "give the address peers reach this node at (e.g. 10.0.0.7:7070)", sb);
	else if (!ip_literal(cc->peer_host))
		say(c, line, "cluster.peer_listen: \"%s\" names a host; give its IP address (other "
			     "nodes connect to the address as published, and a daemon never looks a "
			     "name up on its event loop), e.g. 10.0.0.7:7070", sb);
	else
		snprintf(cc->peer_addr, sizeof(cc->peer_addr), strchr(cc->peer_host, ':') ? "[%s]:%u" : "%s:%u",
			 cc->peer_host, (unsigned)cc->peer_port);
}

/* node_id unset: the host name, cut to CONFIG_NAME_MAX. */
static void default_node_id(struct check *c)
{
	struct cluster_conf *cc = &c->cfg->cluster;
	char host[256] = "", sb[160];
	if (gethostname(host, sizeof(host) - 1) < 0) {
		say(c, c->cfg->cluster.line, "cluster.node_id: cannot read the host name (set "
			"node_id = NAME)");
		return;
	}
	host[CONFIG_NAME_MAX] = '\0';
	if (!cluster_name_ok(host)) {
		say(c, cc->line, "cluster.node_id: the host name \"%s\" is not a valid node id (set "
			"node_id = NAME: 1..%d of A-Z a-z 0-9 . _ -)",
		    shown(sb, sizeof(sb), host), CONFIG_NAME_MAX);
		return;
	}
	memcpy(cc->node_id, host, strlen(host) + 1); /* cut to CONFIG_NAME_MAX above */
}

void config_cluster_check(struct config *cfg, const int *key_line, const bool *key_bad,
			  void (*msg)(void *arg, int line, const char *text), void *arg)
{
	struct check c = {.cfg = cfg, .key_line = key_line, .key_bad = key_bad, .msg = msg,
			  .arg = arg};
	struct cluster_conf *cc = &cfg->cluster;
	char sb[160], a[32], b[32];
	int line;

	static const char *const names[] = {"name", "node_id"};
	for (size_t i = 0; i < 2; i++) {
		char *v = i == 0 ? cc->name : cc->node_id;
		if ((line = key_given(&c, names[i])) && !cluster_name_ok(v))
			say(&c, line, "cluster.%s: \"%s\" is not a valid %s (use 1..%d of A-Z a-z "
				      "0-9 . _ -)", names[i], shown(sb, sizeof(sb), v),
			    i == 0 ? "cluster name" : "node id", CONFIG_NAME_MAX);
	}
	if (!key_line[config_key_index(SECT_CLUSTER, "node_id")])
		default_node_id(&c);
	if ((line = key_given(&c, "redis")))
		check_redis(&c, line);
	if ((line = key_given(&c, "peer_listen")))
		check_peer_listen(&c, line);
	size_t hb = config_key_index(SECT_CLUSTER, "heartbeat");
	size_t lease = config_key_index(SECT_CLUSTER, "lease");
	if (!key_bad[hb] && !key_bad[lease] && cc->lease_ms < 3 * cc->heartbeat_ms)
		say(&c, 0, "cluster: need lease >= 3 x heartbeat, so that a late heartbeat does not "
			   "drop a live node (got lease %s, heartbeat %s)",
		    config_fmt_duration(a, sizeof(a), cc->lease_ms),
		    config_fmt_duration(b, sizeof(b), cc->heartbeat_ms));
}
