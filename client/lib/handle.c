/*
 * libtiercache file handles: the handle table, open / close / fstat /
 * lseek / read, and re-opening a handle on a new connection (after fork or
 * a daemon restart) with a check that it still names the same version.
 *
 * Threads: the table and handle fields are guarded by tc->tbl_lock; talking
 * to the daemon needs tc->io_lock first (see libtc_private.h). A handle is
 * reference counted so a close racing with a read on another thread never
 * frees memory or closes an fd that is still in use.
 */
#include "libtc_private.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Read one open record (the fields of an OPEN reply) from r and check it;
 * -EPROTO (connection dropped) if it is bad. */
int tc_open_rec_read(struct tiercache *tc, struct proto_rd *r, struct tc_open_rec *o)
{
	o->dh = proto_rd_u64(r);
	o->size = proto_rd_u64(r);
	o->mtime_ns = proto_rd_i64(r);
	o->chunk_size = proto_rd_u32(r);
	uint8_t has = proto_rd_u8(r);
	struct tc_chunk_rec c = {0};
	if (has)
		tc_chunk_rec_get(r, &c);
	if (!proto_rd_ok(r) || has > 1)
		return tc_bad_reply(tc, "OPEN");
	if (o->chunk_size == 0 || o->size > INT64_MAX ||
	    (o->size > 0 && (o->size - 1) / o->chunk_size > UINT32_MAX))
		return tc_bad_reply(tc, "OPEN size / chunk_size");
	uint64_t want = o->size < o->chunk_size ? o->size : o->chunk_size;
	if (has && (c.idx != 0 || c.off != 0 || c.len != want || c.base > (uint64_t)INT64_MAX - c.len))
		return tc_bad_reply(tc, "OPEN chunk 0 bounds");
	o->has_chunk = has;
	o->chunk = c;
	return 0;
}

/* Decode and check a whole OPEN reply. */
static int open_reply_decode(struct tiercache *tc, const struct tc_msg *m, struct tc_open_rec *o)
{
	struct proto_rd r;
	proto_rd_init(&r, m->payload, m->len);
	int rc = tc_open_rec_read(tc, &r, o);
	if (rc == 0 && !proto_rd_done(&r))
		return tc_bad_reply(tc, "OPEN");
	return rc;
}

/* Tell the daemon we are done with dh (no reply wanted). io_lock held. */
static void close_remote(struct tiercache *tc, uint64_t dh)
{
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u64(&w, dh);
	/* a broken connection has already forgotten dh: nothing to do */
	(void)tc_xfer(tc, TC_OP_CLOSE, TC_F_NOREPLY, &w, NULL);
	proto_wr_free(&w);
}

static void chunk_free(struct tc_chunk *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

void tc_chunks_drop(struct tc_handle *hd)
{
	struct tc_chunk **pp = &hd->chunks;
	while (*pp) {
		struct tc_chunk *c = *pp;
		c->live = false;
		if (c->refs == 0) {
			*pp = c->next;
			chunk_free(c);
		} else {
			pp = &c->next;
		}
	}
	hd->nlive = 0;
}

static void handle_free(struct tc_handle *hd)
{
	while (hd->chunks) {
		struct tc_chunk *c = hd->chunks;
		hd->chunks = c->next;
		chunk_free(c);
	}
	free(hd->path);
	free(hd);
}

struct tc_handle *tc_handle_get(struct tiercache *tc, int h)
{
	struct tc_handle *hd = NULL;
	pthread_mutex_lock(&tc->tbl_lock);
	if (h >= 0 && h < tc->nslots && tc->slots[h]) {
		hd = tc->slots[h];
		hd->refs++;
	}
	pthread_mutex_unlock(&tc->tbl_lock);
	return hd;
}

void tc_handle_put(struct tiercache *tc, struct tc_handle *hd)
{
	pthread_mutex_lock(&tc->tbl_lock);
	bool last = --hd->refs == 0;
	pthread_mutex_unlock(&tc->tbl_lock);
	if (last)
		handle_free(hd);
}

/* Put hd in the lowest free slot (POSIX fd style). tbl_lock held. */
static int slot_alloc(struct tiercache *tc, struct tc_handle *hd)
{
	for (int i = 0; i < tc->nslots; i++) {
		if (!tc->slots[i]) {
			tc->slots[i] = hd;
			return i;
		}
	}
	if (tc->nslots >= TC_HANDLES_MAX)
		return -EMFILE;
	int n = tc->nslots ? tc->nslots * 2 : 16;
	struct tc_handle **s = realloc(tc->slots, (size_t)n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s + tc->nslots, 0, (size_t)(n - tc->nslots) * sizeof(*s));
	/* pointer before count: a fork in between leaves a smaller, safe view */
	tc->slots = s;
	int i = tc->nslots;
	tc->nslots = n;
	tc->slots[i] = hd;
	return i;
}

int tc_handle_ensure(struct tiercache *tc, struct tc_handle *hd)
{
	if (hd->closed)
		return -EBADF;
	if (hd->stale) {
		tc_err_detail("%s changed in its source since it was opened", hd->path);
		return -ESTALE;
	}
	if (hd->gen == tc->gen)
		return 0;

	struct proto_wr w;
	struct tc_msg m;
	struct tc_open_rec o;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, hd->path);
	int rc = tc_xfer(tc, TC_OP_OPEN, 0, &w, &m);
	proto_wr_free(&w);
	if (rc == -ENOENT) {
		pthread_mutex_lock(&tc->tbl_lock);
		hd->stale = true;
		pthread_mutex_unlock(&tc->tbl_lock);
		tc_log(1, "path=%s op=reopen err=\"gone from its source\"", hd->path);
		tc_err_detail("%s no longer exists in its source", hd->path);
		return -ESTALE;
	}
	if (rc < 0)
		return rc;
	rc = open_reply_decode(tc, &m, &o);
	tc_msg_free(&m); /* an fd we did not ask for is closed here */
	if (rc < 0)
		return rc;
	if (o.size != hd->size || o.mtime_ns != hd->mtime_ns || o.chunk_size != hd->chunk_size) {
		close_remote(tc, o.dh);
		pthread_mutex_lock(&tc->tbl_lock);
		hd->stale = true;
		pthread_mutex_unlock(&tc->tbl_lock);
		tc_log(1, "path=%s op=reopen err=\"changed in source\" size=%llu->%llu", hd->path,
		       (unsigned long long)hd->size, (unsigned long long)o.size);
		tc_err_detail("%s changed in its source since it was opened", hd->path);
		return -ESTALE;
	}
	pthread_mutex_lock(&tc->tbl_lock);
	hd->dh = o.dh;
	hd->gen = tc->gen;
	pthread_mutex_unlock(&tc->tbl_lock);
	return 0;
}

void tc_handles_forget_fds(struct tiercache *tc)
{
	for (int i = 0; i < tc->nslots; i++) {
		struct tc_handle *hd = tc->slots[i];
		if (!hd)
			continue;
		/* the parent's threads do not exist here: their references are
		 * void, and so are their pins on chunk entries */
		hd->refs = 1;
		for (struct tc_chunk *c = hd->chunks; c; c = c->next)
			c->refs = 0;
		tc_chunks_drop(hd);
	}
}

void tc_handles_free_all(struct tiercache *tc)
{
	for (int i = 0; i < tc->nslots; i++)
		if (tc->slots[i])
			handle_free(tc->slots[i]);
	free(tc->slots);
	tc->slots = NULL;
	tc->nslots = 0;
}

static int open_build(struct tiercache *tc, struct proto_wr *w, void *arg)
{
	(void)tc;
	proto_wr_str(w, arg);
	return 0;
}

int tiercache_open(struct tiercache *tc, const char *path, int flags)
{
	tc_err_begin();
	if (!tc)
		return tc_err_fail(-EINVAL);
	int rc = tc_path_check(path);
	if (rc < 0)
		return tc_err_fail(rc);
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC | O_APPEND))) {
		tc_err_detail("tiercache opens files for reading only");
		return tc_err_fail(-EROFS);
	}
	tc_enter(tc);

	struct tc_msg m;
	struct tc_open_rec o;
	struct tc_req rq = {
		.op = TC_OP_OPEN,
		/* a small file that misses comes with its chunk: no CHUNK
		 * round trip (the open waits for the cold read instead) */
		.flags = tc->no_fd_passing ? 0 : TC_F_WANT_CHUNK0 | TC_F_FILL_CHUNK0,
		.build = open_build,
		.arg = (void *)path,
	};
	tc_io_lock(tc);
	tc_ahead_collect(tc); /* a refill the previous open asked for */
	rc = tc_ahead_open(tc, path); /* handed ahead of a plan: no round trip */
	if (rc >= 0) {
		tc_io_unlock(tc);
		return rc;
	}
	rc = tc_request_locked(tc, &rq, &m);
	if (rc == 0)
		rc = open_reply_decode(tc, &m, &o);
	if (rc == 0)
		rc = tc_handle_install(tc, path, &o, o.has_chunk ? tc_msg_take_fd(&m) : -1);
	tc_io_unlock(tc);
	tc_msg_free(&m);
	return rc < 0 ? tc_err_fail(rc) : rc;
}

int tc_handle_install(struct tiercache *tc, const char *path, const struct tc_open_rec *o, int fd)
{
	struct tc_handle *hd = calloc(1, sizeof(*hd));
	if (!hd || !(hd->path = strdup(path))) {
		free(hd);
		if (fd >= 0)
			close(fd);
		close_remote(tc, o->dh);
		return -ENOMEM;
	}
	hd->refs = 1;
	hd->dh = o->dh;
	hd->gen = tc->gen;
	hd->size = o->size;
	hd->mtime_ns = o->mtime_ns;
	hd->chunk_size = o->chunk_size;
	struct tc_chunk *c0 = NULL;
	if (fd >= 0 && o->has_chunk && !tc->no_fd_passing && (c0 = calloc(1, sizeof(*c0)))) {
		c0->fd = fd;
		c0->len = o->chunk.len;
		c0->base = o->chunk.base;
		c0->gen = tc->gen;
		c0->live = true;
		c0->stamp = ++hd->clock;
		hd->chunks = c0;
		hd->nlive = 1;
	} else if (fd >= 0) {
		close(fd); /* out of memory: stream it later instead */
	}

	pthread_mutex_lock(&tc->tbl_lock);
	int h = slot_alloc(tc, hd);
	pthread_mutex_unlock(&tc->tbl_lock);
	if (h < 0) {
		close_remote(tc, o->dh);
		handle_free(hd);
	}
	return h;
}

int tiercache_close(struct tiercache *tc, int h)
{
	tc_err_begin();
	if (!tc)
		return tc_err_fail(-EINVAL);
	tc_enter(tc);
	tc_io_lock(tc);
	pthread_mutex_lock(&tc->tbl_lock);
	struct tc_handle *hd = h >= 0 && h < tc->nslots ? tc->slots[h] : NULL;
	if (!hd) {
		pthread_mutex_unlock(&tc->tbl_lock);
		tc_io_unlock(tc);
		return tc_err_fail(-EBADF);
	}
	tc->slots[h] = NULL;
	hd->closed = true;
	bool remote = hd->gen == tc->gen && !hd->stale;
	hd->gen = 0;
	/* closing the fds also releases the chunks: CLOSE implies it */
	tc_chunks_drop(hd);
	pthread_mutex_unlock(&tc->tbl_lock);
	if (remote && tc->fd >= 0)
		close_remote(tc, hd->dh);
	tc_io_unlock(tc);
	tc_handle_put(tc, hd); /* the table's reference */
	return 0;
}

/* Many closes, one send: the CLOSE frames of every handle still known to
 * the daemon go out together (a batch of 64 small files would otherwise
 * cost 64 sends and as many daemon wakeups). Same locks as
 * tiercache_close. */
int tiercache_close_many(struct tiercache *tc, const int handles[], size_t n)
{
	tc_err_begin();
	if (!tc || (n && !handles))
		return tc_err_fail(-EINVAL);
	if (n == 0)
		return 0;
	struct tc_handle **hds = calloc(n, sizeof(*hds)); /* calloc: n * size checked */
	uint64_t *dhs = calloc(n, sizeof(*dhs));
	if (!hds || !dhs) {
		free(hds);
		free(dhs);
		int bad = 0;
		for (size_t i = 0; i < n; i++)
			bad |= tiercache_close(tc, handles[i]) < 0;
		return bad ? tc_err_fail(-EBADF) : 0;
	}
	size_t nh = 0, nd = 0;
	bool bad = false;
	tc_enter(tc);
	tc_io_lock(tc);
	pthread_mutex_lock(&tc->tbl_lock);
	for (size_t i = 0; i < n; i++) {
		int h = handles[i];
		struct tc_handle *hd = h >= 0 && h < tc->nslots ? tc->slots[h] : NULL;
		if (!hd) {
			bad = true;
			continue;
		}
		tc->slots[h] = NULL;
		hd->closed = true;
		if (hd->gen == tc->gen && !hd->stale)
			dhs[nd++] = hd->dh;
		hd->gen = 0;
		tc_chunks_drop(hd);
		hds[nh++] = hd;
	}
	pthread_mutex_unlock(&tc->tbl_lock);
	if (nd && tc->fd >= 0)
		(void)tc_xfer_noreply_u64s(tc, TC_OP_CLOSE, dhs, nd);
	tc_io_unlock(tc);
	for (size_t i = 0; i < nh; i++)
		tc_handle_put(tc, hds[i]); /* the table's references */
	free(hds);
	free(dhs);
	return bad ? tc_err_fail(-EBADF) : 0;
}

/* tiercache_fstat@@TIERCACHE_1 (the struct with owner and mode) */
int tc_fstat_v1(struct tiercache *tc, int h, struct tiercache_stat *st);
__asm__(".symver tc_fstat_v1, tiercache_fstat@@TIERCACHE_1");
int tc_fstat_v1(struct tiercache *tc, int h, struct tiercache_stat *st)
{
	tc_err_begin();
	if (!tc || !st)
		return tc_err_fail(-EINVAL);
	tc_enter(tc);
	struct tc_handle *hd = tc_handle_get(tc, h);
	if (!hd)
		return tc_err_fail(-EBADF);
	/* size, mtime and chunk size never change after open */
	*st = (struct tiercache_stat){
		.type = TIERCACHE_FILE,
		.size = hd->size,
		.mtime_ns = hd->mtime_ns,
		.chunk_size = hd->chunk_size,
		.mode = 0444,
		.uid = TIERCACHE_OWNER_NONE,
		.gid = TIERCACHE_OWNER_NONE,
	};
	tc_handle_put(tc, hd);
	return 0;
}

/* tiercache_fstat@TIERCACHE_0: the struct before mode, uid, gid */
int tc_fstat_v0(struct tiercache *tc, int h, struct tiercache_stat *st);
__asm__(".symver tc_fstat_v0, tiercache_fstat@TIERCACHE_0");
int tc_fstat_v0(struct tiercache *tc, int h, struct tiercache_stat *st)
{
	struct tiercache_stat full;
	int rc = tc_fstat_v1(tc, h, st ? &full : NULL);
	if (rc == 0)
		memcpy(st, &full, offsetof(struct tiercache_stat, mode));
	return rc;
}

int64_t tiercache_lseek(struct tiercache *tc, int h, int64_t off, int whence)
{
	tc_err_begin();
	if (!tc)
		return tc_err_fail(-EINVAL);
	tc_enter(tc);
	int rc = 0;
	int64_t pos = -1;
	pthread_mutex_lock(&tc->tbl_lock);
	struct tc_handle *hd = h >= 0 && h < tc->nslots ? tc->slots[h] : NULL;
	if (!hd) {
		rc = -EBADF;
		goto out;
	}
	int64_t base;
	switch (whence) {
	case SEEK_SET: base = 0; break;
	case SEEK_CUR: base = (int64_t)hd->pos; break;
	case SEEK_END: base = (int64_t)hd->size; break;
	default: rc = -EINVAL; goto out;
	}
	if (off > 0 && base > INT64_MAX - off) {
		rc = -EOVERFLOW;
		goto out;
	}
	if (base + off < 0) {
		rc = -EINVAL;
		goto out;
	}
	pos = base + off;
	hd->pos = (uint64_t)pos;
out:
	pthread_mutex_unlock(&tc->tbl_lock);
	return rc < 0 ? tc_err_fail(rc) : pos;
}

ssize_t tiercache_pread(struct tiercache *tc, int h, void *buf, size_t n, uint64_t off)
{
	tc_err_begin();
	if (!tc || (!buf && n))
		return tc_err_fail(-EINVAL);
	tc_enter(tc);
	struct tc_handle *hd = tc_handle_get(tc, h);
	if (!hd)
		return tc_err_fail(-EBADF);
	ssize_t r = tc_handle_pread(tc, hd, buf, n, off);
	tc_handle_put(tc, hd);
	return r < 0 ? tc_err_fail((int)r) : r;
}

ssize_t tiercache_read(struct tiercache *tc, int h, void *buf, size_t n)
{
	tc_err_begin();
	if (!tc || (!buf && n))
		return tc_err_fail(-EINVAL);
	tc_enter(tc);
	struct tc_handle *hd = tc_handle_get(tc, h);
	if (!hd)
		return tc_err_fail(-EBADF);
	pthread_mutex_lock(&tc->tbl_lock);
	uint64_t pos = hd->pos;
	pthread_mutex_unlock(&tc->tbl_lock);
	ssize_t r = tc_handle_pread(tc, hd, buf, n, pos);
	if (r > 0) {
		pthread_mutex_lock(&tc->tbl_lock);
		hd->pos = pos + (uint64_t)r;
		pthread_mutex_unlock(&tc->tbl_lock);
	}
	tc_handle_put(tc, hd);
	return r < 0 ? tc_err_fail((int)r) : r;
}
