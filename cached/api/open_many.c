/*
 * TC_OP_OPEN_MANY: up to TC_OPEN_MANY_MAX files opened in one round trip
 * (protocol.h). Loop thread only.
 *
 * Each file goes through what an OPEN does (target, access check, manifest
 * lookup, revalidation when stale) and then handlers_open_record(). Errors
 * are per file: the checks report through conn_reply_err as they do for an
 * OPEN, and while an item is checked the connection's err_sink catches
 * them into that item's record instead of a reply (net/server.h). The
 * frame fails as a whole only if it is malformed.
 *
 * Revalidations that go to a worker (remote stores) are counted in
 * b->waiting; the reply is built when the last one is back, from the
 * paths again (a manifest may have been replaced meanwhile, as
 * open_after_reval does for an OPEN). A waiting batch holds the connection
 * (conn_get: its SERVER_WAIT_MAX) and counts its memory as work in flight
 * (conn_work_begin: its SERVER_OUTQ_MAX); a connection that dies meanwhile
 * gets no reply and the batch is freed when its last revalidation is back.
 *
 * Files whose chunk 0 is not resident are answered without it, and its
 * fill starts now with the connection's read context (single flight: the
 * client's CHUNK that follows joins it or finds it resident). Each fill
 * started holds the connection like a waiting CHUNK does (SERVER_WAIT_MAX).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "chunk.h"
#include "dataset.h"
#include "fill.h"
#include "handlers.h"
#include "manifest.h"
#include "plans.h"
#include "prefetch.h"
#include "stat_ahead.h"
#include "target.h"

struct om_item {
	struct conn_err err; /* err.err != 0: this file's answer is an error */
	struct dataset *ds;  /* valid while the batch has not waited */
	struct mf_entry *e;
	char *path;          /* "dataset/path" as checked, for after a wait */
	int reval_err;       /* < 0: its revalidation on a worker said no */
	bool own_fill;       /* it started chunk 0's fill (HANDLERS_OPEN_OWN_FILL) */
};

struct om_batch {
	struct conn *c;
	uint32_t id, flags;
	uint32_t n;
	unsigned waiting;    /* revalidations out + 1 while the frame is parsed */
	bool deferred;       /* some revalidation went to a worker */
	size_t work;         /* bytes counted with conn_work_begin */
	struct om_item items[];
};

/* A waiter for a fill started for a file opened without its chunk 0: it
 * only keeps the connection counted until the fill ends. */
struct om_fill {
	struct waiter w;
	struct conn *c;
};

struct om_reval {
	struct om_batch *b;
	uint32_t i;
};

static void fill_done(struct cache *cache, struct waiter *w, struct chunk *ch, int err)
{
	struct om_fill *f = (struct om_fill *)w;
	(void)cache;
	(void)ch;
	(void)err; /* the client's CHUNK reports it */
	conn_put(f->c);
	free(f);
}

/* Start chunk 0's fill for a file answered without it. */
static void fill_start(struct conn *c, struct dataset *ds, struct mf_entry *e)
{
	struct cache *cache = conn_api(c)->cache;
	if (e->st.size == 0 || cache->stopping ||
	    chunk_find(&cache->chunks, chunk_key(ds->name, e->path, &e->st, 0)))
		return; /* nothing to read, or resident (a check is on its way) */
	struct om_fill *f = calloc(1, sizeof(*f));
	if (!f)
		return; /* the CHUNK will fill it */
	f->w.cb = fill_done;
	f->c = c;
	struct chunk *ch = NULL;
	const struct read_ctx rctx = conn_read_ctx(c);
	if (fill_get(cache, ds, e->path, &e->st, 0, &rctx, &f->w, &ch) == 0)
		conn_get(c);
	else
		free(f);
}

/* Find item i's file again after a wait; errors go to its sink. */
static struct mf_entry *item_resolve(struct conn *c, struct om_batch *b, struct om_item *it)
{
	struct target t;
	struct proto_rd r;
	struct proto_wr tmp;
	struct tc_hdr h = {.op = TC_OP_OPEN_MANY, .id = b->id};
	proto_wr_init(&tmp);
	proto_wr_str(&tmp, it->path);
	proto_rd_init(&r, tmp.buf, tmp.len);
	bool ok = !tmp.oom && target_parse(c, &h, &r, &t);
	proto_wr_free(&tmp);
	if (!ok)
		return NULL;
	struct mf_entry *e = manifest_find(t.ds->mf, t.rest);
	if (!e) {
		conn_reply_err(c, h.op, h.id, ENOENT, "no file \"%s\" in dataset %s", t.rest, t.ds->name);
		return NULL;
	}
	it->ds = t.ds;
	return e;
}

static void batch_free(struct om_batch *b)
{
	for (uint32_t i = 0; i < b->n; i++)
		free(b->items[i].path);
	free(b);
}

/* Every revalidation is back: write the reply (if c still lives). */
static void batch_answer(struct om_batch *b)
{
	struct conn *c = b->c;
	struct proto_wr w;
	int fds[TC_OPEN_MANY_MAX];
	unsigned nfds = 0;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u32(&w, b->n);
	for (uint32_t i = 0; i < b->n; i++) {
		struct om_item *it = &b->items[i];
		int fd = -1;
		c->err_sink = &it->err;
		if (!it->err.err && b->deferred) {
			/* the datasets may have been reloaded meanwhile: only
			 * the path is trusted after a wait */
			it->e = item_resolve(c, b, it);
			if (it->e && it->reval_err < 0) {
				it->err.err = -it->reval_err;
				dataset_reval_msg(it->ds, it->path + strlen(it->ds->name) + 1,
						  it->reval_err, it->err.msg, sizeof(it->err.msg));
			}
		}
		if (!it->err.err) {
			size_t mark = w.len;
			proto_wr_u32(&w, 0);
			uint32_t fl = b->flags | (it->own_fill ? HANDLERS_OPEN_OWN_FILL : 0) |
				      ((b->flags & TC_F_WANT_CHUNK0) ? HANDLERS_OPEN_FILLS_ABSENT : 0);
			int rc = handlers_open_record(c, &w, fl, it->ds, it->e, &fd);
			if (rc < 0) {
				w.len = mark;
				session_reply_full(c, TC_OP_OPEN_MANY, b->id, rc); /* to the sink */
			} else if (fd < 0 && (b->flags & TC_F_WANT_CHUNK0)) {
				fill_start(c, it->ds, it->e);
			}
		}
		c->err_sink = NULL;
		if (it->err.err) {
			proto_wr_u32(&w, (uint32_t)it->err.err);
			proto_wr_str(&w, it->err.msg);
		}
		if (fd >= 0)
			fds[nfds++] = fd;
	}
	conn_reply_fds(c, TC_OP_OPEN_MANY, b->id, &w, fds, nfds);
	proto_wr_free(&w);
}

/* One waiter of b is done: the last answers and frees it. */
static void batch_put(struct om_batch *b)
{
	if (--b->waiting)
		return;
	struct conn *c = b->c;
	if (!c->dead)
		batch_answer(b);
	if (b->deferred) {
		conn_work_end(c, b->work);
		conn_put(c);
	}
	batch_free(b);
}

static void item_after_reval(struct cache *cache, void *arg, int err)
{
	struct om_reval *rv = arg;
	struct om_batch *b = rv->b;
	struct om_item *it = &b->items[rv->i];
	free(rv);
	/* -ENOENT: the file went: item_resolve finds it gone and says so */
	if (err < 0 && err != -ENOENT)
		it->reval_err = err;
	(void)cache;
	batch_put(b);
}

/* The OPEN checks of item i (errors to its sink); may start its
 * revalidation on a worker (b->waiting counts it). */
static void item_check(struct conn *c, struct om_batch *b, uint32_t i, struct proto_rd *r)
{
	struct om_item *it = &b->items[i];
	struct tc_hdr h = {.op = TC_OP_OPEN_MANY, .id = b->id};
	struct target t;
	if (!target_parse(c, &h, r, &t))
		return;
	if (!(it->path = strdup(t.buf))) {
		conn_reply_err(c, h.op, h.id, ENOMEM, "out of memory");
		return;
	}
	it->ds = t.ds;
	if (!access_check(c, h.op, h.id, t.ds, t.rest, ACCESS_OPEN))
		return;
	if (!*t.rest) {
		conn_reply_err(c, h.op, h.id, EISDIR, "%s is a dataset (a directory); open a file in it",
			       t.ds->name);
		return;
	}
	struct mf_entry *e = manifest_find(t.ds->mf, t.rest);
	if (!e) {
		if (manifest_dir_exists(t.ds->mf, t.rest))
			conn_reply_err(c, h.op, h.id, EISDIR, "%s is a directory", t.buf);
		else
			conn_reply_err(c, h.op, h.id, ENOENT, "no file \"%s\" in dataset %s", t.rest,
				       t.ds->name);
		return;
	}
	it->e = e;
	struct cache *cache = conn_api(c)->cache;
	if (!dataset_entry_stale(t.ds, e, cache_now_ns())) {
		stat_ahead_seen(cache, e);
		return;
	}
	if (cold_has_cheap_stat(&t.ds->cold)) {
		int rc = dataset_revalidate_now(cache, t.ds, e);
		if (rc < 0) {
			it->err.err = -rc;
			dataset_reval_msg(t.ds, t.rest, rc, it->err.msg, sizeof(it->err.msg));
		}
		return;
	}
	/* a slow stat ahead: let the first chunk's read overlap it */
	it->own_fill = prefetch_open_ahead(conn_api(c)->plans->pf, t.ds, t.rest, &e->st);
	struct om_reval *rv = malloc(sizeof(*rv));
	if (!rv) {
		conn_reply_err(c, h.op, h.id, ENOMEM, "out of memory");
		return;
	}
	*rv = (struct om_reval){.b = b, .i = i};
	if (!b->deferred) {
		b->deferred = true;
		conn_get(c);
		conn_work_begin(c, b->work);
	}
	b->waiting++;
	if (stat_ahead_join(cache, t.ds, e, item_after_reval, rv) == 0)
		return; /* its stat ahead is on the way: its answer is this one's */
	if (dataset_revalidate_async(cache, t.ds, t.rest, item_after_reval, rv) < 0)
		item_after_reval(cache, rv, -ENOMEM);
	stat_ahead_trigger(cache, t.ds, e, false); /* no read answers for it */
}

void handlers_open_many(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	uint32_t n = proto_rd_u32(r);
	if (!proto_rd_ok(r) || n == 0 || n > TC_OPEN_MANY_MAX) {
		conn_reply_err(c, h->op, h->id, proto_rd_ok(r) ? EINVAL : EBADMSG,
			       "OPEN_MANY names 1 to %u files (got %u)", TC_OPEN_MANY_MAX, n);
		return;
	}
	/* the frame must hold n strings before anything is opened */
	struct proto_rd peek = *r;
	for (uint32_t i = 0; i < n && proto_rd_ok(&peek); i++) {
		size_t len;
		(void)proto_rd_str(&peek, TC_FRAME_MAX, &len);
	}
	if (!proto_rd_done(&peek)) {
		conn_reply_err(c, h->op, h->id, EBADMSG,
			       "malformed OPEN_MANY: expected u32 count, count x str DATASET/PATH");
		return;
	}
	size_t size = sizeof(struct om_batch) + n * sizeof(struct om_item);
	struct om_batch *b = calloc(1, size);
	if (!b) {
		conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		return;
	}
	b->c = c;
	b->id = h->id;
	b->flags = h->aux & TC_F_WANT_CHUNK0;
	b->n = n;
	b->waiting = 1;
	b->work = size + (size_t)h->len; /* the items and their paths */
	struct cache *cache = conn_api(c)->cache;
	cache->ctr.open_many_frames++;
	cache->ctr.open_many_files += n;
	for (uint32_t i = 0; i < n; i++) {
		/* each path on its own reader: a bad one cannot shift the next */
		struct proto_rd one;
		const uint8_t *at = r->p;
		size_t len;
		(void)proto_rd_str(r, TC_FRAME_MAX, &len);
		proto_rd_init(&one, at, (size_t)(r->p - at));
		c->err_sink = &b->items[i].err;
		item_check(c, b, i, &one);
		c->err_sink = NULL;
	}
	batch_put(b);
}
