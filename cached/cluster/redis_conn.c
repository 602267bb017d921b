/*
 * One Redis connection with deadlines (redis_conn.h), over hiredis 0.14's
 * async API on the daemon's libevent loop.
 *
 * Every command, ours (AUTH, PING) and the caller's, is a record in a FIFO
 * with the time it was sent. Redis answers in order, so the head is the
 * oldest: one timer looks at it, and past the deadline the connection is
 * dropped, the head failing with -ETIMEDOUT and the rest with -ECONNRESET.
 *
 * hiredis owns each record's privdata until it calls the reply callback,
 * which it does exactly once: with the reply, or with NULL when the context
 * is freed or the connection breaks. A record therefore lives until both
 * its caller was answered (done) and hiredis gave it back (!in_hiredis).
 * Whenever we drop a context first, ac->data is cleared, so its late
 * callbacks find no connection and only release their records; every
 * record still pending is answered from a local list after the context is
 * gone, which also makes a caller's redis_conn_cmd() from inside its
 * callback see the connection down (-ENOTCONN), never a dying context.
 *
 * A caller may free the connection from inside any callback it gets: the
 * free is finished by the outermost dispatch (busy, doomed).
 *
 * Loop thread only.
 */
#include "redis_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include "log.h"
#include "loop.h"
#include "workers.h"

#define BACKOFF_MIN_MS 100u
#define BACKOFF_MAX_MS 5000u

struct rc_cmd {
	TAILQ_ENTRY(rc_cmd) q;   /* in rc->pending while not done */
	struct rc_cmd *fail_next; /* on a local list of records to fail */
	redis_reply_fn fn;
	void *arg;
	uint64_t sent_ms;
	bool done;      /* answered, or on a list to be answered */
	bool in_hiredis; /* hiredis still holds it as privdata */
	bool listed;    /* on a local fail list, not answered yet */
};

TAILQ_HEAD(rc_cmd_list, rc_cmd);

struct redis_conn {
	struct event_base *base;
	char *host, *unix_path, *user, *password;
	uint16_t port;
	uint64_t timeout_ms;
	struct workers *workers;
	bool host_is_ip;          /* host needs no lookup */
	struct rc_resolve *resolving; /* the lookup of host in flight */
	redis_state_fn on_state;
	void *arg;

	redisAsyncContext *ac; /* NULL while down and not connecting */
	bool up;
	uint64_t connect_start_ms;
	struct rc_cmd_list pending;
	struct event *deadline;  /* the oldest command's, or the connect's */
	struct event *retry;     /* reconnect after backoff */
	uint64_t backoff_ms;
	char why[256];
	char logged_why[256]; /* the last failure logged, not to repeat it */
	uint64_t connects, timeouts;
	unsigned busy; /* inside a dispatch to the caller */
	bool doomed;   /* freed by the caller during a dispatch */
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void timer_in(struct event *ev, uint64_t ms)
{
	struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
	event_add(ev, &tv);
}

static void rc_destroy(struct redis_conn *rc)
{
	event_free(rc->deadline);
	event_free(rc->retry);
	free(rc->host);
	free(rc->unix_path);
	free(rc->user);
	if (rc->password) {
		explicit_bzero(rc->password, strlen(rc->password));
		free(rc->password);
	}
	free(rc);
}

/* Around every call into the caller: false once the caller freed rc. */
static void rc_enter(struct redis_conn *rc)
{
	rc->busy++;
}

static bool rc_leave(struct redis_conn *rc)
{
	if (--rc->busy == 0 && rc->doomed) {
		rc_destroy(rc);
		return false;
	}
	return !rc->doomed;
}

static void cmd_release(struct rc_cmd *c)
{
	if (!c->in_hiredis && !c->listed)
		free(c);
}

static const char *rc_where(const struct redis_conn *rc, char *buf, size_t n)
{
	if (rc->unix_path)
		snprintf(buf, n, "unix:%s", rc->unix_path);
	else
		snprintf(buf, n, "%s:%u", rc->host, (unsigned)rc->port);
	return buf;
}

static void rc_connect(struct redis_conn *rc);

static void rc_schedule_retry(struct redis_conn *rc)
{
	if (rc->doomed)
		return;
	timer_in(rc->retry, rc->backoff_ms);
	rc->backoff_ms = rc->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : rc->backoff_ms * 2;
}

/* Answer every record of LIST (ERR_FIRST for the first, ERR for the
 * rest), then release them. False once the caller freed rc. */
static bool fail_list(struct redis_conn *rc, struct rc_cmd *list, int err_first, int err)
{
	bool alive = true;
	rc_enter(rc);
	for (struct rc_cmd *c = list, *next; c; c = next, err_first = err) {
		next = c->fail_next;
		c->listed = false;
		c->fn(c->arg, NULL, err_first);
		cmd_release(c);
	}
	alive = rc_leave(rc);
	return alive;
}

/* Take every pending record off the FIFO onto a local list, done. */
static struct rc_cmd *take_pending(struct redis_conn *rc)
{
	struct rc_cmd *head = NULL, **tail = &head, *c;
	while ((c = TAILQ_FIRST(&rc->pending))) {
		TAILQ_REMOVE(&rc->pending, c, q);
		c->done = true;
		c->listed = true;
		c->fail_next = NULL;
		*tail = c;
		tail = &c->fail_next;
	}
	return head;
}

/* The connection is gone (WHY): detach the context (freed here when
 * FREE_AC, else hiredis frees it), answer everything pending, tell the
 * caller if it was up, and retry later. */
static void rc_drop(struct redis_conn *rc, const char *why, bool free_ac, int err_first)
{
	char where[PATH_MAX + 16];
	redisAsyncContext *ac = rc->ac;
	bool was_up = rc->up;
	rc->ac = NULL;
	rc->up = false;
	snprintf(rc->why, sizeof(rc->why), "%s", why);
	event_del(rc->deadline);
	struct rc_cmd *list = take_pending(rc);
	if (ac) {
		ac->data = NULL;
		if (free_ac)
			redisAsyncFree(ac); /* deferred by hiredis inside its callback */
	}
	if (was_up || strcmp(rc->logged_why, why) != 0) {
		log_warn("op=redis_down redis=%s why=\"%s\" retry_ms=%llu", rc_where(rc, where, sizeof(where)),
			 why, (unsigned long long)rc->backoff_ms);
		snprintf(rc->logged_why, sizeof(rc->logged_why), "%s", why);
	}
	rc_schedule_retry(rc);
	if (!fail_list(rc, list, err_first, -ECONNRESET))
		return;
	if (was_up && rc->on_state) {
		rc_enter(rc);
		rc->on_state(rc->arg, false);
		rc_leave(rc);
	}
}

static void arm_deadline(struct redis_conn *rc)
{
	const struct rc_cmd *c = TAILQ_FIRST(&rc->pending);
	uint64_t start = c ? c->sent_ms : rc->connect_start_ms;
	if (!c && rc->up)
		return; /* nothing to wait for */
	uint64_t now = now_ms(), end = start + rc->timeout_ms;
	timer_in(rc->deadline, end > now ? end - now : 0);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct redis_conn *rc = arg;
	const struct rc_cmd *c = TAILQ_FIRST(&rc->pending);
	uint64_t start = c ? c->sent_ms : rc->connect_start_ms;
	if (!rc->ac || (!c && rc->up))
		return;
	if (now_ms() < start + rc->timeout_ms) {
		arm_deadline(rc);
		return;
	}
	rc->timeouts++;
	char why[96];
	snprintf(why, sizeof(why), "%s not answered within %llu ms",
		 c ? "a command" : "connecting", (unsigned long long)rc->timeout_ms);
	rc_drop(rc, why, true, -ETIMEDOUT);
}

/* hiredis' reply callback, for every record. */
static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct rc_cmd *c = privdata;
	struct redisReply *r = reply;
	struct redis_conn *rc = ac->data;
	c->in_hiredis = false;
	if (c->done || !rc) {
		cmd_release(c);
		return;
	}
	if (!r) {
		/* the connection broke under it: hiredis frees the context */
		c->in_hiredis = true; /* still on the FIFO: answered by rc_drop */
		rc_drop(rc, ac->errstr[0] ? ac->errstr : "connection lost", false, -ECONNRESET);
		c->in_hiredis = false;
		cmd_release(c);
		return;
	}
	TAILQ_REMOVE(&rc->pending, c, q);
	c->done = true;
	rc_enter(rc);
	c->fn(c->arg, r, r->type == REDIS_REPLY_ERROR ? -EPROTO : 0);
	free(c);
	if (rc_leave(rc) && rc->ac && !TAILQ_EMPTY(&rc->pending) && !event_pending(rc->deadline, EV_TIMEOUT, NULL))
		arm_deadline(rc);
}

static int rc_send(struct redis_conn *rc, redis_reply_fn fn, void *arg, int argc, const char **argv,
		   const size_t *argvlen)
{
	struct rc_cmd *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fn = fn;
	c->arg = arg;
	c->sent_ms = now_ms();
	c->in_hiredis = true;
	if (redisAsyncCommandArgv(rc->ac, on_reply, c, argc, argv, argvlen) != REDIS_OK) {
		free(c);
		return -ENOTCONN;
	}
	bool first = TAILQ_EMPTY(&rc->pending);
	TAILQ_INSERT_TAIL(&rc->pending, c, q);
	if (first && rc->up)
		arm_deadline(rc);
	return 0;
}

/* AUTH's or PING's answer: up, or a refusal to log and retry. */
static void on_hello(void *arg, struct redisReply *r, int err)
{
	struct redis_conn *rc = arg;
	char where[PATH_MAX + 16], why[200];
	if (err == -EPROTO) {
		snprintf(why, sizeof(why), "%s refused: %.*s (check cluster.redis_user and "
			 "redis_password_file)", rc->password ? "AUTH" : "PING",
			 (int)(r->len < 120 ? r->len : 120), r->str);
		rc_drop(rc, why, true, -ECONNRESET);
		return;
	}
	if (err < 0)
		return; /* dropped already (rc_drop answered us) */
	rc->up = true;
	rc->why[0] = '\0';
	rc->logged_why[0] = '\0';
	rc->connects++;
	rc->backoff_ms = BACKOFF_MIN_MS;
	event_del(rc->deadline);
	arm_deadline(rc);
	log_info("op=redis_up redis=%s connects=%llu", rc_where(rc, where, sizeof(where)),
		 (unsigned long long)rc->connects);
	if (rc->on_state) {
		rc_enter(rc);
		rc->on_state(rc->arg, true);
		rc_leave(rc);
	}
}

static void on_connect(const redisAsyncContext *cac, int status)
{
	redisAsyncContext *ac = (redisAsyncContext *)cac;
	struct redis_conn *rc = ac->data;
	if (!rc)
		return;
	if (status != REDIS_OK) {
		/* hiredis frees the context after this call */
		rc_drop(rc, ac->errstr[0] ? ac->errstr : "cannot connect", false, -ECONNRESET);
		return;
	}
	const char *argv[3];
	int argc = 0;
	if (rc->password) {
		argv[argc++] = "AUTH";
		if (rc->user)
			argv[argc++] = rc->user;
		argv[argc++] = rc->password;
	} else {
		argv[argc++] = "PING";
	}
	/* a failure here is left to the connect deadline: freeing the
	 * context inside its connect callback is not safe in hiredis 0.14 */
	rc_send(rc, on_hello, rc, argc, argv, NULL);
}

static void on_disconnect(const redisAsyncContext *cac, int status)
{
	redisAsyncContext *ac = (redisAsyncContext *)cac;
	struct redis_conn *rc = ac->data;
	(void)status;
	if (rc)
		rc_drop(rc, ac->errstr[0] ? ac->errstr : "connection closed", false, -ECONNRESET);
}

/* A host name's lookup on a worker thread: hiredis would resolve it with
 * a blocking getaddrinfo() on the loop, stalling every client while DNS
 * does not answer. */
struct rc_resolve {
	struct job job;
	struct redis_conn *rc; /* NULL once rc was freed */
	char host[256];
	char ip[INET6_ADDRSTRLEN];
	int err; /* getaddrinfo's EAI_*, 0 */
};

static void resolve_work(struct job *j)
{
	struct rc_resolve *r = (struct rc_resolve *)j;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL;
	r->err = getaddrinfo(r->host, NULL, &hints, &ai);
	if (r->err == 0 && (!ai || getnameinfo(ai->ai_addr, ai->ai_addrlen, r->ip, sizeof(r->ip), NULL, 0,
					       NI_NUMERICHOST) != 0))
		r->err = EAI_FAIL;
	if (ai)
		freeaddrinfo(ai);
}

static void rc_connect_to(struct redis_conn *rc, const char *ip);

static void resolve_done(struct job *j)
{
	struct rc_resolve *r = (struct rc_resolve *)j;
	struct redis_conn *rc = r->rc;
	if (rc) {
		rc->resolving = NULL;
		if (r->err) {
			char why[400];
			snprintf(why, sizeof(why), "cannot look up %s: %s", r->host, gai_strerror(r->err));
			rc_drop(rc, why, false, -ECONNRESET);
		} else {
			rc_connect_to(rc, r->ip);
		}
	}
	free(r);
}

static void rc_connect(struct redis_conn *rc)
{
	if (rc->unix_path || rc->host_is_ip) {
		rc_connect_to(rc, rc->host);
		return;
	}
	if (rc->resolving)
		return;
	struct rc_resolve *r = calloc(1, sizeof(*r));
	if (!r) {
		rc_drop(rc, "out of memory", false, -ECONNRESET);
		return;
	}
	r->job.work = resolve_work;
	r->job.done = resolve_done;
	r->rc = rc;
	snprintf(r->host, sizeof(r->host), "%s", rc->host);
	rc->resolving = r;
	workers_submit(rc->workers, &r->job);
}

static void rc_connect_to(struct redis_conn *rc, const char *ip)
{
	redisAsyncContext *ac = rc->unix_path ? redisAsyncConnectUnix(rc->unix_path)
					      : redisAsyncConnect(ip, rc->port);
	char why[200];
	rc->connect_start_ms = now_ms();
	if (!ac) {
		rc_drop(rc, "out of memory", false, -ECONNRESET);
		return;
	}
	if (ac->err) {
		snprintf(why, sizeof(why), "cannot connect: %s", ac->errstr);
		redisAsyncFree(ac);
		rc_drop(rc, why, false, -ECONNRESET);
		return;
	}
	ac->data = rc;
	if (redisLibeventAttach(ac, rc->base) != REDIS_OK ||
	    redisAsyncSetConnectCallback(ac, on_connect) != REDIS_OK ||
	    redisAsyncSetDisconnectCallback(ac, on_disconnect) != REDIS_OK) {
		ac->data = NULL;
		redisAsyncFree(ac);
		rc_drop(rc, "cannot set up the connection", false, -ECONNRESET);
		return;
	}
	rc->ac = ac;
	arm_deadline(rc);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct redis_conn *rc = arg;
	if (!rc->ac && !rc->doomed)
		rc_connect(rc);
}

static char *dup_or_null(const char *s, bool *oom)
{
	if (!s || !*s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*oom = true;
	return d;
}

int redis_conn_new(struct event_base *base, const struct redis_conn_conf *conf, redis_state_fn on_state,
		   void *arg, struct redis_conn **out)
{
	loop_assert();
	struct redis_conn *rc = calloc(1, sizeof(*rc));
	bool oom = !rc;
	if (oom)
		return -ENOMEM;
	rc->base = base;
	rc->on_state = on_state;
	rc->arg = arg;
	rc->port = conf->port;
	rc->timeout_ms = conf->timeout_ms ? conf->timeout_ms : 1000;
	rc->backoff_ms = BACKOFF_MIN_MS;
	TAILQ_INIT(&rc->pending);
	rc->unix_path = dup_or_null(conf->unix_path, &oom);
	rc->host = dup_or_null(conf->host, &oom);
	rc->user = dup_or_null(conf->user, &oom);
	if (conf->password) {
		rc->password = strdup(conf->password);
		oom = oom || !rc->password;
	}
	rc->deadline = evtimer_new(base, on_deadline, rc);
	rc->retry = evtimer_new(base, on_retry, rc);
	rc->workers = conf->workers;
	if (rc->host) {
		struct in6_addr a;
		rc->host_is_ip = inet_pton(AF_INET, rc->host, &a) == 1 || inet_pton(AF_INET6, rc->host, &a) == 1;
	}
	if (oom || !rc->deadline || !rc->retry || (!rc->unix_path && !rc->host) ||
	    (!rc->unix_path && !rc->host_is_ip && !rc->workers)) {
		bool noaddr = !oom && rc->deadline && rc->retry;
		rc_destroy(rc);
		return noaddr ? -EINVAL : -ENOMEM;
	}
	snprintf(rc->why, sizeof(rc->why), "connecting");
	rc_connect(rc);
	*out = rc;
	return 0;
}

int redis_conn_cmd(struct redis_conn *rc, redis_reply_fn fn, void *arg, int argc, const char **argv,
		   const size_t *argvlen)
{
	loop_assert();
	if (!rc->up || !rc->ac || rc->doomed)
		return -ENOTCONN;
	return rc_send(rc, fn, arg, argc, argv, argvlen);
}

bool redis_conn_up(const struct redis_conn *rc)
{
	return rc->up;
}

const char *redis_conn_why(const struct redis_conn *rc)
{
	return rc->up ? "" : rc->why;
}

uint64_t redis_conn_connects(const struct redis_conn *rc)
{
	return rc->connects;
}

uint64_t redis_conn_timeouts(const struct redis_conn *rc)
{
	return rc->timeouts;
}

void redis_conn_free(struct redis_conn *rc)
{
	if (!rc || rc->doomed)
		return;
	loop_assert();
	redisAsyncContext *ac = rc->ac;
	rc->doomed = true;
	rc->ac = NULL;
	rc->up = false;
	if (rc->resolving)
		rc->resolving->rc = NULL; /* its completion only frees itself */
	rc->resolving = NULL;
	event_del(rc->deadline);
	event_del(rc->retry);
	struct rc_cmd *list = take_pending(rc);
	if (ac) {
		ac->data = NULL;
		redisAsyncFree(ac);
	}
	rc_enter(rc);
	for (struct rc_cmd *c = list, *next; c; c = next) {
		next = c->fail_next;
		c->listed = false;
		c->fn(c->arg, NULL, -ECANCELED);
		cmd_release(c);
	}
	rc_leave(rc); /* destroys rc unless an outer dispatch still runs */
}
