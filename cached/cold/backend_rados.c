/*
 * Cold backend "rados": a dataset is the objects of one RADOS pool, in one
 * namespace, whose names start with a prefix. Object "PREFIX" + "a/b.bin" is
 * the dataset file "a/b.bin". Two forms of file are read:
 *   plain    one object per file (`rados put`);
 *   striped  libradosstriper's form (`rados --striper put`): objects
 *            "F.%016x", the first one carrying the layout and logical size
 *            in xattrs. Needed above the OSD's object size limit.
 * Both are recognised in any dataset; `layout` only says which form wins
 * when a name exists in both, and which form `tierctl import` writes.
 *
 * Striped files are read with plain librados reads of their objects, not
 * through libradosstriper: the striper takes a lock on the first object for
 * every read, which is a write that bumps that object's version and mtime
 * (measured on Pacific), so a cache keyed by that version would never hit.
 *
 * Versions and staleness (what read() checks against io->expect):
 *   plain    one read op: assert_version(expect.version) + stat + read, so
 *            the bytes come from exactly that version, and size and mtime
 *            (RADOS mtimes have 1 s resolution) must match;
 *   striped  the data reads, then, after they all completed, one op on the
 *            first object: assert_version + cmpxattr(striper.size) + stat.
 *            Every striper write locks the first object before touching the
 *            data, which bumps its version; a write that a data read could
 *            have seen is therefore visible to the check that follows it.
 * A mismatch is -ESTALE; a missing file is -ENOENT.
 *
 * Threads: open/list/stat/close block (worker threads or startup; list and
 * stat are in backend_rados_list.c, beside stat_async(), which starts the
 * same probes and returns, its done() following as a read's does, and which
 * quiesce() waits for too). read() may be called from any thread,
 * concurrently; it never blocks on the cluster. At most max_inflight reads
 * are in flight per dataset, the rest wait in a FIFO inside the backend.
 * Completions run on librados' finisher thread, which calls io->done and
 * then starts the next queued read; done must not block and must not call
 * close(). In rare failures (out of memory, a sub-op refused) done runs on
 * the thread that called read(), before read() returns 0. quiesce() fails
 * queued reads with -ECANCELED (done on the calling thread), waits for
 * those in flight and refuses new ones (-ESHUTDOWN); the daemon calls it
 * at shutdown while its workers still take the completions. close() does
 * the same, then disconnects. Every op has rados_osd_op_timeout =
 * op_timeout, so a read ends with -ETIMEDOUT when the cluster does not
 * answer (a read that already waited op_timeout in the queue while the
 * cluster is unreachable fails without being sent); librados reconnects by
 * itself when the cluster is back.
 */
#include "backend_rados.h"
#include "backend_rados_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rados/librados.h>

#include "config.h"
#include "log.h"

#define MAX_EXTENTS 65536u /* per read: guards against absurd layouts */

struct rext {
	struct rreq *q;
	rados_completion_t comp;
	uint64_t objno;
	uint64_t objoff;
	size_t len;
	char *dst;
};

/* One cold_io on its way through the backend. */
struct rreq {
	struct rados_ds *r;
	struct cold_io *io;
	struct rreq *next; /* FIFO while queued */
	uint64_t queued_ms;
	char *oid; /* the plain object, or the striped file's first object */
	/* plain read and striped check */
	rados_read_op_t op;
	rados_completion_t comp;
	uint64_t st_size;
	time_t st_mtime;
	int st_rv;
	size_t nread;
	int rd_rv;
	char sizestr[24];
	/* probe of the first object when the plain object is missing */
	struct probe pr;
	/* striped */
	struct striper_layout lay;
	uint64_t want; /* bytes the read returns: len clipped to the size */
	struct rext *ext;
	unsigned next_ext_n;
	atomic_uint pending;
	atomic_int err;
};

/* ---- small helpers ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* RADOS keeps mtimes in whole seconds (the C API's stat gives a time_t) */
static bool mtime_matches(const struct cold_stat *want, time_t mtime)
{
	return want->mtime_ns / 1000000000LL == (int64_t)mtime;
}

static bool stat_matches(const struct cold_stat *want, uint64_t size, time_t mtime)
{
	return want->size == size && mtime_matches(want, mtime);
}

/* The result of a compound read op: assert_version and cmpxattr failures
 * mean "not the version expected"; a passed cmpxattr makes the op return 1. */
static int op_result(rados_completion_t comp)
{
	int rc = rados_aio_get_return_value(comp);
	if (rc > 0)
		return 0;
	return rc == -ERANGE || rc == -EOVERFLOW || rc == -ECANCELED ? -ESTALE : rc;
}

/* ---- open / close ---- */

static int conf_set(struct rados_ds *r, const char *k, const char *v, char *err, size_t n)
{
	int rc = rados_conf_set(r->cluster, k, v);
	if (rc < 0)
		snprintf(err, n, "dataset %s: cannot set Ceph option %s=%s: %s", r->name, k, v,
			 strerror(-rc));
	return rc;
}

static void rados_ds_free(struct rados_ds *r)
{
	if (r->ioctx)
		rados_ioctx_destroy(r->ioctx);
	if (r->cluster)
		rados_shutdown(r->cluster);
	rados_be_smap_clear(r);
	free(r->sm_b);
	pthread_cond_destroy(&r->idle);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static int cold_rados_open(struct cold *c, const struct dataset_conf *dc, char *err, size_t n)
{
	if (c->priv) {
		snprintf(err, n, "dataset %s: rados backend already open", c->dataset);
		return -EALREADY;
	}
	struct rados_ds *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, n, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->idle, NULL);
	snprintf(r->name, sizeof(r->name), "%s", c->dataset[0] ? c->dataset : dc->name);
	snprintf(r->prefix, sizeof(r->prefix), "%s", dc->prefix);
	r->prefer_striper = strcmp(dc->layout, "striper") == 0;
	r->op_timeout_s = dc->op_timeout_s ? dc->op_timeout_s : RADOS_DEFAULT_OP_TIMEOUT_S;
	r->max_inflight = dc->max_inflight ? dc->max_inflight : RADOS_DEFAULT_MAX_INFLIGHT;

	const char *id = dc->client_id[0] ? dc->client_id : "admin";
	const char *conf = dc->ceph_conf[0] ? dc->ceph_conf : "/etc/ceph/ceph.conf";
	char keyring_desc[PATH_MAX + 64];
	if (dc->keyring[0])
		snprintf(keyring_desc, sizeof(keyring_desc), "keyring %s", dc->keyring);
	else
		snprintf(keyring_desc, sizeof(keyring_desc), "the keyring named in %s", conf);
	char ent[80], v[32];
	int rc;
	snprintf(ent, sizeof(ent), "client.%s", id);

	if (!dc->pool[0]) {
		snprintf(err, n, "dataset %s: no pool configured", r->name);
		rc = -EINVAL;
		goto out;
	}
	rc = rados_create2(&r->cluster, "ceph", ent, 0);
	if (rc < 0) {
		snprintf(err, n, "dataset %s: cannot create a Ceph client as %s: %s", r->name, ent,
			 strerror(-rc));
		r->cluster = NULL;
		goto out;
	}
	rc = rados_conf_read_file(r->cluster, conf);
	if (rc < 0) {
		snprintf(err, n, "dataset %s: cannot read ceph_conf %s: %s", r->name, conf,
			 strerror(-rc));
		goto out;
	}
	if (dc->keyring[0]) {
		/* librados only says "no keyring found": name the file ourselves */
		if (access(dc->keyring, R_OK) != 0) {
			rc = -errno;
			snprintf(err, n, "dataset %s: cannot read keyring %s: %s", r->name,
				 dc->keyring, strerror(errno));
			goto out;
		}
		if ((rc = conf_set(r, "keyring", dc->keyring, err, n)) < 0)
			goto out;
	}
	/* librados waits forever by default: bound every op and the mount */
	snprintf(v, sizeof(v), "%u", r->op_timeout_s);
	if ((rc = conf_set(r, "rados_osd_op_timeout", v, err, n)) < 0 ||
	    (rc = conf_set(r, "rados_mon_op_timeout", v, err, n)) < 0 ||
	    (rc = conf_set(r, "client_mount_timeout", v, err, n)) < 0)
		goto out;
	/* our own bound (max_inflight) is the one that counts: librados'
	 * throttle would otherwise block read() on the caller's thread */
	if ((rc = conf_set(r, "objecter_inflight_op_bytes", "4294967296", err, n)) < 0 ||
	    (rc = conf_set(r, "objecter_inflight_ops", "65536", err, n)) < 0)
		goto out;
	/* the daemon logs one line per event itself; keep librados off stderr */
	if ((rc = conf_set(r, "log_to_stderr", "false", err, n)) < 0 ||
	    (rc = conf_set(r, "err_to_stderr", "false", err, n)) < 0)
		goto out;

	rc = rados_connect(r->cluster);
	if (rc == -EACCES || rc == -EPERM || rc == -EKEYREJECTED || rc == -ENOENT ||
	    rc == -EINVAL) {
		snprintf(err, n,
			 "dataset %s: cephx authentication as %s failed with %s: %s "
			 "(check the key and the client_id)",
			 r->name, ent, keyring_desc, strerror(-rc));
		goto out;
	} else if (rc == -ETIMEDOUT) {
		snprintf(err, n,
			 "dataset %s: cannot reach the Ceph monitors of %s within %us "
			 "(cluster down, wrong mon host, or cephx failing with %s)",
			 r->name, conf, r->op_timeout_s, keyring_desc);
		goto out;
	} else if (rc < 0) {
		snprintf(err, n, "dataset %s: cannot connect to Ceph (%s, %s): %s", r->name, conf,
			 ent, strerror(-rc));
		goto out;
	}
	rc = rados_ioctx_create(r->cluster, dc->pool, &r->ioctx);
	if (rc < 0) {
		r->ioctx = NULL;
		snprintf(err, n, "dataset %s: pool %s: %s", r->name, dc->pool,
			 rc == -ENOENT ? "no such pool" : strerror(-rc));
		goto out;
	}
	rados_ioctx_set_namespace(r->ioctx, dc->rados_namespace[0] ? dc->rados_namespace : NULL);

	/* One read reaches an OSD: catches missing caps and down OSDs now
	 * rather than at the first client read. */
	{
		char *oid = rados_be_oid(r, ".tiercache-probe", false);
		struct objinfo oi;
		if (!oid) {
			rc = -ENOMEM;
			snprintf(err, n, "out of memory");
			goto out;
		}
		rados_be_probe_many(r, &oid, &oi, 1);
		free(oid);
		rc = oi.rc == -ENOENT ? 0 : oi.rc;
		if (rc == -EPERM || rc == -EACCES) {
			snprintf(err, n, "dataset %s: %s may not read pool %s (check its osd caps)",
				 r->name, ent, dc->pool);
			goto out;
		} else if (rc < 0) {
			snprintf(err, n, "dataset %s: pool %s: the OSDs did not answer a read: %s",
				 r->name, dc->pool, strerror(-rc));
			goto out;
		}
	}
	c->priv = r;
	r = NULL;
	rc = 0;
out:
	if (r)
		rados_ds_free(r);
	return rc;
}

static void req_free(struct rreq *q);

/* Any thread but librados' own (done() must not call it). */
static void cold_rados_quiesce(struct cold *c)
{
	struct rados_ds *r = c->priv;
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->closing = true;
	struct rreq *q = r->qhead;
	r->qhead = r->qtail = NULL;
	pthread_mutex_unlock(&r->lock);
	while (q) {
		struct rreq *nx = q->next;
		struct cold_io *io = q->io;
		req_free(q);
		io->result = -ECANCELED;
		io->done(io);
		q = nx;
	}
	pthread_mutex_lock(&r->lock);
	while (r->inflight || r->stats)
		pthread_cond_wait(&r->idle, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

static void cold_rados_close(struct cold *c)
{
	struct rados_ds *r = c->priv;
	if (!r)
		return;
	cold_rados_quiesce(c);
	rados_ds_free(r);
	c->priv = NULL;
}

/* ---- read ---- */

static void req_free(struct rreq *q)
{
	if (q->op)
		rados_release_read_op(q->op);
	if (q->comp)
		rados_aio_release(q->comp);
	free(q->ext);
	free(q->oid);
	free(q);
}

static int req_start(struct rreq *q);

/* The read is over: report it, then hand its slot to the next queued read
 * (a loop, not recursion, when those fail to start). Runs on a librados
 * completion thread. */
static void req_end(struct rreq *q, ssize_t res)
{
	struct rados_ds *r = q->r;
	for (;;) {
		struct cold_io *io = q->io;
		req_free(q);
		io->result = res;
		io->done(io);

		pthread_mutex_lock(&r->lock);
		bool was = r->unhealthy;
		if (res == -ETIMEDOUT)
			r->unhealthy = true;
		else if (res >= 0 || res == -ENOENT || res == -ESTALE)
			r->unhealthy = false;
		if (was != r->unhealthy) {
			if (r->unhealthy)
				log_warn("dataset=%s op=cold_read state=unreachable err=\"%s\"",
					 r->name, strerror(ETIMEDOUT));
			else
				log_info("dataset=%s op=cold_read state=reachable", r->name);
		}
		struct rreq *nx = r->closing ? NULL : r->qhead;
		if (nx) {
			r->qhead = nx->next;
			if (!r->qhead)
				r->qtail = NULL;
		} else if (--r->inflight == 0) {
			pthread_cond_broadcast(&r->idle);
		}
		/* while the cluster does not answer, a read that already
		 * waited op_timeout in the queue fails now rather than
		 * waiting another op_timeout on the wire */
		bool expired = nx && r->unhealthy &&
			       now_ms() - nx->queued_ms > (uint64_t)r->op_timeout_s * 1000u;
		pthread_mutex_unlock(&r->lock);
		if (!nx)
			return;
		int rc = expired ? -ETIMEDOUT : req_start(nx);
		if (rc == 0)
			return;
		q = nx;
		res = rc;
	}
}

static void striper_check_done(rados_completion_t comp, void *arg)
{
	struct rreq *q = arg;
	(void)comp;
	int rc = op_result(q->comp);
	if (rc == 0 && q->st_rv < 0)
		rc = q->st_rv;
	if (rc == 0 && !mtime_matches(&q->io->expect, q->st_mtime))
		rc = -ESTALE;
	req_end(q, rc < 0 ? rc : (ssize_t)q->want);
}

/* All data reads of a striped read are back: check the first object. */
static void striper_check(struct rreq *q)
{
	int rc = atomic_load(&q->err);
	if (rc < 0) {
		req_end(q, rc);
		return;
	}
	const struct cold_io *io = q->io;
	rc = rados_aio_create_completion2(q, striper_check_done, &q->comp);
	if (rc < 0) {
		q->comp = NULL;
		req_end(q, rc);
		return;
	}
	q->op = rados_create_read_op();
	if (!q->op) {
		req_end(q, -ENOMEM);
		return;
	}
	if (io->expect.version)
		rados_read_op_assert_version(q->op, io->expect.version);
	int n = snprintf(q->sizestr, sizeof(q->sizestr), "%" PRIu64, io->expect.size);
	rados_read_op_cmpxattr(q->op, RADOS_STRIPER_XATTR_SIZE, LIBRADOS_CMPXATTR_OP_EQ, q->sizestr,
			       (size_t)n);
	rados_read_op_stat(q->op, &q->st_size, &q->st_mtime, &q->st_rv);
	rc = rados_aio_read_op_operate(q->op, q->r->ioctx, q->comp, q->oid, 0);
	if (rc < 0)
		req_end(q, rc);
}

static void ext_done(rados_completion_t comp, void *arg)
{
	struct rext *x = arg;
	struct rreq *q = x->q;
	int rv = rados_aio_get_return_value(comp);
	rados_aio_release(comp);
	x->comp = NULL;
	size_t got = 0;
	if (rv >= 0)
		got = (size_t)rv <= x->len ? (size_t)rv : x->len;
	else if (rv != -ENOENT) /* a missing object is a hole */
		atomic_store(&q->err, rv);
	if (got < x->len)
		memset(x->dst + got, 0, x->len - got);
	if (atomic_fetch_sub(&q->pending, 1) == 1)
		striper_check(q);
}

/* Split [off, off + want) of a striped file into per-object extents, as
 * libradosstriper lays it out (the CephFS file layout). */
static int striper_extents(struct rreq *q)
{
	const struct striper_layout *l = &q->lay;
	uint64_t off = q->io->off, len = q->want;
	uint64_t maxn = len / l->su + 2;
	if (maxn > MAX_EXTENTS)
		return -EINVAL;
	q->ext = calloc(maxn, sizeof(*q->ext));
	if (!q->ext)
		return -ENOMEM;
	uint64_t per_obj = l->os / l->su;
	char *dst = q->io->buf;
	unsigned n = 0;
	while (len) {
		uint64_t blockno = off / l->su, inblk = off % l->su;
		uint64_t stripeno = blockno / l->sc, stripepos = blockno % l->sc;
		uint64_t objno = stripeno / per_obj * l->sc + stripepos;
		uint64_t objoff = stripeno % per_obj * l->su + inblk;
		uint64_t take = l->su - inblk < len ? l->su - inblk : len;
		if (n && q->ext[n - 1].objno == objno &&
		    q->ext[n - 1].objoff + q->ext[n - 1].len == objoff) {
			q->ext[n - 1].len += take;
		} else {
			q->ext[n] = (struct rext){
			    .q = q, .objno = objno, .objoff = objoff, .len = take, .dst = dst};
			n++;
		}
		off += take;
		len -= take;
		dst += take;
	}
	q->next_ext_n = n;
	return 0;
}

/* Start the data reads of a striped read. Always ends through req_end. */
static void striper_read(struct rreq *q)
{
	const struct cold_io *io = q->io;
	q->want = io->off >= io->expect.size ? 0 : io->expect.size - io->off;
	if (q->want > io->len)
		q->want = io->len;
	int rc = striper_extents(q);
	if (rc < 0) {
		req_end(q, rc);
		return;
	}
	unsigned n = q->next_ext_n;
	/* +1: this function's own reference, so the last completion cannot
	 * run the check before every read was submitted */
	atomic_store(&q->pending, n + 1);
	atomic_store(&q->err, 0);
	size_t olen = strlen(q->oid) + 1;
	char *oid = malloc(olen);
	if (!oid)
		atomic_store(&q->err, -ENOMEM);
	unsigned started = 0;
	for (unsigned i = 0; oid && i < n; i++) {
		struct rext *x = &q->ext[i];
		/* q->oid is "PREFIX PATH.0000000000000000": same length */
		memcpy(oid, q->oid, olen);
		snprintf(oid + olen - 17, 17, "%016" PRIx64, x->objno);
		rc = rados_aio_create_completion2(x, ext_done, &x->comp);
		if (rc == 0) {
			rc = rados_aio_read(q->r->ioctx, oid, x->comp, x->dst, x->len, x->objoff);
			if (rc < 0)
				rados_aio_release(x->comp);
		}
		if (rc < 0) {
			atomic_store(&q->err, rc);
			break;
		}
		started++;
	}
	free(oid);
	unsigned drop = n - started + 1;
	if (atomic_fetch_sub(&q->pending, drop) == drop)
		striper_check(q);
}

static void probe_done(rados_completion_t comp, void *arg)
{
	struct rreq *q = arg;
	(void)comp;
	struct objinfo oi;
	rados_be_probe_finish(&q->pr, &oi);
	if (oi.rc < 0) {
		req_end(q, oi.rc);
		return;
	}
	if (!oi.striped) {
		req_end(q, -ENOENT);
		return;
	}
	pthread_mutex_lock(&q->r->lock);
	rados_be_smap_set(q->r, q->io->path, &oi.lay);
	pthread_mutex_unlock(&q->r->lock);
	const struct cold_stat *e = &q->io->expect;
	if ((e->version && e->version != oi.version) ||
	    !stat_matches(e, oi.logical_size, oi.mtime)) {
		req_end(q, -ESTALE);
		return;
	}
	q->lay = oi.lay;
	striper_read(q);
}

static void plain_done(rados_completion_t comp, void *arg)
{
	struct rreq *q = arg;
	(void)comp;
	int rc = op_result(q->comp);
	if (rc == -ENOENT) {
		/* maybe a striped file not seen by list() or stat() */
		rados_release_read_op(q->op);
		rados_aio_release(q->comp);
		q->op = NULL;
		q->comp = NULL;
		char *head = rados_be_oid(q->r, q->io->path, true);
		if (!head) {
			req_end(q, -ENOMEM);
			return;
		}
		free(q->oid);
		q->oid = head;
		rc = rados_be_probe_start(q->r, &q->pr, q->oid, probe_done, q);
		if (rc < 0)
			req_end(q, rc);
		return;
	}
	if (rc == 0 && q->st_rv < 0)
		rc = q->st_rv;
	if (rc == 0 && q->rd_rv < 0)
		rc = q->rd_rv;
	if (rc == 0 && !stat_matches(&q->io->expect, q->st_size, q->st_mtime))
		rc = -ESTALE;
	req_end(q, rc < 0 ? rc : (ssize_t)q->nread);
}

static int plain_read(struct rreq *q)
{
	const struct cold_io *io = q->io;
	int rc = rados_aio_create_completion2(q, plain_done, &q->comp);
	if (rc < 0) {
		q->comp = NULL;
		return rc;
	}
	q->op = rados_create_read_op();
	if (!q->op)
		return -ENOMEM;
	if (io->expect.version)
		rados_read_op_assert_version(q->op, io->expect.version);
	rados_read_op_stat(q->op, &q->st_size, &q->st_mtime, &q->st_rv);
	rados_read_op_read(q->op, io->off, io->len, io->buf, &q->nread, &q->rd_rv);
	return rados_aio_read_op_operate(q->op, q->r->ioctx, q->comp, q->oid, 0);
}

/* Start a read that holds a slot. 0: it ends through req_end. <0: it did
 * not start (the caller still owns q and the slot). */
static int req_start(struct rreq *q)
{
	struct rados_ds *r = q->r;
	pthread_mutex_lock(&r->lock);
	bool striped = rados_be_smap_get(r, q->io->path, &q->lay);
	pthread_mutex_unlock(&r->lock);
	q->oid = rados_be_oid(r, q->io->path, striped);
	if (!q->oid)
		return -ENOMEM;
	if (striped) {
		striper_read(q);
		return 0;
	}
	int rc = plain_read(q);
	if (rc < 0) {
		if (q->op)
			rados_release_read_op(q->op);
		if (q->comp)
			rados_aio_release(q->comp);
		q->op = NULL;
		q->comp = NULL;
		free(q->oid);
		q->oid = NULL;
	}
	return rc;
}

static ssize_t cold_rados_read(struct cold *c, struct cold_io *io)
{
	struct rados_ds *r = c->priv;
	if (!r)
		return -ENOTCONN;
	if (!io->done || (!io->buf && io->len))
		return -EINVAL;
	if (!rados_be_path_ok(io->path))
		return -ENOENT;
	struct rreq *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->r = r;
	q->io = io;
	pthread_mutex_lock(&r->lock);
	if (r->closing) {
		pthread_mutex_unlock(&r->lock);
		free(q);
		return -ESHUTDOWN;
	}
	if (r->inflight >= r->max_inflight) {
		q->queued_ms = now_ms();
		if (r->qtail)
			r->qtail->next = q;
		else
			r->qhead = q;
		r->qtail = q;
		pthread_mutex_unlock(&r->lock);
		return 0;
	}
	r->inflight++;
	pthread_mutex_unlock(&r->lock);
	int rc = req_start(q);
	if (rc == 0)
		return 0;
	/* never started: give the slot back (to a queued read if any) */
	free(q->oid);
	q->oid = NULL;
	pthread_mutex_lock(&r->lock);
	struct rreq *nx = r->qhead;
	if (nx) {
		r->qhead = nx->next;
		if (!r->qhead)
			r->qtail = NULL;
	} else if (--r->inflight == 0) {
		pthread_cond_broadcast(&r->idle);
	}
	pthread_mutex_unlock(&r->lock);
	free(q);
	if (nx) {
		int rc2 = req_start(nx);
		if (rc2 < 0)
			req_end(nx, rc2);
	}
	return rc;
}

const struct cold_backend_ops cold_rados_ops = {
    .name = "rados",
    .caps = COLD_CAP_ASYNC | COLD_CAP_VERSION,
    .open = cold_rados_open,
    .list = rados_be_list,
    .stat = rados_be_stat,
    .stat_async = rados_be_stat_async,
    .read = cold_rados_read,
    .quiesce = cold_rados_quiesce,
    .close = cold_rados_close,
};
