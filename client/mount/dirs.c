/*
 * Directory operations of tiercache-mount: opendir / readdir / readdirplus
 * / releasedir over libtiercache's paged directory listing.
 *
 * A directory handle streams the listing: it keeps one tiercache_dir open
 * and its position (0 ".", 1 "..", then the daemon's entries in manifest
 * order; the kernel's offset of an entry is its position + 1). A read at
 * another offset (rewinddir, seekdir) restarts the listing and skips ahead,
 * so memory stays at one page however large the directory. An entry that
 * did not fit in the kernel's buffer waits in `pending` for the next call.
 *
 * readdirplus hands the kernel each entry's attributes with the listing,
 * so `ls -l`, `find` and tar need no lookup per file; each entry it returns
 * is a kernel lookup reference on a node (nodes.c).
 *
 * Threads: the kernel serialises readdir on one open directory, but the
 * handle has its own mutex anyway; the node table locks itself.
 */
#include "tcmount.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tcm_dir {
	pthread_mutex_t lock;
	struct tiercache *tc;
	char *path;
	struct tiercache_dir *d; /* NULL: restart before the next entry */
	off_t pos;               /* position of the next entry to hand out */
	bool have_pending;
	struct tiercache_dirent pending;
};

static void dir_free(struct tcm_dir *dh)
{
	tiercache_closedir(dh->d);
	pthread_mutex_destroy(&dh->lock);
	free(dh->path);
	free(dh);
}

void tcm_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tcm *m = fuse_req_userdata(req);
	struct tcm_dir *dh = calloc(1, sizeof(*dh));
	int err = 0;

	if (!dh) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_init(&dh->lock, NULL);
	int rc = tcm_nodes_path(&m->nodes, ino, &dh->path);
	if (rc < 0) {
		err = -rc;
		goto out;
	}
	if (tcm_pool_gate(&m->pool) < 0) {
		err = ETIMEDOUT;
		goto out;
	}
	/* the program lists: lookups in here must agree with what it sees */
	tcm_dircache_drop(m, ino);
	/* the first page comes now, so a vanished directory fails here */
	err = tcm_pool_for(&m->pool, req, &dh->tc); /* listed with the caller's rights */
	if (err)
		goto out;
	dh->d = tiercache_opendir(dh->tc, dh->path);
	if (!dh->d) {
		err = tcm_pool_errno(&m->pool, errno, "opendir", dh->path);
		goto out;
	}
	tcm_pool_ok(&m->pool);
	fi->fh = (uint64_t)(uintptr_t)dh;
	if (fuse_reply_open(req, fi) != 0)
		dir_free(dh); /* interrupted: no releasedir will come */
	return;
out:
	fuse_reply_err(req, err);
	dir_free(dh);
}

/* Position the listing at off: restart it if the kernel asks for another
 * place than where we are. Returns 0 or a positive errno. */
static int dir_seek(struct tcm *m, struct tcm_dir *dh, off_t off)
{
	if (off == dh->pos && dh->d)
		return 0;
	tiercache_closedir(dh->d);
	dh->d = NULL;
	dh->have_pending = false;
	dh->pos = 0;
	if (tcm_pool_gate(&m->pool) < 0)
		return ETIMEDOUT;
	dh->d = tiercache_opendir(dh->tc, dh->path);
	if (!dh->d)
		return tcm_pool_errno(&m->pool, errno, "readdir", dh->path);
	while (dh->pos < off) {
		if (dh->pos >= 2) {
			errno = 0;
			if (!tiercache_readdir(dh->d)) {
				if (errno)
					return tcm_pool_errno(&m->pool, errno, "readdir", dh->path);
				break; /* past the end: the next call returns nothing */
			}
		}
		dh->pos++;
	}
	dh->pos = off;
	return 0;
}

/* The next entry of the listing (pending first), or NULL at the end (*err
 * 0) or on failure (*err set). */
static const struct tiercache_dirent *dir_next(struct tcm *m, struct tcm_dir *dh, int *err)
{
	*err = 0;
	if (dh->have_pending) {
		dh->have_pending = false;
		return &dh->pending;
	}
	errno = 0;
	const struct tiercache_dirent *de = tiercache_readdir(dh->d);
	if (!de && errno)
		*err = tcm_pool_errno(&m->pool, errno, "readdir", dh->path);
	return de;
}

/* A d_ino for plain readdir, which must not create nodes (it adds no
 * kernel references): the node's id if the kernel knows the name, else a
 * hash of the path with the top bit set, which no node id ever reaches.
 * Never 0 (glibc skips d_ino 0 as a deleted entry). */
static uint64_t dir_ino_guess(struct tcm *m, fuse_ino_t parent, const char *dir, const char *name)
{
	uint64_t ino = tcm_nodes_peek(&m->nodes, parent, name);
	if (ino)
		return ino;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (const unsigned char *s = (const unsigned char *)dir; *s; s++)
		h = (h ^ *s) * 0x100000001b3ULL;
	h = (h ^ '/') * 0x100000001b3ULL;
	for (const unsigned char *s = (const unsigned char *)name; *s; s++)
		h = (h ^ *s) * 0x100000001b3ULL;
	return h | (1ULL << 63);
}

static void dir_list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi, bool plus)
{
	struct tcm *m = fuse_req_userdata(req);
	struct tcm_dir *dh = (struct tcm_dir *)(uintptr_t)fi->fh;
	/* lookup references handed out in this reply, undone if it fails */
	size_t nref = 0, maxref = size / 32 + 1;
	uint64_t *refs = plus ? calloc(maxref, sizeof(*refs)) : NULL;
	char *buf = malloc(size);
	size_t used = 0;
	int err = 0;

	pthread_mutex_lock(&dh->lock);
	if (!buf || (plus && !refs)) {
		err = ENOMEM;
		goto out;
	}
	err = off < 0 ? EINVAL : dir_seek(m, dh, off);
	if (err)
		goto out;
	for (;;) {
		const struct tiercache_dirent *de = NULL;
		const char *name;
		struct tcm_attr a = {.type = TIERCACHE_DIR};
		uint64_t eino;
		if (dh->pos == 0) {
			name = ".";
			eino = ino;
		} else if (dh->pos == 1) {
			name = "..";
			eino = tcm_nodes_parent(&m->nodes, ino);
		} else {
			if (!dh->d)
				break;
			de = dir_next(m, dh, &err);
			if (!de) {
				if (err && used > 0)
					err = 0; /* hand out what we have; the next call retries */
				break;
			}
			name = de->name;
			a.type = de->type;
			a.size = de->type == TIERCACHE_FILE ? de->size : 0;
			a.mtime_ns = de->mtime_ns;
			tcm_attr_owner(&a, de->mode, de->uid, de->gid);
			eino = 0;
		}
		size_t need = plus ? fuse_add_direntry_plus(req, NULL, 0, name, NULL, 0)
				   : fuse_add_direntry(req, NULL, 0, name, NULL, 0);
		if (used + need > size) {
			if (de) {
				dh->pending = *de;
				dh->have_pending = true;
			}
			break;
		}
		if (plus) {
			struct fuse_entry_param e;
			struct tcm_hclose c;
			int lrc = de && nref < maxref
					  ? tcm_nodes_link(&m->nodes, ino, name, &a, &eino, &c)
					  : -ENOENT;
			if (lrc == 1)
				(void)tiercache_close(c.tc, c.h);
			if (lrc >= 0) {
				refs[nref++] = eino;
				tcm_entry_fill(m, eino, &a, &e);
			} else {
				/* "." / "..", or no node: a name with attributes
				 * but no entry (ino 0) for the kernel to keep */
				if (de)
					eino = dir_ino_guess(m, ino, dh->path, name);
				tcm_entry_fill(m, eino, &a, &e);
				e.ino = 0;
			}
			used += fuse_add_direntry_plus(req, buf + used, size - used, name, &e,
						       dh->pos + 1);
		} else {
			struct stat st = {
				.st_ino = de ? dir_ino_guess(m, ino, dh->path, name) : eino,
				.st_mode = a.type == TIERCACHE_DIR ? S_IFDIR : S_IFREG,
			};
			used += fuse_add_direntry(req, buf + used, size - used, name, &st,
						  dh->pos + 1);
		}
		dh->pos++;
	}
out:
	pthread_mutex_unlock(&dh->lock);
	if (err) {
		fuse_reply_err(req, err);
		for (size_t i = 0; i < nref; i++)
			tcm_forget(m, refs[i], 1);
	} else if (fuse_reply_buf(req, buf, used) != 0) {
		for (size_t i = 0; i < nref; i++)
			tcm_forget(m, refs[i], 1);
	}
	free(buf);
	free(refs);
}

void tcm_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	dir_list(req, ino, size, off, fi, false);
}

void tcm_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	dir_list(req, ino, size, off, fi, true);
}

void tcm_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	dir_free((struct tcm_dir *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}
