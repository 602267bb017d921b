/*
 * epoch_reader: read a whole dataset through libtiercache for several
 * epochs, each in a new random order (as a shuffling DataLoader does), and
 * print per epoch: wall time, MB/s, files/s, hits by tier, misses and bytes
 * read from the cold store (from the daemon's counters).
 *
 *   epoch_reader [--epochs N] [--threads T] [--seed S] [--json]
 *                [--plan JOB] [--local DIR] [--compute-ms-per-mb F] DATASET[/DIR]
 *
 * Each reader thread has its own connection, like DataLoader workers.
 *   --seed 0       no shuffle: every epoch in the listing's order (a walk)
 *   --plan JOB     before each epoch, register its order as the plan of job
 *                  JOB (rank 0 of 1) through tiercache_plan_paths, so the
 *                  daemon prefetches ahead of the readers
 *   --plan-next-seed S  also append the order of the epoch that the next
 *                  run (seed S, one epoch) reads, as a sampler publishing
 *                  epoch after epoch does, so prefetch crosses the boundary
 *   --plan-continue  this epoch's order was appended by the previous run:
 *                  register only the next one
 *   --local DIR    read the same files, in the same orders, from a local
 *                  copy of the dataset in DIR instead (the baseline)
 *   --compute-ms-per-mb F   after each file, each reader waits F ms per MB
 *                  it read: the training step that consumes the sample,
 *                  which sets the job's consumption rate
 *   --cpu          at exit, print "cpu_ns N": this process's CPU time (all
 *                  threads, user + system, ns) on stdout (stderr with --json)
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib_bench.h"

#define BLOCK (1u << 20)

struct run {
	struct bench_list *files;
	size_t *order;
	atomic_size_t next;
	atomic_uint_fast64_t bytes;
	atomic_int errors;
	const char *local;   /* read DIR/<path in dataset> instead */
	size_t skip;         /* bytes of "DATASET/" in each path */
	double compute_ms_per_mb;
};

static void compute(const struct run *r, uint64_t bytes)
{
	if (r->compute_ms_per_mb <= 0)
		return;
	double ns = r->compute_ms_per_mb * 1e6 * (double)bytes / 1e6;
	struct timespec ts = {(time_t)(ns / 1e9), (long)((uint64_t)ns % 1000000000ull)};
	nanosleep(&ts, NULL);
}

/* The baseline: the same file from the local copy. */
static uint64_t read_local(struct run *r, const struct bench_file *f, char *buf)
{
	char path[8192];
	snprintf(path, sizeof(path), "%s/%s", r->local, f->path + r->skip);
	int fd = open(path, O_RDONLY);
	uint64_t off = 0;
	if (fd < 0) {
		fprintf(stderr, "epoch_reader: open %s: %s\n", path, strerror(errno));
		atomic_fetch_add(&r->errors, 1);
		return 0;
	}
	for (;;) {
		ssize_t n = pread(fd, buf, BLOCK, (off_t)off);
		if (n <= 0) {
			if (n < 0)
				atomic_fetch_add(&r->errors, 1);
			break;
		}
		off += (uint64_t)n;
	}
	close(fd);
	return off;
}

static void *reader(void *arg)
{
	struct run *r = arg;
	struct tiercache *tc = tiercache_connect(NULL);
	char *buf = malloc(BLOCK);
	if (!tc || !buf) {
		atomic_fetch_add(&r->errors, 1);
		free(buf);
		if (tc)
			tiercache_disconnect(tc);
		return NULL;
	}
	for (;;) {
		size_t i = atomic_fetch_add(&r->next, 1);
		if (i >= r->files->n)
			break;
		const struct bench_file *f = &r->files->v[r->order[i]];
		if (r->local) {
			uint64_t got = read_local(r, f, buf);
			atomic_fetch_add(&r->bytes, got);
			compute(r, got);
			continue;
		}
		int h = tiercache_open(tc, f->path, 0);
		if (h < 0) {
			fprintf(stderr, "epoch_reader: open %s: %s (%s)\n", f->path, tiercache_strerror(errno),
				tiercache_last_error());
			atomic_fetch_add(&r->errors, 1);
			continue;
		}
		uint64_t off = 0;
		for (;;) {
			ssize_t n = tiercache_pread(tc, h, buf, BLOCK, off);
			if (n < 0) {
				fprintf(stderr, "epoch_reader: read %s: %s (%s)\n", f->path,
					tiercache_strerror(errno), tiercache_last_error());
				atomic_fetch_add(&r->errors, 1);
				break;
			}
			if (n == 0)
				break;
			off += (uint64_t)n;
		}
		atomic_fetch_add(&r->bytes, off);
		tiercache_close(tc, h);
		compute(r, off);
	}
	free(buf);
	tiercache_disconnect(tc);
	return NULL;
}

static unsigned long long rng_state;

static unsigned long long rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Epoch e's order of n files for seed (seed 0: the listing's order). */
static void shuffle(size_t *order, size_t n, unsigned long long seed, int e)
{
	rng_state = ((seed * 1000003ull + (unsigned)e) << 1) | 1; /* distinct per epoch */
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	if (!seed)
		return;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)(rng() % (i + 1));
		size_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
}

/* Register order as job's plan (append: after what it has). */
static int plan_register(struct tiercache *tc, const char *root, size_t skip,
			 const struct bench_list *files, const size_t *order, unsigned long long job,
			 int epoch, unsigned flags)
{
	const char **paths = malloc(files->n * sizeof(*paths));
	char ds[128];
	snprintf(ds, sizeof(ds), "%.*s", (int)(skip - 1), root);
	struct tiercache_plan p = {.job = job, .world_size = 1, .epoch = (uint32_t)epoch};
	for (size_t i = 0; paths && i < files->n; i++)
		paths[i] = files->v[order[i]].path + skip;
	int rc = paths ? tiercache_plan_paths(tc, ds, &p, paths, files->n, flags) : -1;
	if (rc < 0)
		fprintf(stderr, "epoch_reader: plan: %s (%s)\n", tiercache_strerror(errno),
			tiercache_last_error());
	free(paths);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"epochs", required_argument, NULL, 'e'}, {"threads", required_argument, NULL, 't'},
		{"seed", required_argument, NULL, 's'},   {"json", no_argument, NULL, 'j'},
		{"plan", required_argument, NULL, 'p'},   {"local", required_argument, NULL, 'l'},
		{"compute-ms-per-mb", required_argument, NULL, 'c'},
		{"plan-next-seed", required_argument, NULL, 'n'}, {"plan-continue", no_argument, NULL, 'C'},
		{"cpu", no_argument, NULL, 'u'},
		{NULL, 0, NULL, 0},
	};
	int epochs = 3, threads = 4, json = 0, o;
	unsigned long long seed = 1, job = 0, next_seed = 0;
	int plan_continue = 0, cpu = 0;
	const char *local = NULL;
	double compute_ms = 0;
	while ((o = getopt_long(argc, argv, "e:t:s:jp:l:c:n:Cu", opts, NULL)) != -1) {
		switch (o) {
		case 'u': cpu = 1; break;
		case 'n': next_seed = strtoull(optarg, NULL, 10); break;
		case 'C': plan_continue = 1; break;
		case 'p': job = strtoull(optarg, NULL, 10); break;
		case 'l': local = optarg; break;
		case 'c': compute_ms = atof(optarg); break;
		case 'e': epochs = atoi(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 10); break;
		case 'j': json = 1; break;
		default:
			fprintf(stderr, "usage: epoch_reader [--epochs N] [--threads T] [--seed S] [--json] DATASET\n");
			return 2;
		}
	}
	if (optind != argc - 1 || epochs < 1 || threads < 1 || threads > 256) {
		fprintf(stderr, "usage: epoch_reader [--epochs N] [--threads T] [--seed S] [--json] DATASET\n");
		return 2;
	}
	struct tiercache *tc = tiercache_connect(NULL);
	if (!tc) {
		fprintf(stderr, "epoch_reader: %s (%s)\n", tiercache_strerror(errno), tiercache_last_error());
		return 1;
	}
	struct bench_list files = {0};
	if (bench_list_dataset(tc, argv[optind], &files) < 0 || files.n == 0) {
		fprintf(stderr, "epoch_reader: cannot list %s: %s (%s)\n", argv[optind],
			tiercache_strerror(errno), tiercache_last_error());
		return 1;
	}
	size_t *order = malloc(files.n * sizeof(*order));
	pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
	if (!order || !tids)
		return 1;
	int errors = 0;
	if (!json)
		printf("dataset %s: %zu files, %.1f MB, %d reader threads\n"
		       "%5s %8s %8s %9s %9s %9s %8s %9s\n",
		       argv[optind], files.n, (double)files.bytes / 1e6, threads, "epoch", "wall_s", "MB/s",
		       "files/s", "hits_hot", "hits_warm", "misses", "cold_MB");
	else
		printf("[");
	for (int e = 1; e <= epochs; e++) {
		shuffle(order, files.n, seed, e);
		struct run r = {.files = &files,
				.order = order,
				.local = local,
				.skip = strcspn(argv[optind], "/") + 1,
				.compute_ms_per_mb = compute_ms};
		double tp0 = bench_now(), tplan = 0;
		if (job && !local) {
			/* this epoch's order (and the next), as the sampler registers them */
			size_t skip = r.skip;
			if (e == 1 && !plan_continue &&
			    plan_register(tc, argv[optind], skip, &files, order, job, e, 0) < 0)
				return 1; /* later epochs were appended by the epoch before */
			if (e < epochs || next_seed) {
				size_t *next = malloc(files.n * sizeof(*next));
				if (!next)
					return 1;
				if (e < epochs)
					shuffle(next, files.n, seed, e + 1);
				else
					shuffle(next, files.n, next_seed, 1);
				int rc = plan_register(tc, argv[optind], skip, &files, next, job, e + 1,
						       TIERCACHE_PLAN_APPEND);
				free(next);
				if (rc < 0)
					return 1;
			}
			tplan = bench_now() - tp0;
		}
		struct bench_counters c0, c1;
		bench_counters(tc, &c0);
		double t0 = bench_now();
		for (int t = 0; t < threads; t++)
			pthread_create(&tids[t], NULL, reader, &r);
		for (int t = 0; t < threads; t++)
			pthread_join(tids[t], NULL);
		double dt = bench_now() - t0;
		bench_counters(tc, &c1);
		errors += atomic_load(&r.errors);
		double mb = (double)atomic_load(&r.bytes) / 1e6;
		if (json)
			printf("%s{\"epoch\": %d, \"wall_s\": %.3f, \"mb_per_s\": %.1f, \"files_per_s\": %.1f, "
			       "\"hits_hot\": %llu, \"hits_warm\": %llu, \"misses\": %llu, \"cold_bytes\": %llu, "
			       "\"plan_s\": %.3f, \"errors\": %d}",
			       e > 1 ? ", " : "", e, dt, mb / dt, (double)files.n / dt,
			       (unsigned long long)(c1.hits_hot - c0.hits_hot),
			       (unsigned long long)(c1.hits_warm - c0.hits_warm),
			       (unsigned long long)(c1.misses - c0.misses),
			       (unsigned long long)(c1.bytes_from_cold - c0.bytes_from_cold), tplan,
			       atomic_load(&r.errors));
		else
			printf("%5d %8.2f %8.1f %9.0f %9llu %9llu %8llu %9.1f\n", e, dt, mb / dt,
			       (double)files.n / dt, (unsigned long long)(c1.hits_hot - c0.hits_hot),
			       (unsigned long long)(c1.hits_warm - c0.hits_warm),
			       (unsigned long long)(c1.misses - c0.misses),
			       (double)(c1.bytes_from_cold - c0.bytes_from_cold) / 1e6);
		fflush(stdout);
	}
	if (json)
		printf("]\n");
	if (errors)
		fprintf(stderr, "epoch_reader: %d read errors\n", errors);
	struct timespec cts;
	if (cpu && clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cts) == 0)
		fprintf(json ? stderr : stdout, "cpu_ns %llu\n",
			(unsigned long long)cts.tv_sec * 1000000000ull + (unsigned long long)cts.tv_nsec);
	bench_list_free(&files);
	free(order);
	free(tids);
	tiercache_disconnect(tc);
	return errors ? 1 : 0;
}
