/*
 * Benchmark helpers: see lib_bench.h.
 */
#include "lib_bench.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

static int push(struct bench_list *l, const char *path, uint64_t size)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct bench_file *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].path = strdup(path);
	if (!l->v[l->n].path)
		return -1;
	l->v[l->n++].size = size;
	l->bytes += size;
	return 0;
}

int bench_list_dataset(struct tiercache *tc, const char *root, struct bench_list *out)
{
	struct tiercache_dir *d = tiercache_opendir(tc, root);
	if (!d)
		return -1;
	const struct tiercache_dirent *de;
	char path[TC_PATH_MAX + 1];
	int rc = 0;
	while (rc == 0 && (de = tiercache_readdir(d))) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", root, de->name) >= sizeof(path))
			continue;
		if (de->type == TIERCACHE_DIR)
			rc = bench_list_dataset(tc, path, out);
		else
			rc = push(out, path, de->size);
	}
	int saved = errno;
	tiercache_closedir(d);
	errno = saved;
	return rc;
}

void bench_list_free(struct bench_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

int bench_counters(struct tiercache *tc, struct bench_counters *out)
{
	void *rep = NULL;
	size_t n = 0;
	struct proto_recset rs;
	memset(out, 0, sizeof(*out));
	if (tiercache_call(tc, TC_OP_STATUS, NULL, 0, &rep, &n) < 0)
		return -1;
	int rc = proto_recset_parse(rep, n, &rs);
	free(rep);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	const struct proto_section *s = proto_recset_find(&rs, "counters");
	if (s && s->nrecords == 1) {
		const struct proto_record *r = &s->records[0];
		const struct proto_field *f;
		if ((f = proto_record_find(r, "hits_hot")))
			out->hits_hot = f->v.u;
		if ((f = proto_record_find(r, "hits_warm")))
			out->hits_warm = f->v.u;
		if ((f = proto_record_find(r, "misses")))
			out->misses = f->v.u;
		if ((f = proto_record_find(r, "bytes_from_cold")))
			out->bytes_from_cold = f->v.u;
	}
	proto_recset_free(&rs);
	return 0;
}

double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), dcmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_self_cpu(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

/* utime + stime from /proc/PID/stat: clock ticks (10 ms here), with the
 * threads that have exited. */
static double pid_cpu_ticks(long pid)
{
	char path[64], line[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[n] = '\0';
	/* fields after the command (which may hold spaces): state is field 3,
	 * utime 14, stime 15 */
	const char *p = strrchr(line, ')');
	unsigned long long ut, st;
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

double bench_pid_cpu(long pid)
{
	if (pid <= 0)
		return -1;
	/* the scheduler's own count, ns, summed over the live threads: a
	 * daemon's threads live as long as it does, and ticks are too coarse
	 * for a few thousand files */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return pid_cpu_ticks(pid);
	double ns = 0;
	int seen = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char sp[96];
		snprintf(sp, sizeof(sp), "/proc/%ld/task/%.20s/schedstat", pid, e->d_name);
		FILE *f = fopen(sp, "r");
		unsigned long long run;
		if (f && fscanf(f, "%llu", &run) == 1) {
			ns += (double)run;
			seen = 1;
		}
		if (f)
			fclose(f);
	}
	closedir(d);
	return seen ? ns / 1e9 : pid_cpu_ticks(pid);
}
