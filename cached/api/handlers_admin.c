/*
 * Residency requests: WARM, PIN, UNPIN, EVICT, DEMOTE, VERIFY, LIFECYCLE
 * (include/tiercache/protocol.h names the ops; the work is admin/residency*.c).
 * Loop thread only.
 *
 * Every op but WARM needs an admin (conn_require_admin): any reader may
 * warm what it may read. Payloads (little-endian, see protocol.h):
 *
 *   WARM      str "dataset/path" (a file), u8 tier (TC_TIER_HOT, _WARM, or
 *             TC_TIER_NONE: where the placement puts it), u8 flags
 *             (TC_WARM_F_*), u32 first chunk, u32 count (0: to the end)
 *   PIN       str "dataset[/path]"
 *   UNPIN     str "dataset[/path]"
 *   EVICT     str "dataset[/path]"
 *   DEMOTE    str "dataset[/path]", u8 to (TC_TIER_WARM)
 *   VERIFY    str dataset ("" = every dataset)
 *   LIFECYCLE str dataset ("" = every dataset), u8 flags (TC_LC_F_*),
 *             i64 older_than_s (-1: the datasets' demote_after and
 *             evict_after), i64 as_of_s (0: now)
 *
 * Replies: a record set with one object section "result" whose fields are
 * pairs <what>_chunks / <what>_bytes (selected, hot, warm, missing,
 * filled, moved, dropped, checked, bad, pinned, skipped_pinned, failed,
 * refetched: read again from cold after a bad checksum, by warm --verify);
 * when chunks failed, an array section "failures" says why: one record
 * per reason with errno, error (its text), failed_chunks, failed_bytes;
 * LIFECYCLE adds "dry_run", "as_of_s" and a "datasets" array with each
 * dataset's thresholds for the run. An op that cannot be done at all is an
 * error reply saying why (ENOENT, ENODEV, ENOSPC with the numbers, ...).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "dataset.h"
#include "manifest.h"
#include "residency.h"
#include "handlers.h"
#include "target.h"

struct admin_req {
	struct conn *c;
	uint8_t op;
	uint32_t id;
	struct dataset *lc_ds;   /* LIFECYCLE: the dataset asked for, or NULL */
	struct res_lifecycle lc; /* LIFECYCLE: the run's parameters */
};

/* A dataset name, or "" for all. Replies on error. */
static bool admin_dataset(struct conn *c, const struct tc_hdr *h, struct proto_rd *r,
			  struct dataset **ds)
{
	char name[TC_DATASET_NAME_MAX + 1];
	if (!proto_rd_str_copy(r, name, sizeof(name))) {
		conn_reply_err(c, h->op, h->id, EINVAL, "expected a dataset name (at most %u bytes) or \"\"",
			       TC_DATASET_NAME_MAX);
		return false;
	}
	*ds = NULL;
	if (!*name)
		return true;
	*ds = cache_dataset(conn_api(c)->cache, name, strlen(name));
	if (!*ds) {
		conn_reply_err(c, h->op, h->id, ENOENT, "no dataset named \"%s\" (tierctl datasets lists them)",
			       name);
		return false;
	}
	return true;
}

static void put_count(struct proto_rs *rs, const char *what, const struct res_count *n)
{
	char key[48];
	snprintf(key, sizeof(key), "%s_chunks", what);
	proto_rs_u64(rs, key, n->chunks);
	snprintf(key, sizeof(key), "%s_bytes", what);
	proto_rs_u64(rs, key, n->bytes);
}

static void lifecycle_datasets(struct cache *cache, struct proto_rs *rs, const struct admin_req *q)
{
	proto_rs_section(rs, "datasets", TC_SHAPE_ARRAY);
	for (unsigned i = 0; i < cache->nds; i++) {
		const struct dataset *ds = cache->ds[i];
		if (q->lc_ds && q->lc_ds != ds)
			continue;
		bool over = q->lc.older_than_s >= 0;
		proto_rs_record(rs);
		proto_rs_str(rs, "name", ds->name);
		proto_rs_u64(rs, "demote_after_s", over ? (uint64_t)q->lc.older_than_s : ds->conf.demote_after_s);
		proto_rs_u64(rs, "evict_after_s", over ? (uint64_t)q->lc.older_than_s : ds->conf.evict_after_s);
	}
}

/* "failures": why chunks failed, one record per reason (errno 0: other). */
static void put_failures(struct proto_rs *rs, const struct res_result *r)
{
	if (!r->failed.chunks)
		return;
	proto_rs_section(rs, "failures", TC_SHAPE_ARRAY);
	for (unsigned k = 0; k < RES_FAIL_KINDS; k++) {
		const struct res_fail *f = &r->fails[k];
		if (!f->n.chunks)
			continue;
		proto_rs_record(rs);
		proto_rs_u64(rs, "errno", (uint64_t)-f->err);
		proto_rs_str(rs, "error", f->err ? strerror(-f->err) : "other errors (see the daemon log)");
		put_count(rs, "failed", &f->n);
	}
}

static void reply_result(struct conn *c, const struct admin_req *q, const struct res_result *r)
{
	struct proto_wr w;
	struct proto_rs rs;
	if (r->err) {
		conn_reply_err(c, q->op, q->id, -r->err, "%s", r->msg);
		return;
	}
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_rs_begin(&rs, &w);
	proto_rs_section(&rs, "result", TC_SHAPE_OBJECT);
	proto_rs_record(&rs);
	put_count(&rs, "selected", &r->selected);
	put_count(&rs, "hot", &r->hot);
	put_count(&rs, "warm", &r->warm);
	put_count(&rs, "missing", &r->missing);
	put_count(&rs, "filled", &r->filled);
	put_count(&rs, "moved", &r->moved);
	put_count(&rs, "dropped", &r->dropped);
	put_count(&rs, "checked", &r->checked);
	put_count(&rs, "bad", &r->bad);
	put_count(&rs, "pinned", &r->pinned);
	put_count(&rs, "skipped_pinned", &r->skipped_pinned);
	put_count(&rs, "failed", &r->failed);
	put_count(&rs, "refetched", &r->refetched);
	if (q->op == TC_OP_LIFECYCLE) {
		proto_rs_bool(&rs, "dry_run", q->lc.dry_run);
		proto_rs_i64(&rs, "as_of_s", q->lc.as_of_s);
		lifecycle_datasets(conn_api(c)->cache, &rs, q);
	}
	put_failures(&rs, r);
	proto_rs_end(&rs);
	conn_reply(c, q->op, q->id, &w, -1);
	proto_wr_free(&w);
}

static bool req_gone(void *arg)
{
	return ((struct admin_req *)arg)->c->dead;
}

static void req_done(void *arg, const struct res_result *r)
{
	struct admin_req *q = arg;
	if (!q->c->dead)
		reply_result(q->c, q, r);
	conn_put(q->c);
	free(q);
}

/* An async op: hold the connection until it answers. start returns 0
 * (req_done follows) or -errno with r filled (replied here). */
static struct admin_req *req_new(struct conn *c, const struct tc_hdr *h, struct res_cb *cb)
{
	struct admin_req *q = calloc(1, sizeof(*q));
	if (!q) {
		conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		return NULL;
	}
	q->c = c;
	q->op = h->op;
	q->id = h->id;
	/* the fills it starts, now or later, read for the connection's job */
	*cb = (struct res_cb){.done = req_done, .gone = req_gone, .arg = q, .job = conn_sess(c)->job};
	conn_get(c);
	return q;
}

static void req_started(struct admin_req *q, int rc, const struct res_result *r)
{
	if (rc == 0)
		return;
	reply_result(q->c, q, r);
	conn_put(q->c);
	free(q);
}

static void reply_sync(struct conn *c, const struct tc_hdr *h, const struct res_result *r)
{
	struct admin_req q = {.c = c, .op = h->op, .id = h->id};
	reply_result(c, &q, r);
}

void handlers_admin(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct target t;
	struct dataset *ds = NULL;
	const char *rest = "";
	struct res_result res = {0};
	struct res_cb cb;
	struct admin_req *q;
	int rc;

	if (h->op != TC_OP_WARM && !conn_require_admin(c, h))
		return;
	switch (h->op) {
	case TC_OP_WARM: {
		if (!target_parse(c, h, r, &t))
			return;
		ds = t.ds;
		rest = t.rest;
		uint8_t tier = proto_rd_u8(r);
		uint8_t flags = proto_rd_u8(r);
		uint32_t first = proto_rd_u32(r);
		uint32_t count = proto_rd_u32(r);
		if (!proto_rd_done(r)) {
			conn_reply_err(c, h->op, h->id, EBADMSG, "malformed WARM");
			return;
		}
		if (tier != TC_TIER_HOT && tier != TC_TIER_WARM && tier != TC_TIER_NONE) {
			conn_reply_err(c, h->op, h->id, EINVAL, "unknown tier %u (hot, warm)", tier);
			return;
		}
		if (flags & ~(TC_WARM_F_VERIFY | TC_WARM_F_CHECK)) {
			conn_reply_err(c, h->op, h->id, EINVAL, "unknown WARM flags 0x%x", flags);
			return;
		}
		if (!*rest) {
			conn_reply_err(c, h->op, h->id, EISDIR,
				       "WARM takes one file; list the dataset and warm each file "
				       "(tierctl warm does)");
			return;
		}
		/* warming is reading on the client's behalf: the same right as an open */
		if (!access_check(c, h->op, h->id, ds, rest, ACCESS_OPEN))
			return;
		if (!manifest_find(ds->mf, rest)) {
			if (manifest_dir_exists(ds->mf, rest))
				conn_reply_err(c, h->op, h->id, EISDIR, "%s is a directory; WARM takes one file",
					       t.buf);
			else
				conn_reply_err(c, h->op, h->id, ENOENT, "no file \"%s\" in dataset %s", rest,
					       ds->name);
			return;
		}
		if (!(q = req_new(c, h, &cb)))
			return;
		unsigned rf = ((flags & TC_WARM_F_VERIFY) ? RES_WARM_VERIFY : 0) |
			      ((flags & TC_WARM_F_CHECK) ? RES_WARM_CHECK : 0);
		rc = residency_warm(conn_api(c)->res, ds, rest, first, count,
				    tier == TC_TIER_NONE ? TIER_COUNT : tier, rf, &cb, &res);
		req_started(q, rc, &res);
		return;
	}
	case TC_OP_PIN:
	case TC_OP_UNPIN:
	case TC_OP_EVICT:
		if (!target_parse(c, h, r, &t))
			return;
		ds = t.ds;
		rest = t.rest;
		if (!proto_rd_done(r)) {
			conn_reply_err(c, h->op, h->id, EBADMSG, "malformed request: expected DATASET[/PATH]");
			return;
		}
		if (h->op == TC_OP_PIN) {
			if (!(q = req_new(c, h, &cb)))
				return;
			rc = residency_pin(conn_api(c)->res, ds, rest, &cb, &res);
			req_started(q, rc, &res);
			return;
		}
		if (h->op == TC_OP_UNPIN)
			residency_unpin(conn_api(c)->res, ds, rest, &res);
		else
			residency_evict(conn_api(c)->res, ds, rest, &res);
		reply_sync(c, h, &res);
		return;
	case TC_OP_DEMOTE: {
		if (!target_parse(c, h, r, &t))
			return;
		ds = t.ds;
		rest = t.rest;
		uint8_t to = proto_rd_u8(r);
		if (!proto_rd_done(r)) {
			conn_reply_err(c, h->op, h->id, EBADMSG, "malformed DEMOTE");
			return;
		}
		if (to != TC_TIER_WARM) {
			conn_reply_err(c, h->op, h->id, EINVAL, "can only demote to the warm tier (got tier %u)",
				       to);
			return;
		}
		if (!(q = req_new(c, h, &cb)))
			return;
		rc = residency_demote(conn_api(c)->res, ds, rest, &cb, &res);
		req_started(q, rc, &res);
		return;
	}
	case TC_OP_VERIFY:
		if (!admin_dataset(c, h, r, &ds))
			return;
		if (!proto_rd_done(r)) {
			conn_reply_err(c, h->op, h->id, EBADMSG, "malformed VERIFY");
			return;
		}
		if (!(q = req_new(c, h, &cb)))
			return;
		rc = residency_verify(conn_api(c)->res, ds, &cb, &res);
		req_started(q, rc, &res);
		return;
	case TC_OP_LIFECYCLE: {
		if (!admin_dataset(c, h, r, &ds))
			return;
		uint8_t flags = proto_rd_u8(r);
		int64_t older = proto_rd_i64(r);
		int64_t as_of = proto_rd_i64(r);
		if (!proto_rd_done(r) || (flags & ~TC_LC_F_DRY_RUN) || older < -1 || as_of < 0) {
			conn_reply_err(c, h->op, h->id, EBADMSG, "malformed LIFECYCLE");
			return;
		}
		if (!(q = req_new(c, h, &cb)))
			return;
		q->lc_ds = ds;
		q->lc = (struct res_lifecycle){
			.older_than_s = older,
			.as_of_s = as_of ? as_of : cache_wall_s(),
			.dry_run = flags & TC_LC_F_DRY_RUN,
		};
		rc = residency_lifecycle(conn_api(c)->res, ds, &q->lc, &cb, &res);
		req_started(q, rc, &res);
		return;
	}
	default:
		conn_reply_err(c, h->op, h->id, ENOSYS, "unknown operation %u", h->op);
	}
}
