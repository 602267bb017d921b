/*
 * Chunk verification: see verify.h.
 *
 * A verification lives in a small hash table keyed by chunk key while it
 * runs (like a fill), so every request for the chunk joins it. It holds a
 * reference on the chunk's file (struct cfile) and a descriptor opened on
 * the loop, so the file it checks is the one the chunk had when it started
 * even if the chunk is moved, evicted or dropped meanwhile; back on the
 * loop it looks the chunk up again and applies the result only if the
 * chunk still has that file.
 */
#include "verify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "chunk.h"
#include "chunk_sum.h"
#include "log.h"
#include "loop.h"
#include "workers.h"

/* Bytes read per pread while checking: the memory one check costs. */
#define VERIFY_PIECE (256u << 10)

struct verify {
	struct job job;
	struct u64h_node hn;
	uint64_t key;
	struct cache *cache;
	struct cfile *f;  /* referenced: the file being checked */
	int fd;
	uint64_t base;   /* the chunk's offset in fd (a segment) */
	bool in_segment;
	uint32_t len;
	uint64_t checksum;
	uint64_t found_size;
	enum verify_why why;
	int err;
	/* for the log and the refetch: the chunk may be gone when it ends */
	struct dataset *ds;
	char *path;
	struct cold_stat src;
	uint32_t idx;
	uint8_t tier;
	struct waiter *waiters, **wtail;
	verify_done_fn done;
	void *arg;
};

struct verifier {
	struct u64h h;
};

static const char *why_name(enum verify_why why)
{
	switch (why) {
	case VERIFY_FIRST_OPEN: return "first_open";
	case VERIFY_REPORT: return "client_report";
	case VERIFY_SCRUB: return "scrub";
	}
	return "verify";
}

int verify_init(struct cache *cache)
{
	struct verifier *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	int rc = u64h_init(&v->h, 64,
			   (ptrdiff_t)offsetof(struct verify, key) - (ptrdiff_t)offsetof(struct verify, hn));
	if (rc < 0) {
		free(v);
		return rc;
	}
	cache->verifier = v;
	return 0;
}

void verify_free(struct cache *cache)
{
	if (!cache->verifier)
		return;
	u64h_free(&cache->verifier->h);
	free(cache->verifier);
	cache->verifier = NULL;
}

static struct verify *verify_find(const struct cache *cache, uint64_t key)
{
	struct u64h_node *n = cache->verifier ? u64h_find(&cache->verifier->h, key) : NULL;
	return n ? (struct verify *)(void *)((char *)n - offsetof(struct verify, hn)) : NULL;
}

bool verify_inflight(const struct cache *cache, uint64_t key)
{
	return verify_find(cache, key) != NULL;
}

size_t verify_count_inflight(const struct cache *cache)
{
	return cache->verifier ? cache->verifier->h.n : 0;
}

int verify_fd(int fd, uint32_t len, uint64_t checksum, void *dst, uint32_t copy_off,
	      uint32_t copy_len, uint64_t *found_size)
{
	return verify_fd_at(fd, 0, false, len, checksum, dst, copy_off, copy_len, found_size);
}

int verify_fd_at(int fd, uint64_t base, bool in_segment, uint32_t len, uint64_t checksum, void *dst,
		 uint32_t copy_off, uint32_t copy_len, uint64_t *found_size)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	*found_size = (uint64_t)st.st_size;
	if (in_segment && (uint64_t)st.st_size < base + len) {
		*found_size = (uint64_t)st.st_size > base ? (uint64_t)st.st_size - base : 0;
		return -EBADMSG; /* the segment was cut short */
	}
	if (in_segment)
		*found_size = len;
	if (!in_segment && (uint64_t)st.st_size != len)
		return -EBADMSG; /* truncated or grown: never the chunk */
	uint8_t *buf = malloc(VERIFY_PIECE);
	XXH3_state_t *xs = XXH3_createState();
	int rc = 0;
	if (!buf || !xs || XXH3_64bits_reset(xs) != XXH_OK) {
		rc = -ENOMEM;
		goto out;
	}
	uint64_t at = 0;
	while (at < len) {
		size_t want = len - at < VERIFY_PIECE ? (size_t)(len - at) : VERIFY_PIECE;
		ssize_t r = pread(fd, buf, want, (off_t)(base + at));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			goto out;
		}
		if (r == 0) { /* truncated since the fstat */
			*found_size = at;
			rc = -EBADMSG;
			goto out;
		}
		chunk_sum_update(xs, buf, (size_t)r);
		if (dst) {
			/* the overlap of [at, at + r) with [copy_off, copy_off + copy_len) */
			uint64_t lo = at > copy_off ? at : copy_off;
			uint64_t hi = at + (uint64_t)r;
			if (hi > (uint64_t)copy_off + copy_len)
				hi = (uint64_t)copy_off + copy_len;
			if (lo < hi)
				memcpy((uint8_t *)dst + (lo - copy_off), buf + (lo - at), hi - lo);
		}
		at += (uint64_t)r;
	}
	if (XXH3_64bits_digest(xs) != checksum)
		rc = -EBADMSG;
out:
	XXH3_freeState(xs);
	free(buf);
	return rc;
}

static void verify_work(struct job *j)
{
	struct verify *v = (struct verify *)j;
	v->err = verify_fd_at(v->fd, v->base, v->in_segment, v->len, v->checksum, NULL, 0, 0,
			      &v->found_size);
	close(v->fd);
	v->fd = -1;
}

/* The words for what was wrong with a file. */
static void bad_detail(char *buf, size_t n, int err, uint64_t found, uint32_t len)
{
	if (err == -EBADMSG && found != len)
		snprintf(buf, n, "the file is %llu bytes, the chunk %u", (unsigned long long)found, len);
	else if (err == -EBADMSG)
		snprintf(buf, n, "checksum mismatch");
	else
		snprintf(buf, n, "read error: %s", strerror(-err));
}

static void log_bad(struct cache *cache, struct dataset *ds, const char *path, uint32_t idx,
		    uint8_t tier, uint64_t key, const char *op, const char *detail)
{
	char file[PATH_MAX + 64];
	tier_chunk_path(&cache->tiers[tier], key, file, sizeof(file));
	log_warn("dataset=%s path=%s chunk=%u tier=%s file=%s op=%s err=\"%s: dropping the chunk; "
		 "it is read from the cold store again\"",
		 ds->name, path, idx, cache->tiers[tier].name, file, op, detail);
}

void verify_chunk_bad(struct cache *cache, struct chunk *c, const char *op, const char *detail)
{
	loop_assert();
	cache->ctr.checksum_errors++;
	log_bad(cache, c->ds, c->path, c->idx, c->tier, c->key, op, detail);
	chunk_drop(cache, c, "checksum");
}

/* The chunk is gone (dropped as bad, or evicted meanwhile): serve every
 * waiter as a miss, from the cold store (fill.c's single flight). */
static void refetch(struct cache *cache, struct verify *v, struct waiter *w)
{
	const struct read_ctx rc = {.flags = READ_REFETCH};
	while (w) {
		struct waiter *next = w->next;
		struct chunk *c = NULL;
		int r = fill_get(cache, v->ds, v->path, &v->src, v->idx, &rc, w, &c);
		if (r == 1)
			w->cb(cache, w, c, 0);
		else if (r < 0)
			w->cb(cache, w, NULL, r == -EHOSTDOWN ? -EIO : r);
		w = next;
	}
}

static void answer_all(struct cache *cache, struct waiter *w, struct chunk *c, int err)
{
	while (w) {
		struct waiter *next = w->next;
		w->cb(cache, w, c, err);
		w = next;
	}
}

static void verify_done(struct job *j)
{
	struct verify *v = (struct verify *)j;
	struct cache *cache = v->cache;
	struct waiter *w = v->waiters;
	int err = v->err;
	u64h_del(&cache->verifier->h, &v->hn);
	struct chunk *c = chunk_find(&cache->chunks, v->key);
	bool same = c && c->file == v->f;
	bool bad = err == -EBADMSG || err == -EIO;
	cfile_unref(cache, v->f);
	if (v->why == VERIFY_SCRUB && (!err || bad))
		cache->ctr.scrubbed_bytes += v->len;
	if (v->done)
		v->done(cache, v->arg, v->len, same ? err : 0);
	if (same && !err) {
		c->unverified = false;
		answer_all(cache, w, c, 0);
	} else if (same && bad) {
		char detail[128];
		bad_detail(detail, sizeof(detail), err, v->found_size, v->len);
		cache->ctr.checksum_errors++;
		log_bad(cache, v->ds, v->path, v->idx, v->tier, v->key, why_name(v->why), detail);
		bool moving = c->state == CHUNK_MOVING;
		chunk_drop(cache, c, "checksum");
		if (moving) {
			/* it stays in the table until its copy ends (which fails
			 * the same check): nothing to serve until then */
			if (w)
				log_info("dataset=%s path=%s chunk=%u op=%s err=\"the chunk is being "
					 "moved: its readers are asked to retry\"",
					 v->ds->name, v->path, v->idx, why_name(v->why));
			answer_all(cache, w, NULL, -EAGAIN);
		} else {
			refetch(cache, v, w);
		}
	} else if (same) {
		log_warn("dataset=%s path=%s chunk=%u op=%s err=\"cannot check the chunk: %s\"",
			 v->ds->name, v->path, v->idx, why_name(v->why), strerror(-err));
		answer_all(cache, w, NULL, err);
	} else if (!c) {
		refetch(cache, v, w); /* evicted or dropped meanwhile */
	} else if (!c->unverified) {
		answer_all(cache, w, c, 0); /* moved (the move checked it) or refilled */
	} else {
		/* another file, not checked yet: check that one */
		while (w) {
			struct waiter *next = w->next;
			int r = verify_join(cache, c, v->why, w, NULL, NULL);
			if (r == 1) { /* its file was gone: c is dropped, read it again */
				refetch(cache, v, w);
				break;
			} else if (r < 0) {
				w->cb(cache, w, NULL, r);
			}
			w = next;
		}
	}
	free(v->path);
	free(v);
}

int verify_join(struct cache *cache, struct chunk *c, enum verify_why why, struct waiter *w,
		verify_done_fn done, void *arg)
{
	loop_assert();
	struct verify *v = verify_find(cache, c->key);
	if (v) {
		if (w) {
			w->next = NULL;
			*v->wtail = w;
			v->wtail = &w->next;
		}
		return 0;
	}
	if (c->state == CHUNK_UNKEPT)
		return -EINVAL;
	int fd = chunk_open_fd(cache, c);
	if (fd == -ENOENT || fd == -EIO) {
		char detail[96];
		snprintf(detail, sizeof(detail), "cannot open its file: %s", strerror(-fd));
		if (c->state != CHUNK_MOVING) {
			verify_chunk_bad(cache, c, why_name(why), detail);
			return 1;
		}
	}
	if (fd < 0)
		return fd;
	v = calloc(1, sizeof(*v));
	if (!v || !(v->path = strdup(c->path))) {
		free(v);
		close(fd);
		return -ENOMEM;
	}
	v->key = c->key;
	v->cache = cache;
	v->f = c->file;
	cfile_ref(v->f);
	v->fd = fd;
	v->base = chunk_base(c);
	v->in_segment = c->file->seg != NULL;
	v->len = c->len;
	v->checksum = c->checksum;
	v->why = why;
	v->ds = c->ds;
	v->src = c->src;
	v->idx = c->idx;
	v->tier = c->tier;
	v->done = done;
	v->arg = arg;
	v->wtail = &v->waiters;
	if (w) {
		w->next = NULL;
		v->waiters = w;
		v->wtail = &w->next;
	}
	v->job.work = verify_work;
	v->job.done = verify_done;
	u64h_add(&cache->verifier->h, &v->hn);
	workers_submit(cache->workers, &v->job);
	return 0;
}
