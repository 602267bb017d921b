/*
 * One connection to Redis on the daemon's loop (hiredis' async API with its
 * libevent adapter), with what hiredis 0.14 lacks: a deadline on every
 * command. A command not answered within cluster.redis_timeout fails with
 * -ETIMEDOUT, and the connection is dropped (a Redis that accepts and
 * never answers, SIGSTOPped say, looks just like that) and rebuilt with
 * backoff (100 ms doubling to 5 s). Connecting has the same deadline.
 * AUTH (ACL user + password) is sent first when configured; a refused AUTH
 * is logged with what to fix and retried with the backoff.
 *
 * Nothing waits: a command while the connection is down fails at once
 * (-ENOTCONN, the callback not called), so no client request ever blocks
 * on Redis. Loop thread only.
 */
#ifndef TIERCACHE_REDIS_CONN_H
#define TIERCACHE_REDIS_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct redisReply;
struct workers;
struct redis_conn;

struct redis_conn_conf {
	const char *host;      /* TCP: host and port, ... */
	uint16_t port;
	const char *unix_path; /* ... or a Unix socket (non-NULL, non-empty wins) */
	const char *user;      /* ACL user, NULL/"" = none */
	const char *password;  /* NULL = no AUTH */
	uint64_t timeout_ms;   /* every command's and the connect's deadline */
	struct workers *workers; /* a host name is looked up there before each
	                          * connect (never on the loop); NULL: only IP
	                          * addresses are accepted */
};

/* Called once per command on the loop: the reply (NULL on failure; hiredis
 * owns it, valid during the call only) and 0, or -ETIMEDOUT (deadline),
 * -ECONNRESET (the connection dropped with it pending), -ECANCELED
 * (redis_conn_free), -EPROTO (an error reply: r has its text). */
typedef void (*redis_reply_fn)(void *arg, struct redisReply *r, int err);

/* Told when the connection comes up (after AUTH) or goes down. */
typedef void (*redis_state_fn)(void *arg, bool up);

/* Start connecting (in the background: returns at once). 0 or -errno. The
 * strings in conf are copied. */
int redis_conn_new(struct event_base *base, const struct redis_conn_conf *conf, redis_state_fn on_state,
		   void *arg, struct redis_conn **out);
/* Send one command given as argv. 0: fn will be called exactly once;
 * -ENOTCONN (down now) or -ENOMEM: fn is never called. */
int redis_conn_cmd(struct redis_conn *rc, redis_reply_fn fn, void *arg, int argc, const char **argv,
		   const size_t *argvlen);
bool redis_conn_up(const struct redis_conn *rc);
/* Why it is down (the last error), "" when up. */
const char *redis_conn_why(const struct redis_conn *rc);
/* Counters for status: connects that succeeded, commands that timed out. */
uint64_t redis_conn_connects(const struct redis_conn *rc);
uint64_t redis_conn_timeouts(const struct redis_conn *rc);
/* Close; every pending fn is called with -ECANCELED first. */
void redis_conn_free(struct redis_conn *rc);

#endif
