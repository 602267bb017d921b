/*
 * Benchmark helpers: see lib_bench.h.
 */
#include "lib_bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
