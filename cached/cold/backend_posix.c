/*
 * Cold backend "posix": a directory tree (local disk or an NFS mount) is a
 * dataset. A file's version is its size + mtime (ns).
 *
 * All calls block and run on worker threads, except stat(), which the loop
 * may call inline for revalidation (COLD_CAP_CHEAP_STAT): a stat of the
 * root and one open + fstat on a local tree.
 *
 * What a dataset is: the regular files under the root, reached without a
 * symlink. list() skips symlinks and special files, and every path-taking
 * call resolves its path the same way, so a file or a directory swapped for
 * a symlink (to /etc/shadow, to another user's tree) is refused, never
 * followed:
 *   - openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) where the kernel has
 *     it (Linux 5.6+): a symlink anywhere on the path is -ELOOP, a path
 *     out of the root -EXDEV;
 *   - else (older kernels, seccomp profiles that refuse openat2 with ENOSYS
 *     or EPERM) a walk one component at a time: each directory opened with
 *     O_PATH | O_DIRECTORY | O_NOFOLLOW relative to the one before, ".."
 *     refused (-EXDEV), the last component opened with O_NOFOLLOW; the same
 *     errors. Learned once (ENOSYS) and logged.
 * Every open is O_NONBLOCK, so a FIFO cannot block the caller (the loop,
 * for stat), and the descriptor's fstat must say "regular file" before a
 * byte is read: a FIFO, socket or device is -EINVAL, a directory -ENOENT.
 *
 * The root: the directory is opened once, at open(). Every call first
 * checks that the configured path still names that directory (same device
 * and inode): a tree moved away, a mount gone or replaced, a dead NFS
 * server all give -ENODEV, the one error that means "the store itself is
 * down" (probe() says why). Without the check, the open descriptor would
 * keep serving a tree moved away.
 */
#include "backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
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
	dev_t dev; /* the root directory the daemon opened */
	ino_t ino;
	atomic_bool no_openat2; /* the kernel (or a seccomp filter) said ENOSYS */
	char root[PATH_MAX];
	char dataset[72];
};

static int posix_open(struct cold *c, const struct dataset_conf *dc, char *err, size_t n)
{
	struct posix *p = calloc(1, sizeof(*p));
	struct stat st;
	if (!p)
		return -ENOMEM;
	snprintf(p->root, sizeof(p->root), "%s", dc->path);
	snprintf(p->dataset, sizeof(p->dataset), "%s", dc->name);
	p->rootfd = open(p->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->rootfd < 0 || fstat(p->rootfd, &st) < 0) {
		int rc = -errno;
		snprintf(err, n, "cannot open cold directory %s: %s", p->root, strerror(errno));
		if (p->rootfd >= 0)
			close(p->rootfd);
		free(p);
		return rc;
	}
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	atomic_init(&p->no_openat2, false);
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

/* Does the configured path still name the directory opened at start?
 * 0, or -errno of the stat, or -ESTALE for another directory there now. */
static int root_state(struct posix *p)
{
	struct stat st;
	if (stat(p->root, &st) < 0)
		return -errno;
	if (st.st_dev != p->dev || st.st_ino != p->ino)
		return -ESTALE;
	return 0;
}

/* 0, or -ENODEV when the store itself is gone (see the file's opening). */
static int root_check(struct posix *p)
{
	return root_state(p) < 0 ? -ENODEV : 0;
}

static int posix_probe(struct cold *c, char *why, size_t n)
{
	struct posix *p = c->priv;
	int rc = root_state(p);
	if (rc == -ESTALE)
		snprintf(why, n, "cold directory %s is not the directory opened at start any more "
			 "(moved or replaced; put it back, or restart the daemon to use the new one)",
			 p->root);
	else if (rc < 0)
		snprintf(why, n, "cold directory %s: %s", p->root, strerror(-rc));
	return rc < 0 ? -ENODEV : 0;
}

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW)

/* Without openat2: one component at a time, no symlink followed. */
static int open_walk(struct posix *p, const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	if (path[0] == '/')
		return -EXDEV;
	memcpy(buf, path, len + 1);
	int dfd = p->rootfd;
	int rc = -ENOENT;
	char *s = buf;
	for (;;) {
		char *slash = strchr(s, '/');
		if (slash)
			*slash = '\0';
		if (strcmp(s, "..") == 0) {
			rc = -EXDEV;
			break;
		}
		bool skip = !*s || strcmp(s, ".") == 0;
		if (!slash) {
			/* the last component: "" or "." name a directory */
			rc = skip ? -ENOENT : openat(dfd, s, OPEN_FLAGS);
			if (rc < 0 && !skip)
				rc = -errno;
			break;
		}
		if (!skip) {
			int nfd = openat(dfd, s, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (nfd < 0) {
				struct stat st;
				rc = -errno;
				/* O_DIRECTORY on a symlink says ENOTDIR: say what it is */
				if (rc == -ENOTDIR && fstatat(dfd, s, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				    S_ISLNK(st.st_mode))
					rc = -ELOOP;
				break;
			}
			if (dfd != p->rootfd)
				close(dfd);
			dfd = nfd;
		}
		s = slash + 1;
	}
	if (dfd != p->rootfd)
		close(dfd);
	return rc;
}

/* A descriptor of the file at path beneath the root, open for reading, or
 * -errno (see the file's opening for which). Not yet checked to be a
 * regular file: the caller's fstat does that. */
static int open_beneath(struct posix *p, const char *path)
{
	if (!atomic_load(&p->no_openat2)) {
		struct open_how how = {
			.flags = OPEN_FLAGS,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		long fd = syscall(SYS_openat2, p->rootfd, path, &how, sizeof(how));
		if (fd >= 0)
			return (int)fd;
		if (errno != ENOSYS && errno != EPERM)
			return -errno;
		if (errno == ENOSYS && !atomic_exchange(&p->no_openat2, true))
			log_warn("dataset=%s op=open_cold info=\"openat2 is not available (ENOSYS): "
				 "resolving paths one component at a time without following symlinks\"",
				 p->dataset);
		/* EPERM: a seccomp profile's answer, or a real one; the walk
		 * gives the real one */
	}
	return open_walk(p, path);
}

/* fd is open: 0 if it is a regular file (st filled), else why not. */
static int check_regular(int fd, struct stat *st)
{
	if (fstat(fd, st) < 0)
		return -errno;
	if (S_ISREG(st->st_mode))
		return 0;
	/* a directory is no file of the dataset (backend.h: -ENOENT); a FIFO,
	 * socket or device is refused before any read could block on it */
	return S_ISDIR(st->st_mode) ? -ENOENT : -EINVAL;
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
	int rc = root_check(p);
	if (rc < 0)
		return rc;
	int fd = open_beneath(p, path);
	if (fd < 0)
		return fd;
	rc = check_regular(fd, &st);
	close(fd);
	if (rc == 0)
		stat_to_cold(&st, cs);
	return rc;
}

static ssize_t posix_read(struct cold *c, struct cold_io *io)
{
	struct posix *p = c->priv;
	struct stat st;
	struct cold_stat before, after;
	ssize_t rc = root_check(p);
	if (rc < 0)
		return rc;
	int fd = open_beneath(p, io->path);
	if (fd < 0)
		return fd;
	rc = check_regular(fd, &st);
	if (rc < 0)
		goto out;
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
	int rc = root_check(p);
	if (rc < 0)
		return rc;
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
	.probe = posix_probe,
	.close = posix_close,
};
