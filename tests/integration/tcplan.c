/*
 * tcplan: the plan tests' client. Registers plans through the public C API
 * (tiercache_plan_*) and reads files through libtiercache, comparing every
 * byte with the source.
 *
 *   tcplan set DATASET JOB RANK WORLD EPOCH [append] [job] [indices] [hold=FILE]
 *        entries (paths or indices) one per line on stdin; prints
 *        "registered N" or "error ENAME: detail"; hold=FILE keeps the
 *        connection open until FILE exists
 *   tcplan cancel DATASET JOB RANK      prints "cancelled" or "error ..."
 *   tcplan read DATASET SRCDIR [settle] paths on stdin, each read whole and
 *        compared with SRCDIR/PATH; settle: before each file, wait until the
 *        daemon has no fill in flight (so prefetches are done)
 *   tcplan readseq DATASET/PATH SRCFILE settle [FIRST [COUNT]]
 *        one file chunk by chunk, in order, settling before each chunk
 *        (from chunk FIRST, COUNT chunks; default: all)
 *   tcplan raw OP HEX                   send a raw payload, print the errno
 *   tcplan settle                       wait for no fill in flight
 *   tcplan probe STOPFILE               ping round trips back to back until
 *        STOPFILE exists (<= 600 s): how long the daemon's loop was busy
 *        elsewhere; prints "pings N max_us X p99_us Y over_10ms Z"
 *   tcplan ddp DATASET SRCDIR JOB RANK WORLD EPOCH ORDER GO COMPUTE_MS [register|register-rank]
 *        one rank of a DDP job: tags its connection JOB:RANK, registers
 *        ORDER (paths, one a line) as the whole job's plan if "register"
 *        (TIERCACHE_PLAN_JOB), or its own entries (below) as this rank's
 *        plan if "register-rank" (no flag: tiercache.torch's default),
 *        prints "ready", waits (<= 120 s) for the
 *        file GO, then reads ORDER's entries i with i % WORLD == RANK, each
 *        whole, compared with SRCDIR/PATH, "computing" COMPUTE_MS after
 *        each; prints "ok read N" or FAIL lines
 *   tcplan shell DATASET SRCDIR         a long-lived client driven by
 *        commands on stdin, one reply line each ("ok ..." or "error ENAME:
 *        detail" or "FAIL: ..."). Plans go on one connection, reads on a
 *        second one (as a DataLoader's main process and workers):
 *          plan JOB RANK EPOCH set|append FILE   register FILE's paths
 *          cancel JOB RANK
 *          order FILE          the paths `read` goes through
 *          read N [settle]     the next N paths of the order, each whole,
 *                              compared with SRCDIR/PATH (settle first)
 *          job JOB RANK|any|none   tag the reading connection
 *          ping                a round trip on the planning connection
 *          quit
 *
 * Exit 0 only if every call did what it said.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "tiercache.h"

static const char *ename(int e)
{
	switch (e) {
	case ENOENT: return "ENOENT";
	case EINVAL: return "EINVAL";
	case EBADMSG: return "EBADMSG";
	case EIO: return "EIO";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ENOSYS: return "ENOSYS";
	case EPERM: return "EPERM";
	case EMSGSIZE: return "EMSGSIZE";
	default: return "E?";
	}
}

static int report_err(void)
{
	int e = errno;
	printf("error %s: %s\n", ename(e), tiercache_last_error());
	return 1;
}

/* Fills in flight in the daemon, or -1. */
static long fills_inflight(struct tiercache *tc)
{
	void *rep = NULL;
	size_t n = 0;
	struct proto_recset rs;
	long v = -1;
	if (tiercache_call(tc, TC_OP_STATUS, NULL, 0, &rep, &n) < 0)
		return -1;
	if (proto_recset_parse(rep, n, &rs) == 0) {
		const struct proto_section *s = proto_recset_find(&rs, "daemon");
		const struct proto_field *f =
			s && s->nrecords ? proto_record_find(&s->records[0], "fills_inflight") : NULL;
		if (f)
			v = (long)f->v.u;
		proto_recset_free(&rs);
	}
	free(rep);
	return v;
}

/* Poll (a real condition, not a time) until no fill is in flight. */
static int settle(struct tiercache *tc)
{
	struct timespec ts = {0, 2 * 1000 * 1000};
	for (int i = 0; i < 5000; i++) {
		long v = fills_inflight(tc);
		if (v == 0)
			return 0;
		if (v < 0)
			return -1;
		nanosleep(&ts, NULL);
	}
	return -1;
}

static char **read_lines_from(FILE *in, size_t *n)
{
	size_t cap = 1024;
	char **v = malloc(cap * sizeof(*v));
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	*n = 0;
	while ((len = getline(&line, &lcap, in)) >= 0) {
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (*n == cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
		v[(*n)++] = strdup(line);
	}
	free(line);
	return v;
}

static char **read_lines(size_t *n)
{
	return read_lines_from(stdin, n);
}

static void free_lines(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int cmd_set(struct tiercache *tc, int argc, char **argv)
{
	struct tiercache_plan p = {.job = strtoull(argv[3], NULL, 0),
				   .rank = (uint32_t)strtoul(argv[4], NULL, 0),
				   .world_size = (uint32_t)strtoul(argv[5], NULL, 0),
				   .epoch = (uint32_t)strtoul(argv[6], NULL, 0)};
	unsigned flags = 0;
	int indices = 0;
	const char *hold = NULL;
	for (int i = 7; i < argc; i++) {
		if (!strcmp(argv[i], "append"))
			flags |= TIERCACHE_PLAN_APPEND;
		else if (!strcmp(argv[i], "job"))
			flags |= TIERCACHE_PLAN_JOB;
		else if (!strcmp(argv[i], "indices"))
			indices = 1;
		else if (!strncmp(argv[i], "hold=", 5))
			hold = argv[i] + 5;
	}
	size_t n;
	char **lines = read_lines(&n);
	int rc;
	if (indices) {
		uint64_t *ix = malloc((n ? n : 1) * sizeof(*ix));
		for (size_t i = 0; i < n; i++)
			ix[i] = strtoull(lines[i], NULL, 0);
		rc = tiercache_plan_indices(tc, argv[2], &p, ix, n, flags);
		free(ix);
	} else {
		rc = tiercache_plan_paths(tc, argv[2], &p, (const char *const *)lines, n, flags);
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	if (rc < 0)
		return report_err();
	printf("registered %zu\n", n);
	fflush(stdout);
	if (hold) {
		struct timespec ts = {0, 10 * 1000 * 1000};
		while (access(hold, F_OK) != 0)
			nanosleep(&ts, NULL);
	}
	return 0;
}

/* Read [first, first + count) in pieces (chunks when settle_chunks) and
 * compare with src; count UINT64_MAX: to the end. */
static int read_compare(struct tiercache *tc, const char *tcpath, const char *src, int settle_chunks,
			uint64_t first, uint64_t count)
{
	int fd = open(src, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		printf("FAIL: cannot open source %s\n", src);
		return 1;
	}
	int h = tiercache_open(tc, tcpath, 0);
	if (h < 0) {
		close(fd);
		printf("FAIL: open %s: %s\n", tcpath, tiercache_last_error());
		return 1;
	}
	struct tiercache_stat ts;
	tiercache_fstat(tc, h, &ts);
	size_t bs = settle_chunks ? ts.chunk_size : 100003;
	char *a = malloc(bs), *b = malloc(bs);
	int bad = 0;
	uint64_t end = count < (uint64_t)st.st_size / bs + 1 ? (first + count) * bs : (uint64_t)st.st_size;
	for (uint64_t off = first * bs; off < (uint64_t)st.st_size && off < end; off += bs) {
		if (settle_chunks && settle(tc) < 0)
			bad = 1;
		ssize_t got = tiercache_pread(tc, h, a, bs, off);
		ssize_t want = pread(fd, b, bs, (off_t)off);
		if (got != want || got < 0 || memcmp(a, b, (size_t)got) != 0) {
			printf("FAIL: %s differs from the source at offset %llu\n", tcpath,
			       (unsigned long long)off);
			bad = 1;
			break;
		}
	}
	free(a);
	free(b);
	tiercache_close(tc, h);
	close(fd);
	return bad;
}

static int cmd_read(struct tiercache *tc, int argc, char **argv)
{
	int do_settle = argc > 4 && !strcmp(argv[4], "settle");
	size_t n, bad = 0;
	char **lines = read_lines(&n);
	for (size_t i = 0; i < n; i++) {
		char tcpath[8192], src[8192];
		snprintf(tcpath, sizeof(tcpath), "%s/%s", argv[2], lines[i]);
		snprintf(src, sizeof(src), "%s/%s", argv[3], lines[i]);
		if (do_settle && settle(tc) < 0) {
			printf("FAIL: the daemon did not settle\n");
			bad++;
		}
		bad += (size_t)read_compare(tc, tcpath, src, 0, 0, UINT64_MAX);
		free(lines[i]);
	}
	free(lines);
	printf("read %zu files, %zu differ\n", n, bad);
	return bad ? 1 : 0;
}

static int cmd_raw(struct tiercache *tc, char **argv)
{
	const char *hex = argv[3];
	size_t n = strlen(hex) / 2;
	unsigned char *p = malloc(n ? n : 1);
	for (size_t i = 0; i < n; i++)
		sscanf(hex + 2 * i, "%2hhx", &p[i]);
	void *rep = NULL;
	size_t replen;
	int rc = tiercache_call(tc, (unsigned)atoi(argv[2]), p, n, &rep, &replen);
	free(p);
	free(rep);
	if (rc < 0)
		return report_err();
	printf("ok\n");
	return 0;
}

/* One shell command; the reply line is printed here. */
static void shell_cmd(struct tiercache *tc, struct tiercache *rd, const char *ds, const char *srcdir,
		      char *line, char ***order, size_t *norder, size_t *next)
{
	char *argv[8];
	int argc = 0;
	for (char *t = strtok(line, " \t"); t && argc < 8; t = strtok(NULL, " \t"))
		argv[argc++] = t;
	if (argc == 0) {
		printf("FAIL: empty command\n");
	} else if (!strcmp(argv[0], "plan") && argc == 6) {
		struct tiercache_plan p = {.job = strtoull(argv[1], NULL, 0),
					   .rank = (uint32_t)strtoul(argv[2], NULL, 0),
					   .world_size = (uint32_t)strtoul(argv[2], NULL, 0) + 1,
					   .epoch = (uint32_t)strtoul(argv[3], NULL, 0)};
		FILE *f = fopen(argv[5], "r");
		if (!f) {
			printf("FAIL: cannot open %s\n", argv[5]);
			return;
		}
		size_t n;
		char **v = read_lines_from(f, &n);
		fclose(f);
		int rc = tiercache_plan_paths(tc, ds, &p, (const char *const *)v, n,
					      !strcmp(argv[4], "append") ? TIERCACHE_PLAN_APPEND : 0);
		free_lines(v, n);
		if (rc < 0)
			(void)report_err();
		else
			printf("ok registered %zu\n", n);
	} else if (!strcmp(argv[0], "cancel") && argc == 3) {
		if (tiercache_plan_cancel(tc, ds, strtoull(argv[1], NULL, 0),
					  (uint32_t)strtoul(argv[2], NULL, 0)) < 0)
			(void)report_err();
		else
			printf("ok cancelled\n");
	} else if (!strcmp(argv[0], "order") && argc == 2) {
		FILE *f = fopen(argv[1], "r");
		if (!f) {
			printf("FAIL: cannot open %s\n", argv[1]);
			return;
		}
		free_lines(*order, *norder);
		*order = read_lines_from(f, norder);
		*next = 0;
		fclose(f);
		printf("ok order %zu\n", *norder);
	} else if (!strcmp(argv[0], "read") && argc >= 2) {
		size_t n = strtoul(argv[1], NULL, 10), bad = 0, done = 0;
		int do_settle = argc > 2 && !strcmp(argv[2], "settle");
		for (; done < n && *next < *norder; done++, (*next)++) {
			char tcpath[8192], src[8192];
			snprintf(tcpath, sizeof(tcpath), "%s/%s", ds, (*order)[*next]);
			snprintf(src, sizeof(src), "%s/%s", srcdir, (*order)[*next]);
			if (do_settle && settle(rd) < 0)
				bad++;
			bad += (size_t)read_compare(rd, tcpath, src, 0, 0, UINT64_MAX);
		}
		if (bad || done < n)
			printf("FAIL: read %zu of %zu files, %zu differ\n", done, n, bad);
		else
			printf("ok read %zu\n", done);
	} else if (!strcmp(argv[0], "job") && argc >= 2) {
		int rc;
		if (!strcmp(argv[1], "none"))
			rc = tiercache_clear_job(rd);
		else
			rc = tiercache_set_job(rd, strtoull(argv[1], NULL, 0),
					       argc > 2 && strcmp(argv[2], "any")
						       ? (uint32_t)strtoul(argv[2], NULL, 0)
						       : TIERCACHE_RANK_ANY);
		if (rc < 0)
			(void)report_err();
		else
			printf("ok job\n");
	} else if (!strcmp(argv[0], "ping")) {
		if (tiercache_ping(tc) < 0)
			(void)report_err();
		else
			printf("ok ping\n");
	} else {
		printf("FAIL: unknown command %s\n", argv[0]);
	}
}

static int cmd_shell(struct tiercache *tc, char **argv)
{
	struct tiercache *rd = tiercache_connect(NULL);
	if (!rd) {
		printf("error %s: cannot connect\n", ename(errno));
		return 1;
	}
	char *line = NULL, **order = NULL;
	size_t lcap = 0, norder = 0, next = 0;
	ssize_t len;
	while ((len = getline(&line, &lcap, stdin)) >= 0) {
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (!strcmp(line, "quit"))
			break;
		shell_cmd(tc, rd, argv[2], argv[3], line, &order, &norder, &next);
		fflush(stdout);
	}
	free(line);
	free_lines(order, norder);
	tiercache_disconnect(rd);
	return 0;
}

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Round trips until stop exists: the longest shows how long the loop was
 * held by something else (a view build, say). */
static int cmd_probe(struct tiercache *tc, const char *stop)
{
	size_t cap = 1u << 16, n = 0;
	uint64_t *rtt = malloc(cap * sizeof(*rtt)), t_end = mono_us() + 600u * 1000000u, over = 0;
	if (!rtt)
		return 1;
	while (access(stop, F_OK) != 0 && mono_us() < t_end) {
		uint64_t t0 = mono_us();
		if (tiercache_ping(tc) < 0) {
			free(rtt);
			return report_err();
		}
		uint64_t d = mono_us() - t0;
		over += d > 10000;
		if (n == cap) {
			uint64_t *nr = realloc(rtt, 2 * cap * sizeof(*rtt));
			if (!nr)
				break;
			rtt = nr;
			cap *= 2;
		}
		rtt[n++] = d;
	}
	qsort(rtt, n, sizeof(*rtt), u64_cmp);
	printf("pings %zu max_us %llu p99_us %llu over_10ms %llu\n", n,
	       (unsigned long long)(n ? rtt[n - 1] : 0), (unsigned long long)(n ? rtt[n * 99 / 100] : 0),
	       (unsigned long long)over);
	free(rtt);
	return n == 0;
}

enum { DDP_REG_NONE, DDP_REG_JOB, DDP_REG_RANK };

static int cmd_ddp(struct tiercache *tc, char **argv, int reg)
{
	const char *ds = argv[2], *srcdir = argv[3];
	struct tiercache_plan p = {.job = strtoull(argv[4], NULL, 0),
				   .rank = (uint32_t)strtoul(argv[5], NULL, 0),
				   .world_size = (uint32_t)strtoul(argv[6], NULL, 0),
				   .epoch = (uint32_t)strtoul(argv[7], NULL, 0)};
	long compute_ms = strtol(argv[10], NULL, 10);
	FILE *f = fopen(argv[8], "r");
	if (!f || !p.world_size) {
		printf("FAIL: cannot open %s or world_size 0\n", argv[8]);
		return 1;
	}
	size_t n;
	char **v = read_lines_from(f, &n);
	fclose(f);
	int rc = 1;
	if (tiercache_set_job(tc, p.job, p.rank) < 0) {
		(void)report_err();
		goto out;
	}
	if (reg == DDP_REG_JOB && tiercache_plan_paths(tc, ds, &p, (const char *const *)v, n, TIERCACHE_PLAN_JOB) < 0) {
		(void)report_err();
		goto out;
	}
	if (reg == DDP_REG_RANK) {
		/* this rank's own plan (per-rank, as tiercache.torch's PlanSampler
		 * registers a DistributedSampler's share): entries i % world == rank */
		const char **mine = calloc(n / p.world_size + 1, sizeof(*mine));
		size_t k = 0;
		for (size_t i = p.rank; mine && i < n; i += p.world_size)
			mine[k++] = v[i];
		int prc = mine ? tiercache_plan_paths(tc, ds, &p, mine, k, 0) : -1;
		free(mine);
		if (prc < 0) {
			(void)report_err();
			goto out;
		}
	}
	printf("ready\n");
	fflush(stdout);
	struct timespec ts = {0, 10 * 1000 * 1000};
	for (int i = 0; i < 12000 && access(argv[9], F_OK) != 0; i++)
		nanosleep(&ts, NULL);
	size_t bad = 0, done = 0;
	for (size_t i = p.rank; i < n; i += p.world_size, done++) {
		char tcpath[8192], src[8192];
		snprintf(tcpath, sizeof(tcpath), "%s/%s", ds, v[i]);
		snprintf(src, sizeof(src), "%s/%s", srcdir, v[i]);
		if (read_compare(tc, tcpath, src, 0, 0, UINT64_MAX)) {
			bad++;
			printf("FAIL: %s differs from the source\n", v[i]);
		}
		struct timespec c = {compute_ms / 1000, (compute_ms % 1000) * 1000 * 1000};
		nanosleep(&c, NULL);
	}
	if (!bad)
		printf("ok read %zu\n", done);
	rc = bad != 0;
out:
	free_lines(v, n);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: see tests/integration/tcplan.c\n");
		return 2;
	}
	struct tiercache *tc = tiercache_connect(NULL);
	if (!tc) {
		printf("error %s: cannot connect: %s\n", ename(errno), tiercache_last_error());
		return 1;
	}
	int rc = 2;
	if (!strcmp(argv[1], "set") && argc >= 7)
		rc = cmd_set(tc, argc, argv);
	else if (!strcmp(argv[1], "cancel") && argc == 5)
		rc = tiercache_plan_cancel(tc, argv[2], strtoull(argv[3], NULL, 0),
					   (uint32_t)strtoul(argv[4], NULL, 0)) < 0
			     ? report_err()
			     : (printf("cancelled\n"), 0);
	else if (!strcmp(argv[1], "read") && argc >= 4)
		rc = cmd_read(tc, argc, argv);
	else if (!strcmp(argv[1], "readseq") && argc >= 4)
		rc = read_compare(tc, argv[2], argv[3], 1, argc > 5 ? strtoull(argv[5], NULL, 10) : 0,
				  argc > 6 ? strtoull(argv[6], NULL, 10) : UINT64_MAX);
	else if (!strcmp(argv[1], "raw") && argc == 4)
		rc = cmd_raw(tc, argv);
	else if (!strcmp(argv[1], "probe") && argc == 3)
		rc = cmd_probe(tc, argv[2]);
	else if (!strcmp(argv[1], "settle"))
		rc = settle(tc) < 0;
	else if (!strcmp(argv[1], "shell") && argc == 4)
		rc = cmd_shell(tc, argv);
	else if (!strcmp(argv[1], "ddp") && (argc == 11 || argc == 12))
		rc = cmd_ddp(tc, argv,
			     argc < 12 ? DDP_REG_NONE
			     : !strcmp(argv[11], "register") ? DDP_REG_JOB
			     : !strcmp(argv[11], "register-rank") ? DDP_REG_RANK : DDP_REG_NONE);
	tiercache_disconnect(tc);
	return rc;
}
