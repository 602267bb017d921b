/*
 * tiercache-mount's connections to tiercached, and what a failure means to
 * the program reading the mount.
 *
 * A libtiercache connection runs one request at a time (lock-step), so a
 * cold fill on one would hold up every lookup behind it: the mount keeps a
 * small pool and spreads requests round robin. A file handle stays on the
 * connection that opened it; its reads of cached chunks never take the
 * connection's lock at all.
 *
 * Daemon restarts: the library reconnects and re-opens handles on its own,
 * for up to $TIERCACHE_RECONNECT_TIMEOUT seconds per request (set from
 * -o reconnect_timeout before connecting), then fails with the connection's
 * errno. We report that as ETIMEDOUT and remember the daemon is down; until
 * it answers a cheap probe again, metadata requests fail at once instead of
 * each waiting the whole timeout again (an `ls -lR` during an outage would
 * otherwise take timeout x entries).
 *
 * Threads: the pool array is fixed after tcm_pool_open; the round-robin
 * counter and the down flag are atomics.
 */
#include "tcmount.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int tcm_pool_open(struct tcm_pool *p, const char *socket, unsigned n, double reconnect_timeout)
{
	int rc = 0;
	char val[32];

	memset(p, 0, sizeof(*p));
	const char *path = socket && *socket ? socket : getenv(TIERCACHE_SOCKET_ENV);
	if (!path || !*path)
		path = TIERCACHE_DEFAULT_SOCKET;
	p->socket = strdup(path);
	p->tc = calloc(n, sizeof(*p->tc));
	if (!p->socket || !p->tc) {
		rc = -ENOMEM;
		goto out;
	}
	/* the library reads its retry window once, at connect */
	snprintf(val, sizeof(val), "%g", reconnect_timeout);
	setenv("TIERCACHE_RECONNECT_TIMEOUT", val, 1);
	for (p->n = 0; p->n < n; p->n++) {
		p->tc[p->n] = tiercache_connect(p->socket);
		if (!p->tc[p->n]) {
			rc = -errno;
			const char *detail = tiercache_last_error();
			fprintf(stderr, "tiercache-mount: cannot connect to tiercached at %s: %s%s%s\n",
				p->socket, tiercache_strerror(-rc), *detail ? ": " : "", detail);
			goto out;
		}
	}
out:
	if (rc < 0)
		tcm_pool_close(p);
	return rc;
}

void tcm_pool_close(struct tcm_pool *p)
{
	for (unsigned i = 0; i < p->n; i++)
		tiercache_disconnect(p->tc[i]);
	free(p->tc);
	free(p->socket);
	memset(p, 0, sizeof(*p));
}

struct tiercache *tcm_pool_pick(struct tcm_pool *p)
{
	unsigned i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
	return p->tc[i % p->n];
}

void tcm_pool_ok(struct tcm_pool *p)
{
	if (atomic_load_explicit(&p->down, memory_order_relaxed)) {
		atomic_store(&p->down, false);
		tcm_log(TCM_WARN, "socket=%s tiercached answers again", p->socket);
	}
}

int tcm_pool_gate(struct tcm_pool *p)
{
	if (!atomic_load_explicit(&p->down, memory_order_relaxed))
		return 0;
	/* tiercache_connect does not wait: one connect + HELLO tells us */
	struct tiercache *probe = tiercache_connect(p->socket);
	if (!probe)
		return -ETIMEDOUT;
	tiercache_disconnect(probe);
	tcm_pool_ok(p);
	return 0;
}

/* The library's last word when it could not reach the daemon within the
 * reconnect window. ENOENT is ambiguous (no such file / no socket): it is
 * the connection's only when the socket is gone. */
static bool conn_lost(const struct tcm_pool *p, int err)
{
	struct stat st;
	switch (err) {
	case ECONNREFUSED:
	case ECONNRESET:
	case ENOTCONN:
	case EPIPE:
		return true;
	case ENOENT:
		return stat(p->socket, &st) < 0 && errno == ENOENT;
	default:
		return false;
	}
}

int tcm_pool_errno(struct tcm_pool *p, int err, const char *op, const char *path)
{
	const char *detail = tiercache_last_error();
	int out;

	if (conn_lost(p, err)) {
		if (!atomic_exchange(&p->down, true))
			tcm_log(TCM_ERR, "socket=%s op=%s path=%s err=\"%s\": tiercached unreachable, "
				"requests fail with ETIMEDOUT until it answers", p->socket, op,
				path ? path : "-", tiercache_strerror(err));
		return ETIMEDOUT;
	}
	switch (err) {
	case ENOENT:
	case ENOTDIR:
	case EISDIR:
	case ENAMETOOLONG:
		/* what a lookup normally answers: not worth a log line */
		tcm_log(TCM_DEBUG, "op=%s path=%s err=\"%s\"", op, path ? path : "-", strerror(err));
		return err;
	case EACCES:
	case EPERM:
		out = EACCES;
		break;
	case ETIMEDOUT: /* the daemon's own (a cold store that timed out) */
	case EROFS:
	case ESTALE: /* the file changed at its source while open: like NFS */
	case ENOMEM:
	case EMFILE:
	case ENFILE:
	case EINTR:
		out = err;
		break;
	default:
		/* EIO, EPROTO, EBADMSG, a cold store that failed, ... */
		out = EIO;
		break;
	}
	tcm_log(out == EIO ? TCM_ERR : TCM_WARN, "op=%s path=%s err=\"%s\" detail=\"%s\"", op,
		path ? path : "-", tiercache_strerror(err), detail);
	return out;
}
