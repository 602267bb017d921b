/*
 * --explain: see explain.h. One pass over the trace; counts only.
 */
#include "explain.h"

#include <stdint.h>
#include <stdlib.h>

#define EXPLAIN_BIG (1u << 20) /* chunks this size or more: the "large" row */

struct explain_row {
	uint64_t n, dhit, shit, both, tier_differs;
	uint64_t d_only_late, d_only_miss; /* daemon hit, simulator late / plain miss */
	uint64_t s_only;                   /* simulator hit, daemon miss */
};

static void explain_count(struct explain_row *w, uint8_t d, uint8_t s)
{
	bool dh = d == TRACE_RES_HOT || d == TRACE_RES_WARM;
	bool sh = s == SIM_OUT_HOT || s == SIM_OUT_WARM;
	w->n++;
	w->dhit += dh;
	w->shit += sh;
	w->both += dh && sh;
	w->tier_differs += dh && sh && d != s;
	w->d_only_late += dh && s == SIM_OUT_LATE;
	w->d_only_miss += dh && s == SIM_OUT_MISS;
	w->s_only += sh && !dh;
}

static void explain_line(FILE *f, const char *label, const struct explain_row *w)
{
	fprintf(f, "  %-10s %8llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu\n", label,
		(unsigned long long)w->n, (unsigned long long)w->dhit, (unsigned long long)w->shit,
		(unsigned long long)w->both, (unsigned long long)w->d_only_late,
		(unsigned long long)w->d_only_miss, (unsigned long long)w->s_only,
		(unsigned long long)w->tier_differs);
}

void explain_print(FILE *f, const struct trace *t, const struct sim_result *r)
{
	if (!t->result || !r->outcome) {
		fprintf(f, "\nexplain %s: the trace has no result column to compare with (record "
			   "it with tierctl trace)\n", r->name);
		return;
	}
	struct explain_row *ep = calloc(t->nepochs ? t->nepochs : 1, sizeof(*ep));
	struct explain_row all = { 0 }, small = { 0 }, big = { 0 };
	if (!ep) {
		fprintf(f, "\nexplain %s: out of memory\n", r->name);
		return;
	}
	for (size_t i = 0; i < t->n; i++) {
		uint8_t d = t->result[i], s = r->outcome[i];
		explain_count(&ep[t->epoch[i]], d, s);
		explain_count(&all, d, s);
		explain_count(t->size[t->obj[i]] >= EXPLAIN_BIG ? &big : &small, d, s);
	}
	fprintf(f, "\nexplain %s: the daemon's outcome (trace) and the simulator's, access by "
		   "access\n", r->name);
	fprintf(f, "  %-10s %8s %8s %8s %8s %8s %8s %8s %8s\n", "epoch", "accesses", "d_hits",
		"s_hits", "both", "d_only:L", "d_only:M", "s_only", "tier!=");
	for (uint32_t e = 0; e < t->nepochs; e++) {
		char label[16];
		snprintf(label, sizeof(label), "%u", e + 1);
		explain_line(f, label, &ep[e]);
	}
	explain_line(f, "all", &all);
	explain_line(f, "< 1 MiB", &small);
	explain_line(f, ">= 1 MiB", &big);
	fprintf(f, "  (d_hits, s_hits: the daemon's and the simulator's hits; d_only:L the\n"
		   "   daemon hit where the simulator's load was still in flight (late); d_only:M\n"
		   "   the daemon hit, the simulator plainly missed; s_only the simulator hit, the\n"
		   "   daemon missed; tier!= both hit, on different tiers)\n");
	free(ep);
}
