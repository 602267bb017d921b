/*
 * tiercache-sim: replay or generate an access trace and run cache policies
 * (the daemon's own policy/ code) beside Belady's OPT on it. Usage and the
 * trace format: docs/simulator.md, or `tiercache-sim --help`.
 * Single-threaded; exits 0, 1 on a failed run, 64 on bad usage.
 */
#include "curve_cli.h"
#include "engine.h"
#include "explain.h"
#include "gen.h"
#include "rate.h"
#include "policy.h"
#include "report.h"
#include "trace.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EX_USAGE_CODE 64
#define MAX_POLICIES 16

static void usage(FILE *f)
{
	fprintf(f,
"usage: tiercache-sim (--trace FILE | --gen KIND) --hot SIZE [options]\n"
"\n"
"trace:\n"
"  --trace FILE          replay a CSV trace (object,size[,rank[,job[,epoch]]]; - = stdin)\n"
"  --gen KIND            generate: shuffle ddp multijob zipf shards\n"
"  --objects N           objects in the data set (default 100000)\n"
"  --epoch-count E       epochs (default 5)\n"
"  --ranks P             ddp: ranks (default 4)\n"
"  --rank R|all          ddp: the node simulated, or all ranks interleaved (default 0)\n"
"  --jobs J              multijob: jobs sharing the data set (default 2)\n"
"  --accesses M          zipf: reads (default objects x epochs)\n"
"  --alpha A             zipf: exponent (default 0.9)\n"
"  --shards S --chunks K --readers W   shards: S shards of K chunks, W read at once\n"
"  --size SPEC           object size: BYTES, uniform:LO:HI, lognormal:MEDIAN:SIGMA (default 1M)\n"
"  --seed S              generator seed (default 1)\n"
"  --write-trace FILE    also write the trace as CSV\n"
"\n"
"cache:\n"
"  --hot SIZE|PCT%%       hot tier: bytes (64G, 512M, ...) or a share of the data set\n"
"  --warm SIZE|PCT%%      warm tier (default none)\n"
"  --hot-max SIZE|PCT%%   the mover trails: hot holds up to SIZE before its victims go\n"
"                        (its policy's budget stays --hot), as the daemon's hot tier\n"
"                        fills to its capacity while demotions trail the fills\n"
"                        (default: --hot, victims go at once)\n"
"  --warm-max SIZE|PCT%%  the same for warm (default: --warm)\n"
"  --policy LIST         comma-separated, or all (default all): ");
	for (const struct policy_ops *const *o = policy_all(); *o; o++)
		fprintf(f, "%s%s", (*o)->name, o[1] ? " " : "\n");
	fprintf(f,
"  --set POLICY.KEY=VAL  a policy tunable (repeatable)\n"
"  --placement KEY=VAL   a placement tunable: demote=0|1|reread|flat promote hot_max_size\n"
"                        (repeatable)\n"
"  --plan-epochs N       clairvoyant knows N epochs past the current one (default 0: all)\n"
"  --prefetch-window SIZE  model the daemon's plan prefetch (the trace as the plan), loading\n"
"                        each rank's next SIZE bytes of plan onto hot ahead of its reads\n"
"                        (the daemon's window_bytes; capped at half of hot; default 0: off)\n"
"  --prefetch-rate RATE  the prefetch's loads take time: the cold store brings them in one\n"
"                        after another at RATE bytes/s (200M), from the time of the read\n"
"                        that issued them (the trace's time_us); a read before its load\n"
"                        lands is late, a miss (default: loads land at once); \"epoch\":\n"
"                        each epoch's rate measured from the trace (its bytes not hit\n"
"                        on warm over its time span); \"trace\": a chunk loaded ahead\n"
"                        is late when the daemon's own load of it was (a tierctl\n"
"                        trace file's load rows: it landed late, was lost, or was\n"
"                        not made before a read that missed)\n"
"  --prefetch-inflight N timed loads in flight at most (default 8, the daemon's)\n"
"  --no-opt              skip the OPT reference\n"
"\n"
"output:\n"
"  --epochs              per-epoch rows\n"
"  --explain             each policy's outcome beside the daemon's, access by access, per\n"
"                        epoch (a trace recorded by tierctl trace: its result column)\n"
"  --json                JSON for programs\n"
"  --repeat N            replay each policy N times, report the median time\n"
CURVE_CLI_USAGE);
}

struct cli {
	const char *trace_path, *write_path;
	struct gen_opts gen;
	bool generate;
	const char *hot, *warm;
	const char *hot_max, *warm_max; /* the mover trailing (engine.h) */
	const char *policies[MAX_POLICIES];
	size_t npolicies;
	char tunables[MAX_POLICIES][512];
	char placement[512];
	uint32_t plan_epochs, repeat;
	uint64_t prefetch_window, prefetch_rate, prefetch_inflight;
	bool no_opt, epochs, json, explain;
	bool rate_epoch; /* --prefetch-rate epoch: measured per epoch (rate.h) */
	bool rate_trace; /* --prefetch-rate trace: the daemon's own loads (engine.h) */
	struct curve_cli curve; /* --curve and its options (curve_cli.h) */
};

static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end = NULL;
	errno = 0;
	if (!s || *s < '0' || *s > '9')
		return false;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* "12.5%" of the data set, or a byte count. */
static bool parse_capacity(const char *s, uint64_t dataset, uint64_t *out)
{
	size_t n = strlen(s);
	if (n > 1 && s[n - 1] == '%') {
		char *end = NULL;
		double pct = strtod(s, &end);
		if (end != s + n - 1 || !(pct >= 0 && pct <= 1e6))
			return false;
		*out = (uint64_t)((double)dataset * pct / 100.0 + 0.5);
		return true;
	}
	return gen_parse_bytes(s, out);
}

/* --hot-max / --warm-max into cfg (after --hot and --warm): each at
 * least its tier's budget. 0 or -EINVAL, said on stderr. */
static int max_parse(const struct cli *c, const struct trace *t, struct sim_config *cfg)
{
	const char *arg[2] = { c->hot_max, c->warm_max };
	const char *name[2] = { "hot", "warm" };
	uint64_t low[2] = { cfg->hot, cfg->warm }, *high[2] = { &cfg->hot_max, &cfg->warm_max };
	for (int i = 0; i < 2; i++) {
		if (!arg[i])
			continue;
		if (!parse_capacity(arg[i], t->dataset_bytes, high[i])) {
			fprintf(stderr, "tiercache-sim: --%s-max: \"%s\" is not a size (64G, 512M, "
					"12.5%%)\n", name[i], arg[i]);
			return -EINVAL;
		}
		if (!low[i]) {
			fprintf(stderr, "tiercache-sim: --%s-max needs --%s: it is what the tier holds "
					"above its budget\n", name[i], name[i]);
			return -EINVAL;
		}
		if (*high[i] < low[i]) {
			fprintf(stderr, "tiercache-sim: --%s-max %llu is below --%s %llu: give the "
					"tier's capacity, at least its budget\n",
				name[i], (unsigned long long)*high[i], name[i],
				(unsigned long long)low[i]);
			return -EINVAL;
		}
	}
	return 0;
}

static int cli_add_policies(struct cli *c, char *list)
{
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "all") == 0) {
			for (const struct policy_ops *const *o = policy_all(); *o; o++)
				if (c->npolicies < MAX_POLICIES)
					c->policies[c->npolicies++] = (*o)->name;
			continue;
		}
		if (!policy_find(tok)) {
			fprintf(stderr, "tiercache-sim: unknown policy \"%s\" (policies:", tok);
			for (const struct policy_ops *const *o = policy_all(); *o; o++)
				fprintf(stderr, " %s", (*o)->name);
			fprintf(stderr, ")\n");
			return -EINVAL;
		}
		if (c->npolicies == MAX_POLICIES)
			return -E2BIG;
		c->policies[c->npolicies++] = policy_find(tok)->name;
	}
	return 0;
}

static void append(char *buf, size_t n, const char *s)
{
	size_t len = strlen(buf);
	snprintf(buf + len, n - len, "%s%s", len ? " " : "", s);
}

static int cli_parse(struct cli *c, int argc, char **argv)
{
	enum {
		O_TRACE = 256, O_GEN, O_OBJECTS, O_EPOCH_COUNT, O_RANKS, O_RANK, O_JOBS, O_ACCESSES,
		O_ALPHA, O_SHARDS, O_CHUNKS, O_READERS, O_SIZE, O_SEED, O_WRITE, O_HOT, O_WARM, O_HOT_MAX, O_WARM_MAX,
		O_POLICY, O_SET, O_PLACEMENT, O_PLAN_EPOCHS, O_PREFETCH_WINDOW, O_PREFETCH_RATE,
		O_PREFETCH_INFLIGHT, O_EXPLAIN, O_NO_OPT, O_EPOCHS, O_JSON, O_REPEAT,
		O_HELP, O_CURVE_BASE,
	};
	static const struct option opts[] = {
		{ "trace", required_argument, NULL, O_TRACE },
		{ "gen", required_argument, NULL, O_GEN },
		{ "objects", required_argument, NULL, O_OBJECTS },
		{ "epoch-count", required_argument, NULL, O_EPOCH_COUNT },
		{ "ranks", required_argument, NULL, O_RANKS },
		{ "rank", required_argument, NULL, O_RANK },
		{ "jobs", required_argument, NULL, O_JOBS },
		{ "accesses", required_argument, NULL, O_ACCESSES },
		{ "alpha", required_argument, NULL, O_ALPHA },
		{ "shards", required_argument, NULL, O_SHARDS },
		{ "chunks", required_argument, NULL, O_CHUNKS },
		{ "readers", required_argument, NULL, O_READERS },
		{ "size", required_argument, NULL, O_SIZE },
		{ "seed", required_argument, NULL, O_SEED },
		{ "write-trace", required_argument, NULL, O_WRITE },
		{ "hot", required_argument, NULL, O_HOT },
		{ "warm", required_argument, NULL, O_WARM },
		{ "hot-max", required_argument, NULL, O_HOT_MAX },
		{ "warm-max", required_argument, NULL, O_WARM_MAX },
		{ "policy", required_argument, NULL, O_POLICY },
		{ "set", required_argument, NULL, O_SET },
		{ "placement", required_argument, NULL, O_PLACEMENT },
		{ "plan-epochs", required_argument, NULL, O_PLAN_EPOCHS },
		{ "prefetch-window", required_argument, NULL, O_PREFETCH_WINDOW },
		{ "prefetch-rate", required_argument, NULL, O_PREFETCH_RATE },
		{ "prefetch-inflight", required_argument, NULL, O_PREFETCH_INFLIGHT },
		{ "explain", no_argument, NULL, O_EXPLAIN },
		{ "no-opt", no_argument, NULL, O_NO_OPT },
		{ "epochs", no_argument, NULL, O_EPOCHS },
		{ "json", no_argument, NULL, O_JSON },
		{ "repeat", required_argument, NULL, O_REPEAT },
		{ "help", no_argument, NULL, O_HELP },
		CURVE_CLI_LONGOPTS(O_CURVE_BASE),
		{ NULL, 0, NULL, 0 },
	};
	char err[256];
	uint64_t v;
	int ch;
	const char *sets[64];
	size_t nsets = 0;

	gen_opts_default(&c->gen);
	c->repeat = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *a = optarg;
		switch (ch) {
		case O_TRACE: c->trace_path = a; break;
		case O_GEN: {
			int k = gen_kind_parse(a);
			if (k < 0) {
				fprintf(stderr, "tiercache-sim: --gen: unknown generator \"%s\" "
						"(shuffle ddp multijob zipf shards)\n", a);
				return -EINVAL;
			}
			c->gen.kind = (enum gen_kind)k;
			c->generate = true;
			break;
		}
#define NUM(opt, lo, hi, dst)                                                                      \
	case opt:                                                                                  \
		if (!parse_u64(a, lo, hi, &v)) {                                                   \
			fprintf(stderr, "tiercache-sim: --%s: \"%s\" is not an integer in [%llu, %llu]\n", \
				argv[optind - 1] + 2, a, (unsigned long long)(lo),                 \
				(unsigned long long)(hi));                                         \
			return -EINVAL;                                                            \
		}                                                                                  \
		dst = v;                                                                           \
		break;
		NUM(O_OBJECTS, 1, UINT32_MAX - 2, c->gen.objects)
		NUM(O_EPOCH_COUNT, 1, 1000000, c->gen.epochs)
		NUM(O_RANKS, 1, 65535, c->gen.ranks)
		NUM(O_JOBS, 1, 4096, c->gen.jobs)
		NUM(O_ACCESSES, 1, UINT32_MAX - 2, c->gen.accesses)
		NUM(O_SHARDS, 1, UINT32_MAX / 2, c->gen.shards)
		NUM(O_CHUNKS, 1, UINT32_MAX / 2, c->gen.chunks)
		NUM(O_READERS, 1, 65536, c->gen.readers)
		NUM(O_SEED, 0, UINT64_MAX, c->gen.seed)
		NUM(O_PLAN_EPOCHS, 0, 1000000, c->plan_epochs)
		NUM(O_REPEAT, 1, 101, c->repeat)
		NUM(O_PREFETCH_INFLIGHT, 1, 256, c->prefetch_inflight)
#undef NUM
		case O_RANK:
			if (strcmp(a, "all") == 0)
				c->gen.view = -1;
			else if (parse_u64(a, 0, 65534, &v))
				c->gen.view = (int32_t)v;
			else {
				fprintf(stderr, "tiercache-sim: --rank: \"%s\" is not a rank or all\n", a);
				return -EINVAL;
			}
			break;
		case O_ALPHA: {
			char *end = NULL;
			c->gen.alpha = strtod(a, &end);
			if (*end || !(c->gen.alpha >= 0 && c->gen.alpha <= 10)) {
				fprintf(stderr, "tiercache-sim: --alpha: \"%s\" is not in [0, 10]\n", a);
				return -EINVAL;
			}
			break;
		}
		case O_SIZE:
			if (gen_size_parse(&c->gen, a, err, sizeof(err)) < 0) {
				fprintf(stderr, "tiercache-sim: --size: %s\n", err);
				return -EINVAL;
			}
			break;
		case O_PREFETCH_WINDOW:
			if (!gen_parse_bytes(a, &c->prefetch_window)) {
				fprintf(stderr, "tiercache-sim: --prefetch-window: \"%s\" is not a size "
						"(16M, 1G, 0 = off)\n", a);
				return -EINVAL;
			}
			break;
		case O_PREFETCH_RATE:
			if (strcmp(a, "epoch") == 0 || strcmp(a, "trace") == 0) {
				c->rate_epoch = a[0] == 'e';
				c->rate_trace = a[0] == 't';
				c->prefetch_rate = 0;
				break;
			}
			c->rate_epoch = c->rate_trace = false;
			if (!gen_parse_bytes(a, &c->prefetch_rate) || !c->prefetch_rate) {
				fprintf(stderr, "tiercache-sim: --prefetch-rate: \"%s\" is not a rate in "
						"bytes/s (200M, 1G), \"epoch\" or \"trace\"\n", a);
				return -EINVAL;
			}
			break;
		case O_WRITE: c->write_path = a; break;
		case O_HOT: c->hot = a; break;
		case O_WARM: c->warm = a; break;
		case O_HOT_MAX: c->hot_max = a; break;
		case O_WARM_MAX: c->warm_max = a; break;
		case O_POLICY: {
			char buf[512];
			snprintf(buf, sizeof(buf), "%s", a);
			if (cli_add_policies(c, buf) < 0)
				return -EINVAL;
			break;
		}
		case O_SET:
			if (nsets == sizeof(sets) / sizeof(sets[0]))
				return -E2BIG;
			sets[nsets++] = a;
			break;
		case O_PLACEMENT: append(c->placement, sizeof(c->placement), a); break;
		case O_NO_OPT: c->no_opt = true; break;
		case O_EXPLAIN: c->explain = true; break;
		case O_EPOCHS: c->epochs = true; break;
		case O_JSON: c->json = true; break;
		case O_HELP:
		case 'h': usage(stdout); exit(0);
		default:
			if (ch >= O_CURVE_BASE && ch < O_CURVE_BASE + CURVE_OPT_COUNT) {
				curve_cli_opt(&c->curve, ch - O_CURVE_BASE, a);
				break;
			}
			fprintf(stderr, "tiercache-sim: bad option \"%s\" (see --help)\n",
				argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tiercache-sim: unexpected argument \"%s\"\n", argv[optind]);
		return -EINVAL;
	}
	if (!!c->trace_path == c->generate) {
		fprintf(stderr, "tiercache-sim: give one of --trace FILE or --gen KIND\n");
		return -EINVAL;
	}
	if (!c->hot && !c->curve.on) {
		fprintf(stderr, "tiercache-sim: --hot SIZE is required (bytes or a %% of the data set)\n");
		return -EINVAL;
	}
	if (c->rate_trace && (c->prefetch_inflight || c->generate || c->curve.on)) {
		fprintf(stderr, "tiercache-sim: --prefetch-rate trace times the prefetch with the "
				"loads a tierctl trace file recorded (--trace): leave out "
				"--prefetch-inflight, --gen and --curve\n");
		return -EINVAL;
	}
	if ((c->prefetch_rate || c->rate_epoch || c->rate_trace || c->prefetch_inflight) &&
	    !c->prefetch_window) {
		fprintf(stderr, "tiercache-sim: --prefetch-rate and --prefetch-inflight time the plan "
				"prefetch: give --prefetch-window too\n");
		return -EINVAL;
	}
	if (c->explain && (c->json || c->curve.on || c->generate)) {
		fprintf(stderr, "tiercache-sim: --explain compares a recorded trace (--trace) with "
				"the replay, as text: leave out --json, --curve and --gen\n");
		return -EINVAL;
	}
	if ((c->hot_max || c->warm_max) && c->curve.on) {
		fprintf(stderr, "tiercache-sim: --curve sizes each tier itself: leave out --hot-max "
				"and --warm-max\n");
		return -EINVAL;
	}
	if ((c->prefetch_rate || c->rate_epoch) && c->curve.on) {
		fprintf(stderr, "tiercache-sim: --curve models instant prefetch loads: leave out "
				"--prefetch-rate\n");
		return -EINVAL;
	}
	if (!c->npolicies) {
		char all[] = "all";
		cli_add_policies(c, all);
	}
	/* POLICY.KEY=VAL goes to that policy's tunables. */
	for (size_t i = 0; i < nsets; i++) {
		const char *dot = strchr(sets[i], '.'), *eq = strchr(sets[i], '=');
		if (!dot || !eq || dot > eq) {
			fprintf(stderr, "tiercache-sim: --set: \"%s\" is not POLICY.KEY=VALUE\n", sets[i]);
			return -EINVAL;
		}
		bool used = false;
		for (size_t k = 0; k < c->npolicies; k++) {
			if (strlen(c->policies[k]) == (size_t)(dot - sets[i]) &&
			    strncmp(c->policies[k], sets[i], (size_t)(dot - sets[i])) == 0) {
				append(c->tunables[k], sizeof(c->tunables[k]), dot + 1);
				used = true;
			}
		}
		if (!used) {
			fprintf(stderr, "tiercache-sim: --set: \"%s\": that policy is not being run\n",
				sets[i]);
			return -EINVAL;
		}
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int run_policy(const struct cli *c, const struct trace *t, size_t k,
		      const struct sim_config *base, struct sim_result *r)
{
	char err[512];
	double times[101];
	struct sim_config cfg = *base;
	cfg.tunables = c->tunables[k];
	int rc = 0;
	for (uint32_t rep = 0; rep < c->repeat; rep++) {
		sim_result_free(r);
		if ((rc = sim_result_init(r, c->policies[k], t->nepochs)) < 0) {
			fprintf(stderr, "tiercache-sim: out of memory\n");
			return rc;
		}
		if (c->explain && t->has_result && !(r->outcome = malloc(t->n))) {
			fprintf(stderr, "tiercache-sim: --explain: out of memory\n");
			return -ENOMEM;
		}
		rc = sim_run_policy(t, c->policies[k], &cfg, r, err, sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "tiercache-sim: %s\n", err);
			return rc;
		}
		times[rep] = r->seconds;
	}
	qsort(times, c->repeat, sizeof(times[0]), cmp_double);
	r->seconds = times[c->repeat / 2];
	return 0;
}

int main(int argc, char **argv)
{
	struct cli c;
	struct trace t;
	struct sim_result res[MAX_POLICIES + 1];
	size_t nres = 0;
	char err[512];
	int rc = 1;
	uint64_t *rates = NULL; /* --prefetch-rate epoch */

	memset(&c, 0, sizeof(c));
	memset(res, 0, sizeof(res));
	trace_init(&t);
	if (cli_parse(&c, argc, argv) < 0) {
		rc = EX_USAGE_CODE;
		goto out;
	}
	if (c.generate) {
		if (gen_trace(&c.gen, &t, err, sizeof(err)) < 0) {
			fprintf(stderr, "tiercache-sim: --gen %s: %s\n", gen_kind_name(c.gen.kind), err);
			rc = EX_USAGE_CODE;
			goto out;
		}
	} else if (trace_read_csv(&t, c.trace_path, err, sizeof(err)) < 0) {
		fprintf(stderr, "tiercache-sim: %s\n", err);
		goto out;
	}
	if (!t.n) {
		fprintf(stderr, "tiercache-sim: the trace has no accesses\n");
		goto out;
	}
	if (c.write_path) {
		FILE *f = fopen(c.write_path, "w");
		if (!f || trace_write_csv(&t, f) < 0 || fclose(f) != 0) {
			fprintf(stderr, "tiercache-sim: %s: cannot write\n", c.write_path);
			goto out;
		}
	}
	if (c.curve.on) {
		const char *tunables[MAX_POLICIES];
		char source[300];
		for (size_t k = 0; k < c.npolicies; k++)
			tunables[k] = c.tunables[k];
		snprintf(source, sizeof(source), "%s%s", c.generate ? "gen:" : "",
			 c.generate ? gen_kind_name(c.gen.kind) : c.trace_path);
		struct curve_cli_run run = {
			.source = source, .hot = c.hot, .warm = c.warm,
			.policies = c.policies, .tunables = tunables, .npolicies = c.npolicies,
			.plan_epochs = c.plan_epochs, .prefetch_window = c.prefetch_window,
			.placement = c.placement, .no_opt = c.no_opt, .json = c.json,
		};
		rc = curve_cli_main(&c.curve, &t, &run);
		goto out;
	}
	struct sim_config cfg = { .plan_epochs = c.plan_epochs, .placement = c.placement,
				  .prefetch_window = c.prefetch_window,
				  .prefetch_rate = c.prefetch_rate,
				  .prefetch_inflight = (uint32_t)c.prefetch_inflight,
				  .trace_loads = c.rate_trace };
	if (c.rate_trace && !t.nev)
		fprintf(stderr, "tiercache-sim: --prefetch-rate trace: the trace has no prefetch "
				"load rows (the daemon loaded nothing ahead, or an older daemon "
				"recorded it): every chunk loaded ahead whose read missed in the "
				"daemon is late\n");
	if (!parse_capacity(c.hot, t.dataset_bytes, &cfg.hot) || !cfg.hot) {
		fprintf(stderr, "tiercache-sim: --hot: \"%s\" is not a size (64G, 512M, 12.5%%)\n",
			c.hot);
		rc = EX_USAGE_CODE;
		goto out;
	}
	if (c.warm && !parse_capacity(c.warm, t.dataset_bytes, &cfg.warm)) {
		fprintf(stderr, "tiercache-sim: --warm: \"%s\" is not a size (64G, 512M, 12.5%%)\n",
			c.warm);
		rc = EX_USAGE_CODE;
		goto out;
	}
	if (max_parse(&c, &t, &cfg) < 0) {
		rc = EX_USAGE_CODE;
		goto out;
	}
	if (c.rate_epoch) {
		int e = -ENOMEM;
		if (!(rates = calloc(t.nepochs ? t.nepochs : 1, sizeof(*rates))) ||
		    (e = sim_epoch_rates(&t, rates)) < 0) {
			fprintf(stderr, "tiercache-sim: --prefetch-rate epoch: %s\n",
				e == -ENOMEM ? "out of memory"
					     : "the trace needs the daemon's time_us and result "
					       "columns and a miss to time (a rank's read after "
					       "another in the same epoch); tierctl trace records "
					       "them");
			goto out;
		}
		cfg.prefetch_rates = rates;
	}
	struct sim_result *opt = NULL;
	if (!c.no_opt) {
		double times[101];
		opt = &res[nres++];
		for (uint32_t rep = 0; rep < c.repeat; rep++) {
			sim_result_free(opt);
			if (sim_result_init(opt, "opt", t.nepochs) < 0 ||
			    sim_run_opt(&t, cfg.hot + cfg.warm, opt) < 0) {
				fprintf(stderr, "tiercache-sim: opt: out of memory\n");
				goto out;
			}
			times[rep] = opt->seconds;
		}
		qsort(times, c.repeat, sizeof(times[0]), cmp_double);
		opt->seconds = times[c.repeat / 2];
	}
	for (size_t k = 0; k < c.npolicies; k++) {
		int prc = run_policy(&c, &t, k, &cfg, &res[nres++]);
		if (prc < 0) {
			/* a bad tunable is a usage error, like a bad option */
			rc = prc == -EINVAL || prc == -ENOENT ? EX_USAGE_CODE : 1;
			goto out;
		}
	}
	char source[300];
	if (c.generate)
		snprintf(source, sizeof(source), "gen:%s", gen_kind_name(c.gen.kind));
	else
		snprintf(source, sizeof(source), "%s", c.trace_path);
	struct report_info ri = {
		.source = source,
		.t = &t,
		.hot = cfg.hot,
		.warm = cfg.warm,
		.hot_max = cfg.hot_max,
		.warm_max = cfg.warm_max,
		.opt = opt,
		.plan_epochs = c.plan_epochs,
		.prefetch_window = c.prefetch_window,
		.prefetch_rate = c.prefetch_rate,
		.prefetch_rates = rates,
		.trace_timed = c.rate_trace,
		.trace_loads = t.nev,
	};
	if (c.json)
		report_json(stdout, &ri, res, nres, c.epochs);
	else
		report_table(stdout, &ri, res, nres, c.epochs);
	if (c.explain && !t.has_result)
		printf("\nexplain: the trace has no result column to compare with (record it "
		       "with tierctl trace)\n");
	for (size_t k = 0; c.explain && t.has_result && k < nres; k++)
		if (&res[k] != opt)
			explain_print(stdout, &t, &res[k]);
	rc = fflush(stdout) == 0 ? 0 : 1;
out:
	free(rates);
	for (size_t i = 0; i < MAX_POLICIES + 1; i++)
		sim_result_free(&res[i]);
	trace_free(&t);
	return rc;
}
