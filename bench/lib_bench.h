/*
 * Shared by the benchmark programs: walking a dataset through libtiercache,
 * reading the daemon's counters, timing, medians.
 */
#ifndef TIERCACHE_BENCH_LIB_H
#define TIERCACHE_BENCH_LIB_H

#include <stddef.h>
#include <stdint.h>

#include "tiercache.h"

struct bench_file {
	char *path; /* "DATASET/..." */
	uint64_t size;
};

struct bench_list {
	struct bench_file *v;
	size_t n, cap;
	uint64_t bytes;
};

/* Every file below "DATASET[/DIR]", recursively. 0 or -1 + errno. */
int bench_list_dataset(struct tiercache *tc, const char *root, struct bench_list *out);
void bench_list_free(struct bench_list *l);

struct bench_counters {
	uint64_t hits_hot, hits_warm, misses, bytes_from_cold;
};

int bench_counters(struct tiercache *tc, struct bench_counters *out);

double bench_now(void);
/* CPU seconds (user + system) this process has used. */
double bench_self_cpu(void);
/* CPU seconds of process pid: the scheduler's run time of its threads
 * (/proc/PID/task/TID/schedstat, ns), else utime + stime from /proc/PID/stat;
 * -1 when pid is 0 or cannot be read. */
double bench_pid_cpu(long pid);
double bench_median(double *v, size_t n);

#endif
