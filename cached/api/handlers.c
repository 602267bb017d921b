/*
 * Request handlers: one function per protocol op. Loop thread only.
 *
 * Paths arrive as "DATASET/PATH". They are checked before anything else:
 * relative, no "." or ".." components, bounded lengths; a bad path is an
 * error reply, never a filesystem access.
 *
 * Handles: an OPEN creates a per-connection handle bound to one version of
 * one file; every chunk fd handed out on it holds a reference to that chunk
 * file until RELEASE, CLOSE or disconnect, so eviction accounting counts
 * bytes clients still hold.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access.h"
#include "chunk.h"
#include "counts.h"
#include "dataset.h"
#include "fill.h"
#include "log.h"
#include "manifest.h"
#include "plans.h"
#include "policy_glue.h"
#include "prefetch.h"
#include "stat_ahead.h"
#include "handlers.h"
#include "load_wait.h"
#include "open_fill.h"
#include "target.h"
#include "status.h"
#include "verify.h"

/* A request that waits for something on another thread (OPEN or STAT
 * after a revalidation, CHUNK for a fill; READ has its own: handlers_read.c). */
struct pending {
	struct waiter w;
	struct conn *c;
	uint8_t op;
	uint32_t id;
	uint32_t flags;
	uint64_t hid;
	uint32_t idx;
	char *path;        /* OPEN / STAT after revalidation */
	uint64_t start_ns; /* CHUNK: arrival, for the latency histogram */
	bool verifying;    /* waits for the check of a resident chunk: a hit, not a miss */
};

/* ---- handles (session.c) ---- */

static inline struct handle *handle_get(struct conn *c, uint64_t hid)
{
	return session_handle_get(c, hid);
}

/* The handle a CHUNK or READ names, if its dataset still serves; else
 * reply (EBADF, ESTALE) and return NULL. */
struct handle *handlers_handle_for_read(struct conn *c, const struct tc_hdr *h, uint64_t hid)
{
	struct handle *hd = handle_get(c, hid);
	if (!hd) {
		conn_reply_err(c, h->op, h->id, EBADF, "no such handle");
		return NULL;
	}
	if (hd->ds->removed) {
		conn_reply_err(c, h->op, h->id, ESTALE, "dataset %s was removed from the daemon's "
			       "config (reload); open the file again once it is configured", hd->ds->name);
		return NULL;
	}
	return hd;
}

/* Write a chunk record (protocol.h) and open the chunk's fd. */
static int chunk_answer(struct conn *c, struct handle *hd, struct chunk *ch, struct proto_wr *w, int *fd)
{
	*fd = chunk_open_fd(conn_api(c)->cache, ch);
	if (*fd < 0)
		return *fd;
	int rc = session_hold(c, hd, ch->idx, ch->file);
	if (rc < 0) {
		close(*fd);
		*fd = -1;
		return rc;
	}
	proto_wr_u32(w, ch->idx);
	proto_wr_u64(w, (uint64_t)ch->idx * hd->chunk_size);
	proto_wr_u32(w, ch->len);
	proto_wr_u64(w, chunk_base(ch)); /* a chunk file: 0; a segment: the item's offset */
	proto_wr_u8(w, ch->state == CHUNK_UNKEPT ? TC_TIER_NONE : ch->tier);
	conn_api(c)->cache->ctr.bytes_served += ch->len;
	chunk_count_read(conn_api(c)->cache, ch);
	return 0;
}

/* ---- ops ---- */

static void op_hello(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct proto_wr w;
	uint32_t v = proto_rd_u32(r);
	if (!proto_rd_ok(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed HELLO");
		return;
	}
	if (v != TC_PROTO_VERSION) {
		conn_reply_err(c, h->op, h->id, EPROTO, "client speaks protocol %u, daemon %u", v,
			       TC_PROTO_VERSION);
		return;
	}
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u32(&w, TC_PROTO_VERSION);
	proto_wr_u32(&w, TC_FRAME_MAX);
	proto_wr_str(&w, TIERCACHE_VERSION);
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}

/* handlers_open_record, with chunk 0 given (filled: open_fill.c) or found */
static int open_record(struct conn *c, struct proto_wr *w, uint32_t flags, struct dataset *ds,
		       struct mf_entry *e, struct chunk *filled, int *fd)
{
	uint64_t hid;
	*fd = -1;
	int rc = session_handle_new(c, ds, e, &hid);
	if (rc < 0)
		return rc;
	struct handle *hd = handle_get(c, hid);
	proto_wr_u64(w, hid);
	proto_wr_u64(w, e->st.size);
	proto_wr_i64(w, e->st.mtime_ns);
	proto_wr_u32(w, hd->chunk_size);
	size_t mark = w->len;
	struct chunk *ch = filled;
	if (!ch && (flags & TC_F_WANT_CHUNK0) && hd->nchunks)
		ch = chunk_find(&conn_api(c)->cache->chunks, chunk_key(ds->name, e->path, &e->st, 0));
	/* chunk 0 absent: a fill this open started, or its caller starts, makes
	 * the first read of it a miss even if it has landed by then */
	hd->own_fill0 = !ch && (flags & (HANDLERS_OPEN_OWN_FILL | HANDLERS_OPEN_FILLS_ABSENT));
	if (ch && ch->unverified) {
		/* not checked since startup: answer without it and start the
		 * check, which the client's CHUNK request then waits for */
		(void)verify_join(conn_api(c)->cache, ch, VERIFY_FIRST_OPEN, NULL, NULL, NULL);
		ch = NULL;
	}
	if (ch) {
		proto_wr_u8(w, 1);
		if (chunk_answer(c, hd, ch, w, fd) == 0) {
			if (flags & HANDLERS_OPEN_NO_ACCESS)
				return 0;
			if (filled) {
				/* its fill recorded the access, counted the miss
				 * and started the read-ahead when the open parked */
				counts_trace(c, ch, ch->state == CHUNK_UNKEPT ? TRACE_UNKEPT : TRACE_MISS);
				return 0;
			}
			const struct read_ctx rc_open = conn_read_ctx(c);
			policy_glue_access(conn_api(c)->cache, ch->key, &rc_open);
			if (flags & HANDLERS_OPEN_OWN_FILL) {
				counts_miss(conn_api(c)->cache, ds);
				counts_trace(c, ch, TRACE_MISS);
			} else {
				counts_hit(c, ch);
			}
			/* the client reads chunk 0 through this descriptor and
			 * never asks for it: this open is that read, which starts
			 * the file's read-ahead (else none: docs/cluster.md "Measured") */
			prefetch_readahead(conn_api(c)->plans->pf, ds, e->path, &e->st, 0, hd->nchunks);
			return 0;
		}
		/* the file vanished under us: answer without it */
		w->len = mark;
	}
	proto_wr_u8(w, 0);
	return 0;
}

int handlers_open_record(struct conn *c, struct proto_wr *w, uint32_t flags, struct dataset *ds,
			 struct mf_entry *e, int *fd)
{
	return open_record(c, w, flags, ds, e, NULL, fd);
}

void handlers_open_reply(struct conn *c, uint32_t id, uint32_t flags, struct dataset *ds,
			 struct mf_entry *e, struct chunk *filled)
{
	struct proto_wr w;
	int fd;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	int rc = open_record(c, &w, flags, ds, e, filled, &fd);
	if (rc < 0) {
		proto_wr_free(&w);
		session_reply_full(c, TC_OP_OPEN, id, rc);
		return;
	}
	conn_reply(c, TC_OP_OPEN, id, &w, fd);
	proto_wr_free(&w);
}

/* After a deferred revalidation: find the target again, since the manifest
 * may have been replaced meanwhile. Replies with the error if it is gone. */
bool handlers_reresolve(struct conn *c, uint8_t op, uint32_t id, const char *path, struct target *t)
{
	struct proto_rd r;
	struct proto_wr tmp;
	struct tc_hdr h = {.op = op, .id = id};
	proto_wr_init(&tmp);
	proto_wr_str(&tmp, path);
	proto_rd_init(&r, tmp.buf, tmp.len);
	bool ok = !tmp.oom && target_parse(c, &h, &r, t);
	proto_wr_free(&tmp);
	return ok;
}

/* The target a file request names, then an optional u32 (COOKIE, else
 * NULL) and nothing more, and the peer's right to WANT it (access.h).
 * On any error: replied, false. */
static bool file_request(struct conn *c, const struct tc_hdr *h, struct proto_rd *r,
			 const char *name, int want, struct target *t, uint32_t *cookie)
{
	if (!target_parse(c, h, r, t))
		return false;
	if (cookie)
		*cookie = proto_rd_u32(r);
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed %s", name);
		return false;
	}
	return access_check(c, h->op, h->id, t->ds, t->rest, want);
}

/* A revalidation said path may not be served (err < 0): tell the client
 * what happened and what to do (dataset_reval_msg). */
static void reply_reval_err(struct conn *c, uint8_t op, uint32_t id, const struct dataset *ds,
			    const char *path, int err)
{
	char msg[512];
	dataset_reval_msg(ds, path, err, msg, sizeof(msg));
	conn_reply_err(c, op, id, -err, "%s", msg);
}

/* Confirm e against the source if it is older than revalidate_after:
 * inline for a cheap local stat, else on a worker with cont() continuing
 * the request. Returns 0 to go on now, -errno if the file may not be
 * served (-ENOENT: gone; -EIO: the store is down; a per-file error; nothing
 * replied: reply_reval_err), 1 if deferred (or failed and replied).
 * read_since_ns: when the request arrived, if it started a read of the
 * file's chunk that may answer for the stat (0: none). */
static int revalidate(struct conn *c, const struct tc_hdr *h, struct target *t, struct mf_entry *e,
		      uint64_t read_since_ns, dataset_reval_cb cont)
{
	struct cache *cache = conn_api(c)->cache;
	if (!dataset_entry_stale(t->ds, e, cache_now_ns())) {
		stat_ahead_seen(cache, e);
		return 0;
	}
	if (cold_has_cheap_stat(&t->ds->cold))
		return dataset_revalidate_now(cache, t->ds, e);
	struct pending *p = calloc(1, sizeof(*p));
	if (!p || !(p->path = strdup(t->buf))) {
		free(p);
		conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		return 1;
	}
	p->c = c;
	p->id = h->id;
	p->flags = h->aux;
	conn_get(c);
	/* its stat ahead is on the way: its answer is this one's */
	if (stat_ahead_join(cache, t->ds, e, cont, p) == 0)
		return 1;
	if (dataset_revalidate_async_since(cache, t->ds, t->rest, read_since_ns, cont, p) < 0)
		cont(cache, p, 0);
	/* after its own stat: the directory's other due files, ahead */
	stat_ahead_trigger(cache, t->ds, e, read_since_ns != 0);
	return 1;
}

/* OPEN's request flags that its answer heeds */
#define OPEN_WIRE_FLAGS (TC_F_WANT_CHUNK0 | TC_F_FILL_CHUNK0)

/* Answer an OPEN of e now, or once chunk 0 is filled (open_fill.c). */
static void open_answer(struct conn *c, uint32_t id, uint32_t flags, struct target *t, struct mf_entry *e)
{
	if (!open_fill_park(c, id, flags, t->ds, e, t->buf))
		handlers_open_reply(c, id, flags, t->ds, e, NULL);
}

static void open_after_reval(struct cache *cache, void *arg, int err)
{
	struct pending *p = arg;
	struct conn *c = p->c;
	struct target t;
	(void)cache;
	if (!c->dead && handlers_reresolve(c, TC_OP_OPEN, p->id, p->path, &t)) {
		struct mf_entry *e = manifest_find(t.ds->mf, t.rest);
		if (!e)
			conn_reply_err(c, TC_OP_OPEN, p->id, err == -ENOENT || err == 0 ? ENOENT : -err,
				       "no file \"%s\" in dataset %s", t.rest, t.ds->name);
		else if (err < 0)
			reply_reval_err(c, TC_OP_OPEN, p->id, t.ds, t.rest, err);
		else
			open_answer(c, p->id, p->flags & (OPEN_WIRE_FLAGS | HANDLERS_OPEN_OWN_FILL), &t, e);
	}
	free(p->path);
	conn_put(c);
	free(p);
}

static void open_run(struct conn *c, const struct tc_hdr *h, struct proto_rd *r, bool open_ahead);

void handlers_open_again(struct conn *c, uint32_t id, uint32_t flags, const char *path)
{
	struct proto_wr w;
	struct proto_rd r;
	struct tc_hdr h = {.op = TC_OP_OPEN, .id = id, .aux = flags};
	proto_wr_init(&w);
	proto_wr_str(&w, path);
	if (w.oom) {
		conn_reply_err(c, TC_OP_OPEN, id, ENOMEM, "out of memory");
	} else {
		proto_rd_init(&r, w.buf, w.len);
		open_run(c, &h, &r, false); /* the entry's version is known stale */
	}
	proto_wr_free(&w);
}

/* An OPEN; open_ahead: a slow stat may start chunk 0's read beside it */
static void open_run(struct conn *c, const struct tc_hdr *h, struct proto_rd *r, bool open_ahead)
{
	struct target t;
	if (!file_request(c, h, r, "OPEN", ACCESS_OPEN, &t, NULL))
		return;
	if (!*t.rest) {
		conn_reply_err(c, h->op, h->id, EISDIR, "%s is a dataset (a directory); open a file in it",
			       t.ds->name);
		return;
	}
	struct mf_entry *e = manifest_find(t.ds->mf, t.rest);
	if (!e) {
		if (manifest_dir_exists(t.ds->mf, t.rest))
			conn_reply_err(c, h->op, h->id, EISDIR, "%s is a directory", t.buf);
		else
			conn_reply_err(c, h->op, h->id, ENOENT, "no file \"%s\" in dataset %s", t.rest,
				       t.ds->name);
		return;
	}
	/* a slow stat ahead: let the first chunk's read overlap it (then
	 * finding the chunk after the stat is this open's own miss) */
	struct tc_hdr hr = *h;
	hr.aux &= OPEN_WIRE_FLAGS;
	uint64_t now = cache_now_ns(), read_since = 0;
	if (open_ahead && !cold_has_cheap_stat(&t.ds->cold) && dataset_entry_stale(t.ds, e, now) &&
	    prefetch_open_ahead(conn_api(c)->plans->pf, t.ds, t.rest, &e->st)) {
		hr.aux |= HANDLERS_OPEN_OWN_FILL;
		read_since = now;
	}
	int rv = revalidate(c, &hr, &t, e, read_since, open_after_reval);
	if (rv < 0) {
		reply_reval_err(c, h->op, h->id, t.ds, t.rest, rv);
		return;
	}
	if (rv > 0)
		return;
	open_answer(c, h->id, h->aux & OPEN_WIRE_FLAGS, &t, e);
}

static void chunk_waited(struct cache *cache, struct waiter *w, struct chunk *ch, int err)
{
	struct pending *p = (struct pending *)w;
	struct conn *c = p->c;
	histogram_observe(&cache->lat_chunk_miss, cache_now_ns() - p->start_ns);
	if (!c->dead) {
		struct handle *hd = handle_get(c, p->hid);
		if (err < 0) {
			if (err == -ESTALE)
				conn_reply_err(c, TC_OP_CHUNK, p->id, ESTALE,
					       "the file changed at the source since it was opened; open it again");
			else
				conn_reply_err(c, TC_OP_CHUNK, p->id, -err, "cold read of chunk %u failed: %s",
					       p->idx, strerror(-err));
		} else if (!hd) {
			conn_reply_err(c, TC_OP_CHUNK, p->id, EBADF, "handle closed while its chunk was read");
		} else {
			if (p->verifying)
				counts_hit(c, ch);
			else /* counted as a miss when it was asked for */
				counts_trace(c, ch, ch->state == CHUNK_UNKEPT ? TRACE_UNKEPT : TRACE_MISS);
			struct proto_wr pw;
			int fd;
			proto_wr_init(&pw);
			proto_wr_begin(&pw);
			int rc = chunk_answer(c, hd, ch, &pw, &fd);
			if (rc < 0)
				session_reply_full(c, TC_OP_CHUNK, p->id, rc);
			else
				conn_reply(c, TC_OP_CHUNK, p->id, &pw, fd);
			proto_wr_free(&pw);
		}
	}
	conn_put(c);
	free(p);
}

/* Reports one connection may make: a burst, then a few per second. */
#define REPORT_BURST 16u
#define REPORT_PER_S 4u

static bool report_allowed(struct session *s)
{
	uint64_t now = cache_now_ns();
	uint64_t earned = (now - s->report_ns) / (1000000000ull / REPORT_PER_S);
	if (!s->report_ns || earned >= REPORT_BURST) {
		s->report_tokens = REPORT_BURST;
		s->report_ns = now;
	} else if (earned) {
		s->report_tokens += (uint32_t)earned;
		if (s->report_tokens > REPORT_BURST)
			s->report_tokens = REPORT_BURST;
		s->report_ns += earned * (1000000000ull / REPORT_PER_S);
	}
	if (!s->report_tokens)
		return false;
	s->report_tokens--;
	return true;
}

/* The client read chunk idx short through the descriptor it was given
 * (TC_F_CHUNK_RECHECK): check the file again before answering. The report
 * is not trusted: only a real mismatch drops the chunk (verify.h). */
static void chunk_report(struct conn *c, struct handle *hd, uint32_t idx)
{
	struct cache *cache = conn_api(c)->cache;
	struct chunk *ch = chunk_find(&cache->chunks, chunk_key(hd->ds->name, hd->path, &hd->src, idx));
	if (!ch || ch->state == CHUNK_UNKEPT || ch->unverified || verify_inflight(cache, ch->key))
		return; /* nothing kept to check, or a check is coming anyway */
	if (!report_allowed(conn_sess(c))) {
		log_debug("dataset=%s path=%s chunk=%u op=client_report uid=%u pid=%d "
			  "err=\"too many reports on this connection: ignored\"",
			  hd->ds->name, hd->path, idx, (unsigned)c->uid, (int)c->pid);
		return;
	}
	cache->ctr.chunk_reports++;
	log_info("dataset=%s path=%s chunk=%u op=client_report uid=%u pid=%d "
		 "msg=\"client read the chunk short: checking its file\"",
		 hd->ds->name, hd->path, idx, (unsigned)c->uid, (int)c->pid);
	ch->unverified = true; /* every request for it waits for the check */
	(void)verify_join(cache, ch, VERIFY_REPORT, NULL, NULL, NULL);
}

static void op_chunk(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	uint64_t start_ns = cache_now_ns();
	uint64_t hid = proto_rd_u64(r);
	uint32_t idx = proto_rd_u32(r);
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed CHUNK");
		return;
	}
	struct handle *hd = handlers_handle_for_read(c, h, hid);
	if (!hd)
		return;
	if (idx >= hd->nchunks) {
		conn_reply_err(c, h->op, h->id, EINVAL, "chunk %u is past the end of the file (%u chunks)", idx,
			       hd->nchunks);
		return;
	}
	struct pending *p = calloc(1, sizeof(*p));
	if (!p) {
		conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		return;
	}
	if (h->aux & TC_F_CHUNK_RECHECK)
		chunk_report(c, hd, idx);
	p->w.cb = chunk_waited;
	p->c = c;
	p->id = h->id;
	p->hid = hid;
	p->idx = idx;
	p->start_ns = start_ns;
	struct chunk *ch = NULL;
	const struct read_ctx rctx = conn_read_ctx(c);
	int rc = fill_get(conn_api(c)->cache, hd->ds, hd->path, &hd->src, idx, &rctx, &p->w, &ch);
	if (rc >= 0)
		prefetch_readahead(conn_api(c)->plans->pf, hd->ds, hd->path, &hd->src, idx, hd->nchunks);
	if (rc == 1) {
		struct proto_wr w;
		int fd;
		proto_wr_init(&w);
		proto_wr_begin(&w);
		rc = chunk_answer(c, hd, ch, &w, &fd);
		if (rc == -ENOENT) {
			/* its file is gone from the tier (a tier directory removed
			 * before the health check noticed): drop it, read it again */
			proto_wr_free(&w);
			chunk_drop(conn_api(c)->cache, ch, "file gone from its tier");
			rc = fill_get(conn_api(c)->cache, hd->ds, hd->path, &hd->src, idx, &rctx, &p->w,
				      &ch);
			if (rc == 1) { /* a move in flight keeps it until the move ends */
				free(p);
				conn_reply_err(c, h->op, h->id, EIO, "chunk %u: its file is gone", idx);
				return;
			}
		} else {
			free(p);
			if (rc < 0) {
				session_reply_full(c, h->op, h->id, rc);
			} else {
				counts_resident(c, hd, idx, ch);
				conn_reply(c, h->op, h->id, &w, fd);
			}
			proto_wr_free(&w);
			histogram_observe(&conn_api(c)->cache->lat_chunk_hit, cache_now_ns() - start_ns);
			return;
		}
	}
	if (rc == 0) {
		p->verifying = verify_inflight(conn_api(c)->cache, chunk_key(hd->ds->name, hd->path,
									     &hd->src, idx));
		if (!p->verifying)
			counts_filling(c, hd, idx);
		conn_get(c);
	} else {
		free(p);
		if (rc == -EHOSTDOWN)
			conn_reply_err(c, h->op, h->id, EIO, "dataset %s: cold store unavailable: %s",
				       hd->ds->name, hd->ds->reason);
		else
			conn_reply_err(c, h->op, h->id, -rc, "cannot read chunk %u: %s", idx, strerror(-rc));
	}
}

static void op_release(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	uint64_t hid = proto_rd_u64(r);
	uint32_t idx = proto_rd_u32(r);
	struct handle *hd = proto_rd_done(r) ? handle_get(c, hid) : NULL;
	if (hd)
		session_release(c, hd, idx);
	if (!(h->aux & TC_F_NOREPLY)) {
		struct proto_wr w;
		proto_wr_init(&w);
		proto_wr_begin(&w);
		if (hd)
			conn_reply(c, h->op, h->id, &w, -1);
		else
			conn_reply_err(c, h->op, h->id, EBADF, "no such handle");
		proto_wr_free(&w);
	}
}

static void op_close(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	uint64_t hid = proto_rd_u64(r);
	struct handle *hd = proto_rd_done(r) ? handle_get(c, hid) : NULL;
	bool ok = hd != NULL;
	if (ok) {
		ahead_close(c, hd, h->aux);
		session_handle_free(c, hid);
	}
	if (!(h->aux & TC_F_NOREPLY)) {
		struct proto_wr w;
		proto_wr_init(&w);
		proto_wr_begin(&w);
		if (ok)
			conn_reply(c, h->op, h->id, &w, -1);
		else
			conn_reply_err(c, h->op, h->id, EBADF, "no such handle");
		proto_wr_free(&w);
	}
}

static void stat_reply(struct conn *c, uint32_t id, uint32_t flags, struct target *t,
		       struct mf_entry *e)
{
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	if (e) {
		proto_wr_u8(&w, TC_TYPE_FILE);
		proto_wr_u64(&w, e->st.size);
		proto_wr_i64(&w, e->st.mtime_ns);
	} else if (manifest_dir_exists(t->ds->mf, t->rest)) {
		proto_wr_u8(&w, TC_TYPE_DIR);
		proto_wr_u64(&w, 0);
		proto_wr_i64(&w, 0);
	} else {
		proto_wr_free(&w);
		conn_reply_err(c, TC_OP_STAT, id, ENOENT, "no file or directory \"%s\" in dataset %s",
			       t->rest, t->ds->name);
		return;
	}
	proto_wr_u32(&w, t->ds->conf.chunk_size);
	if (flags & TC_F_WANT_OWNER)
		access_put_owner(&w, t->ds, t->rest, !e);
	conn_reply(c, TC_OP_STAT, id, &w, -1);
	proto_wr_free(&w);
}

static void stat_after_reval(struct cache *cache, void *arg, int err)
{
	struct pending *p = arg;
	struct conn *c = p->c;
	struct target t;
	(void)cache;
	if (!c->dead && handlers_reresolve(c, TC_OP_STAT, p->id, p->path, &t)) {
		struct mf_entry *e = *t.rest ? manifest_find(t.ds->mf, t.rest) : NULL;
		if (e && err < 0 && err != -ENOENT)
			reply_reval_err(c, TC_OP_STAT, p->id, t.ds, t.rest, err);
		else
			stat_reply(c, p->id, p->flags, &t, e);
	}
	free(p->path);
	conn_put(c);
	free(p);
}

static void op_stat(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct target t;
	if (!file_request(c, h, r, "STAT", ACCESS_STAT, &t, NULL))
		return;
	struct mf_entry *e = *t.rest ? manifest_find(t.ds->mf, t.rest) : NULL;
	if (e) {
		int rv = revalidate(c, h, &t, e, 0, stat_after_reval);
		if (rv > 0)
			return;
		if (rv == -ENOENT) {
			e = NULL;
		} else if (rv < 0) {
			reply_reval_err(c, h->op, h->id, t.ds, t.rest, rv);
			return;
		}
	}
	stat_reply(c, h->id, h->aux, &t, e);
}

struct listpage {
	struct proto_wr *w;
	uint32_t count;
	bool owner; /* TC_F_WANT_OWNER */
	int odfd;   /* the source directory, for owners (access_owner_dir) */
};

#define LIST_PAGE_BYTES (TC_FRAME_MAX - 4096)
#define LIST_PAGE_MAX 8192u

static int list_one(void *arg, const struct mf_dirent *de)
{
	struct listpage *lp = arg;
	if (lp->count >= LIST_PAGE_MAX || lp->w->len + de->namelen + 48 > LIST_PAGE_BYTES)
		return 1;
	proto_wr_u8(lp->w, de->is_dir ? TC_TYPE_DIR : TC_TYPE_FILE);
	proto_wr_u64(lp->w, de->e ? de->e->st.size : 0);
	proto_wr_i64(lp->w, de->e ? de->e->st.mtime_ns : 0);
	proto_wr_strn(lp->w, de->name, de->namelen);
	if (lp->owner)
		access_put_owner_at(lp->w, lp->odfd, de->name, de->namelen, de->is_dir);
	lp->count++;
	return 0;
}

static void op_listdir(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct target t;
	struct proto_wr w;
	uint32_t cookie;
	if (!file_request(c, h, r, "LISTDIR", ACCESS_LIST, &t, &cookie))
		return;
	if (!manifest_dir_exists(t.ds->mf, t.rest)) {
		if (manifest_find(t.ds->mf, t.rest))
			conn_reply_err(c, h->op, h->id, ENOTDIR, "%s is a file", t.buf);
		else
			conn_reply_err(c, h->op, h->id, ENOENT, "no directory \"%s\" in dataset %s", t.rest,
				       t.ds->name);
		return;
	}
	proto_wr_init(&w);
	proto_wr_begin(&w);
	size_t at = w.len;
	proto_wr_u32(&w, 0); /* next cookie, patched below */
	proto_wr_u32(&w, 0); /* count */
	struct listpage lp = {.w = &w, .owner = h->aux & TC_F_WANT_OWNER, .odfd = -1};
	if (lp.owner)
		lp.odfd = access_owner_dir(t.ds, t.rest);
	uint32_t next = manifest_listdir(t.ds->mf, t.rest, cookie, list_one, &lp);
	if (lp.odfd >= 0)
		close(lp.odfd);
	if (!w.oom) {
		for (int i = 0; i < 4; i++) {
			w.buf[at + i] = (uint8_t)(next >> (8 * i));
			w.buf[at + 4 + i] = (uint8_t)(lp.count >> (8 * i));
		}
	}
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}

void handlers_dispatch(struct conn *c, const struct tc_hdr *h, const uint8_t *payload)
{
	struct proto_rd r;
	if (load_wait_park(c, h, payload))
		return; /* answered when its dataset's first listing ends */
	if (h->aux & TC_F_CLUSTER) {
		handlers_cluster(c, h, payload); /* to every node, through the stream */
		return;
	}
	proto_rd_init(&r, payload, h->len);
	struct counters *ctr = &conn_api(c)->cache->ctr;
	switch (h->op) { /* request frames by op (status: frames_*) */
	case TC_OP_OPEN: ctr->frames_open++; break;
	case TC_OP_OPEN_MANY: ctr->frames_open_many++; break;
	case TC_OP_OPEN_AHEAD: ctr->frames_open_ahead++; break;
	case TC_OP_CHUNK: ctr->frames_chunk++; break;
	case TC_OP_CLOSE: ctr->frames_close++; break;
	default: break;
	}
	switch (h->op) {
	case TC_OP_HELLO: op_hello(c, h, &r); break;
	case TC_OP_OPEN: open_run(c, h, &r, true); break;
	case TC_OP_CHUNK: op_chunk(c, h, &r); break;
	case TC_OP_READ: handlers_read(c, h, &r); break;
	case TC_OP_RELEASE: op_release(c, h, &r); break;
	case TC_OP_CLOSE: op_close(c, h, &r); break;
	case TC_OP_STAT: op_stat(c, h, &r); break;
	case TC_OP_LISTDIR: op_listdir(c, h, &r); break;
	case TC_OP_DATASETS: handlers_recset(c, h, status_datasets); break;
	case TC_OP_STATUS: handlers_recset(c, h, status_fill); break;
	case TC_OP_REFRESH: handlers_refresh(c, h, &r); break;
	case TC_OP_POLICY_GET: handlers_policy_get(c, h, &r); break;
	case TC_OP_POLICY_SET: handlers_policy_set(c, h, &r); break;
	case TC_OP_CONFIG_SHOW: handlers_config_show(c, h, &r); break;
	case TC_OP_RELOAD: handlers_reload(c, h, &r); break;
	case TC_OP_WARM:
	case TC_OP_PIN:
	case TC_OP_UNPIN:
	case TC_OP_EVICT:
	case TC_OP_DEMOTE:
	case TC_OP_VERIFY:
	case TC_OP_LIFECYCLE: handlers_admin(c, h, &r); break;
	case TC_OP_PLAN_SET: handlers_plan_set(c, h, &r); break;
	case TC_OP_PLAN_CANCEL: handlers_plan_cancel(c, h, &r); break;
	case TC_OP_CONN_JOB: handlers_conn_job(c, h, &r); break;
	case TC_OP_ACT_AS: access_op_act_as(c, h, &r); break;
	case TC_OP_OPEN_MANY: handlers_open_many(c, h, &r); break;
	case TC_OP_OPEN_AHEAD: ahead_op(c, h, &r); break;
	case TC_OP_TRACE_START: handlers_trace_start(c, h, &r); break;
	case TC_OP_TRACE_STOP: handlers_trace_stop(c, h, &r); break;
	case TC_OP_CLUSTER_DRAIN: handlers_drain(c, h, &r); break;
	default:
		conn_count_bad_frame(c);
		conn_reply_err(c, h->op, h->id, ENOSYS, "unknown operation %u", h->op);
	}
}

void handlers_conn_closed(struct conn *c)
{
	load_wait_conn_closed(c);
	plans_conn_closed(conn_api(c)->plans, c);
	session_handles_free_all(c);
}
