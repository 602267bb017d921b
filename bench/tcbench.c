/*
 * tcbench: libtiercache against plain local reads of the same bytes, in the
 * same run, alternating so that machine noise hits both alike. Prints
 * medians and the ratio (tiercache / local).
 *
 *   tcbench seq DATASET/PATH LOCALFILE [RUNS]
 *       hot-hit sequential read of a large file, 1 MiB preads
 *   tcbench small DATASET/DIR LOCALDIR [RUNS]
 *       open + read + close of every (small) file below DIR
 *
 * Both sides are warm: the cache holds the data (a first pass filled it)
 * and the kernel page cache holds the local files.
 *
 * With $TCBENCH_DAEMON_PID set, small also prints CPU per file: this
 * process's (getrusage) on each side and the daemon's (utime + stime from
 * /proc/PID/stat, summed over the tiercache passes: 10 ms ticks, so over
 * all runs, not per run).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib_bench.h"

#define BLOCK (1u << 20)

static char buf[BLOCK];

static uint64_t read_local(const char *path)
{
	int fd = open(path, O_RDONLY);
	uint64_t off = 0;
	if (fd < 0)
		return 0;
	for (;;) {
		ssize_t n = pread(fd, buf, BLOCK, (off_t)off);
		if (n <= 0)
			break;
		off += (uint64_t)n;
	}
	close(fd);
	return off;
}

static uint64_t read_tc(struct tiercache *tc, const char *path)
{
	int h = tiercache_open(tc, path, 0);
	uint64_t off = 0;
	if (h < 0) {
		fprintf(stderr, "tcbench: open %s: %s\n", path, tiercache_strerror(errno));
		exit(1);
	}
	for (;;) {
		ssize_t n = tiercache_pread(tc, h, buf, BLOCK, off);
		if (n < 0) {
			fprintf(stderr, "tcbench: read %s: %s\n", path, tiercache_strerror(errno));
			exit(1);
		}
		if (n == 0)
			break;
		off += (uint64_t)n;
	}
	tiercache_close(tc, h);
	return off;
}

static void report(const char *what, const char *unit, double *loc, double *tcv, int runs, double goal)
{
	double ml = bench_median(loc, (size_t)runs), mt = bench_median(tcv, (size_t)runs);
	double ratio = ml > 0 ? mt / ml : 0;
	printf("%-36s local %10.1f %s   tiercache %10.1f %s   ratio %.2f (goal >= %.2f: %s)\n", what, ml, unit,
	       mt, unit, ratio, goal, ratio >= goal ? "met" : "NOT met");
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: tcbench seq|small TCPATH LOCALPATH [RUNS]\n");
		return 2;
	}
	int runs = argc > 4 ? atoi(argv[4]) : 5;
	if (runs < 1 || runs > 100)
		runs = 5;
	double *loc = calloc((size_t)runs, sizeof(double)), *tcv = calloc((size_t)runs, sizeof(double));
	struct tiercache *tc = tiercache_connect(NULL);
	if (!tc || !loc || !tcv) {
		fprintf(stderr, "tcbench: %s\n", tiercache_strerror(errno));
		return 1;
	}
	if (strcmp(argv[1], "seq") == 0) {
		uint64_t size = read_tc(tc, argv[2]); /* fills the cache */
		if (read_local(argv[3]) != size) {
			fprintf(stderr, "tcbench: %s and %s differ in size\n", argv[2], argv[3]);
			return 1;
		}
		for (int r = 0; r < runs; r++) {
			double t0 = bench_now();
			read_local(argv[3]);
			double t1 = bench_now();
			read_tc(tc, argv[2]);
			double t2 = bench_now();
			loc[r] = (double)size / 1e6 / (t1 - t0);
			tcv[r] = (double)size / 1e6 / (t2 - t1);
		}
		report("hot-hit sequential read (1 MiB)", "MB/s", loc, tcv, runs, 0.95);
	} else if (strcmp(argv[1], "small") == 0) {
		struct bench_list files = {0};
		char lp[8192];
		size_t pre = strlen(argv[2]);
		if (bench_list_dataset(tc, argv[2], &files) < 0 || !files.n) {
			fprintf(stderr, "tcbench: cannot list %s: %s\n", argv[2], tiercache_strerror(errno));
			return 1;
		}
		for (size_t i = 0; i < files.n; i++) { /* fill + warm both sides */
			read_tc(tc, files.v[i].path);
			snprintf(lp, sizeof(lp), "%s%s", argv[3], files.v[i].path + pre);
			if (read_local(lp) != files.v[i].size) {
				fprintf(stderr, "tcbench: %s missing or different locally\n", lp);
				return 1;
			}
		}
		const char *dp = getenv("TCBENCH_DAEMON_PID");
		long dpid = dp ? atol(dp) : 0;
		double cpu_loc = 0, cpu_tc = 0, cpu_d = 0;
		for (int r = 0; r < runs; r++) {
			double c0 = bench_self_cpu(), t0 = bench_now();
			for (size_t i = 0; i < files.n; i++) {
				snprintf(lp, sizeof(lp), "%s%s", argv[3], files.v[i].path + pre);
				read_local(lp);
			}
			double c1 = bench_self_cpu(), t1 = bench_now(), d1 = bench_pid_cpu(dpid);
			for (size_t i = 0; i < files.n; i++)
				read_tc(tc, files.v[i].path);
			double t2 = bench_now(), c2 = bench_self_cpu(), d2 = bench_pid_cpu(dpid);
			loc[r] = (double)files.n / (t1 - t0);
			tcv[r] = (double)files.n / (t2 - t1);
			cpu_loc += c1 - c0;
			cpu_tc += c2 - c1;
			cpu_d += d2 - d1;
		}
		report("small files open+read+close", "files/s", loc, tcv, runs, 0.5);
		double nf = (double)files.n * runs;
		printf("%-36s local %.1f us   tiercache client %.1f us", "  CPU per file", cpu_loc / nf * 1e6,
		       cpu_tc / nf * 1e6);
		if (dpid > 0)
			printf(" + daemon %.1f us", cpu_d / nf * 1e6);
		printf("   (%zu files x %d runs)\n", files.n, runs);
		bench_list_free(&files);
	} else {
		fprintf(stderr, "tcbench: unknown mode %s\n", argv[1]);
		return 2;
	}
	tiercache_disconnect(tc);
	free(loc);
	free(tcv);
	return 0;
}
