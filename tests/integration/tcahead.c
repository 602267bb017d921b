/*
 * tcahead: the open-ahead tests' client (t_open_ahead.sh, t_mount_ahead.sh).
 *
 *   tcahead read DATASET SRCDIR JOB [pause=K:FILE ...]
 *        tag the connection with JOB (any rank), then read the paths on
 *        stdin (relative to DATASET) each whole through libtiercache and
 *        compare with SRCDIR/PATH; pause=K:FILE: after K files print
 *        "paused K" and wait until FILE exists (deadline 60 s). Prints
 *        "read N" or "FAIL: ..." lines.
 *
 *   tcahead many DATASET SRCDIR JOB BATCH
 *        the same with tiercache_open_many, BATCH paths a call (the last
 *        may be shorter), closed with one tiercache_close_many. A line
 *        "PATH !ERRNAME" names a file that must fail with that errno
 *        (ENOENT, EACCES, ...). Prints "read N failed M" or "FAIL: ..."
 *        lines.
 *
 * Exit 0 only if every byte matched and every call did what it said.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tiercache.h"

static int wait_file(const char *path)
{
	struct timespec ts = {0, 10 * 1000 * 1000};
	for (int i = 0; i < 6000; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		nanosleep(&ts, NULL);
	}
	return -1;
}

static char *slurp(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	struct stat st;
	char *b = NULL;
	if (fstat(fd, &st) == 0 && (b = malloc((size_t)st.st_size + 1))) {
		ssize_t got = 0, r;
		while (got < st.st_size && (r = read(fd, b + got, (size_t)(st.st_size - got))) > 0)
			got += r;
		*n = (size_t)got;
	}
	close(fd);
	return b;
}

/* Read handle h (DATASET/rel, tp) whole and compare it with SRCDIR/rel;
 * the caller closes h. */
static int read_cmp(struct tiercache *tc, int h, const char *tp, const char *src, const char *rel)
{
	char sp[4200];
	snprintf(sp, sizeof(sp), "%s/%s", src, rel);
	size_t want = 0;
	char *ref = slurp(sp, &want);
	if (!ref) {
		printf("FAIL: cannot read the source %s\n", sp);
		return -1;
	}
	char *buf = malloc(want + 65536);
	size_t got = 0;
	ssize_t r;
	while ((r = tiercache_pread(tc, h, buf + got, want + 65536 - got, got)) > 0)
		got += (size_t)r;
	int rc = 0;
	if (r < 0) {
		printf("FAIL: read %s: %s\n", tp, tiercache_last_error());
		rc = -1;
	} else if (got != want || memcmp(buf, ref, want) != 0) {
		printf("FAIL: %s: %zu bytes read, the source has %zu%s\n", tp, got, want,
		       got == want ? " (contents differ)" : "");
		rc = -1;
	}
	free(buf);
	free(ref);
	return rc;
}

/* Read DATASET/rel whole and compare it with SRCDIR/rel. */
static int read_one(struct tiercache *tc, const char *ds, const char *src, const char *rel)
{
	char tp[4200];
	snprintf(tp, sizeof(tp), "%s/%s", ds, rel);
	int h = tiercache_open(tc, tp, O_RDONLY);
	if (h < 0) {
		printf("FAIL: open %s: %s\n", tp, tiercache_last_error());
		return -1;
	}
	int rc = read_cmp(tc, h, tp, src, rel);
	if (tiercache_close(tc, h) < 0) {
		printf("FAIL: close %s: %s\n", tp, tiercache_last_error());
		rc = -1;
	}
	return rc;
}

static int cmd_read(struct tiercache *tc, int argc, char **argv)
{
	const char *ds = argv[2], *src = argv[3];
	if (tiercache_set_job(tc, strtoull(argv[4], NULL, 0), TIERCACHE_RANK_ANY) < 0) {
		printf("FAIL: set_job: %s\n", tiercache_last_error());
		return 1;
	}
	char *line = NULL;
	size_t cap = 0, n = 0;
	ssize_t len;
	int bad = 0;
	while ((len = getline(&line, &cap, stdin)) >= 0) {
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (!len)
			continue;
		if (read_one(tc, ds, src, line) < 0)
			bad++;
		n++;
		for (int i = 5; i < argc; i++) {
			char *colon = strchr(argv[i], ':');
			if (strncmp(argv[i], "pause=", 6) || !colon || strtoul(argv[i] + 6, NULL, 10) != n)
				continue;
			printf("paused %zu\n", n);
			fflush(stdout);
			if (wait_file(colon + 1) < 0) {
				printf("FAIL: %s never appeared\n", colon + 1);
				bad++;
			}
		}
	}
	free(line);
	printf("read %zu\n", n);
	return bad ? 1 : 0;
}

#define MANY_MAX 256

/* One batch: open, read and compare, close all with one call. */
static int many_batch(struct tiercache *tc, const char *ds, const char *src, char **rel,
		      char **expect, int n, int *nread, int *nfailed)
{
	static char tp[MANY_MAX][4200];
	const char *paths[MANY_MAX];
	int hs[MANY_MAX], errs[MANY_MAX], bad = 0;
	for (int i = 0; i < n; i++) {
		snprintf(tp[i], sizeof(tp[i]), "%s/%s", ds, rel[i]);
		paths[i] = tp[i];
	}
	int opened = tiercache_open_many(tc, paths, (size_t)n, hs, errs, O_RDONLY);
	if (opened < 0) {
		printf("FAIL: open_many: %s\n", tiercache_last_error());
		return n;
	}
	int counted = 0;
	for (int i = 0; i < n; i++) {
		counted += hs[i] >= 0;
		if (expect[i]) {
			const char *got = hs[i] >= 0 ? "opened" : strerrorname_np(errs[i]);
			if (!got || strcmp(got, expect[i])) {
				printf("FAIL: %s: %s, expected %s\n", tp[i], got ? got : "?", expect[i]);
				bad++;
			} else {
				(*nfailed)++;
			}
		} else if (hs[i] < 0) {
			printf("FAIL: open_many %s: %s\n", tp[i], strerror(errs[i]));
			bad++;
		} else if (read_cmp(tc, hs[i], tp[i], src, rel[i]) < 0) {
			bad++;
		} else {
			(*nread)++;
		}
	}
	if (counted != opened) {
		printf("FAIL: open_many returned %d, %d handles\n", opened, counted);
		bad++;
	}
	int k = 0;
	for (int i = 0; i < n; i++)
		if (hs[i] >= 0)
			hs[k++] = hs[i];
	if (tiercache_close_many(tc, hs, (size_t)k) < 0) {
		printf("FAIL: close_many: %s\n", tiercache_last_error());
		bad++;
	}
	return bad;
}

static int cmd_many(struct tiercache *tc, char **argv)
{
	const char *ds = argv[2], *src = argv[3];
	int batch = atoi(argv[5]);
	if (batch < 1 || batch > MANY_MAX) {
		printf("FAIL: BATCH must be 1..%d\n", MANY_MAX);
		return 1;
	}
	if (tiercache_set_job(tc, strtoull(argv[4], NULL, 0), TIERCACHE_RANK_ANY) < 0) {
		printf("FAIL: set_job: %s\n", tiercache_last_error());
		return 1;
	}
	char *rel[MANY_MAX], *expect[MANY_MAX];
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int n = 0, bad = 0, nread = 0, nfailed = 0;
	for (;;) {
		len = getline(&line, &cap, stdin);
		if (len >= 0) {
			if (len && line[len - 1] == '\n')
				line[--len] = '\0';
			if (!len)
				continue;
			char *bang = strstr(line, " !");
			if (bang)
				*bang = '\0';
			rel[n] = strdup(line);
			expect[n] = bang ? strdup(bang + 2) : NULL;
			n++;
		}
		if (n == batch || (len < 0 && n)) {
			bad += many_batch(tc, ds, src, rel, expect, n, &nread, &nfailed);
			for (int i = 0; i < n; i++) {
				free(rel[i]);
				free(expect[i]);
			}
			n = 0;
		}
		if (len < 0)
			break;
	}
	free(line);
	printf("read %d failed %d\n", nread, nfailed);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: see tcahead.c\n");
		return 2;
	}
	struct tiercache *tc = tiercache_connect(NULL);
	if (!tc) {
		printf("FAIL: connect: %s\n", tiercache_last_error());
		return 1;
	}
	int rc = 2;
	if (!strcmp(argv[1], "read") && argc >= 5)
		rc = cmd_read(tc, argc, argv);
	else if (!strcmp(argv[1], "many") && argc == 6)
		rc = cmd_many(tc, argv);
	else
		fprintf(stderr, "usage: see tcahead.c\n");
	tiercache_disconnect(tc);
	return rc;
}
