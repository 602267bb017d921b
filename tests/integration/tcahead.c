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

/* Read DATASET/rel whole and compare it with SRCDIR/rel. */
static int read_one(struct tiercache *tc, const char *ds, const char *src, const char *rel)
{
	char tp[4200], sp[4200];
	snprintf(tp, sizeof(tp), "%s/%s", ds, rel);
	snprintf(sp, sizeof(sp), "%s/%s", src, rel);
	size_t want = 0;
	char *ref = slurp(sp, &want);
	if (!ref) {
		printf("FAIL: cannot read the source %s\n", sp);
		return -1;
	}
	int h = tiercache_open(tc, tp, O_RDONLY);
	if (h < 0) {
		printf("FAIL: open %s: %s\n", tp, tiercache_last_error());
		free(ref);
		return -1;
	}
	char *buf = malloc(want + 65536);
	size_t got = 0;
	ssize_t r;
	while ((r = tiercache_read(tc, h, buf + got, want + 65536 - got)) > 0)
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
	if (tiercache_close(tc, h) < 0) {
		printf("FAIL: close %s: %s\n", tp, tiercache_last_error());
		rc = -1;
	}
	free(buf);
	free(ref);
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
	else
		fprintf(stderr, "usage: see tcahead.c\n");
	tiercache_disconnect(tc);
	return rc;
}
