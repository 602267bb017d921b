/*
 * libtiercache metadata: tiercache_stat and directory listing. A listing
 * is fetched in pages (LISTDIR with a cookie) as readdir reaches the end of
 * the page it has; the first page is fetched by opendir so that a missing
 * directory fails there, as with POSIX.
 *
 * Threads: a tiercache_dir belongs to one thread at a time (like DIR *);
 * requests go through the connection's usual locking.
 */
#include "libtc_private.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Entries take at least this many payload bytes: a larger count than
 * payload / this is a lie and is refused before allocating. */
#define DIRENT_MIN_BYTES (1 + 8 + 8 + 4)
/* Empty pages in a row that still promise more: a daemon bug, not a
 * reason to loop for ever. */
#define EMPTY_PAGES_MAX 64

struct tiercache_dir {
	struct tiercache *tc;
	char *path;
	uint32_t cookie; /* where the next page starts */
	bool more;       /* the daemon has more pages */
	struct tiercache_dirent *ents;
	uint32_t n, i;
};

static int path_build(struct tiercache *tc, struct proto_wr *w, void *arg)
{
	(void)tc;
	proto_wr_str(w, arg);
	return 0;
}

static bool type_ok(uint8_t t)
{
	return t == TC_TYPE_FILE || t == TC_TYPE_DIR;
}

/* TC_F_WANT_OWNER's fields, when the daemon sent them (a daemon that
 * predates them sends none: the defaults). */
static void owner_get(struct proto_rd *r, bool sent, int type, uint32_t *mode, uint32_t *uid,
		      uint32_t *gid)
{
	if (sent) {
		*mode = proto_rd_u32(r) & 07777u;
		*uid = proto_rd_u32(r);
		*gid = proto_rd_u32(r);
	} else {
		*mode = type == TC_TYPE_DIR ? 0555u : 0444u;
		*uid = *gid = TIERCACHE_OWNER_NONE;
	}
}

/* tiercache_stat@@TIERCACHE_1 (the struct with owner and mode) */
int tc_stat_v1(struct tiercache *tc, const char *path, struct tiercache_stat *st);
__asm__(".symver tc_stat_v1, tiercache_stat@@TIERCACHE_1");
int tc_stat_v1(struct tiercache *tc, const char *path, struct tiercache_stat *st)
{
	tc_err_begin();
	if (!tc || !st)
		return tc_err_fail(-EINVAL);
	int rc = tc_path_check(path);
	if (rc < 0)
		return tc_err_fail(rc);
	tc_enter(tc);
	struct tc_req rq = {.op = TC_OP_STAT, .flags = TC_F_WANT_OWNER, .build = path_build,
			    .arg = (void *)path};
	struct tc_msg m;
	tc_io_lock(tc);
	rc = tc_request_locked(tc, &rq, &m);
	if (rc == 0) {
		struct proto_rd r;
		proto_rd_init(&r, m.payload, m.len);
		uint8_t type = proto_rd_u8(&r);
		st->size = proto_rd_u64(&r);
		st->mtime_ns = proto_rd_i64(&r);
		st->chunk_size = proto_rd_u32(&r);
		st->type = type;
		owner_get(&r, r.left == 12, type, &st->mode, &st->uid, &st->gid);
		if (!proto_rd_done(&r) || !type_ok(type))
			rc = tc_bad_reply(tc, "STAT");
	}
	tc_io_unlock(tc);
	tc_msg_free(&m);
	return rc < 0 ? tc_err_fail(rc) : 0;
}

/* tiercache_stat@TIERCACHE_0: the struct before mode, uid, gid */
int tc_stat_v0(struct tiercache *tc, const char *path, struct tiercache_stat *st);
__asm__(".symver tc_stat_v0, tiercache_stat@TIERCACHE_0");
int tc_stat_v0(struct tiercache *tc, const char *path, struct tiercache_stat *st)
{
	struct tiercache_stat full;
	int rc = tc_stat_v1(tc, path, st ? &full : NULL);
	if (rc == 0)
		memcpy(st, &full, offsetof(struct tiercache_stat, mode));
	return rc;
}

struct page_arg {
	const char *path;
	uint32_t cookie;
};

static int page_build(struct tiercache *tc, struct proto_wr *w, void *arg)
{
	(void)tc;
	const struct page_arg *a = arg;
	proto_wr_str(w, a->path);
	proto_wr_u32(w, a->cookie);
	return 0;
}

/* A name the daemon may give us: one path component. */
static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || memchr(s, '/', n) || memchr(s, '\0', n))
		return false;
	return !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

/* count entries of a LISTDIR page (owner: with TC_F_WANT_OWNER's fields),
 * the whole rest of r. 0 or -EPROTO. */
static int entries_decode(struct proto_rd *r, struct tiercache_dirent *ents, uint32_t count,
			  bool owner)
{
	for (uint32_t i = 0; i < count; i++) {
		uint8_t type = proto_rd_u8(r);
		ents[i].size = proto_rd_u64(r);
		ents[i].mtime_ns = proto_rd_i64(r);
		size_t n;
		const char *name = proto_rd_str(r, TC_NAME_MAX, &n);
		if (!name || !type_ok(type) || !name_ok(name, n))
			return -EPROTO;
		ents[i].type = type;
		memcpy(ents[i].name, name, n);
		ents[i].name[n] = '\0';
		owner_get(r, owner, type, &ents[i].mode, &ents[i].uid, &ents[i].gid);
	}
	return proto_rd_done(r) ? 0 : -EPROTO;
}

/* Fetch the page at d->cookie, replacing the current one. */
static int page_fetch(struct tiercache_dir *d)
{
	struct tiercache *tc = d->tc;
	struct page_arg a = {.path = d->path, .cookie = d->cookie};
	struct tc_req rq = {.op = TC_OP_LISTDIR, .flags = TC_F_WANT_OWNER, .build = page_build,
			    .arg = &a};
	struct tc_msg m;
	struct tiercache_dirent *ents = NULL;

	tc_enter(tc);
	tc_io_lock(tc);
	int rc = tc_request_locked(tc, &rq, &m);
	if (rc < 0)
		goto out;
	struct proto_rd r;
	proto_rd_init(&r, m.payload, m.len);
	uint32_t next = proto_rd_u32(&r);
	uint32_t count = proto_rd_u32(&r);
	if (!proto_rd_ok(&r) || count > r.left / DIRENT_MIN_BYTES) {
		rc = tc_bad_reply(tc, "LISTDIR count");
		goto out;
	}
	ents = calloc(count ? count : 1, sizeof(*ents));
	if (!ents) {
		rc = -ENOMEM;
		goto out;
	}
	/* with the owner fields asked for; a daemon that predates them sends
	 * the entries without (one of the two decodes exactly) */
	struct proto_rd start = r;
	rc = entries_decode(&r, ents, count, true);
	if (rc < 0) {
		r = start;
		rc = entries_decode(&r, ents, count, false);
	}
	if (rc < 0) {
		rc = tc_bad_reply(tc, "LISTDIR entry");
		goto out;
	}
	free(d->ents);
	d->ents = ents;
	ents = NULL;
	d->n = count;
	d->i = 0;
	d->more = next != 0;
	d->cookie = next;
out:
	tc_io_unlock(tc);
	tc_msg_free(&m);
	free(ents);
	return rc;
}

struct tiercache_dir *tiercache_opendir(struct tiercache *tc, const char *path)
{
	tc_err_begin();
	if (!tc) {
		tc_err_fail(-EINVAL);
		return NULL;
	}
	int rc = tc_path_check(path);
	if (rc < 0) {
		tc_err_fail(rc);
		return NULL;
	}
	struct tiercache_dir *d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path))) {
		free(d);
		tc_err_fail(-ENOMEM);
		return NULL;
	}
	d->tc = tc;
	rc = page_fetch(d);
	if (rc < 0) {
		tiercache_closedir(d);
		tc_err_fail(rc);
		return NULL;
	}
	return d;
}

const struct tiercache_dirent *tiercache_readdir(struct tiercache_dir *d)
{
	tc_err_begin();
	if (!d) {
		tc_err_fail(-EINVAL);
		return NULL;
	}
	for (int empty = 0; d->i >= d->n; empty++) {
		if (!d->more) {
			errno = 0;
			return NULL;
		}
		if (empty >= EMPTY_PAGES_MAX) {
			tc_err_detail("LISTDIR of %s: %d empty pages in a row", d->path, empty);
			tc_err_fail(-EPROTO);
			return NULL;
		}
		int rc = page_fetch(d);
		if (rc < 0) {
			tc_err_fail(rc);
			return NULL;
		}
	}
	return &d->ents[d->i++];
}

int tiercache_closedir(struct tiercache_dir *d)
{
	if (!d)
		return 0;
	free(d->ents);
	free(d->path);
	free(d);
	return 0;
}
