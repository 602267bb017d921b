/*
 * tcopenmany: batched opens (tiercache_open_many) through the public API,
 * every byte compared with the source files.
 *
 *   tcopenmany check ARG...        ARG is DATASET/PATH=SRCFILE (must open
 *                                  and read as SRCFILE) or DATASET/PATH
 *                                  (expected to fail). One call for all;
 *                                  prints "PATH ok" or "PATH ERRNAME"
 *                                  (e.g. ENOENT) per argument, in order
 *   tcopenmany dir DATASET SRCDIR N
 *                                  the first N files of SRCDIR (sorted,
 *                                  cycled if fewer) in one call; prints
 *                                  "opened=X errors=Y mismatched=Z"
 *   tcopenmany limit DATASET/PATH  open PATH (an empty file: no descriptor
 *                                  each) in batches of 64 until the daemon
 *                                  refuses; prints "opened=X refused=Y
 *                                  emfile=Z", closes 64 of them and a bad
 *                                  handle with one tiercache_close_many
 *                                  ("close_many=RC ERRNAME"), then
 *                                  "again=OPENED"
 *
 * Exits 0 if no opened file read differently from its source.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tiercache.h"

static int mismatches;

static char *slurp(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	char *buf = NULL;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && (buf = malloc((size_t)st.st_size + 1))) {
		ssize_t got = pread(fd, buf, (size_t)st.st_size, 0);
		if (got != st.st_size) {
			free(buf);
			buf = NULL;
		}
		*n = (size_t)st.st_size;
	}
	close(fd);
	return buf;
}

/* Handle h reads exactly as src (whole, then past EOF). */
static bool same_bytes(struct tiercache *tc, int h, const char *src)
{
	size_t n = 0;
	char *want = slurp(src, &n);
	char *got = malloc(n + 1);
	bool ok = want && got && tiercache_pread(tc, h, got, n + 1, 0) == (ssize_t)n &&
		  memcmp(want, got, n) == 0;
	free(want);
	free(got);
	if (!ok)
		mismatches++;
	return ok;
}

static const char *ename(int e)
{
	const char *s = strerrorname_np(e);
	return s ? s : "E?";
}

static struct tiercache *conn(void)
{
	struct tiercache *tc = tiercache_connect(NULL);
	if (!tc) {
		fprintf(stderr, "tcopenmany: connect: %s\n", strerror(errno));
		exit(2);
	}
	return tc;
}

static int cmd_check(int argc, char **argv)
{
	struct tiercache *tc = conn();
	const char **paths = calloc((size_t)argc, sizeof(*paths));
	const char **srcs = calloc((size_t)argc, sizeof(*srcs));
	int *hs = calloc((size_t)argc, sizeof(int)), *errs = calloc((size_t)argc, sizeof(int));
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (eq) {
			*eq = '\0';
			srcs[i] = eq + 1;
		}
		paths[i] = argv[i];
	}
	int n = tiercache_open_many(tc, paths, (size_t)argc, hs, errs, 0);
	int counted = 0;
	if (n < 0) {
		printf("call %s\n", ename(errno));
		mismatches++;
		argc = 0; /* nothing opened: free and go */
	}
	for (int i = 0; i < argc; i++) {
		if (hs[i] < 0) {
			printf("%s %s\n", paths[i], ename(errs[i]));
			continue;
		}
		counted++;
		if (!srcs[i])
			printf("%s opened\n", paths[i]);
		else
			printf("%s %s\n", paths[i], same_bytes(tc, hs[i], srcs[i]) ? "ok" : "MISMATCH");
		tiercache_close(tc, hs[i]);
	}
	if (n >= 0 && counted != n) {
		printf("returned %d, %d handles\n", n, counted);
		mismatches++;
	}
	tiercache_disconnect(tc);
	free(paths);
	free(srcs);
	free(hs);
	free(errs);
	return mismatches ? 1 : 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmd_dir(const char *ds, const char *dir, int n)
{
	struct tiercache *tc = conn();
	char **names = NULL;
	int nn = 0;
	DIR *d = opendir(dir);
	for (struct dirent *de; d && (de = readdir(d));) {
		if (de->d_type != DT_REG)
			continue;
		names = realloc(names, (size_t)(nn + 1) * sizeof(*names));
		names[nn++] = strdup(de->d_name);
	}
	if (d)
		closedir(d);
	if (!nn) {
		fprintf(stderr, "tcopenmany: no files in %s\n", dir);
		return 2;
	}
	qsort(names, (size_t)nn, sizeof(*names), by_name);
	const char **paths = calloc((size_t)n, sizeof(*paths));
	char **srcs = calloc((size_t)n, sizeof(*srcs));
	int *hs = calloc((size_t)n, sizeof(int)), *errs = calloc((size_t)n, sizeof(int));
	for (int i = 0; i < n; i++) {
		char *p, *s;
		if (asprintf(&p, "%s/%s", ds, names[i % nn]) < 0 ||
		    asprintf(&s, "%s/%s", dir, names[i % nn]) < 0)
			return 2;
		paths[i] = p;
		srcs[i] = s;
	}
	int opened = tiercache_open_many(tc, paths, (size_t)n, hs, errs, 0);
	if (opened < 0) {
		printf("call %s\n", ename(errno));
		return 1;
	}
	int errors = 0;
	for (int i = 0; i < n; i++) {
		if (hs[i] < 0) {
			if (errors++ < 5)
				fprintf(stderr, "%s: %s\n", paths[i], ename(errs[i]));
			continue;
		}
		same_bytes(tc, hs[i], srcs[i]);
		tiercache_close(tc, hs[i]);
	}
	printf("opened=%d errors=%d mismatched=%d\n", opened, errors, mismatches);
	tiercache_disconnect(tc);
	for (int i = 0; i < n; i++) {
		free((char *)paths[i]);
		free(srcs[i]);
	}
	for (int i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	free(paths);
	free(srcs);
	free(hs);
	free(errs);
	return mismatches ? 1 : 0;
}

static int cmd_limit(const char *path)
{
	struct tiercache *tc = conn();
	enum { B = 64 };
	const char *paths[B];
	int hs[B], errs[B];
	int *all = NULL, nall = 0, refused = 0, emfile = 0;
	for (int i = 0; i < B; i++)
		paths[i] = path;
	while (!refused && nall < (1 << 20)) {
		int n = tiercache_open_many(tc, paths, B, hs, errs, 0);
		if (n < 0) {
			printf("call %s\n", ename(errno));
			return 1;
		}
		all = realloc(all, (size_t)(nall + B) * sizeof(int));
		for (int i = 0; i < B; i++) {
			if (hs[i] >= 0) {
				all[nall++] = hs[i];
			} else {
				refused++;
				emfile += errs[i] == EMFILE;
			}
		}
	}
	printf("opened=%d refused=%d emfile=%d\n", nall, refused, emfile);
	/* 64 closed in one tiercache_close_many, with a handle that is not
	 * open among them: EBADF, and the 64 are still closed (again=64) */
	int cl[B + 1], ncl = 0;
	for (int i = 0; i < B && nall; i++)
		cl[ncl++] = all[--nall];
	cl[ncl++] = -1;
	int rc = tiercache_close_many(tc, cl, (size_t)ncl);
	printf("close_many=%d %s\n", rc, rc < 0 ? ename(errno) : "ok");
	int again = tiercache_open_many(tc, paths, B, hs, errs, 0);
	printf("again=%d\n", again);
	tiercache_disconnect(tc);
	free(all);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "check"))
		return cmd_check(argc - 2, argv + 2);
	if (argc == 5 && !strcmp(argv[1], "dir"))
		return cmd_dir(argv[2], argv[3], atoi(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "limit"))
		return cmd_limit(argv[2]);
	fprintf(stderr, "usage: tcopenmany check DATASET/PATH[=SRC]... | dir DATASET SRCDIR N | "
			"limit DATASET/PATH\n");
	return 2;
}
