/*
 * tiercache_open_many: many files opened with one OPEN_MANY round trip per
 * TC_OPEN_MANY_MAX of them (protocol.h). Each record of a reply becomes a
 * handle exactly as an OPEN reply does (tc_open_rec_read,
 * tc_handle_install), with chunk 0's descriptor when the daemon had it.
 *
 * On a connection with a job whose plan the daemon knows, the files of the
 * batch held ahead (ahead.c) come from that table first, each as
 * tiercache_open would take it (the same freshness check, used / released
 * accounting and refills); only the others go in OPEN_MANY frames, and a
 * batch held whole sends none. A DataLoader batch of a planned epoch
 * (tiercache.torch.Dataset.__getitems__) then costs no round trip.
 *
 * Threads: like tiercache_open, io_lock is held from a frame's send to the
 * handles it made; the handle table takes tbl_lock inside.
 */
#include "libtc_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

/* One frame's files: indices into the caller's arrays. */
struct om_frame {
	const char *const *paths;
	uint32_t idx[TC_OPEN_MANY_MAX];
	uint32_t n;
};

static int om_build(struct tiercache *tc, struct proto_wr *w, void *arg)
{
	const struct om_frame *f = arg;
	(void)tc;
	proto_wr_u32(w, f->n);
	for (uint32_t i = 0; i < f->n; i++)
		proto_wr_str(w, f->paths[f->idx[i]]);
	return 0;
}

/* One record of a reply: an error, or an open record. */
struct om_rec {
	uint32_t err;
	struct tc_open_rec o;
};

/* Check the whole reply before acting on any of it: a malformed one
 * drops the connection (with every daemon handle it named). */
static int om_decode(struct tiercache *tc, const struct tc_msg *m, uint32_t n, struct om_rec *recs)
{
	struct proto_rd r;
	int want_fds = 0;
	proto_rd_init(&r, m->payload, m->len);
	if (proto_rd_u32(&r) != n || !proto_rd_ok(&r))
		return tc_bad_reply(tc, "OPEN_MANY count");
	for (uint32_t i = 0; i < n; i++) {
		recs[i].err = proto_rd_u32(&r);
		if (!proto_rd_ok(&r))
			return tc_bad_reply(tc, "OPEN_MANY record");
		if (recs[i].err) {
			size_t len;
			if (!proto_rd_str(&r, TC_FRAME_MAX, &len) || recs[i].err > 4095)
				return tc_bad_reply(tc, "OPEN_MANY error record");
			continue;
		}
		int rc = tc_open_rec_read(tc, &r, &recs[i].o);
		if (rc < 0)
			return rc;
		want_fds += recs[i].o.has_chunk;
	}
	if (!proto_rd_done(&r) || want_fds != m->nfds)
		return tc_bad_reply(tc, "OPEN_MANY descriptors");
	return 0;
}

/* Send one frame and make its handles. The number opened, or -errno if
 * the frame got no answer (every file of it failed with that). */
static int om_frame_run(struct tiercache *tc, struct om_frame *f, int handles[], int errs[])
{
	struct om_rec recs[TC_OPEN_MANY_MAX];
	struct tc_msg m;
	struct tc_req rq = {
		.op = TC_OP_OPEN_MANY,
		.flags = tc->no_fd_passing ? 0 : TC_F_WANT_CHUNK0,
		.build = om_build,
		.arg = f,
	};
	int opened = 0, nextfd = 0;
	tc_io_lock(tc);
	int rc = tc_request_locked(tc, &rq, &m);
	if (rc == 0)
		rc = om_decode(tc, &m, f->n, recs);
	for (uint32_t i = 0; rc == 0 && i < f->n; i++) {
		uint32_t at = f->idx[i];
		if (recs[i].err) {
			errs[at] = (int)recs[i].err;
			continue;
		}
		int fd = -1;
		if (recs[i].o.has_chunk) {
			fd = m.fds[nextfd];
			m.fds[nextfd++] = -1; /* the handle owns it from here */
		}
		int h = tc_handle_install(tc, f->paths[at], &recs[i].o, fd);
		if (h < 0) {
			errs[at] = -h;
		} else {
			handles[at] = h;
			errs[at] = 0;
			opened++;
		}
	}
	tc_io_unlock(tc);
	tc_msg_free(&m);
	if (rc < 0)
		for (uint32_t i = 0; i < f->n; i++)
			errs[f->idx[i]] = -rc;
	return rc < 0 ? rc : opened;
}

int tiercache_open_many(struct tiercache *tc, const char *const paths[], size_t n, int handles[],
			int errs[], int flags)
{
	tc_err_begin();
	if (!tc || (n && (!paths || !handles || !errs)) || n > (size_t)INT32_MAX)
		return tc_err_fail(-EINVAL);
	for (size_t i = 0; i < n; i++) {
		handles[i] = -1;
		errs[i] = EINVAL;
	}
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC | O_APPEND))) {
		for (size_t i = 0; i < n; i++)
			errs[i] = EROFS;
		tc_err_detail("tiercache opens files for reading only");
		return tc_err_fail(-EROFS);
	}
	tc_enter(tc);

	/* first what the open-ahead table holds (errs[i] -1: still to ask) */
	int opened = 0;
	tc_io_lock(tc);
	tc_ahead_collect(tc); /* a refill the previous call asked for */
	for (size_t i = 0; i < n; i++) {
		int rc = tc_path_check(paths[i]);
		if (rc < 0) {
			errs[i] = -rc; /* never sent */
			continue;
		}
		errs[i] = -1;
		rc = tc_ahead_open(tc, paths[i]);
		if (rc >= 0) {
			handles[i] = rc;
			errs[i] = 0;
			opened++;
		}
	}
	tc_io_unlock(tc);

	struct om_frame f = {.paths = paths};
	int frames = 0, first_err = 0;
	bool answered = false;
	for (size_t i = 0; i <= n; i++) {
		if (i < n) {
			if (errs[i] != -1)
				continue; /* refused, or held ahead */
			f.idx[f.n++] = (uint32_t)i;
		}
		if (f.n == TC_OPEN_MANY_MAX || (i == n && f.n)) {
			int rc = om_frame_run(tc, &f, handles, errs);
			frames++;
			if (rc >= 0) {
				opened += rc;
				answered = true;
			} else if (!first_err) {
				first_err = rc;
			}
			f.n = 0;
		}
	}
	/* nothing could be asked: the daemon is unreachable (or refused every
	 * frame) and nothing was held ahead; the detail of that failure
	 * stands. Handles made from the table are the caller's to close, so
	 * with any of them the count is returned and the rest fail per file. */
	if (frames && !answered && !opened)
		return tc_err_fail(first_err);
	return opened;
}
