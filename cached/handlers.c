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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunk.h"
#include "dataset.h"
#include "fill.h"
#include "log.h"
#include "manifest.h"
#include "mover.h"
#include "plans.h"
#include "policy_glue.h"
#include "prefetch.h"
#include "server.h"
#include "status.h"
#include "workers.h"

#define HELD_MAX 64u /* chunk fds one handle may hold */

struct held {
	uint32_t idx;
	struct cfile *f;
};

struct handle {
	uint32_t gen;
	struct dataset *ds;
	char *path;
	struct cold_stat src;
	uint32_t chunk_size;
	uint32_t nchunks;
	struct held held[HELD_MAX];
	uint32_t nheld;
};

/* A request that waits for something on another thread. */
struct pending {
	struct waiter w;
	struct conn *c;
	uint8_t op;
	uint32_t id;
	uint32_t flags;
	uint64_t hid;
	uint32_t idx;
	/* streamed READ */
	uint64_t off;
	uint32_t chunk_size;
	uint32_t len, got;
	uint8_t *buf;
	struct job job;
	int fd;
	struct cfile *f;
	ssize_t rres;
	/* OPEN after revalidation */
	char *path;
	uint64_t start_ns; /* CHUNK: arrival, for the latency histogram */
};

/* ---- paths ---- */

struct target {
	struct dataset *ds;
	const char *rest; /* "" for the dataset root */
	char buf[TC_PATH_MAX + 1];
};

/* Parse "DATASET[/PATH]" and find the dataset. On error reply and return
 * false. */
static bool parse_target(struct conn *c, const struct tc_hdr *h, struct proto_rd *r, struct target *t)
{
	size_t n;
	const char *s = proto_rd_str(r, TC_PATH_MAX, &n);
	if (!s) {
		conn_reply_err(c, h->op, h->id, r->left >= 4 ? ENAMETOOLONG : EBADMSG,
			       r->left >= 4 ? "path longer than %u bytes" : "malformed request",
			       TC_PATH_MAX - 1);
		return false;
	}
	if (n == 0 || memchr(s, '\0', n)) {
		conn_reply_err(c, h->op, h->id, EINVAL, "empty path or NUL byte in path");
		return false;
	}
	if (n >= sizeof(t->buf)) {
		conn_reply_err(c, h->op, h->id, ENAMETOOLONG, "path longer than %u bytes", TC_PATH_MAX - 1);
		return false;
	}
	if (s[0] == '/') {
		conn_reply_err(c, h->op, h->id, EINVAL,
			       "absolute path: name files as DATASET/PATH (no leading /)");
		return false;
	}
	memcpy(t->buf, s, n);
	t->buf[n] = '\0';
	while (n > 1 && t->buf[n - 1] == '/')
		t->buf[--n] = '\0'; /* "ds/dir/" means "ds/dir" */
	char *slash = strchr(t->buf, '/');
	size_t dn = slash ? (size_t)(slash - t->buf) : n;
	t->rest = slash ? slash + 1 : "";
	if (*t->rest && !manifest_path_valid(t->rest, strlen(t->rest))) {
		bool long_name = false;
		for (const char *p = t->rest, *q; *p; p = q + (*q != '\0')) {
			q = strchrnul(p, '/');
			long_name |= (size_t)(q - p) > TC_NAME_MAX;
		}
		if (long_name)
			conn_reply_err(c, h->op, h->id, ENAMETOOLONG, "a path component is longer than %u bytes",
				       TC_NAME_MAX);
		else
			conn_reply_err(c, h->op, h->id, EINVAL,
				       "invalid path \"%s\": empty, \".\" or \"..\" components are not allowed",
				       t->buf);
		return false;
	}
	t->ds = daemon_dataset(c->d, t->buf, dn);
	if (!t->ds) {
		conn_reply_err(c, h->op, h->id, ENOENT, "no dataset named \"%.*s\" (tierctl datasets lists them)",
			       (int)(dn > 64 ? 64 : dn), t->buf);
		return false;
	}
	if (!t->ds->mf) {
		conn_reply_err(c, h->op, h->id, EIO, "dataset %s is unavailable: %s", t->ds->name,
			       t->ds->reason);
		return false;
	}
	return true;
}

/* ---- handles ---- */

static uint64_t handle_id(uint32_t slot, uint32_t gen)
{
	return ((uint64_t)gen << 32) | (slot + 1);
}

static struct handle *handle_get(struct conn *c, uint64_t hid)
{
	uint32_t slot = (uint32_t)hid - 1, gen = (uint32_t)(hid >> 32);
	if ((uint32_t)hid == 0 || slot >= c->nhandles)
		return NULL;
	struct handle *hd = c->handles[slot];
	return hd && hd->gen == gen ? hd : NULL;
}

static void handle_release_all(struct conn *c, struct handle *hd)
{
	for (uint32_t i = 0; i < hd->nheld; i++)
		cfile_unref(c->d, hd->held[i].f);
	hd->nheld = 0;
}

static void handle_free(struct conn *c, uint64_t hid)
{
	uint32_t slot = (uint32_t)hid - 1;
	struct handle *hd = handle_get(c, hid);
	if (!hd)
		return;
	handle_release_all(c, hd);
	c->handles[slot] = NULL;
	free(hd->path);
	free(hd);
}

static int handle_new(struct conn *c, struct dataset *ds, const struct mf_entry *e, uint64_t *hid)
{
	uint32_t slot;
	for (slot = 0; slot < c->nhandles && c->handles[slot]; slot++)
		;
	if (slot == c->nhandles) {
		if (c->nhandles >= SERVER_HANDLES_MAX)
			return -EMFILE;
		uint32_t n = c->nhandles ? c->nhandles * 2 : 16;
		struct handle **v = realloc(c->handles, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + c->nhandles, 0, (n - c->nhandles) * sizeof(*v));
		c->handles = v;
		c->nhandles = n;
	}
	struct handle *hd = calloc(1, sizeof(*hd));
	if (!hd || !(hd->path = strdup(e->path))) {
		free(hd);
		return -ENOMEM;
	}
	hd->gen = ++c->handle_gen;
	hd->ds = ds;
	hd->src = e->st;
	hd->chunk_size = ds->conf.chunk_size;
	hd->nchunks = (uint32_t)((e->st.size + hd->chunk_size - 1) / hd->chunk_size);
	c->handles[slot] = hd;
	*hid = handle_id(slot, hd->gen);
	return 0;
}

/* Remember that the client holds chunk idx's file. */
static int handle_hold(struct handle *hd, uint32_t idx, struct cfile *f, struct daemon *d)
{
	for (uint32_t i = 0; i < hd->nheld; i++) {
		if (hd->held[i].idx == idx) {
			cfile_ref(f);
			cfile_unref(d, hd->held[i].f);
			hd->held[i].f = f;
			return 0;
		}
	}
	if (hd->nheld == HELD_MAX)
		return -EMFILE;
	cfile_ref(f);
	hd->held[hd->nheld++] = (struct held){.idx = idx, .f = f};
	return 0;
}

/* ---- hits ---- */

static void count_hit(struct daemon *d, struct chunk *ch)
{
	if (ch->tier == TIER_HOT)
		d->ctr.hits_hot++;
	else
		d->ctr.hits_warm++;
	ch->ds->hits++;
	ch->atime_s = daemon_wall_s();
	/* a chunk being moved is in no policy until the move ends */
	if (ch->state != CHUNK_RESIDENT)
		return;
	/* only a real hit promotes, and only if hot's policy wants it: a fill
	 * that landed on warm is not evidence that the chunk is hot */
	if (policy_glue_hit(d, ch) == TIER_HOT && ch->tier == TIER_WARM)
		mover_promote(d, ch);
}

static void count_miss(struct daemon *d, struct dataset *ds)
{
	d->ctr.misses++;
	ds->misses++;
}

/* Write "u32 idx, u64 off, u32 len, u8 tier" and open the chunk's fd. */
static int chunk_answer(struct conn *c, struct handle *hd, struct chunk *ch, struct proto_wr *w, int *fd)
{
	*fd = chunk_open_fd(c->d, ch);
	if (*fd < 0)
		return *fd;
	int rc = handle_hold(hd, ch->idx, ch->file, c->d);
	if (rc < 0) {
		close(*fd);
		*fd = -1;
		return rc;
	}
	proto_wr_u32(w, ch->idx);
	proto_wr_u64(w, (uint64_t)ch->idx * hd->chunk_size);
	proto_wr_u32(w, ch->len);
	proto_wr_u8(w, ch->state == CHUNK_UNKEPT ? TC_TIER_NONE : ch->tier);
	c->d->ctr.bytes_served += ch->len;
	chunk_count_read(c->d, ch);
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

static void open_reply(struct conn *c, uint32_t id, uint32_t flags, struct dataset *ds, struct mf_entry *e)
{
	struct proto_wr w;
	uint64_t hid;
	int fd = -1;
	int rc = handle_new(c, ds, e, &hid);
	if (rc < 0) {
		conn_reply_err(c, TC_OP_OPEN, id, -rc,
			       rc == -EMFILE ? "too many open handles on this connection" : "out of memory");
		return;
	}
	struct handle *hd = handle_get(c, hid);
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u64(&w, hid);
	proto_wr_u64(&w, e->st.size);
	proto_wr_i64(&w, e->st.mtime_ns);
	proto_wr_u32(&w, hd->chunk_size);
	struct chunk *ch = NULL;
	if ((flags & TC_F_WANT_CHUNK0) && hd->nchunks)
		ch = chunk_find(&c->d->chunks, chunk_key(ds->name, e->path, &e->st, 0));
	if (ch) {
		proto_wr_u8(&w, 1);
		if (chunk_answer(c, hd, ch, &w, &fd) == 0) {
			policy_glue_access(c->d, ch->key);
			count_hit(c->d, ch);
		} else {
			/* the file vanished under us: answer without it */
			proto_wr_begin(&w);
			proto_wr_u64(&w, hid);
			proto_wr_u64(&w, e->st.size);
			proto_wr_i64(&w, e->st.mtime_ns);
			proto_wr_u32(&w, hd->chunk_size);
			proto_wr_u8(&w, 0);
		}
	} else {
		proto_wr_u8(&w, 0);
	}
	conn_reply(c, TC_OP_OPEN, id, &w, fd);
	proto_wr_free(&w);
}

/* After a deferred revalidation: find the target again, since the manifest
 * may have been replaced meanwhile. Replies with the error if it is gone. */
static bool reresolve(struct conn *c, uint8_t op, uint32_t id, const char *path, struct target *t)
{
	struct proto_rd r;
	struct proto_wr tmp;
	struct tc_hdr h = {.op = op, .id = id};
	proto_wr_init(&tmp);
	proto_wr_str(&tmp, path);
	proto_rd_init(&r, tmp.buf, tmp.len);
	bool ok = !tmp.oom && parse_target(c, &h, &r, t);
	proto_wr_free(&tmp);
	return ok;
}

/* Confirm e against the source if it is older than revalidate_after:
 * inline for a cheap local stat, else on a worker with cont() continuing
 * the request. Returns 0 to go on now, -ENOENT if the file is gone (nothing
 * replied), 1 if deferred (or failed and replied). */
static int revalidate(struct conn *c, const struct tc_hdr *h, struct target *t, struct mf_entry *e,
		      dataset_reval_cb cont)
{
	if (!dataset_entry_stale(t->ds, e, daemon_now_ns()))
		return 0;
	if (t->ds->cold.ops->caps & COLD_CAP_CHEAP_STAT)
		return dataset_revalidate_now(c->d, t->ds, e) == -ENOENT ? -ENOENT : 0;
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
	if (dataset_revalidate_async(c->d, t->ds, t->rest, cont, p) < 0)
		cont(c->d, p, 0);
	return 1;
}

static void open_after_reval(struct daemon *d, void *arg, int err)
{
	struct pending *p = arg;
	struct conn *c = p->c;
	struct target t;
	(void)d;
	if (!c->dead && reresolve(c, TC_OP_OPEN, p->id, p->path, &t)) {
		struct mf_entry *e = manifest_find(t.ds->mf, t.rest);
		if (!e)
			conn_reply_err(c, TC_OP_OPEN, p->id, err == -ENOENT || err == 0 ? ENOENT : -err,
				       "no file \"%s\" in dataset %s", t.rest, t.ds->name);
		else
			open_reply(c, p->id, p->flags, t.ds, e);
	}
	free(p->path);
	conn_put(c);
	free(p);
}

static void op_open(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct target t;
	if (!parse_target(c, h, r, &t))
		return;
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed OPEN");
		return;
	}
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
	/* a slow stat ahead: let the first chunk's read overlap it */
	if (!(t.ds->cold.ops->caps & COLD_CAP_CHEAP_STAT) &&
	    dataset_entry_stale(t.ds, e, daemon_now_ns()))
		prefetch_open_ahead(c->d, t.ds, t.rest, &e->st);
	int rv = revalidate(c, h, &t, e, open_after_reval);
	if (rv == -ENOENT) {
		conn_reply_err(c, h->op, h->id, ENOENT, "%s was removed at the source", t.buf);
		return;
	}
	if (rv > 0)
		return;
	open_reply(c, h->id, h->aux, t.ds, e);
}

static void chunk_waited(struct daemon *d, struct waiter *w, struct chunk *ch, int err)
{
	struct pending *p = (struct pending *)w;
	struct conn *c = p->c;
	histogram_observe(&d->lat_chunk_miss, daemon_now_ns() - p->start_ns);
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
			struct proto_wr pw;
			int fd;
			proto_wr_init(&pw);
			proto_wr_begin(&pw);
			int rc = chunk_answer(c, hd, ch, &pw, &fd);
			if (rc < 0)
				conn_reply_err(c, TC_OP_CHUNK, p->id, -rc, "cannot hand out the chunk: %s",
					       strerror(-rc));
			else
				conn_reply(c, TC_OP_CHUNK, p->id, &pw, fd);
			proto_wr_free(&pw);
		}
	}
	conn_put(c);
	free(p);
}

static void op_chunk(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	uint64_t start_ns = daemon_now_ns();
	uint64_t hid = proto_rd_u64(r);
	uint32_t idx = proto_rd_u32(r);
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed CHUNK");
		return;
	}
	struct handle *hd = handle_get(c, hid);
	if (!hd) {
		conn_reply_err(c, h->op, h->id, EBADF, "no such handle");
		return;
	}
	if (hd->ds->removed) {
		conn_reply_err(c, h->op, h->id, ESTALE, "dataset %s was removed from the daemon's "
			       "config (reload); open the file again once it is configured", hd->ds->name);
		return;
	}
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
	p->w.cb = chunk_waited;
	p->c = c;
	p->id = h->id;
	p->hid = hid;
	p->idx = idx;
	p->start_ns = start_ns;
	struct chunk *ch = NULL;
	int rc = fill_get(c->d, hd->ds, hd->path, &hd->src, idx, &p->w, &ch);
	if (rc >= 0)
		prefetch_readahead(c->d, hd->ds, hd->path, &hd->src, idx, hd->nchunks);
	if (rc == 1) {
		struct proto_wr w;
		int fd;
		free(p);
		proto_wr_init(&w);
		proto_wr_begin(&w);
		rc = chunk_answer(c, hd, ch, &w, &fd);
		if (rc < 0) {
			conn_reply_err(c, h->op, h->id, -rc, "cannot hand out the chunk: %s", strerror(-rc));
		} else {
			count_hit(c->d, ch);
			conn_reply(c, h->op, h->id, &w, fd);
		}
		proto_wr_free(&w);
		histogram_observe(&c->d->lat_chunk_hit, daemon_now_ns() - start_ns);
	} else if (rc == 0) {
		count_miss(c->d, hd->ds);
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

/* ---- streamed READ: chunk by chunk, each pread on a worker ---- */

static void read_step(struct pending *p);

static void read_finish(struct pending *p, int err)
{
	struct conn *c = p->c;
	if (!c->dead) {
		if (err < 0) {
			conn_reply_err(c, TC_OP_READ, p->id, -err, "read failed: %s", strerror(-err));
		} else {
			struct proto_wr w;
			proto_wr_init(&w);
			proto_wr_begin(&w);
			proto_wr_bytes(&w, p->buf, p->got);
			c->d->ctr.bytes_served += p->got;
			conn_reply(c, TC_OP_READ, p->id, &w, -1);
			proto_wr_free(&w);
		}
	}
	free(p->buf);
	conn_put(c);
	free(p);
}

static void read_work(struct job *j)
{
	struct pending *p = (struct pending *)((char *)j - offsetof(struct pending, job));
	uint64_t want = p->len - p->got;
	uint64_t in = (p->off + p->got) % p->chunk_size; /* offset inside the chunk */
	uint64_t room = p->f->len - in;
	if (want > room)
		want = room;
	p->rres = pread(p->fd, p->buf + p->got, want, (off_t)in);
	if (p->rres >= 0 && (uint64_t)p->rres != want)
		p->rres = -EIO;
	else if (p->rres < 0)
		p->rres = -errno;
	close(p->fd);
}

static void read_work_done(struct job *j)
{
	struct pending *p = (struct pending *)((char *)j - offsetof(struct pending, job));
	cfile_unref(p->c->d, p->f);
	if (p->rres < 0) {
		read_finish(p, (int)p->rres);
		return;
	}
	p->got += (uint32_t)p->rres;
	read_step(p);
}

static void read_have_chunk(struct pending *p, struct chunk *ch)
{
	p->fd = chunk_open_fd(p->c->d, ch);
	if (p->fd < 0) {
		read_finish(p, p->fd);
		return;
	}
	p->f = ch->file;
	cfile_ref(p->f);
	chunk_count_read(p->c->d, ch);
	p->job.work = read_work;
	p->job.done = read_work_done;
	workers_submit(p->c->d->workers, &p->job);
}

static void read_waited(struct daemon *d, struct waiter *w, struct chunk *ch, int err)
{
	struct pending *p = (struct pending *)w;
	(void)d;
	if (err < 0 || p->c->dead)
		read_finish(p, err);
	else
		read_have_chunk(p, ch);
}

static void read_step(struct pending *p)
{
	struct conn *c = p->c;
	struct handle *hd = handle_get(c, p->hid);
	if (c->dead || p->got == p->len) {
		read_finish(p, 0);
		return;
	}
	if (!hd) {
		read_finish(p, -EBADF);
		return;
	}
	uint32_t idx = (uint32_t)((p->off + p->got) / hd->chunk_size);
	struct chunk *ch = NULL;
	p->w.cb = read_waited;
	int rc = fill_get(c->d, hd->ds, hd->path, &hd->src, idx, &p->w, &ch);
	if (rc >= 0)
		prefetch_readahead(c->d, hd->ds, hd->path, &hd->src, idx, hd->nchunks);
	if (rc == 1) {
		count_hit(c->d, ch);
		read_have_chunk(p, ch);
	} else if (rc == 0) {
		count_miss(c->d, hd->ds);
	} else {
		read_finish(p, rc == -EHOSTDOWN ? -EIO : rc);
	}
}

static void op_read(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	uint64_t hid = proto_rd_u64(r);
	uint64_t off = proto_rd_u64(r);
	uint32_t len = proto_rd_u32(r);
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed READ");
		return;
	}
	struct handle *hd = handle_get(c, hid);
	if (!hd) {
		conn_reply_err(c, h->op, h->id, EBADF, "no such handle");
		return;
	}
	if (hd->ds->removed) {
		conn_reply_err(c, h->op, h->id, ESTALE, "dataset %s was removed from the daemon's "
			       "config (reload); open the file again once it is configured", hd->ds->name);
		return;
	}
	if (len > TC_READ_MAX)
		len = TC_READ_MAX;
	if (off >= hd->src.size)
		len = 0;
	else if (len > hd->src.size - off)
		len = (uint32_t)(hd->src.size - off);
	struct pending *p = calloc(1, sizeof(*p));
	if (!p || !(p->buf = malloc(len ? len : 1))) {
		free(p);
		conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		return;
	}
	p->c = c;
	p->id = h->id;
	p->hid = hid;
	p->off = off;
	p->len = len;
	p->chunk_size = hd->chunk_size;
	conn_get(c);
	read_step(p);
}

static void op_release(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	uint64_t hid = proto_rd_u64(r);
	uint32_t idx = proto_rd_u32(r);
	struct handle *hd = proto_rd_done(r) ? handle_get(c, hid) : NULL;
	if (hd) {
		for (uint32_t i = 0; i < hd->nheld; i++) {
			if (hd->held[i].idx == idx) {
				cfile_unref(c->d, hd->held[i].f);
				hd->held[i] = hd->held[--hd->nheld];
				break;
			}
		}
	}
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
	bool ok = proto_rd_done(r) && handle_get(c, hid);
	if (ok)
		handle_free(c, hid);
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

static void stat_reply(struct conn *c, uint32_t id, struct target *t, struct mf_entry *e)
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
	conn_reply(c, TC_OP_STAT, id, &w, -1);
	proto_wr_free(&w);
}

static void stat_after_reval(struct daemon *d, void *arg, int err)
{
	struct pending *p = arg;
	struct conn *c = p->c;
	struct target t;
	(void)d;
	(void)err; /* a source we cannot reach: answer with what we know */
	if (!c->dead && reresolve(c, TC_OP_STAT, p->id, p->path, &t))
		stat_reply(c, p->id, &t, *t.rest ? manifest_find(t.ds->mf, t.rest) : NULL);
	free(p->path);
	conn_put(c);
	free(p);
}

static void op_stat(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct target t;
	if (!parse_target(c, h, r, &t))
		return;
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed STAT");
		return;
	}
	struct mf_entry *e = *t.rest ? manifest_find(t.ds->mf, t.rest) : NULL;
	if (e) {
		int rv = revalidate(c, h, &t, e, stat_after_reval);
		if (rv > 0)
			return;
		if (rv == -ENOENT)
			e = NULL;
	}
	stat_reply(c, h->id, &t, e);
}

struct listpage {
	struct proto_wr *w;
	uint32_t count;
};

#define LIST_PAGE_BYTES (TC_FRAME_MAX - 4096)
#define LIST_PAGE_MAX 8192u

static int list_one(void *arg, const struct mf_dirent *de)
{
	struct listpage *lp = arg;
	if (lp->count >= LIST_PAGE_MAX || lp->w->len + de->namelen + 32 > LIST_PAGE_BYTES)
		return 1;
	proto_wr_u8(lp->w, de->is_dir ? TC_TYPE_DIR : TC_TYPE_FILE);
	proto_wr_u64(lp->w, de->e ? de->e->st.size : 0);
	proto_wr_i64(lp->w, de->e ? de->e->st.mtime_ns : 0);
	proto_wr_strn(lp->w, de->name, de->namelen);
	lp->count++;
	return 0;
}

static void op_listdir(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	struct target t;
	struct proto_wr w;
	if (!parse_target(c, h, r, &t))
		return;
	uint32_t cookie = proto_rd_u32(r);
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed LISTDIR");
		return;
	}
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
	struct listpage lp = {.w = &w};
	uint32_t next = manifest_listdir(t.ds->mf, t.rest, cookie, list_one, &lp);
	if (!w.oom) {
		for (int i = 0; i < 4; i++) {
			w.buf[at + i] = (uint8_t)(next >> (8 * i));
			w.buf[at + 4 + i] = (uint8_t)(lp.count >> (8 * i));
		}
	}
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}

static void op_recset(struct conn *c, const struct tc_hdr *h,
		      void (*fill)(struct daemon *d, struct proto_rs *rs))
{
	struct proto_wr w;
	struct proto_rs rs;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_rs_begin(&rs, &w);
	fill(c->d, &rs);
	proto_rs_end(&rs);
	conn_reply(c, h->op, h->id, &w, -1);
	proto_wr_free(&w);
}

static void refresh_done(struct daemon *d, void *arg, int err, uint64_t files, uint64_t bytes,
			 uint64_t changed)
{
	struct pending *p = arg;
	struct conn *c = p->c;
	(void)d;
	if (!c->dead) {
		if (err < 0) {
			conn_reply_err(c, TC_OP_REFRESH, p->id, -err, "refresh failed: %s", strerror(-err));
		} else {
			struct proto_wr w;
			proto_wr_init(&w);
			proto_wr_begin(&w);
			proto_wr_u64(&w, files);
			proto_wr_u64(&w, bytes);
			proto_wr_u64(&w, changed);
			conn_reply(c, TC_OP_REFRESH, p->id, &w, -1);
			proto_wr_free(&w);
		}
	}
	conn_put(c);
	free(p);
}

static void op_refresh(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	char name[TC_DATASET_NAME_MAX + 1];
	if (!proto_rd_str_copy(r, name, sizeof(name)) || !proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EINVAL, "REFRESH takes a dataset name (at most %u bytes)",
			       TC_DATASET_NAME_MAX);
		return;
	}
	struct dataset *ds = daemon_dataset(c->d, name, strlen(name));
	if (!ds) {
		conn_reply_err(c, h->op, h->id, ENOENT, "no dataset named \"%s\"", name);
		return;
	}
	struct pending *p = calloc(1, sizeof(*p));
	if (!p) {
		conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		return;
	}
	p->c = c;
	p->id = h->id;
	conn_get(c);
	int rc = dataset_refresh(c->d, ds, refresh_done, p);
	if (rc < 0) {
		conn_reply_err(c, h->op, h->id, -rc,
			       rc == -EBUSY ? "dataset %s is already being refreshed; try again shortly"
					    : "cannot refresh %s",
			       ds->name);
		conn_put(c);
		free(p);
	}
}

void handlers_dispatch(struct conn *c, const struct tc_hdr *h, const uint8_t *payload)
{
	struct proto_rd r;
	proto_rd_init(&r, payload, h->len);
	struct daemon *d = c->d;
	d->req_conn = c; /* reads in this request advance its job's plans */
	switch (h->op) {
	case TC_OP_HELLO: op_hello(c, h, &r); break;
	case TC_OP_OPEN: op_open(c, h, &r); break;
	case TC_OP_CHUNK: op_chunk(c, h, &r); break;
	case TC_OP_READ: op_read(c, h, &r); break;
	case TC_OP_RELEASE: op_release(c, h, &r); break;
	case TC_OP_CLOSE: op_close(c, h, &r); break;
	case TC_OP_STAT: op_stat(c, h, &r); break;
	case TC_OP_LISTDIR: op_listdir(c, h, &r); break;
	case TC_OP_DATASETS: op_recset(c, h, status_datasets); break;
	case TC_OP_STATUS: op_recset(c, h, status_fill); break;
	case TC_OP_REFRESH: op_refresh(c, h, &r); break;
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
	default:
		c->d->ctr.bad_frames++;
		conn_reply_err(c, h->op, h->id, ENOSYS, "unknown operation %u", h->op);
	}
	d->req_conn = NULL;
}

void handlers_conn_closed(struct conn *c)
{
	plans_conn_closed(c->d, c);
	for (uint32_t i = 0; i < c->nhandles; i++)
		if (c->handles[i])
			handle_free(c, handle_id(i, c->handles[i]->gen));
}
