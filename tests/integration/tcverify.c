/*
 * tcverify: the integration tests' eyes. Reads datasets through
 * libtiercache (the public API only) and compares every byte with the
 * source files on disk.
 *
 *   tcverify tree DATASET SRCDIR [SEED]   listing equals the source tree; every
 *                                         file read whole (odd block sizes) and
 *                                         by random preads across chunk
 *                                         boundaries; reads past EOF return 0
 *   tcverify file DATASET/PATH SRCFILE    the same for one file
 *   tcverify concurrent DATASET/PATH SRCFILE N
 *                                         N processes, each its own connection,
 *                                         read the same file at once
 *   tcverify fork DATASET/PATH SRCFILE    open in the parent, read in forked
 *                                         children through the inherited
 *                                         connection
 *   tcverify errno PATH ERRNO_NAME        opening PATH fails with that errno
 *   tcverify hold DATASET/PATH SECONDS    keep chunk fds open for a while
 *   tcverify holdcheck DATASET/PATH SRCFILE SECONDS
 *                                         take chunk 0's descriptor (and
 *                                         base), hold it, then read it
 *                                         again: the bytes still equal SRCFILE
 *
 * Prints one line per check; exits 0 only if everything matched.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tiercache.h"

static int failures;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "FAIL: " __VA_ARGS__);                                             \
		fputc('\n', stderr);                                                               \
		failures++;                                                                        \
	} while (0)

static unsigned long long rng_state = 88172645463325252ull;

static unsigned long long rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static char *slurp(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (buf && got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*n = got;
	return buf;
}

/* Whole-file sequential read in odd blocks, then random preads. */
static int check_file(struct tiercache *tc, const char *tcpath, const char *src)
{
	size_t n;
	char *want = slurp(src, &n);
	if (!want) {
		FAIL("cannot read source %s", src);
		return -1;
	}
	int h = tiercache_open(tc, tcpath, 0);
	if (h < 0) {
		FAIL("open %s: %s (%s)", tcpath, tiercache_strerror(errno), tiercache_last_error());
		free(want);
		return -1;
	}
	struct tiercache_stat st;
	if (tiercache_fstat(tc, h, &st) < 0 || st.size != n)
		FAIL("fstat %s: size %llu, source has %zu", tcpath, (unsigned long long)st.size, n);
	size_t bs = 65536 + 123;
	char *buf = malloc(bs + 8192);
	size_t off = 0;
	for (;;) {
		ssize_t r = tiercache_read(tc, h, buf, bs);
		if (r < 0) {
			FAIL("read %s at %zu: %s (%s)", tcpath, off, tiercache_strerror(errno),
			     tiercache_last_error());
			break;
		}
		if (r == 0)
			break;
		if (off + (size_t)r > n || memcmp(buf, want + off, (size_t)r) != 0) {
			FAIL("%s: bytes at %zu..%zu differ from the source", tcpath, off, off + (size_t)r);
			break;
		}
		off += (size_t)r;
	}
	if (off != n)
		FAIL("%s: read %zu bytes, source has %zu", tcpath, off, n);
	uint32_t cs = st.chunk_size ? st.chunk_size : 4096;
	for (int i = 0; i < 24 && n; i++) {
		/* bias towards chunk boundaries */
		uint64_t o = (i % 2) ? rng() % n : ((rng() % (n / cs + 1)) * cs);
		if (o >= 100 && (i % 3) == 0)
			o -= 100;
		if (o >= n)
			o = n - 1;
		size_t len = 1 + (size_t)(rng() % (bs + 8000));
		ssize_t r = tiercache_pread(tc, h, buf, len, o);
		size_t exp = o + len > n ? n - o : len;
		if (r < 0 || (size_t)r != exp || memcmp(buf, want + o, exp) != 0)
			FAIL("%s: pread(off=%llu,len=%zu) returned %zd, expected %zu matching bytes", tcpath,
			     (unsigned long long)o, len, r, exp);
	}
	ssize_t r = tiercache_pread(tc, h, buf, 100, n + 10);
	if (r != 0)
		FAIL("%s: pread past EOF returned %zd, expected 0", tcpath, r);
	r = tiercache_pread(tc, h, buf, 100, n);
	if (r != 0)
		FAIL("%s: pread at EOF returned %zd, expected 0", tcpath, r);
	tiercache_close(tc, h);
	free(buf);
	free(want);
	return 0;
}

struct walkstat {
	unsigned files;
	unsigned long long bytes;
};

/* Compare one directory level (names, types, sizes), recurse. */
static void check_dir(struct tiercache *tc, const char *tcdir, const char *srcdir, struct walkstat *ws)
{
	char tp[8192], sp[8192];
	unsigned tc_count = 0, src_count = 0;
	struct tiercache_dir *d = tiercache_opendir(tc, tcdir);
	if (!d) {
		FAIL("opendir %s: %s (%s)", tcdir, tiercache_strerror(errno), tiercache_last_error());
		return;
	}
	const struct tiercache_dirent *de;
	while ((de = tiercache_readdir(d))) {
		struct stat st;
		tc_count++;
		snprintf(tp, sizeof(tp), "%s/%s", tcdir, de->name);
		snprintf(sp, sizeof(sp), "%s/%s", srcdir, de->name);
		if (lstat(sp, &st) < 0) {
			FAIL("%s is listed but %s does not exist", tp, sp);
			continue;
		}
		if (de->type == TIERCACHE_DIR) {
			if (!S_ISDIR(st.st_mode))
				FAIL("%s listed as a directory", tp);
			else
				check_dir(tc, tp, sp, ws);
		} else {
			if (!S_ISREG(st.st_mode) || de->size != (uint64_t)st.st_size)
				FAIL("%s: listed size %llu, source %lld", tp, (unsigned long long)de->size,
				     (long long)st.st_size);
			check_file(tc, tp, sp);
			ws->files++;
			ws->bytes += de->size;
		}
	}
	if (errno)
		FAIL("readdir %s: %s", tcdir, tiercache_strerror(errno));
	tiercache_closedir(d);
	DIR *sd = opendir(srcdir);
	struct dirent *e;
	while (sd && (e = readdir(sd))) {
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(sp, sizeof(sp), "%s/%s", srcdir, e->d_name);
		if (lstat(sp, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
			src_count++;
	}
	if (sd)
		closedir(sd);
	if (src_count != tc_count)
		FAIL("%s: %u entries listed, source directory has %u", tcdir, tc_count, src_count);
}

static struct tiercache *connect_or_die(void)
{
	struct tiercache *tc = tiercache_connect(NULL);
	if (!tc) {
		fprintf(stderr, "FAIL: connect: %s (%s)\n", tiercache_strerror(errno), tiercache_last_error());
		exit(1);
	}
	return tc;
}

static int errno_by_name(const char *s)
{
	static const struct {
		const char *n;
		int e;
	} t[] = {{"ENOENT", ENOENT}, {"EINVAL", EINVAL}, {"ENAMETOOLONG", ENAMETOOLONG},
		 {"EISDIR", EISDIR}, {"ENOTDIR", ENOTDIR}, {"EROFS", EROFS}, {"EIO", EIO},
		 {"ESTALE", ESTALE}, {"EACCES", EACCES}, {"ETIMEDOUT", ETIMEDOUT}, {"ELOOP", ELOOP},
		 {"EXDEV", EXDEV}};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(t[i].n, s) == 0)
			return t[i].e;
	return -1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: see the comment at the top of tcverify.c\n");
		return 2;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "tree") == 0 && argc >= 4) {
		struct walkstat ws = {0};
		if (argc > 4)
			rng_state = strtoull(argv[4], NULL, 10) | 1;
		struct tiercache *tc = connect_or_die();
		check_dir(tc, argv[2], argv[3], &ws);
		tiercache_disconnect(tc);
		printf("tree %s: %u files, %llu bytes compared, %d failures\n", argv[2], ws.files, ws.bytes,
		       failures);
	} else if (strcmp(cmd, "file") == 0 && argc == 4) {
		struct tiercache *tc = connect_or_die();
		check_file(tc, argv[2], argv[3]);
		tiercache_disconnect(tc);
		printf("file %s: %d failures\n", argv[2], failures);
	} else if (strcmp(cmd, "concurrent") == 0 && argc == 5) {
		int n = atoi(argv[4]);
		int ok = 0;
		for (int i = 0; i < n; i++) {
			if (fork() == 0) {
				struct tiercache *tc = connect_or_die();
				rng_state += (unsigned long long)i * 7919;
				check_file(tc, argv[2], argv[3]);
				tiercache_disconnect(tc);
				_exit(failures ? 1 : 0);
			}
		}
		for (int i = 0; i < n; i++) {
			int st;
			if (wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
				ok++;
		}
		if (ok != n)
			FAIL("%d of %d concurrent readers saw wrong bytes or errors", n - ok, n);
		printf("concurrent %s: %d readers ok\n", argv[2], ok);
	} else if (strcmp(cmd, "fork") == 0 && argc == 4) {
		struct tiercache *tc = connect_or_die();
		size_t n;
		char *want = slurp(argv[3], &n);
		int h = tiercache_open(tc, argv[2], 0);
		if (h < 0 || !want) {
			FAIL("open %s: %s", argv[2], tiercache_strerror(errno));
		} else {
			int ok = 0;
			for (int i = 0; i < 4; i++) {
				if (fork() == 0) {
					char *buf = malloc(n + 1);
					ssize_t r = tiercache_pread(tc, h, buf, n, 0);
					int good = r == (ssize_t)n && memcmp(buf, want, n) == 0;
					_exit(good ? 0 : 1);
				}
			}
			for (int i = 0; i < 4; i++) {
				int st;
				if (wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
					ok++;
			}
			/* the parent's connection still works after its children used theirs */
			char *buf = malloc(n + 1);
			if (tiercache_pread(tc, h, buf, n, 0) != (ssize_t)n || memcmp(buf, want, n) != 0)
				FAIL("parent read after fork differs");
			free(buf);
			if (ok != 4)
				FAIL("%d of 4 forked children read wrong bytes", 4 - ok);
			printf("fork %s: %d children ok\n", argv[2], ok);
		}
		free(want);
		tiercache_disconnect(tc);
	} else if (strcmp(cmd, "errno") == 0 && argc == 4) {
		int want = errno_by_name(argv[3]);
		struct tiercache *tc = connect_or_die();
		int h = tiercache_open(tc, argv[2], 0);
		if (h >= 0)
			FAIL("open \"%s\" succeeded, expected %s", argv[2], argv[3]);
		else if (errno != want)
			FAIL("open \"%.80s\": %s, expected %s", argv[2], tiercache_strerror(errno), argv[3]);
		else
			printf("errno %.80s: %s (%s)\n", argv[2], argv[3], tiercache_last_error());
		tiercache_disconnect(tc);
	} else if (strcmp(cmd, "hold") == 0 && argc == 4) {
		struct tiercache *tc = connect_or_die();
		int h = tiercache_open(tc, argv[2], 0);
		char b[1];
		if (h < 0 || tiercache_pread(tc, h, b, 1, 0) != 1) {
			FAIL("hold %s: %s", argv[2], tiercache_strerror(errno));
		} else {
			printf("holding %s\n", argv[2]);
			fflush(stdout);
			sleep((unsigned)atoi(argv[3]));
		}
		tiercache_disconnect(tc);
	} else if (strcmp(cmd, "holdcheck") == 0 && argc == 5) {
		struct tiercache *tc = connect_or_die();
		size_t sn = 0, len = 0;
		uint64_t fd_off = 0;
		char *src = slurp(argv[3], &sn);
		int h = tiercache_open(tc, argv[2], 0);
		int fd = h >= 0 ? tiercache_chunk_fd(tc, h, 0, &fd_off, &len) : -1;
		char *b = malloc(len ? len : 1);
		if (!src || fd < 0 || !b || len > sn) {
			FAIL("holdcheck %s: %s", argv[2], tiercache_strerror(errno));
		} else {
			printf("holding %s base=%llu len=%zu\n", argv[2], (unsigned long long)fd_off, len);
			fflush(stdout);
			sleep((unsigned)atoi(argv[4]));
			if (pread(fd, b, len, (off_t)fd_off) != (ssize_t)len || memcmp(b, src, len) != 0)
				FAIL("holdcheck %s: the held descriptor no longer reads the file's bytes", argv[2]);
			else
				printf("ok held descriptor still reads %s\n", argv[2]);
		}
		free(b);
		free(src);
		tiercache_disconnect(tc);
	} else {
		fprintf(stderr, "tcverify: unknown command or wrong arguments\n");
		return 2;
	}
	return failures ? 1 : 0;
}
