/*
 * What-if curves: see curve.h. For each size, OPT (opt.c) and each policy
 * (engine.c) replay the trace, or its SHARDS sample, with the sizes scaled
 * by the sampling rate. Policies with two tiers and placement between them
 * are not stack algorithms, so one replay per size it is; sampling is what
 * keeps a long trace affordable. Single-threaded, no I/O.
 */
#include "curve.h"

#include "keymap.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Salt so the sample does not line up with the key's own mixing. */
#define CURVE_SAMPLE_SALT 0x5348415244530001ULL

void curve_split(uint64_t size, double warm_share, uint64_t *hot, uint64_t *warm)
{
	if (!(warm_share > 0))
		warm_share = 0;
	if (warm_share > 1)
		warm_share = 1;
	*warm = (uint64_t)((double)size * warm_share + 0.5);
	if (*warm > size)
		*warm = size;
	*hot = size - *warm;
}

/* An object is in the sample when its key hashes under rate (as a
 * fraction of 2^53): the same objects at every size and for every policy. */
static bool curve_keep(uint64_t key, double rate)
{
	if (rate >= 1.0)
		return true;
	uint64_t h = keymap_mix(key ^ CURVE_SAMPLE_SALT) >> 11;
	return (double)h < rate * 9007199254740992.0; /* 2^53 */
}

int curve_sample(const struct trace *t, double rate, struct trace *out)
{
	int rc = -ENOMEM;
	uint32_t *map = malloc((t->nobj ? t->nobj : 1) * sizeof(*map));
	trace_init(out);
	if (!map)
		goto out;
	for (uint32_t o = 0; o < t->nobj; o++) {
		map[o] = UINT32_MAX;
		if (!curve_keep(t->key[o], rate))
			continue;
		int64_t id = trace_object_add(out, t->size[o]);
		if (id < 0) {
			rc = (int)id;
			goto out;
		}
		map[o] = (uint32_t)id;
		out->key[id] = t->key[o]; /* policies see the same keys */
	}
	for (size_t i = 0; i < t->n; i++) {
		uint32_t m = map[t->obj[i]];
		if (m == UINT32_MAX)
			continue;
		if ((rc = trace_push(out, m, t->job[i], t->rank[i], t->epoch[i])) < 0)
			goto out;
	}
	out->has_epochs = true; /* the full trace's epochs, not re-inferred */
	trace_finish(out);
	/* same epoch numbering as the full trace, for the per-epoch arrays */
	out->nepochs = t->nepochs;
	out->njobs = t->njobs;
	out->nranks = t->nranks;
	rc = out->n ? 0 : -ENODATA;
out:
	free(map);
	if (rc < 0)
		trace_free(out);
	return rc;
}

void curve_free(struct curve *c)
{
	free(c->cells);
	c->cells = NULL;
}

static uint64_t curve_scale(uint64_t bytes, double rate)
{
	if (rate >= 1.0 || !bytes)
		return bytes;
	uint64_t v = (uint64_t)llround((double)bytes * rate);
	return v ? v : 1;
}

/* Replay one column at one point into its cell. */
static int curve_cell_run(const struct trace *t, const struct curve_opts *o, struct curve *c,
			  size_t p, size_t col, char *err, size_t errlen)
{
	struct sim_result r;
	uint64_t hot = curve_scale(c->hot[p], c->sample), warm = curve_scale(c->warm[p], c->sample);
	int rc = sim_result_init(&r, c->names[col], t->nepochs);
	if (rc < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	if (c->has_opt && col == 0) {
		rc = sim_run_opt(t, hot + warm, &r);
		if (rc < 0)
			snprintf(err, errlen, "opt: out of memory");
	} else {
		size_t k = col - (c->has_opt ? 1 : 0);
		struct sim_config cfg = {
			.hot = hot,
			.warm = warm,
			.plan_epochs = o->plan_epochs,
			.prefetch_window = curve_scale(o->prefetch_window, c->sample),
			.tunables = o->tunables ? o->tunables[k] : NULL,
			.placement = o->placement,
		};
		if (!hot) {
			/* a point with no hot tier: nothing is cached, every
			 * read misses (the daemon needs a hot tier) */
			for (size_t i = 0; i < t->n; i++) {
				r.all.accesses++;
				r.all.bytes += t->size[t->obj[i]];
			}
		} else {
			rc = sim_run_policy(t, o->policies[k], &cfg, &r, err, errlen);
		}
	}
	if (rc == 0)
		c->cells[p * c->ncols + col] = r.all;
	sim_result_free(&r);
	return rc;
}

int curve_run(const struct trace *t, const struct curve_opts *o, struct curve *c, char *err,
	      size_t errlen)
{
	struct trace sample;
	const struct trace *rt = t;
	bool sampled = false;
	int rc;

	memset(c, 0, sizeof(*c));
	if (!o->npoints || o->npoints > CURVE_MAX_POINTS) {
		snprintf(err, errlen, "between 1 and %d sizes, not %zu", CURVE_MAX_POINTS,
			 o->npoints);
		return -EINVAL;
	}
	if (o->npolicies + (o->no_opt ? 0 : 1) > CURVE_MAX_COLS ||
	    o->npolicies + (o->no_opt ? 0 : 1) == 0) {
		snprintf(err, errlen, "between 1 and %d policies", CURVE_MAX_COLS - 1);
		return -EINVAL;
	}
	if (!(o->sample > 0 && o->sample <= 1)) {
		snprintf(err, errlen, "sampling rate %g is not in (0, 1]", o->sample);
		return -EINVAL;
	}
	c->npoints = o->npoints;
	c->has_opt = !o->no_opt;
	c->sample = o->sample;
	if (c->has_opt)
		snprintf(c->names[c->ncols++], SIM_NAME_MAX, "opt");
	for (size_t k = 0; k < o->npolicies; k++)
		snprintf(c->names[c->ncols++], SIM_NAME_MAX, "%s", o->policies[k]);
	for (size_t p = 0; p < o->npoints; p++) {
		c->hot[p] = o->hot[p];
		c->warm[p] = o->warm[p];
	}
	c->cells = calloc(c->npoints * c->ncols, sizeof(*c->cells));
	if (!c->cells) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (o->sample < 1.0) {
		rc = curve_sample(t, o->sample, &sample);
		if (rc == -ENODATA) {
			snprintf(err, errlen,
				 "a sample at rate %g keeps no access of this trace "
				 "(raise --sample)", o->sample);
			return rc;
		}
		if (rc < 0) {
			snprintf(err, errlen, "sampling: out of memory");
			return rc;
		}
		rt = &sample;
		sampled = true;
	}
	c->accesses = rt->n;
	c->objects = rt->nobj;
	rc = 0;
	for (size_t p = 0; p < c->npoints && rc == 0; p++)
		for (size_t col = 0; col < c->ncols && rc == 0; col++)
			rc = curve_cell_run(rt, o, c, p, col, err, errlen);
	if (sampled)
		trace_free(&sample);
	return rc;
}

/* Is column a ahead of column b at point p? */
static bool curve_ahead(const struct curve *c, size_t p, size_t a, size_t b)
{
	const struct sim_counts *x = curve_cell(c, p, a), *y = curve_cell(c, p, b);
	if (x->hits != y->hits)
		return x->hits > y->hits;
	if (x->hit_bytes != y->hit_bytes)
		return x->hit_bytes > y->hit_bytes;
	return a < b;
}

int curve_best(const struct curve *c, size_t point)
{
	int best = -1;
	for (size_t col = c->has_opt ? 1 : 0; col < c->ncols; col++)
		if (best < 0 || curve_ahead(c, point, col, (size_t)best))
			best = (int)col;
	return best;
}

int curve_rank(const struct curve *c, size_t point, size_t col)
{
	if (c->has_opt && col == 0)
		return 0;
	int rank = 1;
	for (size_t k = c->has_opt ? 1 : 0; k < c->ncols; k++)
		if (k != col && curve_ahead(c, point, k, col))
			rank++;
	return rank;
}
