/*
 * TC_OP_READ: bytes the daemon reads itself and sends in the reply (for
 * clients that cannot take descriptors). Loop thread; the reads and
 * checks run on workers, chunk by chunk.
 *
 * A READ sends bytes the daemon read itself, so it checks them first: the
 * worker reads the chunk's whole file, compares its checksum, and copies
 * the asked range on the way (the bytes sent are the bytes checked). A
 * file that does not match is dropped (verify.h) and the chunk read from
 * the cold store, at most READ_RETRIES times per READ.
 *
 * Memory: nothing is allocated at parse. Each READ counts its reply's
 * bytes with conn_work_begin from parse to reply, so a client pipelining
 * READs it never collects stops being read once that and its queued
 * replies reach the connection's bound; the buffer is allocated only when
 * the first chunk is about to be read, and no work starts for a
 * connection that closed.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunk.h"
#include "counts.h"
#include "dataset.h"
#include "fill.h"
#include "handlers.h"
#include "plans.h"
#include "prefetch.h"
#include "verify.h"
#include "workers.h"

/* A READ in progress. */
struct read_req {
	struct waiter w;   /* first: fill_get's callback gets it */
	struct conn *c;
	uint32_t id;
	uint64_t hid;
	uint64_t off;
	uint32_t chunk_size;
	uint32_t len, got;
	uint8_t *buf;      /* allocated when the first piece is read, not at parse */
	size_t work;       /* bytes counted with conn_work_begin */
	struct job job;
	int fd;
	struct cfile *f;
	uint64_t key;      /* of the chunk being read, and what it must hash to */
	uint64_t checksum;
	uint64_t base;     /* the chunk's offset in fd (a segment), else 0 */
	bool in_segment;
	uint32_t flen;     /* its file's length */
	bool check;        /* verify the whole file (not an unkept chunk) */
	uint8_t retries;   /* chunks found bad and read again for this READ */
	uint64_t found_size;
	ssize_t rres;
	bool verifying;    /* waits for the check of a resident chunk: a hit, not a miss */
};


#define READ_RETRIES 2

static void read_step(struct read_req *p);

static void read_finish(struct read_req *p, int err)
{
	struct conn *c = p->c;
	if (!c->dead) {
		if (err == -EBADMSG || (err == -EIO && p->retries > READ_RETRIES)) {
			conn_reply_err(c, TC_OP_READ, p->id, EIO,
				       "the cached copy failed its checksum again after being read "
				       "from the cold store; the tier's disk may be failing (see the "
				       "daemon's log)");
		} else if (err < 0) {
			conn_reply_err(c, TC_OP_READ, p->id, -err, "read failed: %s", strerror(-err));
		} else {
			struct proto_wr w;
			proto_wr_init(&w);
			proto_wr_begin(&w);
			proto_wr_bytes(&w, p->buf, p->got);
			conn_api(c)->cache->ctr.bytes_served += p->got;
			conn_reply(c, TC_OP_READ, p->id, &w, -1);
			proto_wr_free(&w);
		}
	}
	free(p->buf);
	conn_work_end(c, p->work); /* the reply (if any) is queued and counted now */
	conn_put(c);
	free(p);
}

static void read_work(struct job *j)
{
	struct read_req *p = (struct read_req *)((char *)j - offsetof(struct read_req, job));
	uint64_t want = p->len - p->got;
	uint64_t in = (p->off + p->got) % p->chunk_size; /* offset inside the chunk */
	uint64_t room = p->flen - in;
	if (want > room)
		want = room;
	if (p->check) {
		int rc = verify_fd_at(p->fd, p->base, p->in_segment, p->flen, p->checksum,
				      p->buf + p->got, (uint32_t)in, (uint32_t)want, &p->found_size);
		p->rres = rc < 0 ? rc : (ssize_t)want;
	} else {
		/* unkept: a sealed memfd or a nameless file written for this
		 * fill, with no checksum to compare */
		p->rres = pread(p->fd, p->buf + p->got, want, (off_t)in);
		if (p->rres >= 0 && (uint64_t)p->rres != want)
			p->rres = -EIO;
		else if (p->rres < 0)
			p->rres = -errno;
	}
	close(p->fd);
	p->fd = -1;
}

static void read_work_done(struct job *j)
{
	struct read_req *p = (struct read_req *)((char *)j - offsetof(struct read_req, job));
	struct cache *cache = conn_api(p->c)->cache;
	if (p->check && (p->rres == -EBADMSG || p->rres == -EIO)) {
		struct chunk *ch = chunk_find(&cache->chunks, p->key);
		if (ch && ch->file == p->f) {
			char detail[96];
			if (p->rres == -EBADMSG && p->found_size != p->flen)
				snprintf(detail, sizeof(detail), "the file is %llu bytes, the chunk %u",
					 (unsigned long long)p->found_size, p->flen);
			else
				snprintf(detail, sizeof(detail), "%s",
					 p->rres == -EBADMSG ? "checksum mismatch" : "read error");
			verify_chunk_bad(cache, ch, "read", detail);
		}
		cfile_unref(cache, p->f);
		p->f = NULL;
		if (++p->retries > READ_RETRIES) {
			read_finish(p, -EBADMSG);
			return;
		}
		read_step(p); /* the chunk is gone: this reads it from the cold store */
		return;
	}
	cfile_unref(cache, p->f);
	p->f = NULL;
	if (p->rres < 0) {
		read_finish(p, (int)p->rres);
		return;
	}
	p->got += (uint32_t)p->rres;
	read_step(p);
}

static void read_have_chunk(struct read_req *p, struct chunk *ch)
{
	if (p->c->dead) { /* nobody to send it to */
		read_finish(p, 0);
		return;
	}
	if (!p->buf && !(p->buf = malloc(p->len ? p->len : 1))) {
		read_finish(p, -ENOMEM);
		return;
	}
	p->fd = chunk_open_fd(conn_api(p->c)->cache, ch);
	if (p->fd < 0) {
		read_finish(p, p->fd);
		return;
	}
	p->f = ch->file;
	cfile_ref(p->f);
	p->key = ch->key;
	p->checksum = ch->checksum;
	p->flen = ch->len;
	p->base = chunk_base(ch);
	p->in_segment = ch->file->seg != NULL;
	p->check = ch->state != CHUNK_UNKEPT;
	chunk_count_read(conn_api(p->c)->cache, ch);
	p->job.work = read_work;
	p->job.done = read_work_done;
	workers_submit(conn_api(p->c)->cache->workers, &p->job);
}

static void read_waited(struct cache *cache, struct waiter *w, struct chunk *ch, int err)
{
	struct read_req *p = (struct read_req *)w;
	(void)cache;
	if (err < 0 || p->c->dead) {
		read_finish(p, err);
	} else {
		if (p->verifying)
			counts_hit(p->c, ch);
		else
			counts_trace(p->c, ch, ch->state == CHUNK_UNKEPT ? TRACE_UNKEPT : TRACE_MISS);
		read_have_chunk(p, ch);
	}
}

static void read_step(struct read_req *p)
{
	struct conn *c = p->c;
	struct handle *hd = session_handle_get(c, p->hid);
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
	const struct read_ctx rctx = conn_read_ctx(c);
	int rc = fill_get(conn_api(c)->cache, hd->ds, hd->path, &hd->src, idx, &rctx, &p->w, &ch);
	if (rc >= 0)
		prefetch_readahead(conn_api(c)->plans->pf, hd->ds, hd->path, &hd->src, idx, hd->nchunks);
	if (rc == 1) {
		counts_resident(c, hd, idx, ch);
		read_have_chunk(p, ch);
	} else if (rc == 0) {
		p->verifying = verify_inflight(conn_api(c)->cache, chunk_key(hd->ds->name, hd->path,
									     &hd->src, idx));
		if (!p->verifying)
			counts_filling(c, hd, idx);
	} else {
		read_finish(p, rc == -EHOSTDOWN ? -EIO : rc);
	}
}

void handlers_read(struct conn *c, const struct tc_hdr *h, struct proto_rd *r)
{
	uint64_t hid = proto_rd_u64(r);
	uint64_t off = proto_rd_u64(r);
	uint32_t len = proto_rd_u32(r);
	if (!proto_rd_done(r)) {
		conn_reply_err(c, h->op, h->id, EBADMSG, "malformed READ");
		return;
	}
	struct handle *hd = handlers_handle_for_read(c, h, hid);
	if (!hd)
		return;
	if (len > TC_READ_MAX)
		len = TC_READ_MAX;
	if (off >= hd->src.size)
		len = 0;
	else if (len > hd->src.size - off)
		len = (uint32_t)(hd->src.size - off);
	struct read_req *p = calloc(1, sizeof(*p));
	if (!p) {
		conn_reply_err(c, h->op, h->id, ENOMEM, "out of memory");
		return;
	}
	p->c = c;
	p->id = h->id;
	p->hid = hid;
	p->off = off;
	p->len = len;
	p->fd = -1;
	p->chunk_size = hd->chunk_size;
	p->work = len;
	conn_get(c);
	conn_work_begin(c, p->work); /* may pause reading c: counted until its reply is queued */
	read_step(p);
}

