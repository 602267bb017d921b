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
 * Other users (-o allow_other): the daemon checks every open, stat and
 * listing against the rights of whoever asks (docs/operations.md, "Access
 * control"). A request of the mount's own user goes on the pool, whose
 * connections carry the mount process's credentials. A request of another
 * user goes on a connection of its own that acts for that user's uid, gid
 * and supplementary groups (tiercache_act_as; the daemon lets only root or
 * its admins do that). Such connections are made on first use and kept
 * until unmount, at most TCM_IDS_MAX of them: a file handle stays on the
 * connection that opened it, so one is never closed under a reader. If the
 * daemon refuses (the mount is run by a plain user), every user of the
 * mount reads with that user's rights, as FUSE's allow_other means anyway,
 * and we say so once.
 *
 * Threads: the pool array is fixed after tcm_pool_open; the round-robin
 * counter, the down flag and act are atomics; ids[] grows under ids_lock
 * and its entries never change once published.
 */
#include "tcmount.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tiercache/protocol.h"

struct tcm_ident {
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t *groups;
	struct tiercache *tc;
};

int tcm_pool_open(struct tcm_pool *p, const char *socket, unsigned n, double reconnect_timeout)
{
	int rc = 0;
	char val[32];

	memset(p, 0, sizeof(*p));
	p->self_uid = geteuid();
	pthread_mutex_init(&p->ids_lock, NULL);
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
	for (unsigned i = 0; i < p->nids; i++) {
		tiercache_disconnect(p->ids[i]->tc);
		free(p->ids[i]->groups);
		free(p->ids[i]);
	}
	pthread_mutex_destroy(&p->ids_lock);
	free(p->tc);
	free(p->socket);
	memset(p, 0, sizeof(*p));
	p->self_uid = geteuid();
	pthread_mutex_init(&p->ids_lock, NULL);
}

struct tiercache *tcm_pool_pick(struct tcm_pool *p)
{
	unsigned i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
	return p->tc[i % p->n];
}

bool tcm_pool_acts(struct tcm_pool *p, fuse_req_t req)
{
	return fuse_req_ctx(req)->uid != p->self_uid &&
	       atomic_load_explicit(&p->act, memory_order_relaxed) >= 0;
}

static struct tcm_ident *ident_find(struct tcm_pool *p, uid_t uid, gid_t gid, const gid_t *g, int n)
{
	for (unsigned i = 0; i < p->nids; i++) {
		struct tcm_ident *id = p->ids[i];
		if (id->uid == uid && id->gid == gid && id->ngroups == n &&
		    (n == 0 || memcmp(id->groups, g, (size_t)n * sizeof(*g)) == 0))
			return id;
	}
	return NULL;
}

int tcm_pool_for_open(struct tcm_pool *p, fuse_req_t req, struct tiercache **tc)
{
	if (p->ahead && !tcm_pool_acts(p, req)) {
		*tc = p->tc[0];
		return 0;
	}
	return tcm_pool_for(p, req, tc);
}

int tcm_pool_for(struct tcm_pool *p, fuse_req_t req, struct tiercache **tc)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[TC_ACT_GROUPS_MAX];
	if (!tcm_pool_acts(p, req)) {
		*tc = tcm_pool_pick(p);
		return 0;
	}
	/* the caller's groups from /proc; a caller gone already, or a kernel
	 * without them: its primary group only (fewer rights, never more) */
	int n = fuse_req_getgroups(req, (int)TC_ACT_GROUPS_MAX, groups);
	if (n < 0)
		n = 0;
	if (n > (int)TC_ACT_GROUPS_MAX) {
		tcm_log(TCM_WARN, "uid=%u groups=%d err=\"more supplementary groups than the daemon "
			"takes (%u)\": refused", (unsigned)ctx->uid, n, TC_ACT_GROUPS_MAX);
		return EACCES;
	}
	pthread_mutex_lock(&p->ids_lock);
	struct tcm_ident *id = ident_find(p, ctx->uid, ctx->gid, groups, n);
	unsigned nids = p->nids;
	pthread_mutex_unlock(&p->ids_lock);
	if (id) {
		*tc = id->tc;
		return 0;
	}
	if (nids >= TCM_IDS_MAX) {
		tcm_log(TCM_WARN, "uid=%u err=\"%u users already use the mount\": refused (EUSERS)",
			(unsigned)ctx->uid, TCM_IDS_MAX);
		return EUSERS;
	}
	/* connect outside the lock: one round trip, and others' requests go on */
	struct tiercache *c = tiercache_connect(p->socket);
	if (!c)
		return tcm_pool_errno(p, errno, "connect", NULL);
	if (tiercache_act_as(c, ctx->uid, ctx->gid, groups, (size_t)n) < 0) {
		int err = errno;
		tiercache_disconnect(c);
		if (err != EPERM)
			return tcm_pool_errno(p, err, "act_as", NULL);
		if (atomic_exchange(&p->act, -1) >= 0)
			tcm_log(TCM_WARN, "uid=%u: tiercached does not let this mount act for other users "
				"(only root or its admins may): every user of the mount reads with uid %u's "
				"rights", (unsigned)ctx->uid, (unsigned)p->self_uid);
		*tc = tcm_pool_pick(p);
		return 0;
	}
	atomic_store(&p->act, 1);
	struct tcm_ident *mine = calloc(1, sizeof(*mine));
	if (mine && n && !(mine->groups = malloc((size_t)n * sizeof(*groups)))) {
		free(mine);
		mine = NULL;
	}
	if (!mine) {
		tiercache_disconnect(c);
		return ENOMEM;
	}
	*mine = (struct tcm_ident){.uid = ctx->uid, .gid = ctx->gid, .ngroups = n,
				   .groups = mine->groups, .tc = c};
	if (n)
		memcpy(mine->groups, groups, (size_t)n * sizeof(*groups));
	pthread_mutex_lock(&p->ids_lock);
	id = ident_find(p, ctx->uid, ctx->gid, groups, n);
	if (!id && p->nids < TCM_IDS_MAX) {
		p->ids[p->nids++] = mine;
		id = mine;
		mine = NULL;
	}
	pthread_mutex_unlock(&p->ids_lock);
	if (mine) { /* another thread was first, or the table filled meanwhile */
		tiercache_disconnect(mine->tc);
		free(mine->groups);
		free(mine);
	}
	if (!id)
		return EUSERS;
	tcm_log(TCM_DEBUG, "uid=%u gid=%u groups=%d: a connection acting for this user",
		(unsigned)ctx->uid, (unsigned)ctx->gid, n);
	*tc = id->tc;
	return 0;
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
