/*
 * Access traces for admins: TC_OP_TRACE_START / TC_OP_TRACE_STOP (the
 * recorder is cache/trace_rec.c; tierctl trace drives these). Loop thread.
 *
 * TRACE_START (admin)
 *   req: str path (absolute), str dataset ("" = every dataset),
 *        u64 max_bytes (0: 1 GiB; at most 64 GiB)
 *   The daemon creates the file itself, as its own user, mode 0600, with
 *   O_CREAT|O_EXCL|O_NOFOLLOW: it never overwrites a file nor follows a
 *   link. Errors: EINVAL (relative path, bound out of range), ENOENT (no
 *   such dataset), EEXIST (the file exists), EBUSY (a trace runs: the
 *   message names its file), and the errno of creating or writing the file.
 * TRACE_STOP (admin)
 *   req: empty. Errors: ENOENT when no trace runs (the message says how
 *   the last one ended).
 * rep (both): a record set, one object section "trace" with the fields of
 *   trace_rec_report (state, file, records, file_bytes, reason, ...).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "handlers.h"
#include "log.h"
#include "trace_rec.h"

static void trace_reply(struct conn *c, const struct tc_hdr *h, const struct trace_rec_info *info)
{
	struct proto_wr w;
	struct proto_rs rs;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_rs_begin(&rs, &w);
	proto_rs_section(&rs, "trace", TC_SHAPE_OBJECT);
	proto_rs_record(&rs);
	trace_rec_report(info, &rs);
	proto_rs_end(&rs);
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}

void handlers_trace_start(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct cache *cache = conn_api(c)->cache;
	char path[PATH_MAX], dsname[TC_DATASET_NAME_MAX + 1], err[PATH_MAX + 128];
	struct trace_rec_info info;
	if (!conn_require_admin(c, h))
		return;
	bool ok = proto_rd_str_copy(r, path, sizeof(path));
	ok = ok && proto_rd_str_copy(r, dsname, sizeof(dsname));
	uint64_t max_bytes = proto_rd_u64(r);
	if (!ok || !proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG,
			       "malformed TRACE_START (str path < %d bytes, str dataset <= %u bytes, "
			       "u64 max_bytes)",
			       PATH_MAX, TC_DATASET_NAME_MAX);
		return;
	}
	if (path[0] != '/') {
		conn_reply_err(c, h->op, h->id, EINVAL,
			       "trace file \"%s\" is not an absolute path: the daemon opens it, "
			       "from its own working directory (tierctl trace resolves relative names)",
			       path);
		return;
	}
	if (dsname[0] && !cache_dataset(cache, dsname, strlen(dsname))) {
		conn_reply_err(c, h->op, h->id, ENOENT,
			       "no dataset named \"%s\" (tierctl datasets lists them)", dsname);
		return;
	}
	if (cache->tracing) {
		trace_rec_info(cache, &info);
		conn_reply_err(c, h->op, h->id, EBUSY,
			       "a trace is already recording into %s (tierctl trace stop ends it)",
			       info.path);
		return;
	}
	if (max_bytes > TRACE_REC_MAX_BYTES) {
		conn_reply_err(c, h->op, h->id, EINVAL, "max bytes %llu is past the limit of %llu (64 GiB)",
			       (unsigned long long)max_bytes, (unsigned long long)TRACE_REC_MAX_BYTES);
		return;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		if (e == EEXIST)
			conn_reply_err(c, h->op, h->id, e,
				       "%s exists: a trace never overwrites a file; remove it or name "
				       "another", path);
		else
			conn_reply_err(c, h->op, h->id, e,
				       "cannot create %s: %s (the daemon creates it as its own user, "
				       "uid %u)", path, strerror(e), (unsigned)getuid());
		return;
	}
	int rc = trace_rec_start(cache, fd, path, dsname, max_bytes, err, sizeof(err));
	if (rc < 0) {
		if (rc != -EBUSY)
			(void)unlink(path); /* ours, just made: leave nothing half done */
		conn_reply_err(c, h->op, h->id, -rc, "%s", err);
		return;
	}
	trace_rec_info(cache, &info);
	log_info("op=trace_start client_pid=%d uid=%u file=%s dataset=\"%s\" max_bytes=%llu",
		 (int)c->pid, (unsigned)c->uid, path, dsname, (unsigned long long)info.max_bytes);
	trace_reply(c, h, &info);
}

void handlers_trace_stop(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct trace_rec_info info;
	if (!conn_require_admin(c, h))
		return;
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed TRACE_STOP (takes no payload)");
		return;
	}
	if (trace_rec_stop(conn_api(c)->cache, "stopped by tierctl trace stop", &info) < 0) {
		if (info.ever)
			conn_reply_err(c, h->op, h->id, ENOENT,
				       "no trace is recording; the last one (%s, %llu accesses and "
				       "%llu load rows, %llu bytes) %s",
				       info.path, (unsigned long long)info.accesses,
				       (unsigned long long)(info.records - info.accesses),
				       (unsigned long long)info.bytes, info.reason);
		else
			conn_reply_err(c, h->op, h->id, ENOENT,
				       "no trace is recording (tierctl trace start FILE starts one)");
		return;
	}
	trace_reply(c, h, &info);
}
