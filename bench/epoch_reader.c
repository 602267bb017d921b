/*
 * epoch_reader: read a whole dataset through libtiercache for several
 * epochs, each in a new random order (as a shuffling DataLoader does), and
 * print per epoch: wall time, MB/s, files/s, hits by tier, misses and bytes
 * read from the cold store (from the daemon's counters).
 *
 *   epoch_reader [--epochs N] [--threads T] [--seed S] [--json] DATASET[/DIR]
 *
 * Each reader thread has its own connection, like DataLoader workers.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib_bench.h"

#define BLOCK (1u << 20)

struct run {
	struct bench_list *files;
	size_t *order;
	atomic_size_t next;
	atomic_uint_fast64_t bytes;
	atomic_int errors;
};

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

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"epochs", required_argument, NULL, 'e'}, {"threads", required_argument, NULL, 't'},
		{"seed", required_argument, NULL, 's'},   {"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0},
	};
	int epochs = 3, threads = 4, json = 0, o;
	unsigned long long seed = 1;
	while ((o = getopt_long(argc, argv, "e:t:s:j", opts, NULL)) != -1) {
		switch (o) {
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
		rng_state = ((seed * 1000003ull + (unsigned)e) << 1) | 1; /* distinct per epoch */
		for (size_t i = 0; i < files.n; i++)
			order[i] = i;
		for (size_t i = files.n - 1; i > 0; i--) {
			size_t j = (size_t)(rng() % (i + 1));
			size_t t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		struct run r = {.files = &files, .order = order};
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
			       "\"errors\": %d}",
			       e > 1 ? ", " : "", e, dt, mb / dt, (double)files.n / dt,
			       (unsigned long long)(c1.hits_hot - c0.hits_hot),
			       (unsigned long long)(c1.hits_warm - c0.hits_warm),
			       (unsigned long long)(c1.misses - c0.misses),
			       (unsigned long long)(c1.bytes_from_cold - c0.bytes_from_cold), atomic_load(&r.errors));
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
	bench_list_free(&files);
	free(order);
	free(tids);
	tiercache_disconnect(tc);
	return errors ? 1 : 0;
}
