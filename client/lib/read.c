/*
 * libtiercache reads: the per-handle cache of chunk descriptors and pread
 * through it, with the streamed READ fallback.
 *
 * A read of cached data is one pread(2) on a chunk fd the daemon passed us;
 * it runs without any lock, the chunk entry pinned by its reference count
 * (an eviction or close marks it dead and its last user closes the fd). A
 * missing chunk is fetched under io_lock; because every fetch holds that
 * lock and looks in the cache again first, two threads never fetch the same
 * chunk twice. Beyond TC_CHUNK_CACHE fds per handle the least recently used
 * is dropped and the daemon told with a RELEASE.
 *
 * The daemon caps the chunk bytes a connection (and a uid) holds through
 * descriptors and answers a CHUNK past the cap with ENOBUFS. Then the
 * chunks cached for the other handles are given back (RELEASE) and the
 * request is tried once more; a second ENOBUFS reaches the caller.
 */
#include "libtc_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A live cached chunk, pinned for the caller. tbl_lock held. */
static struct tc_chunk *chunk_find(struct tc_handle *hd, uint32_t idx)
{
	for (struct tc_chunk *c = hd->chunks; c; c = c->next) {
		if (c->live && c->idx == idx) {
			c->refs++;
			c->stamp = ++hd->clock;
			return c;
		}
	}
	return NULL;
}

void tc_chunk_put(struct tiercache *tc, struct tc_handle *hd, struct tc_chunk *c)
{
	bool gone = false;
	pthread_mutex_lock(&tc->tbl_lock);
	if (--c->refs == 0 && !c->live) {
		for (struct tc_chunk **pp = &hd->chunks; *pp; pp = &(*pp)->next) {
			if (*pp == c) {
				*pp = c->next;
				break;
			}
		}
		gone = true;
	}
	pthread_mutex_unlock(&tc->tbl_lock);
	if (gone) {
		close(c->fd);
		free(c);
	}
}

/* Add c (pinned once for the caller) and evict the least recently used
 * live entry beyond the limit. tbl_lock held. Returns the evicted entry if
 * the daemon must hear of it (*victim_idx), and frees it if unused. */
static bool chunk_insert(struct tiercache *tc, struct tc_handle *hd, struct tc_chunk *c,
			 uint32_t *victim_idx)
{
	bool release = false;
	if (hd->nlive >= TC_CHUNK_CACHE) {
		struct tc_chunk *lru = NULL, **lru_pp = NULL;
		for (struct tc_chunk **pp = &hd->chunks; *pp; pp = &(*pp)->next) {
			if ((*pp)->live && (!lru || (*pp)->stamp < lru->stamp)) {
				lru = *pp;
				lru_pp = pp;
			}
		}
		if (lru) {
			lru->live = false;
			hd->nlive--;
			*victim_idx = lru->idx;
			release = lru->gen == tc->gen && hd->gen == tc->gen;
			if (lru->refs == 0) {
				*lru_pp = lru->next;
				close(lru->fd);
				free(lru);
			}
		}
	}
	c->live = true;
	c->refs = 1;
	c->stamp = ++hd->clock;
	c->next = hd->chunks;
	hd->chunks = c;
	hd->nlive++;
	return release;
}

static void release_remote(struct tiercache *tc, uint64_t dh, uint32_t idx)
{
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_u64(&w, dh);
	proto_wr_u32(&w, idx);
	(void)tc_xfer(tc, TC_OP_RELEASE, TC_F_NOREPLY, &w, NULL);
	proto_wr_free(&w);
}

/* ENOBUFS from the daemon: give back every chunk fd cached for a handle
 * other than keep, on this connection. io_lock held. Returns how many. */
static unsigned give_back_others(struct tiercache *tc, const struct tc_handle *keep)
{
	struct back {
		uint64_t dh;
		uint32_t idx;
	} *v = NULL;
	size_t n = 0, cap = 0;
	bool oom = false;
	pthread_mutex_lock(&tc->tbl_lock);
	for (int i = 0; i < tc->nslots; i++) {
		struct tc_handle *hd = tc->slots[i];
		if (!hd || hd == keep || hd->gen != tc->gen)
			continue;
		for (struct tc_chunk **pp = &hd->chunks; *pp;) {
			struct tc_chunk *c = *pp;
			if (!c->live || c->gen != tc->gen) {
				pp = &c->next;
				continue;
			}
			if (n == cap) {
				size_t ncap = cap ? 2 * cap : 16;
				struct back *nv = realloc(v, ncap * sizeof(*nv));
				if (!nv) {
					oom = true;
					break;
				}
				v = nv;
				cap = ncap;
			}
			v[n++] = (struct back){.dh = hd->dh, .idx = c->idx};
			/* a thread preading from it keeps the fd until it is done */
			c->live = false;
			hd->nlive--;
			if (c->refs == 0) {
				*pp = c->next;
				close(c->fd);
				free(c);
			} else {
				pp = &c->next;
			}
		}
		if (oom)
			break;
	}
	pthread_mutex_unlock(&tc->tbl_lock);
	for (size_t i = 0; i < n; i++)
		release_remote(tc, v[i].dh, v[i].idx);
	free(v);
	return (unsigned)n;
}

struct chunk_arg {
	struct tc_handle *hd;
	uint32_t idx;
	struct tc_chunk *hit;
};

static int chunk_build(struct tiercache *tc, struct proto_wr *w, void *arg)
{
	struct chunk_arg *a = arg;
	pthread_mutex_lock(&tc->tbl_lock);
	a->hit = chunk_find(a->hd, a->idx);
	pthread_mutex_unlock(&tc->tbl_lock);
	if (a->hit)
		return 1; /* fetched by another thread while we waited */
	proto_wr_u64(w, a->hd->dh);
	proto_wr_u32(w, a->idx);
	return 0;
}

/* Get chunk idx's fd from the daemon into the cache. *out: the pinned
 * entry, or NULL when the daemon answered without an fd (stream it). */
static int chunk_fetch(struct tiercache *tc, struct tc_handle *hd, uint32_t idx, uint32_t want_len,
		       uint32_t flags, struct tc_chunk **out)
{
	struct chunk_arg a = {.hd = hd, .idx = idx};
	struct tc_req rq = {
		.op = TC_OP_CHUNK, .flags = flags, .hd = hd, .build = chunk_build, .arg = &a};
	struct tc_msg m;
	struct tc_chunk *c = NULL;
	uint32_t victim = 0;
	bool release = false;

	*out = NULL;
	tc_io_lock(tc);
	int rc = tc_request_locked(tc, &rq, &m);
	if (rc == -ENOBUFS && give_back_others(tc, hd) > 0) {
		tc_log(2, "path=%s chunk=%u: the daemon's held-bytes cap was reached; gave back the "
		       "chunks cached for other files and retrying", hd->path, idx);
		rc = tc_request_locked(tc, &rq, &m);
	}
	if (rc == 1) {
		*out = a.hit;
		rc = 0;
		goto out;
	}
	if (rc < 0)
		goto out;
	struct proto_rd r;
	proto_rd_init(&r, m.payload, m.len);
	struct tc_chunk_rec rec;
	tc_chunk_rec_get(&r, &rec);
	if (!proto_rd_done(&r) || rec.idx != idx || rec.off != (uint64_t)idx * hd->chunk_size ||
	    rec.len != want_len || rec.base > (uint64_t)INT64_MAX - rec.len) {
		rc = tc_bad_reply(tc, "CHUNK");
		goto out;
	}
	int fd = tc_msg_take_fd(&m);
	if (fd < 0) {
		pthread_mutex_lock(&tc->tbl_lock);
		hd->streamed = true;
		pthread_mutex_unlock(&tc->tbl_lock);
		tc_log(2, "path=%s chunk=%u: no fd passed, streaming reads", hd->path, idx);
		goto out;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		release_remote(tc, hd->dh, idx);
		rc = -ENOMEM;
		goto out;
	}
	c->fd = fd;
	c->idx = idx;
	c->len = rec.len;
	c->base = rec.base;
	c->gen = tc->gen;
	pthread_mutex_lock(&tc->tbl_lock);
	release = chunk_insert(tc, hd, c, &victim);
	pthread_mutex_unlock(&tc->tbl_lock);
	if (release)
		release_remote(tc, hd->dh, victim);
	*out = c;
out:
	tc_io_unlock(tc);
	tc_msg_free(&m);
	return rc;
}

/* Exactly n bytes at off of a chunk file: a short file is an error, never
 * short data handed to the caller. */
static int pread_full(struct tc_handle *hd, const struct tc_chunk *c, uint8_t *dst, size_t n,
		      uint64_t off)
{
	while (n > 0) {
		ssize_t r = pread(c->fd, dst, n, (off_t)(c->base + off));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int err = errno;
			tc_err_detail("%s chunk %u: read failed", hd->path, c->idx);
			return -err;
		}
		if (r == 0) {
			tc_err_detail("%s chunk %u: cached file shorter than its %u bytes", hd->path,
				      c->idx, c->len);
			return -EIO;
		}
		dst += r;
		off += (uint64_t)r;
		n -= (size_t)r;
	}
	return 0;
}

struct read_arg {
	struct tc_handle *hd;
	uint64_t off;
	uint32_t len;
};

static int read_build(struct tiercache *tc, struct proto_wr *w, void *arg)
{
	struct read_arg *a = arg;
	if (a->len > tc->read_max)
		a->len = tc->read_max; /* a new connection may allow less */
	proto_wr_u64(w, a->hd->dh);
	proto_wr_u64(w, a->off);
	proto_wr_u32(w, a->len);
	return 0;
}

/* Bytes over the socket with READ, in pieces of at most read_max. */
static int read_streamed(struct tiercache *tc, struct tc_handle *hd, uint64_t off, uint8_t *dst,
			 size_t n)
{
	int rc = 0;
	tc_io_lock(tc);
	while (n > 0) {
		struct read_arg a = {
			.hd = hd,
			.off = off,
			.len = n < TC_READ_MAX ? (uint32_t)n : TC_READ_MAX,
		};
		struct tc_req rq = {.op = TC_OP_READ, .hd = hd, .build = read_build, .arg = &a};
		struct tc_msg m;
		rc = tc_request_locked(tc, &rq, &m);
		if (rc < 0)
			break;
		if (m.len > a.len) {
			tc_msg_free(&m);
			rc = tc_bad_reply(tc, "READ longer than asked");
			break;
		}
		if (m.len < a.len) {
			/* we never ask past the size the handle was opened with */
			tc_msg_free(&m);
			tc_err_detail("%s: short read at offset %llu from tiercached", hd->path,
				      (unsigned long long)(off + m.len));
			rc = -EIO;
			break;
		}
		memcpy(dst, m.payload, m.len);
		tc_msg_free(&m);
		dst += a.len;
		off += a.len;
		n -= a.len;
	}
	tc_io_unlock(tc);
	return rc;
}

int tc_chunk_get(struct tiercache *tc, struct tc_handle *hd, uint32_t idx, uint32_t clen,
		 struct tc_chunk **out)
{
	*out = NULL;
	if (tc->no_fd_passing)
		return 0;
	pthread_mutex_lock(&tc->tbl_lock);
	struct tc_chunk *c = chunk_find(hd, idx);
	bool streamed = hd->streamed;
	pthread_mutex_unlock(&tc->tbl_lock);
	if (!c && !streamed) {
		int rc = chunk_fetch(tc, hd, idx, clen, 0, &c);
		if (rc < 0)
			return rc;
	}
	*out = c;
	return 0;
}

int tc_chunk_recheck(struct tiercache *tc, struct tc_handle *hd, struct tc_chunk *c, uint32_t clen,
		     struct tc_chunk **out)
{
	*out = NULL;
	pthread_mutex_lock(&tc->tbl_lock);
	if (c->live) { /* no other thread dropped it yet: its last put closes it */
		c->live = false;
		hd->nlive--;
	}
	pthread_mutex_unlock(&tc->tbl_lock);
	tc_log(1, "path=%s chunk=%u: the cached chunk file read short; asking the daemon to "
	       "check it", hd->path, c->idx);
	/* the daemon's answer replaces what it counts as held for idx */
	return chunk_fetch(tc, hd, c->idx, clen, TC_F_CHUNK_RECHECK, out);
}

/* n bytes at coff inside chunk idx (all within the chunk). */
static int read_piece(struct tiercache *tc, struct tc_handle *hd, uint32_t idx, uint32_t clen,
		      uint64_t coff, uint8_t *dst, size_t n)
{
	struct tc_chunk *c;
	int rc = tc_chunk_get(tc, hd, idx, clen, &c);
	if (rc < 0)
		return rc;
	if (c) {
		rc = pread_full(hd, c, dst, n, coff);
		if (rc == -EIO) {
			/* a file shorter than its chunk, or a disk error: the
			 * daemon checks it and reads it again if it is bad; once */
			struct tc_chunk *again = NULL;
			rc = tc_chunk_recheck(tc, hd, c, clen, &again);
			tc_chunk_put(tc, hd, c);
			if (rc < 0)
				return rc;
			if (!again)
				goto streamed;
			rc = pread_full(hd, again, dst, n, coff);
			tc_chunk_put(tc, hd, again);
			return rc;
		}
		tc_chunk_put(tc, hd, c);
		return rc;
	}
streamed:
	return read_streamed(tc, hd, (uint64_t)idx * hd->chunk_size + coff, dst, n);
}

ssize_t tc_handle_pread(struct tiercache *tc, struct tc_handle *hd, void *buf, size_t n,
			uint64_t off)
{
	pthread_mutex_lock(&tc->tbl_lock);
	bool stale = hd->stale;
	pthread_mutex_unlock(&tc->tbl_lock);
	if (stale) {
		tc_err_detail("%s changed in its source since it was opened", hd->path);
		return -ESTALE;
	}
	/* size and chunk_size never change after open */
	uint64_t size = hd->size, cs = hd->chunk_size;
	if (off >= size || n == 0)
		return 0;
	if (n > size - off)
		n = (size_t)(size - off);
	uint8_t *dst = buf;
	size_t done = 0;
	while (done < n) {
		uint64_t cur = off + done;
		uint64_t idx = cur / cs;
		uint64_t start = idx * cs;
		uint64_t clen = size - start < cs ? size - start : cs;
		uint64_t coff = cur - start;
		size_t want = n - done < clen - coff ? n - done : (size_t)(clen - coff);
		int rc = read_piece(tc, hd, (uint32_t)idx, (uint32_t)clen, coff, dst + done, want);
		if (rc < 0)
			return rc;
		done += want;
	}
	return (ssize_t)done;
}
