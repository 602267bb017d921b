/*
 * Membership through Redis (members.h): a heartbeat timer runs the
 * membership script (members_reply.c) with EVAL, and its answer, once it
 * passes the parser's checks, becomes the live list. A failed or refused
 * heartbeat leaves the list as it was.
 *
 * At most one heartbeat is in flight: one asked for meanwhile (a state
 * change, Redis coming back) is sent when it returns. The request carries
 * its own record pointing at the members, cut loose by members_free(), so
 * a reply that arrives after it finds nothing to update.
 *
 * Loop thread only.
 */
#include "members.h"

#include <errno.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "loop.h"
#include "members_reply.h"
#include "redis_conn.h"

struct hb_req {
	struct members *m; /* NULL once members_free() ran */
};

struct members {
	struct event_base *base;
	struct redis_conn *rc;
	char members_key[CONFIG_NAME_MAX + 32]; /* tc:{name}:members */
	char node_prefix[CONFIG_NAME_MAX + 32]; /* tc:{name}:node: */
	uint64_t heartbeat_ms, lease_ms;
	struct member self;
	enum member_state state;
	struct members_hooks hooks;
	struct member *list; /* sorted by id */
	size_t n;
	struct member *scratch; /* MEMBERS_MAX, where a reply is parsed */
	uint64_t read_ms;       /* monotonic, when list was read; 0: never */
	uint64_t failures;
	struct event *timer;
	struct hb_req *inflight;
	bool again; /* a heartbeat was asked for while one was in flight */
	unsigned join_left; /* joining: lists still to see before going up */
	bool left;          /* members_leave() sent the removal */
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *member_state_name(enum member_state st)
{
	switch (st) {
	case MEMBER_UP:
		return "up";
	case MEMBER_JOINING:
		return "joining";
	case MEMBER_DRAINING:
		return "draining";
	}
	return "up";
}

/* The same (id, addr, state, capacity, incarnation)? */
static bool member_same(const struct member *a, const struct member *b)
{
	return strcmp(a->id, b->id) == 0 && strcmp(a->addr, b->addr) == 0 && a->state == b->state &&
	       a->capacity == b->capacity && a->incarnation == b->incarnation;
}

static const struct member *find_id(const struct member *list, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i].id, id) == 0)
			return &list[i];
	return NULL;
}

/* Take the parsed list (m->scratch, n) as the live one. */
static void take_list(struct members *m, size_t n)
{
	bool changed = n != m->n;
	for (size_t i = 0; i < n; i++) {
		const struct member *now = &m->scratch[i];
		if (!changed && !member_same(now, &m->list[i]))
			changed = true;
		if (!find_id(m->list, m->n, now->id))
			log_info("op=member_join node=%s addr=%s state=%s capacity=%" PRIu64
				 " incarnation=%" PRIu64,
				 now->id, now->addr, member_state_name(now->state), now->capacity,
				 now->incarnation);
	}
	for (size_t i = 0; i < m->n; i++)
		if (!find_id(m->scratch, n, m->list[i].id))
			log_info("op=member_leave node=%s addr=%s", m->list[i].id, m->list[i].addr);
	struct member *t = m->list;
	m->list = m->scratch;
	m->scratch = t;
	m->n = n;
	m->read_ms = now_ms();
	if (changed && m->hooks.changed)
		m->hooks.changed(m->hooks.arg);
}

static void heartbeat(struct members *m);

static void on_heartbeat(void *arg, struct redisReply *r, int err)
{
	struct hb_req *req = arg;
	struct members *m = req->m;
	free(req);
	if (!m)
		return; /* freed meanwhile */
	m->inflight = NULL;
	if (err < 0) {
		m->failures++;
		if (err == -EPROTO)
			log_warn("op=member_heartbeat err=\"%.*s\"", (int)(r->len < 200 ? r->len : 200),
				 r->str);
	} else {
		char why[160];
		size_t n = 0;
		uint64_t now = 0;
		if (members_parse_reply(r, m->scratch, MEMBERS_MAX, &n, &now, why, sizeof(why)) < 0) {
			m->failures++;
			log_warn("op=member_heartbeat err=\"malformed reply: %s\" (list kept)", why);
		} else {
			take_list(m, n);
			if (m->state == MEMBER_JOINING && m->join_left && --m->join_left == 0) {
				log_info("op=member_state node=%s state=up (joined)", m->self.id);
				members_set_state(m, MEMBER_UP); /* sent at once (m->again) */
			}
		}
	}
	if (m->again) {
		m->again = false;
		heartbeat(m);
	}
}

static void heartbeat(struct members *m)
{
	if (m->left)
		return; /* it left: nothing may write it back */
	if (m->inflight) {
		m->again = true;
		return;
	}
	char cap[24], inc[24], lease[24], stats[MEMBER_STATS_MAX] = "";
	snprintf(cap, sizeof(cap), "%" PRIu64, m->self.capacity);
	snprintf(inc, sizeof(inc), "%" PRIu64, m->self.incarnation);
	snprintf(lease, sizeof(lease), "%" PRIu64, m->lease_ms);
	if (m->hooks.stats) {
		m->hooks.stats(m->hooks.arg, stats, sizeof(stats));
		stats[sizeof(stats) - 1] = '\0';
	}
	const char *argv[] = {"EVAL",	   members_script,	     "1",   m->members_key,
			      m->self.id,  m->self.addr,	     cap,   member_state_name(m->state),
			      inc,	   stats,		     lease, m->node_prefix};
	struct hb_req *req = malloc(sizeof(*req));
	if (!req) {
		m->failures++;
		return;
	}
	req->m = m;
	int rc = redis_conn_cmd(m->rc, on_heartbeat, req, (int)(sizeof(argv) / sizeof(argv[0])), argv,
				NULL);
	if (rc < 0) {
		free(req);
		m->failures++; /* down: the list stays, members_redis_up() resumes */
		return;
	}
	m->inflight = req;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	heartbeat(arg);
}

int members_new(struct event_base *base, struct redis_conn *rc, const struct cluster_conf *cc,
		const struct members_self *self, const struct members_hooks *hooks, struct members **out)
{
	loop_assert();
	struct members *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->base = base;
	m->rc = rc;
	snprintf(m->members_key, sizeof(m->members_key), "tc:{%s}:members", cc->name);
	snprintf(m->node_prefix, sizeof(m->node_prefix), "tc:{%s}:node:", cc->name);
	m->heartbeat_ms = cc->heartbeat_ms ? cc->heartbeat_ms : 1000;
	m->lease_ms = cc->lease_ms ? cc->lease_ms : 5000;
	snprintf(m->self.id, sizeof(m->self.id), "%s", self->id);
	snprintf(m->self.addr, sizeof(m->self.addr), "%s", self->addr);
	m->self.capacity = self->capacity;
	m->self.incarnation = self->incarnation;
	/* joining (not a home) until it has seen MEMBERS_JOIN_LISTS lists, so
	 * that every node knows it before homes move to it */
	m->state = MEMBER_JOINING;
	m->self.state = MEMBER_JOINING;
	m->join_left = MEMBERS_JOIN_LISTS;
	if (hooks)
		m->hooks = *hooks;
	m->list = calloc(MEMBERS_MAX, sizeof(*m->list));
	m->scratch = calloc(MEMBERS_MAX, sizeof(*m->scratch));
	m->timer = event_new(base, -1, EV_PERSIST, on_timer, m);
	if (!m->list || !m->scratch || !m->timer) {
		if (m->timer)
			event_free(m->timer);
		free(m->list);
		free(m->scratch);
		free(m);
		return -ENOMEM;
	}
	/* before the first answer: only this node */
	m->list[0] = m->self;
	m->n = 1;
	*out = m;
	return 0;
}

int members_start(struct members *m)
{
	loop_assert();
	struct timeval tv = {.tv_sec = (time_t)(m->heartbeat_ms / 1000),
			     .tv_usec = (suseconds_t)(m->heartbeat_ms % 1000) * 1000};
	if (event_add(m->timer, &tv) < 0)
		return -ENOMEM;
	heartbeat(m);
	return 0;
}

void members_redis_up(struct members *m)
{
	loop_assert();
	heartbeat(m);
}

void members_set_state(struct members *m, enum member_state st)
{
	loop_assert();
	m->state = st;
	m->self.state = (uint8_t)st;
	heartbeat(m);
}

enum member_state members_self_state(const struct members *m)
{
	return m->state;
}

const struct member *members_list(const struct members *m, size_t *n)
{
	*n = m->n;
	return m->list;
}

uint64_t members_age_ms(const struct members *m)
{
	return m->read_ms ? now_ms() - m->read_ms : UINT64_MAX;
}

uint64_t members_failures(const struct members *m)
{
	return m->failures;
}

/* Remove this node at once: its lease and its hash, in one script. */
static const char leave_script[] = "redis.call('ZREM', KEYS[1], ARGV[1]) "
				   "return redis.call('DEL', ARGV[2])";

int members_leave(struct members *m, redis_reply_fn done, void *arg)
{
	loop_assert();
	char hash[sizeof(m->node_prefix) + CONFIG_NAME_MAX];
	snprintf(hash, sizeof(hash), "%s%s", m->node_prefix, m->self.id);
	const char *argv[] = {"EVAL", leave_script, "1", m->members_key, m->self.id, hash};
	evtimer_del(m->timer); /* no heartbeat may write it back */
	int rc = redis_conn_cmd(m->rc, done, arg, 6, argv, NULL);
	if (rc == 0)
		m->left = true;
	return rc;
}

static void on_forget(void *arg, struct redisReply *r, int err)
{
	(void)arg;
	(void)r;
	(void)err;
}

void members_free(struct members *m)
{
	if (!m)
		return;
	loop_assert();
	char hash[sizeof(m->node_prefix) + CONFIG_NAME_MAX];
	snprintf(hash, sizeof(hash), "%s%s", m->node_prefix, m->self.id);
	const char *zrem[] = {"ZREM", m->members_key, m->self.id};
	const char *del[] = {"DEL", hash};
	/* best effort: down, these are simply not sent and the lease ends */
	if (!m->left) {
		redis_conn_cmd(m->rc, on_forget, NULL, 3, zrem, NULL);
		redis_conn_cmd(m->rc, on_forget, NULL, 2, del, NULL);
	}
	if (m->inflight)
		m->inflight->m = NULL;
	event_free(m->timer);
	free(m->list);
	free(m->scratch);
	free(m);
}
