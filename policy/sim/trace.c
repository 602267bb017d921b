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
	free(t->time_us);
	free(t->result);
	free(t->size);
	free(t->key);
	free(t->ev_obj);
	free(t->ev_at);
	free(t->ev_kind);
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
	return trace_push_at(t, obj, job, rank, epoch, 0);
}

int trace_push_at(struct trace *t, uint32_t obj, uint32_t job, uint32_t rank, uint32_t epoch,
		  uint64_t time_us)
{
	return trace_push_full(t, obj, job, rank, epoch, time_us, TRACE_RES_MISS);
}

int trace_push_full(struct trace *t, uint32_t obj, uint32_t job, uint32_t rank, uint32_t epoch,
		    uint64_t time_us, uint8_t result)
{
	if (t->n >= TRACE_MAX_ACCESSES || job >= TRACE_MAX_JOBS || rank > UINT16_MAX)
		return -E2BIG;
	if (t->n == t->cap) {
		size_t n = t->cap ? 2 * t->cap : 4096;
		if (trace_grow((void **)&t->obj, sizeof(*t->obj), n) < 0 ||
		    trace_grow((void **)&t->job, sizeof(*t->job), n) < 0 ||
		    trace_grow((void **)&t->rank, sizeof(*t->rank), n) < 0 ||
		    trace_grow((void **)&t->epoch, sizeof(*t->epoch), n) < 0 ||
		    (t->has_time && trace_grow((void **)&t->time_us, sizeof(*t->time_us), n) < 0) ||
		    (t->has_result && trace_grow((void **)&t->result, sizeof(*t->result), n) < 0))
			return -ENOMEM;
		t->cap = n;
	}
	if (t->has_time)
		t->time_us[t->n] = time_us;
	if (t->has_result)
		t->result[t->n] = result;
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

int trace_event_push(struct trace *t, uint32_t obj, uint8_t kind)
{
	if (t->nev >= TRACE_MAX_ACCESSES)
		return -E2BIG;
	if (t->nev == t->capev) {
		size_t n = t->capev ? 2 * t->capev : 1024;
		if (trace_grow((void **)&t->ev_obj, sizeof(*t->ev_obj), n) < 0 ||
		    trace_grow((void **)&t->ev_at, sizeof(*t->ev_at), n) < 0 ||
		    trace_grow((void **)&t->ev_kind, sizeof(*t->ev_kind), n) < 0)
			return -ENOMEM;
		t->capev = n;
	}
	t->ev_obj[t->nev] = obj;
	t->ev_at[t->nev] = (uint32_t)t->n;
	t->ev_kind[t->nev] = kind;
	t->nev++;
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

/* The columns the simulator uses, in the positional format's order. */
enum { COL_OBJECT, COL_SIZE, COL_RANK, COL_JOB, COL_EPOCH, COL_TIME, COL_USED };
/* columns a line without a header may have: the first five, in order */
#define COL_POSITIONAL COL_TIME
static const char *const col_name[COL_USED] = { "object", "size", "rank", "job", "epoch",
						"time_us" };

/* The daemon's outcome names (`tierctl trace`), TRACE_RES_* order, then
 * its prefetch load events, TRACE_EV_* order. */
#define RES_EVENT 4 /* res_name[RES_EVENT + k]: event k */
static const char *const res_name[] = { "miss", "hot",    "warm",        "unkept",
					"load", "landed", "landed_late", "load_lost" };

/* A result field: its TRACE_RES_*, RES_EVENT + its TRACE_EV_*, or -1. */
static int trace_field_result(const char *s, const char *e)
{
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	for (int k = 0; k < (int)(sizeof(res_name) / sizeof(res_name[0])); k++)
		if ((size_t)(e - s) == strlen(res_name[k]) && !memcmp(s, res_name[k], (size_t)(e - s)))
			return k;
	return -1;
}

/* How a file's fields map to the columns: col[k] is the field of column k
 * (-1: absent); nfields the fields every line has (0: not known yet). */
struct csv_map {
	int col[COL_USED];
	int nfields;
	int result; /* field of the daemon's result column, -1: none */
	bool named; /* from a header line: extra columns are allowed */
};

/* A header line: map the columns by name. 0 or -EINVAL with err set. */
static int csv_header(struct csv_map *m, const char *s, const char *name, char *err, size_t errlen)
{
	int nf = 0;
	for (int k = 0; k < COL_USED; k++)
		m->col[k] = -1;
	m->result = -1;
	m->named = true;
	for (const char *p = s;; nf++) {
		const char *c = strchr(p, ',');
		const char *e = c ? c : p + strlen(p);
		if (nf == TRACE_CSV_FIELDS_MAX) {
			snprintf(err, errlen, "%s:1: header: more than %d columns", name,
				 TRACE_CSV_FIELDS_MAX);
			return -EINVAL;
		}
		const char *b = p;
		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if ((size_t)(e - b) == 6 && !memcmp(b, "result", 6))
			m->result = nf;
		for (int k = 0; k < COL_USED; k++) {
			if ((size_t)(e - b) != strlen(col_name[k]) || memcmp(b, col_name[k], (size_t)(e - b)))
				continue;
			if (m->col[k] >= 0) {
				snprintf(err, errlen, "%s:1: header: column \"%s\" twice", name,
					 col_name[k]);
				return -EINVAL;
			}
			m->col[k] = nf;
		}
		if (!c)
			break;
		p = c + 1;
	}
	m->nfields = nf + 1;
	if (m->col[COL_OBJECT] < 0 || m->col[COL_SIZE] < 0) {
		snprintf(err, errlen, "%s:1: header: need columns \"object\" and \"size\"", name);
		return -EINVAL;
	}
	return 0;
}

/* Is [s, e) empty but for blanks? */
static bool field_blank(const char *s, const char *e)
{
	for (; s < e; s++)
		if (*s != ' ' && *s != '\t' && *s != '\r')
			return false;
	return true;
}

int trace_read_csv_stream(struct trace *t, FILE *f, const char *name, char *err, size_t errlen)
{
	char *line = NULL;
	size_t linecap = 0;
	ssize_t len;
	uint64_t lineno = 0;
	int rc = 0;
	bool epochs_all = true; /* every line gave its epoch */
	struct csv_map m = { .col = { 0, 1, -1, -1, -1, -1 }, .nfields = 0, .result = -1,
			     .named = false };
	static const uint64_t max[COL_USED] = { 0, UINT64_MAX / 4, UINT16_MAX, TRACE_MAX_JOBS - 1,
						UINT32_MAX - 1, UINT64_MAX / 4 };

	while ((len = getline(&line, &linecap, f)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		const char *s = line;
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '#')
			continue;
		if (lineno == 1 && strncmp(s, "object", 6) == 0) {
			rc = csv_header(&m, s, name, err, errlen);
			if (rc < 0)
				goto out;
			/* times are kept only for a trace read from empty */
			t->has_time = m.col[COL_TIME] >= 0 && !t->n;
			t->has_result = m.result >= 0 && !t->n;
			continue;
		}
		const char *fs[TRACE_CSV_FIELDS_MAX], *fe[TRACE_CSV_FIELDS_MAX];
		int limit = m.named ? m.nfields : COL_POSITIONAL;
		int nf = 0;
		const char *p = s;
		for (;;) {
			const char *c = strchr(p, ',');
			if (nf == limit) {
				if (m.named)
					snprintf(err, errlen, "%s:%llu: more than the header's %d fields",
						 name, (unsigned long long)lineno, limit);
				else
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
		if (!m.named && nf < 2) {
			snprintf(err, errlen, "%s:%llu: need object,size[,rank[,job[,epoch]]]", name,
				 (unsigned long long)lineno);
			rc = -EINVAL;
			goto out;
		}
		if (!m.nfields) {
			m.nfields = nf;
			for (int k = COL_RANK; k < COL_POSITIONAL; k++)
				m.col[k] = k < nf ? k : -1;
		} else if (nf != m.nfields) {
			snprintf(err, errlen, "%s:%llu: %d fields, %s %d", name,
				 (unsigned long long)lineno, nf, m.named ? "the header has" : "earlier lines have",
				 m.nfields);
			rc = -EINVAL;
			goto out;
		}
		uint64_t v[COL_USED] = { 0, 0, 0, 0, 0, 0 };
		for (int k = COL_SIZE; k < COL_USED; k++) {
			int i = m.col[k];
			if (i < 0) {
				if (k == COL_EPOCH)
					epochs_all = false;
				continue;
			}
			if (k != COL_SIZE && k != COL_TIME && field_blank(fs[i], fe[i])) {
				/* empty: unknown (rank and job 0; epoch inferred) */
				if (k == COL_EPOCH)
					epochs_all = false;
				continue;
			}
			if (!trace_field_u64(fs[i], fe[i], max[k], &v[k])) {
				int flen = (int)(fe[i] - fs[i] > 40 ? 40 : fe[i] - fs[i]);
				if (k == COL_SIZE)
					snprintf(err, errlen, "%s:%llu: size: \"%.*s\" is not a byte count",
						 name, (unsigned long long)lineno, flen, fs[i]);
				else
					snprintf(err, errlen,
						 "%s:%llu: %s: \"%.*s\" is not an integer in [0, %llu]",
						 name, (unsigned long long)lineno, col_name[k], flen, fs[i],
						 (unsigned long long)max[k]);
				rc = -EINVAL;
				goto out;
			}
		}
		const char *os = fs[m.col[COL_OBJECT]], *oe = fe[m.col[COL_OBJECT]];
		if (oe == os) {
			snprintf(err, errlen, "%s:%llu: object: empty", name, (unsigned long long)lineno);
			rc = -EINVAL;
			goto out;
		}
		if (v[COL_SIZE] == 0) {
			snprintf(err, errlen, "%s:%llu: size: must be at least 1 byte", name,
				 (unsigned long long)lineno);
			rc = -EINVAL;
			goto out;
		}
		uint64_t h = trace_name_hash(os, (size_t)(oe - os));
		uint64_t *idp = keymap_get(&t->names, h);
		uint32_t id;
		if (idp) {
			id = (uint32_t)*idp;
		} else {
			int64_t r = trace_object_add(t, v[COL_SIZE]);
			if (r < 0 || keymap_put(&t->names, h, (uint64_t)r) < 0) {
				rc = r < 0 ? (int)r : -ENOMEM;
				snprintf(err, errlen, "%s:%llu: too many objects", name,
					 (unsigned long long)lineno);
				goto out;
			}
			id = (uint32_t)r;
			t->key[id] = h;
		}
		int res = TRACE_RES_MISS;
		if (t->has_result &&
		    (res = trace_field_result(fs[m.result], fe[m.result])) < 0) {
			int flen = (int)(fe[m.result] - fs[m.result] > 40 ? 40 : fe[m.result] - fs[m.result]);
			snprintf(err, errlen,
				 "%s:%llu: result: \"%.*s\" is not hot, warm, miss, unkept (an access) "
				 "or load, landed, landed_late, load_lost (a prefetch load)",
				 name, (unsigned long long)lineno, flen, fs[m.result]);
			rc = -EINVAL;
			goto out;
		}
		if (res >= RES_EVENT) {
			if ((rc = trace_event_push(t, id, (uint8_t)(res - RES_EVENT))) < 0) {
				snprintf(err, errlen, "%s:%llu: trace too long", name,
					 (unsigned long long)lineno);
				goto out;
			}
			continue;
		}
		rc = trace_push_full(t, id, (uint32_t)v[COL_JOB], (uint32_t)v[COL_RANK],
				     (uint32_t)v[COL_EPOCH], v[COL_TIME], (uint8_t)res);
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
	t->has_epochs = m.col[COL_EPOCH] >= 0 && epochs_all;
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
