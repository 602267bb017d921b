/*
 * Trace storage and the CSV reader/writer; see trace.h for the format.
 * Single-threaded. Arrays grow by doubling, so pushing is amortised O(1)
 * and replay never allocates.
 */
#include "trace.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

void trace_init(struct trace *t)
{
	memset(t, 0, sizeof(*t));
	keymap_init(&t->names);
}

void trace_free(struct trace *t)
{
	free(t->obj);
	free(t->job);
	free(t->rank);
	free(t->epoch);
	free(t->size);
	free(t->key);
	keymap_free(&t->names);
	trace_init(t);
}

static int trace_grow(void **p, size_t elem, size_t n)
{
	void *np = realloc(*p, elem * n);
	if (!np)
		return -ENOMEM;
	*p = np;
	return 0;
}

int64_t trace_object_add(struct trace *t, uint64_t size)
{
	if (t->nobj == UINT32_MAX - 1)
		return -E2BIG;
	if (t->nobj == t->capobj) {
		uint32_t n = t->capobj ? (t->capobj > UINT32_MAX / 2 ? UINT32_MAX - 1 : 2 * t->capobj)
				       : 1024;
		if (trace_grow((void **)&t->size, sizeof(*t->size), n) < 0 ||
		    trace_grow((void **)&t->key, sizeof(*t->key), n) < 0)
			return -ENOMEM;
		t->capobj = n;
	}
	uint32_t id = t->nobj++;
	t->size[id] = size;
	/* Keys look like the daemon's: 64-bit hashes, not small integers. */
	t->key[id] = keymap_mix(0x7469657263616368ULL ^ id);
	return id;
}

int trace_push(struct trace *t, uint32_t obj, uint32_t job, uint32_t rank, uint32_t epoch)
{
	if (t->n >= TRACE_MAX_ACCESSES || job >= TRACE_MAX_JOBS || rank > UINT16_MAX)
		return -E2BIG;
	if (t->n == t->cap) {
		size_t n = t->cap ? 2 * t->cap : 4096;
		if (trace_grow((void **)&t->obj, sizeof(*t->obj), n) < 0 ||
		    trace_grow((void **)&t->job, sizeof(*t->job), n) < 0 ||
		    trace_grow((void **)&t->rank, sizeof(*t->rank), n) < 0 ||
		    trace_grow((void **)&t->epoch, sizeof(*t->epoch), n) < 0)
			return -ENOMEM;
		t->cap = n;
	}
	t->obj[t->n] = obj;
	t->job[t->n] = (uint16_t)job;
	t->rank[t->n] = (uint16_t)rank;
	t->epoch[t->n] = epoch;
	t->n++;
	if (job + 1 > t->njobs)
		t->njobs = job + 1;
	if (rank + 1 > t->nranks)
		t->nranks = rank + 1;
	if (epoch + 1 > t->nepochs)
		t->nepochs = epoch + 1;
	return 0;
}

/* A job's epoch ends when it reads again what it read in this epoch. */
static int trace_infer_epochs(struct trace *t)
{
	uint32_t *seen = calloc(t->nobj ? t->nobj : 1, sizeof(*seen));
	uint32_t *cur = calloc(t->njobs ? t->njobs : 1, sizeof(*cur));
	int rc = 0;
	if (!seen || !cur) {
		rc = -ENOMEM;
		goto out;
	}
	t->nepochs = 0;
	for (uint32_t j = 0; j < t->njobs; j++) {
		memset(seen, 0, t->nobj * sizeof(*seen));
		for (size_t i = 0; i < t->n; i++) {
			if (t->job[i] != j)
				continue;
			uint32_t o = t->obj[i];
			if (seen[o] == cur[j] + 1)
				cur[j]++;
			seen[o] = cur[j] + 1;
			t->epoch[i] = cur[j];
		}
		if (cur[j] + 1 > t->nepochs)
			t->nepochs = cur[j] + 1;
	}
out:
	free(seen);
	free(cur);
	return rc;
}

void trace_finish(struct trace *t)
{
	t->dataset_bytes = 0;
	for (uint32_t o = 0; o < t->nobj; o++)
		t->dataset_bytes += t->size[o];
	if (!t->has_epochs && t->n && trace_infer_epochs(t) < 0) {
		/* No memory for inference: one epoch is still a valid answer. */
		memset(t->epoch, 0, t->n * sizeof(*t->epoch));
		t->nepochs = 1;
	}
	if (!t->nepochs)
		t->nepochs = 1;
}

static uint64_t trace_name_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return keymap_mix(h);
}

/* Parse a decimal field [s, e) no larger than max. */
static bool trace_field_u64(const char *s, const char *e, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	if (s == e)
		return false;
	for (; s < e; s++) {
		if (!isdigit((unsigned char)*s))
			return false;
		unsigned d = (unsigned)(*s - '0');
		if (v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

int trace_read_csv_stream(struct trace *t, FILE *f, const char *name, char *err, size_t errlen)
{
	char *line = NULL;
	size_t linecap = 0;
	ssize_t len;
	uint64_t lineno = 0;
	int rc = 0;
	int ncols = -1;
	static const char *const what[] = { "object", "size", "rank", "job", "epoch" };
	static const uint64_t max[] = { 0, UINT64_MAX / 4, UINT16_MAX, TRACE_MAX_JOBS - 1,
					UINT32_MAX - 1 };

	while ((len = getline(&line, &linecap, f)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		const char *s = line;
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '#')
			continue;
		if (lineno == 1 && strncmp(s, "object", 6) == 0)
			continue;
		const char *fs[5], *fe[5];
		int nf = 0;
		const char *p = s;
		for (;;) {
			const char *c = strchr(p, ',');
			if (nf == 5) {
				snprintf(err, errlen, "%s:%llu: more than 5 fields", name,
					 (unsigned long long)lineno);
				rc = -EINVAL;
				goto out;
			}
			fs[nf] = p;
			fe[nf] = c ? c : p + strlen(p);
			nf++;
			if (!c)
				break;
			p = c + 1;
		}
		if (nf < 2) {
			snprintf(err, errlen, "%s:%llu: need object,size[,rank[,job[,epoch]]]", name,
				 (unsigned long long)lineno);
			rc = -EINVAL;
			goto out;
		}
		if (ncols < 0)
			ncols = nf;
		else if (nf != ncols) {
			snprintf(err, errlen, "%s:%llu: %d fields, earlier lines have %d", name,
				 (unsigned long long)lineno, nf, ncols);
			rc = -EINVAL;
			goto out;
		}
		uint64_t v[5] = { 0, 0, 0, 0, 0 };
		for (int i = 1; i < nf; i++) {
			if (!trace_field_u64(fs[i], fe[i], max[i], &v[i])) {
				int flen = (int)(fe[i] - fs[i] > 40 ? 40 : fe[i] - fs[i]);
				if (i == 1)
					snprintf(err, errlen, "%s:%llu: size: \"%.*s\" is not a byte count",
						 name, (unsigned long long)lineno, flen, fs[i]);
				else
					snprintf(err, errlen,
						 "%s:%llu: %s: \"%.*s\" is not an integer in [0, %llu]",
						 name, (unsigned long long)lineno, what[i], flen, fs[i],
						 (unsigned long long)max[i]);
				rc = -EINVAL;
				goto out;
			}
		}
		if (fe[0] == fs[0]) {
			snprintf(err, errlen, "%s:%llu: object: empty", name, (unsigned long long)lineno);
			rc = -EINVAL;
			goto out;
		}
		if (v[1] == 0) {
			snprintf(err, errlen, "%s:%llu: size: must be at least 1 byte", name,
				 (unsigned long long)lineno);
			rc = -EINVAL;
			goto out;
		}
		uint64_t h = trace_name_hash(fs[0], (size_t)(fe[0] - fs[0]));
		uint64_t *idp = keymap_get(&t->names, h);
		uint32_t id;
		if (idp) {
			id = (uint32_t)*idp;
		} else {
			int64_t r = trace_object_add(t, v[1]);
			if (r < 0 || keymap_put(&t->names, h, (uint64_t)r) < 0) {
				rc = r < 0 ? (int)r : -ENOMEM;
				snprintf(err, errlen, "%s:%llu: too many objects", name,
					 (unsigned long long)lineno);
				goto out;
			}
			id = (uint32_t)r;
			t->key[id] = h;
		}
		rc = trace_push(t, id, (uint32_t)v[3], (uint32_t)v[2], (uint32_t)v[4]);
		if (rc < 0) {
			snprintf(err, errlen, "%s:%llu: trace too long", name,
				 (unsigned long long)lineno);
			goto out;
		}
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", name);
		rc = -EIO;
		goto out;
	}
	t->has_epochs = ncols == 5;
	trace_finish(t);
out:
	free(line);
	return rc;
}

int trace_read_csv(struct trace *t, const char *path, char *err, size_t errlen)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (!f) {
		int rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	int rc = trace_read_csv_stream(t, f, path, err, errlen);
	if (f != stdin)
		fclose(f);
	return rc;
}

int trace_write_csv(const struct trace *t, FILE *f)
{
	fprintf(f, "object,size,rank,job,epoch\n");
	for (size_t i = 0; i < t->n; i++)
		fprintf(f, "o%u,%llu,%u,%u,%u\n", t->obj[i], (unsigned long long)t->size[t->obj[i]],
			t->rank[i], t->job[i], t->epoch[i]);
	return ferror(f) ? -EIO : 0;
}
