/*
 * Cold backend "posix": a directory tree (local disk or an NFS mount) is a
 * dataset. A file's version is its size + mtime (ns).
 *
 * All calls block and run on worker threads, except stat(), which the loop
 * may call inline for revalidation (COLD_CAP_CHEAP_STAT): it is one
 * fstatat() on a local tree. Files are opened beneath the root with
 * openat2(RESOLVE_BENEATH) where the kernel has it, so a symlink inside the
 * tree cannot lead a read outside it.
 */
#include "backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "config.h"
#include "log.h"

struct posix {
	int rootfd;
	char root[PATH_MAX];
};

static int posix_open(struct cold *c, const struct dataset_conf *dc, char *err, size_t n)
{
	struct posix *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	snprintf(p->root, sizeof(p->root), "%s", dc->path);
	p->rootfd = open(p->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->rootfd < 0) {
		int rc = -errno;
		snprintf(err, n, "cannot open cold directory %s: %s", p->root, strerror(errno));
		free(p);
		return rc;
	}
	c->priv = p;
	return 0;
}

static void posix_close(struct cold *c)
{
	struct posix *p = c->priv;
	if (!p)
		return;
	close(p->rootfd);
	free(p);
	c->priv = NULL;
}

static int open_beneath(struct posix *p, const char *path)
{
	/* O_NONBLOCK: a FIFO in the tree would block open() until a writer
	 * came, on the loop thread for stat(); a regular file ignores it */
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, p->rootfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		fd = openat(p->rootfd, path, (int)how.flags);
	return (int)fd;
}

static void stat_to_cold(const struct stat *st, struct cold_stat *cs)
{
	cs->size = (uint64_t)st->st_size;
	cs->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
	cs->version = 0;
}

static int posix_stat(struct cold *c, const char *path, struct cold_stat *cs)
{
	struct posix *p = c->priv;
	struct stat st;
	int fd = open_beneath(p, path);
	if (fd < 0)
		return -errno;
	int rc = fstat(fd, &st) < 0 ? -errno : 0;
	close(fd);
	if (rc == 0 && !S_ISREG(st.st_mode))
		rc = -ENOENT;
	if (rc == 0)
		stat_to_cold(&st, cs);
	return rc;
}

static ssize_t posix_read(struct cold *c, struct cold_io *io)
{
	struct posix *p = c->priv;
	struct stat st;
	struct cold_stat before, after;
	ssize_t rc;
	int fd = open_beneath(p, io->path);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) { /* as stat() says: not a file of the dataset */
		rc = -ENOENT;
		goto out;
	}
	stat_to_cold(&st, &before);
	if (!cold_stat_same(&before, &io->expect)) {
		rc = -ESTALE;
		goto out;
	}
	size_t got = 0;
	while (got < io->len) {
		ssize_t r = pread(fd, (char *)io->buf + got, io->len - got, (off_t)(io->off + got));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	/* A writer that changed the file while we read would hand us a mix of
	 * versions: check again after the read. */
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	stat_to_cold(&st, &after);
	rc = cold_stat_same(&after, &io->expect) ? (ssize_t)got : -ESTALE;
out:
	close(fd);
	return rc;
}

struct walk {
	cold_list_fn fn;
	void *arg;
	char path[PATH_MAX];
	int stop;
};

static int walk_dir(struct walk *w, int dfd, size_t plen, unsigned depth)
{
	if (depth > 64)
		return 0;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	struct dirent *de;
	int rc = 0;
	while (!w->stop && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		size_t nl = strlen(de->d_name);
		if (plen + nl + 2 >= sizeof(w->path))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		size_t at = plen;
		if (plen)
			w->path[at++] = '/';
		memcpy(w->path + at, de->d_name, nl + 1);
		if (S_ISREG(st.st_mode)) {
			struct cold_stat cs;
			stat_to_cold(&st, &cs);
			if (w->fn(w->arg, w->path, &cs)) {
				w->stop = 1;
				break;
			}
		} else if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			if (sub >= 0) {
				rc = walk_dir(w, sub, at + nl, depth + 1);
				if (rc < 0)
					break;
			}
		}
		/* symlinks, devices, sockets: not part of a dataset */
		w->path[plen] = '\0';
	}
	closedir(d);
	return rc;
}

static int posix_list(struct cold *c, cold_list_fn fn, void *arg)
{
	struct posix *p = c->priv;
	struct walk w = {.fn = fn, .arg = arg};
	int dfd = openat(p->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	return walk_dir(&w, dfd, 0, 0);
}

const struct cold_backend_ops cold_posix_ops = {
	.name = "posix",
	.caps = COLD_CAP_CHEAP_STAT,
	.open = posix_open,
	.list = posix_list,
	.stat = posix_stat,
	.read = posix_read,
	.close = posix_close,
};
