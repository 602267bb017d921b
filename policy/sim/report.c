/*
 * tiercache-sim output: the human table and the JSON document. See
 * report.h. Single-threaded.
 */
#include "report.h"

#include <string.h>

static void report_bytes(char *buf, size_t n, uint64_t b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

static double report_rate(const struct sim_result *r)
{
	return r->seconds > 0 ? (double)r->all.accesses / r->seconds : 0.0;
}

void report_table(FILE *f, const struct report_info *ri, const struct sim_result *res, size_t n,
		  bool epochs)
{
	const struct trace *t = ri->t;
	char ds[32], hot[32], warm[32], cold[32];
	report_bytes(ds, sizeof(ds), t->dataset_bytes);
	report_bytes(hot, sizeof(hot), ri->hot);
	report_bytes(warm, sizeof(warm), ri->warm);
	fprintf(f, "trace: %s  objects=%u accesses=%zu epochs=%u jobs=%u  dataset=%s\n", ri->source,
		t->nobj, t->n, t->nepochs, t->njobs, ds);
	fprintf(f, "cache: hot=%s (%.1f%%)", hot, 100.0 * sim_ratio(ri->hot, t->dataset_bytes));
	if (ri->warm)
		fprintf(f, " warm=%s (%.1f%%)", warm, 100.0 * sim_ratio(ri->warm, t->dataset_bytes));
	if (ri->hot_max > ri->hot || ri->warm_max > ri->warm) {
		char hm[32], wm[32];
		report_bytes(hm, sizeof(hm), ri->hot_max > ri->hot ? ri->hot_max : ri->hot);
		report_bytes(wm, sizeof(wm), ri->warm_max > ri->warm ? ri->warm_max : ri->warm);
		fprintf(f, "  held up to: hot=%s%s%s (the mover trailing)", hm, ri->warm ? " warm=" : "",
			ri->warm ? wm : "");
	}
	if (ri->plan_epochs)
		fprintf(f, "  plans: %u epoch(s) ahead", ri->plan_epochs);
	if (ri->prefetch_window) {
		char w[32];
		report_bytes(w, sizeof(w), ri->prefetch_window);
		fprintf(f, "  plan prefetch: %s per rank", w);
		if (ri->prefetch_rate) {
			report_bytes(w, sizeof(w), ri->prefetch_rate);
			fprintf(f, ", loads at %s/s", w);
		}
		for (uint32_t e = 0; ri->prefetch_rates && e < t->nepochs; e++) {
			report_bytes(w, sizeof(w), ri->prefetch_rates[e]);
			fprintf(f, "%s%s/s", e ? " " : ", loads per epoch at ", w);
		}
	}
	if (ri->trace_timed)
		fprintf(f, ", late as the daemon's loads (%zu load events)", ri->trace_loads);
	fprintf(f, "\n\n");
	fprintf(f, "%-12s %8s %8s", "policy", "hit%", "bytehit%");
	if (ri->warm)
		fprintf(f, " %8s %8s", "hot%", "warm%");
	fprintf(f, " %12s %7s %9s\n", "cold-read", "vs-opt", "Macc/s");
	for (size_t i = 0; i < n; i++) {
		const struct sim_result *r = &res[i];
		report_bytes(cold, sizeof(cold), r->cold_bytes);
		fprintf(f, "%-12s %8.2f %8.2f", r->name, 100 * sim_ratio(r->all.hits, r->all.accesses),
			100 * sim_ratio(r->all.hit_bytes, r->all.bytes));
		if (ri->warm && r == ri->opt) /* one cache: no split */
			fprintf(f, " %8s %8s", "-", "-");
		else if (ri->warm)
			fprintf(f, " %8.2f %8.2f", 100 * sim_ratio(r->tier_hits[0], r->all.accesses),
				100 * sim_ratio(r->tier_hits[1], r->all.accesses));
		if (ri->opt && ri->opt->all.hits)
			fprintf(f, " %12s %7.3f", cold, sim_ratio(r->all.hits, ri->opt->all.hits));
		else
			fprintf(f, " %12s %7s", cold, "-");
		fprintf(f, " %9.2f\n", report_rate(r) / 1e6);
		if (r->prefetched || r->prefetch_stalls) {
			char pb[32];
			report_bytes(pb, sizeof(pb), r->prefetch_bytes);
			fprintf(f, "%-12s (prefetched %llu chunks, %s, ahead of their reads; %llu stalls",
				"", (unsigned long long)r->prefetched, pb,
				(unsigned long long)r->prefetch_stalls);
			if (ri->prefetch_rate || ri->prefetch_rates || ri->trace_timed)
				fprintf(f, "; %llu reads late", (unsigned long long)r->prefetch_late);
			fprintf(f, ")\n");
		}
	}
	if (ri->opt) {
		bool same = true;
		for (uint32_t o = 1; o < t->nobj && same; o++)
			same = t->size[o] == t->size[0];
		fprintf(f, "\nopt: Belady MIN with bypass, hot+warm as one cache: %s\n",
			same ? "exact optimum (all objects the same size)"
			     : "size-aware Belady (sizes differ: a reference, not a bound)");
	}
	if (!epochs || !n)
		return;
	fprintf(f, "\nhit%% by epoch\n%-6s", "epoch");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %11s", res[i].name);
	fprintf(f, "\n");
	for (uint32_t e = 0; e < res[0].nepochs; e++) {
		fprintf(f, "%-6u", e);
		for (size_t i = 0; i < n; i++)
			fprintf(f, " %11.2f",
				100 * sim_ratio(res[i].epoch[e].hits, res[i].epoch[e].accesses));
		fprintf(f, "\n");
	}
}

static void report_json_counts(FILE *f, const struct sim_counts *c)
{
	fprintf(f,
		"\"accesses\":%llu,\"hits\":%llu,\"bytes\":%llu,\"hit_bytes\":%llu,"
		"\"hit_ratio\":%.6f,\"byte_hit_ratio\":%.6f",
		(unsigned long long)c->accesses, (unsigned long long)c->hits,
		(unsigned long long)c->bytes, (unsigned long long)c->hit_bytes,
		sim_ratio(c->hits, c->accesses), sim_ratio(c->hit_bytes, c->bytes));
}

static void report_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* The opening of a JSON report: {"trace":{...}, */
static void report_json_trace(FILE *f, const struct report_info *ri)
{
	const struct trace *t = ri->t;
	fprintf(f, "{\"trace\":{\"source\":");
	report_json_string(f, ri->source);
	fprintf(f,
		",\"objects\":%u,\"accesses\":%zu,\"epochs\":%u,\"jobs\":%u,\"ranks\":%u,"
		"\"dataset_bytes\":%llu},",
		t->nobj, t->n, t->nepochs, t->njobs, t->nranks,
		(unsigned long long)t->dataset_bytes);
}

void report_json(FILE *f, const struct report_info *ri, const struct sim_result *res, size_t n,
		 bool epochs)
{
	const struct trace *t = ri->t;
	report_json_trace(f, ri);
	fprintf(f,
		"\"cache\":{\"hot_bytes\":%llu,\"warm_bytes\":%llu,\"hot_fraction\":%.6f,"
		"\"warm_fraction\":%.6f,\"plan_epochs\":%u,\"prefetch_window\":%llu,"
		"\"prefetch_rate\":%llu,\"hot_max_bytes\":%llu,\"warm_max_bytes\":%llu},",
		(unsigned long long)ri->hot, (unsigned long long)ri->warm,
		sim_ratio(ri->hot, t->dataset_bytes), sim_ratio(ri->warm, t->dataset_bytes),
		ri->plan_epochs, (unsigned long long)ri->prefetch_window,
		(unsigned long long)ri->prefetch_rate,
		(unsigned long long)(ri->hot_max > ri->hot ? ri->hot_max : ri->hot),
		(unsigned long long)(ri->warm_max > ri->warm ? ri->warm_max : ri->warm));
	fprintf(f, "\"results\":[");
	for (size_t i = 0; i < n; i++) {
		const struct sim_result *r = &res[i];
		fprintf(f, "%s{\"policy\":", i ? "," : "");
		report_json_string(f, r->name);
		fprintf(f, ",");
		report_json_counts(f, &r->all);
		fprintf(f,
			",\"cold_bytes\":%llu,\"hot_hits\":%llu,\"warm_hits\":%llu,"
			"\"vs_opt\":%.6f,\"byte_vs_opt\":%.6f,\"seconds\":%.6f,"
			"\"accesses_per_sec\":%.0f,\"prefetched\":%llu,\"prefetch_bytes\":%llu,"
			"\"prefetch_stalls\":%llu,\"prefetch_late\":%llu,\"demoted\":%llu,"
			"\"promoted\":%llu",
			(unsigned long long)r->cold_bytes, (unsigned long long)r->tier_hits[0],
			(unsigned long long)r->tier_hits[1],
			ri->opt ? sim_ratio(r->all.hits, ri->opt->all.hits) : 0.0,
			ri->opt ? sim_ratio(r->all.hit_bytes, ri->opt->all.hit_bytes) : 0.0,
			r->seconds, report_rate(r), (unsigned long long)r->prefetched,
			(unsigned long long)r->prefetch_bytes, (unsigned long long)r->prefetch_stalls,
			(unsigned long long)r->prefetch_late, (unsigned long long)r->demoted,
			(unsigned long long)r->promoted);
		if (epochs) {
			fprintf(f, ",\"per_epoch\":[");
			for (uint32_t e = 0; e < r->nepochs; e++) {
				fprintf(f, "%s{\"epoch\":%u,", e ? "," : "", e);
				report_json_counts(f, &r->epoch[e]);
				fprintf(f, "}");
			}
			fprintf(f, "]");
		}
		fprintf(f, "}");
	}
	fprintf(f, "]}\n");
}

/* ---- what-if curves ---- */

static void report_curve_head(FILE *f, const struct report_info *ri, const struct curve *c,
			      double warm_share)
{
	const struct trace *t = ri->t;
	char ds[32];
	report_bytes(ds, sizeof(ds), t->dataset_bytes);
	fprintf(f, "trace: %s  objects=%u accesses=%zu epochs=%u jobs=%u  dataset=%s\n", ri->source,
		t->nobj, t->n, t->nepochs, t->njobs, ds);
	if (warm_share < 0)
		fprintf(f, "cache size: hot + warm, each point's split given as HOT:WARM\n");
	else if (warm_share > 0)
		fprintf(f, "cache size: hot + warm, split %.0f%% hot : %.0f%% warm\n",
			100 * (1 - warm_share), 100 * warm_share);
	else
		fprintf(f, "cache size: hot tier only\n");
	if (c->sample < 1.0)
		fprintf(f,
			"sampled: SHARDS at rate %g: %zu of %zu accesses, %zu of %u objects, "
			"cache sizes scaled by the rate (hit ratios are estimates)\n",
			c->sample, c->accesses, t->n, c->objects, t->nobj);
	else
		fprintf(f, "sampled: no (the whole trace, one replay per size and policy)\n");
}

static void report_curve_grid(FILE *f, const struct curve *c, bool bytes)
{
	char sz[32], hot[32], warm[32];
	fprintf(f, "\n%s\n%10s %10s %10s", bytes ? "byte hit% by cache size" : "hit% by cache size",
		"size", "hot", "warm");
	for (size_t col = 0; col < c->ncols; col++)
		fprintf(f, " %11s", c->names[col]);
	fprintf(f, "  best\n");
	for (size_t p = 0; p < c->npoints; p++) {
		report_bytes(sz, sizeof(sz), c->hot[p] + c->warm[p]);
		report_bytes(hot, sizeof(hot), c->hot[p]);
		report_bytes(warm, sizeof(warm), c->warm[p]);
		fprintf(f, "%10s %10s %10s", sz, hot, warm);
		for (size_t col = 0; col < c->ncols; col++) {
			const struct sim_counts *x = curve_cell(c, p, col);
			fprintf(f, " %11.2f",
				100 * (bytes ? sim_ratio(x->hit_bytes, x->bytes)
					     : sim_ratio(x->hits, x->accesses)));
		}
		int best = curve_best(c, p);
		fprintf(f, "  %s\n", best >= 0 ? c->names[best] : "-");
	}
}

void report_curve_table(FILE *f, const struct report_info *ri, const struct curve *c,
			double warm_share)
{
	report_curve_head(f, ri, c, warm_share);
	report_curve_grid(f, c, false);
	report_curve_grid(f, c, true);
	fprintf(f, "\nbest: the policy with the most hits at that size (OPT excluded)\n");
	if (c->has_opt)
		fprintf(f, "opt: Belady MIN with bypass, hot+warm as one cache\n");
}

static double report_curve_vs_opt(const struct curve *c, size_t p, size_t col)
{
	return c->has_opt ? sim_ratio(curve_cell(c, p, col)->hits, curve_cell(c, p, 0)->hits) : 0.0;
}

void report_curve_json(FILE *f, const struct report_info *ri, const struct curve *c,
		       double warm_share)
{
	report_json_trace(f, ri);
	fprintf(f, "\"curve\":{\"warm_share\":");
	if (warm_share < 0)
		fprintf(f, "null"); /* HOT:WARM pairs */
	else
		fprintf(f, "%.6f", warm_share);
	fprintf(f,
		",\"sample\":%.6g,\"sampled\":%s,\"sampled_accesses\":%zu,"
		"\"sampled_objects\":%zu,\"points\":[",
		c->sample, c->sample < 1.0 ? "true" : "false", c->accesses, c->objects);
	for (size_t p = 0; p < c->npoints; p++) {
		int best = curve_best(c, p);
		fprintf(f, "%s{\"cache_bytes\":%llu,\"hot_bytes\":%llu,\"warm_bytes\":%llu,\"best\":",
			p ? "," : "", (unsigned long long)(c->hot[p] + c->warm[p]),
			(unsigned long long)c->hot[p], (unsigned long long)c->warm[p]);
		report_json_string(f, best >= 0 ? c->names[best] : "");
		fprintf(f, ",\"results\":[");
		for (size_t col = 0; col < c->ncols; col++) {
			fprintf(f, "%s{\"policy\":", col ? "," : "");
			report_json_string(f, c->names[col]);
			fprintf(f, ",");
			report_json_counts(f, curve_cell(c, p, col));
			fprintf(f, ",\"vs_opt\":%.6f,\"rank\":%d}", report_curve_vs_opt(c, p, col),
				curve_rank(c, p, col));
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}}\n");
}

void report_curve_csv(FILE *f, const struct report_info *ri, const struct curve *c)
{
	fprintf(f, "# tiercache-sim --curve: trace=%s dataset_bytes=%llu sample=%g\n", ri->source,
		(unsigned long long)ri->t->dataset_bytes, c->sample);
	fprintf(f, "point,cache_bytes,hot_bytes,warm_bytes,policy,accesses,hits,hit_ratio,"
		   "bytes,hit_bytes,byte_hit_ratio,vs_opt,rank\n");
	for (size_t p = 0; p < c->npoints; p++)
		for (size_t col = 0; col < c->ncols; col++) {
			const struct sim_counts *x = curve_cell(c, p, col);
			fprintf(f, "%zu,%llu,%llu,%llu,%s,%llu,%llu,%.6f,%llu,%llu,%.6f,%.6f,%d\n", p,
				(unsigned long long)(c->hot[p] + c->warm[p]),
				(unsigned long long)c->hot[p], (unsigned long long)c->warm[p],
				c->names[col], (unsigned long long)x->accesses,
				(unsigned long long)x->hits, sim_ratio(x->hits, x->accesses),
				(unsigned long long)x->bytes, (unsigned long long)x->hit_bytes,
				sim_ratio(x->hit_bytes, x->bytes), report_curve_vs_opt(c, p, col),
				curve_rank(c, p, col));
		}
}
