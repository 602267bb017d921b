/*
 * Trace generators; see gen.h. Single-threaded, deterministic per seed.
 */
#include "gen.h"

#include "rng.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gen_opts_default(struct gen_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = GEN_SHUFFLE;
	o->objects = 100000;
	o->epochs = 5;
	o->ranks = 4;
	o->view = 0;
	o->jobs = 2;
	o->alpha = 0.9;
	o->shards = 1000;
	o->chunks = 100;
	o->readers = 1;
	o->size_kind = GEN_SIZE_FIXED;
	o->size_a = 1 << 20;
	o->sigma = 1.0;
	o->seed = 1;
}

static const char *const gen_names[] = { "shuffle", "ddp", "multijob", "zipf", "shards" };

int gen_kind_parse(const char *s)
{
	for (int i = 0; i < (int)(sizeof(gen_names) / sizeof(gen_names[0])); i++)
		if (strcmp(s, gen_names[i]) == 0)
			return i;
	return -1;
}

const char *gen_kind_name(enum gen_kind k)
{
	return gen_names[k];
}

bool gen_parse_bytes(const char *s, uint64_t *out)
{
	char *end = NULL;
	errno = 0;
	if (!s || *s < '0' || *s > '9')
		return false;
	double v = strtod(s, &end);
	if (errno || end == s)
		return false;
	double mul = 1;
	switch (*end) {
	case 'K': case 'k': mul = 1024.0; end++; break;
	case 'M': case 'm': mul = 1024.0 * 1024; end++; break;
	case 'G': case 'g': mul = 1024.0 * 1024 * 1024; end++; break;
	case 'T': case 't': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end == 'B' || *end == 'b' || *end == 'i')
		end += (*end == 'i' && (end[1] == 'B' || end[1] == 'b')) ? 2 : 1;
	if (*end || v * mul >= 1.8e19 || v * mul < 0)
		return false;
	*out = (uint64_t)(v * mul);
	return true;
}

int gen_size_parse(struct gen_opts *o, const char *s, char *err, size_t errlen)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", s);
	char *a = strchr(buf, ':');
	if (!a) {
		if (!gen_parse_bytes(buf, &o->size_a) || !o->size_a)
			goto bad;
		o->size_kind = GEN_SIZE_FIXED;
		return 0;
	}
	*a++ = '\0';
	char *b = strchr(a, ':');
	if (!b)
		goto bad;
	*b++ = '\0';
	if (strcmp(buf, "uniform") == 0) {
		if (!gen_parse_bytes(a, &o->size_a) || !gen_parse_bytes(b, &o->size_b) ||
		    !o->size_a || o->size_b < o->size_a)
			goto bad;
		o->size_kind = GEN_SIZE_UNIFORM;
		return 0;
	}
	if (strcmp(buf, "lognormal") == 0) {
		char *end = NULL;
		if (!gen_parse_bytes(a, &o->size_a) || !o->size_a)
			goto bad;
		o->sigma = strtod(b, &end);
		if (*end || !(o->sigma >= 0 && o->sigma <= 4))
			goto bad;
		o->size_kind = GEN_SIZE_LOGNORMAL;
		return 0;
	}
bad:
	snprintf(err, errlen,
		 "size \"%s\": use BYTES (e.g. 1M), uniform:LO:HI or lognormal:MEDIAN:SIGMA "
		 "(sigma 0..4)",
		 s);
	return -EINVAL;
}

static uint64_t gen_size_draw(const struct gen_opts *o, struct rng *r)
{
	switch (o->size_kind) {
	case GEN_SIZE_UNIFORM:
		return o->size_a + rng_below(r, o->size_b - o->size_a + 1);
	case GEN_SIZE_LOGNORMAL: {
		/* Box-Muller: one normal from two uniforms. */
		double u1 = rng_unit(r), u2 = rng_unit(r);
		double z = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
		double v = (double)o->size_a * exp(o->sigma * z);
		return v < 1 ? 1 : v > 1e15 ? (uint64_t)1e15 : (uint64_t)v;
	}
	case GEN_SIZE_FIXED:
	default:
		return o->size_a;
	}
}

static void gen_shuffle_ids(uint32_t *a, uint64_t n, struct rng *r)
{
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = rng_below(r, i);
		uint32_t x = a[i - 1];
		a[i - 1] = a[j];
		a[j] = x;
	}
}

static int gen_shuffle(const struct gen_opts *o, struct trace *t, struct rng *r, uint32_t *perm)
{
	for (uint32_t e = 0; e < o->epochs; e++) {
		gen_shuffle_ids(perm, o->objects, r);
		for (uint64_t i = 0; i < o->objects; i++)
			if (trace_push(t, perm[i], 0, 0, e) < 0)
				return -ENOMEM;
	}
	return 0;
}

static int gen_ddp(const struct gen_opts *o, struct trace *t, struct rng *r, uint32_t *perm)
{
	uint64_t n = o->objects, p = o->ranks;
	uint64_t per_rank = (n + p - 1) / p; /* padded, as DistributedSampler does */
	for (uint32_t e = 0; e < o->epochs; e++) {
		gen_shuffle_ids(perm, n, r);
		for (uint64_t j = 0; j < per_rank; j++) {
			for (uint64_t k = 0; k < p; k++) {
				if (o->view >= 0 && k != (uint64_t)o->view)
					continue;
				uint64_t pos = (j * p + k) % n; /* padding wraps to the start */
				if (trace_push(t, perm[pos], (uint32_t)k, (uint32_t)k, e) < 0)
					return -ENOMEM;
			}
		}
	}
	return 0;
}

static int gen_multijob(const struct gen_opts *o, struct trace *t, struct rng *r, uint32_t *perm)
{
	uint64_t n = o->objects;
	uint32_t jobs = o->jobs;
	int rc = -ENOMEM;
	uint32_t **perms = calloc(jobs, sizeof(*perms));
	uint64_t *pos = calloc(jobs, sizeof(*pos));
	uint32_t *ep = calloc(jobs, sizeof(*ep));
	(void)perm;
	if (!perms || !pos || !ep)
		goto out;
	for (uint32_t j = 0; j < jobs; j++) {
		if (!(perms[j] = malloc(n * sizeof(**perms))))
			goto out;
		for (uint64_t i = 0; i < n; i++)
			perms[j][i] = (uint32_t)i;
		gen_shuffle_ids(perms[j], n, r);
	}
	uint64_t total = n * o->epochs * jobs;
	uint32_t live = jobs;
	uint32_t *alive = malloc(jobs * sizeof(*alive));
	if (!alive)
		goto out;
	for (uint32_t j = 0; j < jobs; j++)
		alive[j] = j;
	for (uint64_t k = 0; k < total && live; k++) {
		uint32_t slot = (uint32_t)rng_below(r, live), j = alive[slot];
		if (trace_push(t, perms[j][pos[j]], j, 0, ep[j]) < 0) {
			free(alive);
			goto out;
		}
		if (++pos[j] == n) {
			pos[j] = 0;
			if (++ep[j] == o->epochs)
				alive[slot] = alive[--live];
			else
				gen_shuffle_ids(perms[j], n, r);
		}
	}
	free(alive);
	rc = 0;
out:
	for (uint32_t j = 0; perms && j < jobs; j++)
		free(perms[j]);
	free(perms);
	free(pos);
	free(ep);
	return rc;
}

static int gen_zipf(const struct gen_opts *o, struct trace *t, struct rng *r, uint32_t *perm)
{
	uint64_t n = o->objects;
	uint64_t m = o->accesses ? o->accesses : n * o->epochs;
	double *cdf = malloc(n * sizeof(*cdf));
	if (!cdf)
		return -ENOMEM;
	double sum = 0;
	for (uint64_t i = 0; i < n; i++) {
		sum += pow((double)(i + 1), -o->alpha);
		cdf[i] = sum;
	}
	/* Popularity rank -> object id at random, so ids say nothing. */
	gen_shuffle_ids(perm, n, r);
	int rc = 0;
	for (uint64_t k = 0; k < m; k++) {
		double u = rng_unit(r) * sum;
		uint64_t lo = 0, hi = n - 1;
		while (lo < hi) {
			uint64_t mid = (lo + hi) / 2;
			if (cdf[mid] > u)
				hi = mid;
			else
				lo = mid + 1;
		}
		if (trace_push(t, perm[lo], 0, 0, (uint32_t)(k / n)) < 0) {
			rc = -ENOMEM;
			break;
		}
	}
	free(cdf);
	return rc;
}

static int gen_shards(const struct gen_opts *o, struct trace *t, struct rng *r, uint32_t *order)
{
	uint32_t s = o->shards, k = o->chunks, w = o->readers ? o->readers : 1;
	uint32_t *cur = malloc(w * sizeof(*cur));  /* shard each reader is on */
	uint32_t *next = malloc(w * sizeof(*next)); /* chunk each reader reads next */
	int rc = -ENOMEM;
	if (!cur || !next)
		goto out;
	for (uint32_t i = 0; i < s; i++)
		order[i] = i;
	for (uint32_t e = 0; e < o->epochs; e++) {
		gen_shuffle_ids(order, s, r);
		uint32_t taken = 0, live = 0;
		for (; live < w && taken < s; live++) {
			cur[live] = order[taken++];
			next[live] = 0;
		}
		while (live) {
			uint32_t i = (uint32_t)rng_below(r, live);
			if (trace_push(t, cur[i] * k + next[i], 0, 0, e) < 0)
				goto out;
			if (++next[i] == k) {
				if (taken < s) {
					cur[i] = order[taken++];
					next[i] = 0;
				} else {
					cur[i] = cur[live - 1];
					next[i] = next[live - 1];
					live--;
				}
			}
		}
	}
	rc = 0;
out:
	free(cur);
	free(next);
	return rc;
}

int gen_trace(const struct gen_opts *o, struct trace *t, char *err, size_t errlen)
{
	struct gen_opts g = *o;
	struct rng r;
	int rc = -EINVAL;
	uint32_t *perm = NULL;

	if (g.kind == GEN_SHARDS)
		g.objects = (uint64_t)g.shards * g.chunks;
	if (!g.objects || g.objects > UINT32_MAX - 2) {
		snprintf(err, errlen, "objects must be in [1, %u]", UINT32_MAX - 2);
		goto out;
	}
	if (!g.epochs) {
		snprintf(err, errlen, "epochs must be at least 1");
		goto out;
	}
	if (g.kind == GEN_DDP && (!g.ranks || g.ranks > UINT16_MAX ||
				  (g.view >= 0 && (uint32_t)g.view >= g.ranks))) {
		snprintf(err, errlen, "ddp: need ranks >= 1 and a node rank below it (or all)");
		goto out;
	}
	if (g.kind == GEN_MULTIJOB && (!g.jobs || g.jobs > TRACE_MAX_JOBS)) {
		snprintf(err, errlen, "multijob: jobs must be in [1, %d]", TRACE_MAX_JOBS);
		goto out;
	}
	if (g.kind == GEN_ZIPF && !(g.alpha >= 0 && g.alpha <= 10)) {
		snprintf(err, errlen, "zipf: alpha must be in [0, 10]");
		goto out;
	}
	uint64_t len = g.kind == GEN_ZIPF ? (g.accesses ? g.accesses : g.objects * g.epochs)
		     : g.kind == GEN_MULTIJOB ? g.objects * g.epochs * g.jobs
		     : g.kind == GEN_DDP && g.view >= 0 ? (g.objects + g.ranks - 1) / g.ranks * g.epochs
		     : g.kind == GEN_DDP ? (g.objects + g.ranks - 1) / g.ranks * g.ranks * g.epochs
					 : g.objects * g.epochs;
	if (len > TRACE_MAX_ACCESSES) {
		snprintf(err, errlen, "trace of %llu accesses is too long (max %zu)",
			 (unsigned long long)len, TRACE_MAX_ACCESSES);
		goto out;
	}
	rng_seed(&r, g.seed);
	rc = -ENOMEM;
	perm = malloc(g.objects * sizeof(*perm));
	if (!perm)
		goto out;
	for (uint64_t i = 0; i < g.objects; i++) {
		perm[i] = (uint32_t)i;
		if (trace_object_add(t, gen_size_draw(&g, &r)) < 0)
			goto out;
	}
	switch (g.kind) {
	case GEN_SHUFFLE: rc = gen_shuffle(&g, t, &r, perm); break;
	case GEN_DDP: rc = gen_ddp(&g, t, &r, perm); break;
	case GEN_MULTIJOB: rc = gen_multijob(&g, t, &r, perm); break;
	case GEN_ZIPF: rc = gen_zipf(&g, t, &r, perm); break;
	case GEN_SHARDS: rc = gen_shards(&g, t, &r, perm); break;
	}
	if (rc < 0) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	t->has_epochs = true;
	trace_finish(t);
out:
	free(perm);
	return rc;
}
