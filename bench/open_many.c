/*
 * open_many: warm small files, open+read+close, four ways in the same run:
 * local page-cache reads (the baseline), tiercache_open one file at a time,
 * tiercache_open_many in batches of 64, and tiercache_open one at a time on
 * a connection whose job registered the pass's order as its plan before it
 * (open-ahead: the library holds the next files' descriptors, so a planned
 * open sends nothing), and tiercache_open_many in batches of 64 on that
 * connection with the pass registered as its plan (a planned DataLoader
 * batch: the files held ahead need no OPEN_MANY). Medians of RUNS runs (the modes interleaved within
 * each run), ratios to local, and CPU per file on both sides: this process's
 * rusage and the daemon's threads' run time (bench_pid_cpu).
 *
 *   open_many DATASET/DIR LOCALDIR DAEMON_PID [RUNS]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib_bench.h"

#define BATCH 64
#define MODES 5
#define PLAN_JOB 0x6f70656e61686561ull /* "openahea" */

static char buf[1 << 20];
static const char *mode_name[MODES] = {"local", "tiercache_open", "tiercache_open_many(64)",
				       "tiercache_open + plan", "open_many(64) + plan"};

static int read_local(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return 0;
}

static int read_handle(struct tiercache *tc, int h)
{
	uint64_t off = 0;
	ssize_t r;
	while ((r = tiercache_pread(tc, h, buf, sizeof(buf), off)) > 0)
		off += (uint64_t)r;
	tiercache_close(tc, h);
	return r < 0 ? -1 : 0;
}

/* Register the pass's order (every file, list order) as the plan of the
 * job tc is tagged with; paths relative to the dataset (skip: its length
 * and the slash). */
static int plan_pass(struct tiercache *tc, const struct bench_list *l, size_t skip, uint32_t epoch)
{
	const char **rel = malloc(l->n * sizeof(*rel));
	if (!rel)
		return -1;
	char ds[128];
	snprintf(ds, sizeof(ds), "%.*s", (int)(skip - 1), l->v[0].path);
	for (size_t i = 0; i < l->n; i++)
		rel[i] = l->v[i].path + skip;
	struct tiercache_plan p = {.job = PLAN_JOB, .world_size = 1, .epoch = epoch};
	int rc = tiercache_plan_paths(tc, ds, &p, rel, l->n, 0);
	free(rel);
	return rc;
}

/* One pass of mode m over every file (modes 3 and 4 on tp, the job's
 * connection). */
static int pass(int m, struct tiercache *tc, struct tiercache *tp, const struct bench_list *l,
		char **local)
{
	if (m == 0) {
		for (size_t i = 0; i < l->n; i++)
			if (read_local(local[i]) < 0)
				return -1;
	} else if (m == 1 || m == 3) {
		struct tiercache *c = m == 1 ? tc : tp;
		for (size_t i = 0; i < l->n; i++) {
			int h = tiercache_open(c, l->v[i].path, 0);
			if (h < 0 || read_handle(c, h) < 0)
				return -1;
		}
	} else {
		struct tiercache *c = m == 2 ? tc : tp;
		const char *paths[BATCH];
		int hs[BATCH], errs[BATCH];
		for (size_t i = 0; i < l->n; i += BATCH) {
			size_t n = l->n - i < BATCH ? l->n - i : BATCH;
			for (size_t k = 0; k < n; k++)
				paths[k] = l->v[i + k].path;
			if (tiercache_open_many(c, paths, n, hs, errs, 0) != (int)n)
				return -1;
			for (size_t k = 0; k < n; k++)
				if (read_handle(c, hs[k]) < 0)
					return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: open_many DATASET/DIR LOCALDIR DAEMON_PID [RUNS]\n");
		return 2;
	}
	int dpid = atoi(argv[3]);
	int runs = argc > 4 ? atoi(argv[4]) : 7;
	if (runs < 1 || runs > 99)
		runs = 7;
	struct tiercache *tc = tiercache_connect(NULL), *tp = tiercache_connect(NULL);
	struct bench_list l = {0};
	if (!tp || tiercache_set_job(tp, PLAN_JOB, 0) < 0) {
		fprintf(stderr, "open_many: a second connection tagged with a job: %s\n",
			tiercache_strerror(errno));
		return 1;
	}
	if (!tc || bench_list_dataset(tc, argv[1], &l) < 0 || l.n == 0) {
		fprintf(stderr, "open_many: cannot list %s: %s\n", argv[1], tiercache_strerror(errno));
		return 1;
	}
	size_t pre = strlen(argv[1]), skip = strcspn(argv[1], "/") + 1;
	char **local = calloc(l.n, sizeof(*local));
	for (size_t i = 0; i < l.n; i++)
		if (asprintf(&local[i], "%s%s", argv[2], l.v[i].path + pre) < 0)
			return 1;
	/* warm: every file resident and in the page cache */
	if (pass(1, tc, tp, &l, local) < 0 || pass(0, tc, tp, &l, local) < 0) {
		fprintf(stderr, "open_many: warm-up failed: %s\n", tiercache_strerror(errno));
		return 1;
	}
	double rate[MODES][99], cself[MODES][99], cd[MODES][99];
	for (int r = 0; r < runs; r++) {
		for (int m = 0; m < MODES; m++) {
			/* the plan is registered before the clock starts, as a
			 * sampler publishes an epoch before its workers read it */
			if (m >= 3 && plan_pass(tp, &l, skip, (uint32_t)(2 * r + m - 3)) < 0) {
				fprintf(stderr, "open_many: plan: %s (%s)\n", tiercache_strerror(errno),
					tiercache_last_error());
				return 1;
			}
			double c0 = bench_self_cpu(), d0 = bench_pid_cpu(dpid), t0 = bench_now();
			if (pass(m, tc, tp, &l, local) < 0) {
				fprintf(stderr, "open_many: %s failed: %s\n", mode_name[m], tiercache_strerror(errno));
				return 1;
			}
			double dt = bench_now() - t0;
			rate[m][r] = (double)l.n / dt;
			cself[m][r] = (bench_self_cpu() - c0) / (double)l.n * 1e6;
			cd[m][r] = (bench_pid_cpu(dpid) - d0) / (double)l.n * 1e6;
		}
	}
	double base = bench_median(rate[0], (size_t)runs);
	printf("%zu files, %.0f KB on average, warm; medians of %d runs\n", l.n,
	       (double)l.bytes / (double)l.n / 1000, runs);
	for (int m = 0; m < MODES; m++) {
		double mr = bench_median(rate[m], (size_t)runs);
		printf("%-24s %9.0f files/s  ratio %.2f  cpu/file client %6.1f us  daemon %6.1f us\n",
		       mode_name[m], mr, mr / base, bench_median(cself[m], (size_t)runs),
		       bench_median(cd[m], (size_t)runs));
	}
	printf("goal: tiercache_open_many(64) >= 0.90 of local: %s\n",
	       bench_median(rate[2], (size_t)runs) / base >= 0.9 ? "met" : "not met");
	printf("goal: tiercache_open + plan >= 0.90 of local: %s\n",
	       bench_median(rate[3], (size_t)runs) / base >= 0.9 ? "met" : "not met");
	printf("goal: open_many(64) + plan >= 0.90 of local: %s\n",
	       bench_median(rate[4], (size_t)runs) / base >= 0.9 ? "met" : "not met");
	bench_list_free(&l);
	tiercache_disconnect(tp);
	tiercache_disconnect(tc);
	return 0;
}
