/*
 * tccountfs: a read-only FUSE passthrough that counts the bytes read through
 * it. The cluster tests put several daemons on one cold directory mounted
 * through it and compare the total with the dataset's size: about 1x with
 * [cluster] on, Nx without.
 *
 *   tccountfs [--count-file FILE] SRC MNT [FUSE OPTIONS, e.g. -f]
 *
 * MNT mirrors SRC: getattr/readdir/readlink/open/read/release/statfs pass
 * through, sizes and mtimes (nanoseconds included) are the source's, and
 * every change is refused with EROFS. After every read (and once at start)
 * FILE is replaced atomically (temp file + rename) with
 *
 *   bytes N            total bytes returned by read
 *   reads N            read calls answered
 *   readdirs N         directory listings answered (readdir calls)
 *   readdirs_root N    ... of them of MNT itself
 *   file PATH BYTES    per file read, PATH relative to MNT with '/' first;
 *                      bytes outside 0x21..0x7e and '%' as %XX
 *
 * Every read must reach us, or a second daemon's read would come from the
 * kernel's page cache and go uncounted: files open with direct_io and no
 * keep_cache, and attributes and entries are never cached (a changed source
 * file is seen at once). Reads run on libfuse's worker threads; one mutex
 * guards the counters and the count file.
 */
#define FUSE_USE_VERSION 312
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

struct file_count {
	char *path; /* as libfuse gives it: "/dir/name" */
	uint64_t bytes;
};

static struct {
	char src[PATH_MAX];
	const char *count_file;
	pthread_mutex_t lock;
	uint64_t bytes;
	uint64_t reads;
	uint64_t readdirs, readdirs_root;
	struct file_count *files;
	size_t nfiles, cap;
} cfs = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* SRC + path; -ENAMETOOLONG when it does not fit. */
static int src_path(const char *path, char *out, size_t size)
{
	int n = snprintf(out, size, "%s%s", cfs.src, path);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static void put_escaped(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p > 0x20 && *p < 0x7f && *p != '%')
			fputc(*p, f);
		else
			fprintf(f, "%%%02X", *p);
	}
}

/* Replace the count file; called with the lock held. A failure is reported
 * once per run: the test reading the file will then fail on its own. */
static void write_counts_locked(void)
{
	static int warned;
	char tmp[PATH_MAX];
	if (!cfs.count_file)
		return;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", cfs.count_file) >= (int)sizeof(tmp))
		return;
	FILE *f = fopen(tmp, "w");
	if (!f)
		goto failed;
	fprintf(f, "bytes %llu\nreads %llu\n", (unsigned long long)cfs.bytes,
		(unsigned long long)cfs.reads);
	fprintf(f, "readdirs %llu\nreaddirs_root %llu\n", (unsigned long long)cfs.readdirs,
		(unsigned long long)cfs.readdirs_root);
	for (size_t i = 0; i < cfs.nfiles; i++) {
		fputs("file ", f);
		put_escaped(f, cfs.files[i].path);
		fprintf(f, " %llu\n", (unsigned long long)cfs.files[i].bytes);
	}
	if (fclose(f) != 0 || rename(tmp, cfs.count_file) != 0)
		goto failed;
	return;
failed:
	if (!warned++)
		fprintf(stderr, "tccountfs: cannot write the count file %s: %s\n", cfs.count_file,
			strerror(errno));
}

static void count_read(const char *path, size_t n)
{
	pthread_mutex_lock(&cfs.lock);
	cfs.bytes += n;
	cfs.reads++;
	size_t i = 0;
	while (i < cfs.nfiles && strcmp(cfs.files[i].path, path) != 0)
		i++;
	if (i == cfs.nfiles) {
		char *copy = strdup(path);
		if (cfs.nfiles == cfs.cap) {
			size_t cap = cfs.cap ? cfs.cap * 2 : 64;
			struct file_count *a = copy ? realloc(cfs.files, cap * sizeof(*a)) : NULL;
			if (a) {
				cfs.files = a;
				cfs.cap = cap;
			}
		}
		if (copy && cfs.nfiles < cfs.cap) {
			cfs.files[cfs.nfiles].path = copy;
			cfs.files[cfs.nfiles].bytes = 0;
			cfs.nfiles++;
		} else {
			free(copy); /* out of memory: the totals still count */
		}
	}
	if (i < cfs.nfiles)
		cfs.files[i].bytes += n;
	write_counts_locked();
	pthread_mutex_unlock(&cfs.lock);
}

static void *cfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->attr_timeout = 0;
	cfg->entry_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->direct_io = 1;
	cfg->kernel_cache = 0;
	cfg->auto_cache = 0;
	return NULL;
}

static int cfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	if (fi)
		return fstat((int)fi->fh, st) < 0 ? -errno : 0;
	char p[PATH_MAX];
	int rc = src_path(path, p, sizeof(p));
	if (rc)
		return rc;
	return lstat(p, st) < 0 ? -errno : 0;
}

static int cfs_readlink(const char *path, char *buf, size_t size)
{
	char p[PATH_MAX];
	int rc = src_path(path, p, sizeof(p));
	if (rc)
		return rc;
	if (size == 0)
		return -EINVAL;
	ssize_t n = readlink(p, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int cfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
		       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	char p[PATH_MAX];
	int rc = src_path(path, p, sizeof(p));
	if (rc)
		return rc;
	DIR *d = opendir(p);
	if (!d)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (filler(buf, de->d_name, NULL, 0, 0))
			break;
	}
	closedir(d);
	pthread_mutex_lock(&cfs.lock);
	cfs.readdirs++;
	if (strcmp(path, "/") == 0)
		cfs.readdirs_root++;
	write_counts_locked();
	pthread_mutex_unlock(&cfs.lock);
	return 0;
}

static int cfs_open(const char *path, struct fuse_file_info *fi)
{
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return -EROFS;
	char p[PATH_MAX];
	int rc = src_path(path, p, sizeof(p));
	if (rc)
		return rc;
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	return 0;
}

static int cfs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	ssize_t n = pread((int)fi->fh, buf, size, off);
	if (n < 0)
		return -errno;
	count_read(path, (size_t)n);
	return (int)n;
}

static int cfs_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close((int)fi->fh);
	return 0;
}

static int cfs_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	return statvfs(cfs.src, sv) < 0 ? -errno : 0;
}

/* Everything that would change the tree (the mount is also "ro"). */
static int cfs_erofs_mode(const char *path, mode_t mode)
{
	(void)path;
	(void)mode;
	return -EROFS;
}

static int cfs_erofs_path(const char *path)
{
	(void)path;
	return -EROFS;
}

static int cfs_erofs_two(const char *from, const char *to)
{
	(void)from;
	(void)to;
	return -EROFS;
}

static int cfs_rename(const char *from, const char *to, unsigned int flags)
{
	(void)flags;
	return cfs_erofs_two(from, to);
}

static int cfs_mknod(const char *path, mode_t mode, dev_t dev)
{
	(void)dev;
	return cfs_erofs_mode(path, mode);
}

static int cfs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)fi;
	return cfs_erofs_mode(path, mode);
}

static int cfs_write(const char *path, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)buf;
	(void)size;
	(void)off;
	(void)fi;
	return cfs_erofs_path(path);
}

static int cfs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	(void)size;
	(void)fi;
	return cfs_erofs_path(path);
}

static int cfs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)fi;
	return cfs_erofs_mode(path, mode);
}

static int cfs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	(void)uid;
	(void)gid;
	(void)fi;
	return cfs_erofs_path(path);
}

static int cfs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	(void)tv;
	(void)fi;
	return cfs_erofs_path(path);
}

static const struct fuse_operations cfs_ops = {
	.init = cfs_init,
	.getattr = cfs_getattr,
	.readlink = cfs_readlink,
	.readdir = cfs_readdir,
	.open = cfs_open,
	.read = cfs_read,
	.release = cfs_release,
	.statfs = cfs_statfs,
	.mknod = cfs_mknod,
	.mkdir = cfs_erofs_mode,
	.unlink = cfs_erofs_path,
	.rmdir = cfs_erofs_path,
	.symlink = cfs_erofs_two,
	.rename = cfs_rename,
	.link = cfs_erofs_two,
	.chmod = cfs_chmod,
	.chown = cfs_chown,
	.truncate = cfs_truncate,
	.write = cfs_write,
	.create = cfs_create,
	.utimens = cfs_utimens,
};

static int usage(void)
{
	fprintf(stderr, "usage: tccountfs [--count-file FILE] SRC MNT [-f] [FUSE options]\n");
	return 2;
}

int main(int argc, char **argv)
{
	int i = 1;
	if (i + 1 < argc && strcmp(argv[i], "--count-file") == 0) {
		cfs.count_file = argv[i + 1];
		i += 2;
	}
	if (argc - i < 2 || argv[i][0] == '-')
		return usage();
	if (!realpath(argv[i], cfs.src)) {
		fprintf(stderr, "tccountfs: source directory %s: %s\n", argv[i], strerror(errno));
		return 1;
	}
	if (strcmp(cfs.src, "/") == 0)
		cfs.src[0] = '\0'; /* "/" + "/path" would double the slash */
	i++;

	/* argv[0], the mount point and the caller's options, then ours: a
	 * read-only mount the kernel itself keeps writes away from */
	char *fargv[64];
	int fargc = 0;
	fargv[fargc++] = argv[0];
	for (; i < argc && fargc < 60; i++)
		fargv[fargc++] = argv[i];
	if (i < argc)
		return usage();
	fargv[fargc++] = "-o";
	fargv[fargc++] = "ro,fsname=tccountfs,subtype=tccountfs";
	fargv[fargc] = NULL;

	pthread_mutex_lock(&cfs.lock);
	write_counts_locked(); /* "bytes 0" before the first read */
	pthread_mutex_unlock(&cfs.lock);
	int rc = fuse_main(fargc, fargv, &cfs_ops, NULL);
	for (size_t k = 0; k < cfs.nfiles; k++)
		free(cfs.files[k].path);
	free(cfs.files);
	return rc;
}
