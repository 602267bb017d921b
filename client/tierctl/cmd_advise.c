/*
 * tierctl advise TRACE [--hot SIZE] [--warm SIZE] [--policy LIST] [--sample R]: what a
 * recorded workload would get from each policy, in words. Runs
 * tiercache-sim (found beside tierctl, or $TIERCACHE_SIM) with --curve
 * --csv at three points: today's capacities, hot doubled, warm doubled
 * (or, without a warm tier, a warm tier the size of hot), and words its
 * table: the best policy today, what each doubling gives, and how far each
 * policy is from OPT. Today's capacities are --hot/--warm, else the running
 * daemon's low watermarks (what its tiers always keep; they fill up to the
 * high watermark and are cut back to the low one).
 *
 * Runs offline: it connects only to ask the daemon for its capacities.
 * Single-threaded (tierctl).
 */
#include "cmd_advise.h"
#include "tierctl.h"
#include "find_tool.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ADVISE_POINTS 3
#define ADVISE_COLS 17 /* OPT + the simulator's 16 policies at most */
#define ADVISE_OUT_MAX ((size_t)1 << 20)

struct advise_cell {
	char policy[64];
	uint64_t accesses, hits;
	double hit_ratio, vs_opt;
	int rank;
};

struct advise_point {
	uint64_t hot, warm;
	struct advise_cell cells[ADVISE_COLS];
	int n;
};

/* "64G", "512M", "1.5G", "4096": bytes (binary units); false if not. */
static bool advise_parse_size(const char *s, uint64_t *out)
{
	char *end = NULL;
	if (!s || *s < '0' || *s > '9')
		return false;
	double v = strtod(s, &end);
	double mul = 1;
	switch (*end) {
	case 'K': case 'k': mul = 1024.0; end++; break;
	case 'M': case 'm': mul = 1048576.0; end++; break;
	case 'G': case 'g': mul = 1073741824.0; end++; break;
	case 'T': case 't': mul = 1099511627776.0; end++; break;
	default: break;
	}
	if (*end == 'B' || *end == 'i')
		end += *end == 'i' && end[1] == 'B' ? 2 : 1;
	if (*end || !(v * mul >= 1) || v * mul > 1e18)
		return false;
	*out = (uint64_t)(v * mul + 0.5);
	return true;
}

/* The daemon's hot and warm low watermarks (capacity if none). */
static int advise_daemon_capacities(uint64_t *hot, uint64_t *warm)
{
	struct tiercache *tc = tiercache_connect(tierctl_socket_path);
	if (!tc) {
		int err = errno;
		tierctl_err("advise: cannot reach tiercached for today's capacities (%s): "
			    "start it, or give --hot SIZE [--warm SIZE]", tiercache_strerror(err));
		return TIERCTL_EXIT_FAIL;
	}
	struct proto_recset rs;
	int rc = tierctl_call_recset(tc, TC_OP_STATUS, NULL, 0, "advise: status", &rs);
	tiercache_disconnect(tc);
	if (rc)
		return rc;
	const struct proto_section *tiers = proto_recset_find(&rs, "tiers");
	for (uint32_t i = 0; tiers && i < tiers->nrecords; i++) {
		const struct proto_record *r = &tiers->records[i];
		const struct proto_field *name = proto_record_find(r, "name");
		const struct proto_field *low = proto_record_find(r, "low_water_bytes");
		const struct proto_field *cap = proto_record_find(r, "capacity_bytes");
		if (!name || !cap)
			continue;
		uint64_t v = low && low->v.u ? low->v.u : cap->v.u;
		if (strcmp(name->v.s, "hot") == 0)
			*hot = v;
		else if (strcmp(name->v.s, "warm") == 0)
			*warm = v;
	}
	proto_recset_free(&rs);
	if (!*hot) {
		tierctl_err("advise: the daemon reported no hot tier; give --hot SIZE");
		return TIERCTL_EXIT_FAIL;
	}
	return TIERCTL_EXIT_OK;
}

/* $TIERCACHE_SIM, else tiercache-sim in tierctl's own directory. */
static int advise_find_sim(char *path, size_t n)
{
	static const char *const names[] = {"tiercache-sim", NULL};
	return tc_find_tool("TIERCACHE_SIM", names, path, n);
}

/* Run the simulator; its standard output (bounded) into *out. Its
 * standard error goes to ours: it names the trace's bad line. */
static int advise_run_sim(char *const argv[], char **out, size_t *outlen)
{
	int p[2];
	if (pipe(p) < 0)
		return -errno;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		int err = errno;
		close(p[0]);
		close(p[1]);
		return -err;
	}
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap);
	bool too_big = false;
	for (;;) {
		if (buf && len + 1 == cap && cap < ADVISE_OUT_MAX) {
			char *nb = realloc(buf, cap * 2);
			if (nb) {
				buf = nb;
				cap *= 2;
			}
		}
		char sink[4096];
		bool room = buf && len + 1 < cap;
		ssize_t r = read(p[0], room ? buf + len : sink, room ? cap - 1 - len : sizeof(sink));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (room)
			len += (size_t)r;
		else
			too_big = true;
	}
	close(p[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!buf)
		return -ENOMEM;
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	if (too_big)
		return -E2BIG;
	if (!WIFEXITED(status))
		return -ECHILD;
	return WEXITSTATUS(status) == 127 ? -ENOEXEC : -WEXITSTATUS(status);
}

/* The simulator's --csv rows into the points (docs/simulator.md). */
static int advise_parse_csv(char *text, struct advise_point *pts)
{
	char *save = NULL;
	bool header = false;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		if (!header) {
			header = strncmp(line, "point,", 6) == 0;
			if (!header)
				return -EBADMSG;
			continue;
		}
		unsigned long p;
		unsigned long long cache, hot, warm, acc, hits, bytes, hbytes;
		double hr, bhr, vs;
		int rank, used = 0;
		char pol[64];
		if (sscanf(line, "%lu,%llu,%llu,%llu,%63[^,],%llu,%llu,%lf,%llu,%llu,%lf,%lf,%d%n", &p,
			   &cache, &hot, &warm, pol, &acc, &hits, &hr, &bytes, &hbytes, &bhr, &vs,
			   &rank, &used) != 13 || line[used] != '\0' || p >= ADVISE_POINTS)
			return -EBADMSG;
		struct advise_point *pt = &pts[p];
		if (pt->n == ADVISE_COLS)
			return -EBADMSG;
		pt->hot = hot;
		pt->warm = warm;
		struct advise_cell *c = &pt->cells[pt->n++];
		snprintf(c->policy, sizeof(c->policy), "%s", pol);
		c->accesses = acc;
		c->hits = hits;
		c->hit_ratio = hr;
		c->vs_opt = vs;
		c->rank = rank;
	}
	for (int p = 0; p < ADVISE_POINTS; p++)
		if (pts[p].n < 2 || strcmp(pts[p].cells[0].policy, "opt") != 0)
			return -EBADMSG;
	return 0;
}

static const struct advise_cell *advise_best(const struct advise_point *pt)
{
	for (int i = 0; i < pt->n; i++)
		if (pt->cells[i].rank == 1)
			return &pt->cells[i];
	return NULL;
}

static const struct advise_cell *advise_find(const struct advise_point *pt, const char *policy)
{
	for (int i = 0; i < pt->n; i++)
		if (strcmp(pt->cells[i].policy, policy) == 0)
			return &pt->cells[i];
	return NULL;
}

static void advise_caps(char *buf, size_t n, const struct advise_point *pt)
{
	char h[32], w[32];
	tierctl_human_bytes(h, sizeof(h), pt->hot);
	tierctl_human_bytes(w, sizeof(w), pt->warm);
	if (pt->warm)
		snprintf(buf, n, "hot %s + warm %s", h, w);
	else
		snprintf(buf, n, "hot %s, no warm tier", h);
}

static void advise_what_if(const char *what, const struct advise_point *pt,
			   const struct advise_cell *today)
{
	char caps[96];
	const struct advise_cell *best = advise_best(pt);
	const struct advise_cell *same = advise_find(pt, today->policy);
	advise_caps(caps, sizeof(caps), pt);
	printf("%s (%s):\n", what, caps);
	if (same)
		printf("  %s: %.1f%% of reads hit (%+.1f points)", today->policy,
		       100 * same->hit_ratio, 100 * (same->hit_ratio - today->hit_ratio));
	if (best && same && best != same && best->hits > same->hits) /* not a tie */
		printf("; best there: %s, %.1f%%", best->policy, 100 * best->hit_ratio);
	printf("; OPT %.1f%%\n", 100 * pt->cells[0].hit_ratio);
}

static void advise_words(const char *trace, const struct advise_point *pts, bool from_daemon)
{
	char caps[96];
	const struct advise_point *now = &pts[0];
	const struct advise_cell *best = advise_best(now), *opt = &now->cells[0];
	advise_caps(caps, sizeof(caps), now);
	printf("workload: %s (%llu reads)\n", trace, (unsigned long long)opt->accesses);
	printf("today: %s%s\n\n", caps,
	       from_daemon ? " (the daemon's low watermarks: what its tiers always keep)" : "");
	printf("best policy at today's capacities: %s, %.1f%% of reads hit, %.2f of OPT "
	       "(OPT: %.1f%%)\n",
	       best->policy, 100 * best->hit_ratio, best->vs_opt, 100 * opt->hit_ratio);
	if (strcmp(best->policy, "clairvoyant") == 0)
		printf("  (clairvoyant needs plans: the job must register its read order, "
		       "docs/plans.md; without one, see the next policy below)\n");
	printf("each policy against OPT (Belady, the best any policy could do without "
	       "prefetch):\n");
	for (int r = 1; r < now->n; r++)
		for (int i = 1; i < now->n; i++)
			if (now->cells[i].rank == r)
				printf("  %-12s %5.1f%% hits  %.2f of OPT%s\n", now->cells[i].policy,
				       100 * now->cells[i].hit_ratio, now->cells[i].vs_opt,
				       now->cells[i].vs_opt >= 0.95 ? "  (at OPT: a bigger cache is "
								      "the only way up)" : "");
	printf("\n");
	advise_what_if("doubling hot", &pts[1], best);
	advise_what_if(now->warm ? "doubling warm" : "adding a warm tier the size of hot",
		       &pts[2], best);
	const struct advise_cell *h = advise_find(&pts[1], best->policy);
	const struct advise_cell *w = advise_find(&pts[2], best->policy);
	if (h && w) {
		double dh = h->hit_ratio - best->hit_ratio, dw = w->hit_ratio - best->hit_ratio;
		if (dh < 0.005 && dw < 0.005)
			printf("\nneither doubling helps %s by half a point: the cache is big "
			       "enough for this workload\n", best->policy);
		else
			printf("\nfor %s, %s gives more (%+.1f points against %+.1f)\n",
			       best->policy, dw > dh ? (now->warm ? "doubling warm" : "a warm tier")
						     : "doubling hot",
			       100 * (dw > dh ? dw : dh), 100 * (dw > dh ? dh : dw));
	}
}

int tierctl_cmd_advise(struct tiercache *tc, int argc, char **argv)
{
	(void)tc;
	const char *trace = NULL, *hot_s = NULL, *warm_s = NULL, *sample = NULL, *policy = NULL;
	for (int i = 1; i < argc; i++) {
		const char **dst = strcmp(argv[i], "--hot") == 0    ? &hot_s
				   : strcmp(argv[i], "--warm") == 0   ? &warm_s
				   : strcmp(argv[i], "--sample") == 0 ? &sample
				   : strcmp(argv[i], "--policy") == 0 ? &policy
								      : NULL;
		if (dst) {
			if (++i == argc)
				return tierctl_usage_error("advise: %s needs a value", argv[i - 1]);
			*dst = argv[i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return tierctl_usage_error("advise: unknown option '%s'", argv[i]);
		} else if (trace) {
			return tierctl_usage_error("advise: one TRACE only ('%s')", argv[i]);
		} else {
			trace = argv[i];
		}
	}
	uint64_t hot = 0, warm = 0;
	if (!trace)
		return tierctl_usage_error("advise: name a TRACE (a CSV from tierctl trace, or "
					   "tiercache-sim --write-trace)");
	if (hot_s && !advise_parse_size(hot_s, &hot))
		return tierctl_usage_error("advise: --hot: '%s' is not a size (64G, 512M)", hot_s);
	if (warm_s && strcmp(warm_s, "0") != 0 && !advise_parse_size(warm_s, &warm))
		return tierctl_usage_error("advise: --warm: '%s' is not a size (64G, 512M, 0)",
					   warm_s);
	if (warm_s && !hot_s)
		return tierctl_usage_error("advise: --warm needs --hot");
	if (access(trace, R_OK) < 0) {
		tierctl_err("advise: %s: %s", trace, strerror(errno));
		return TIERCTL_EXIT_FAIL;
	}
	char sim[PATH_MAX + 32];
	if (advise_find_sim(sim, sizeof(sim)) < 0) {
		tierctl_err("advise: cannot find tiercache-sim beside tierctl; install it, or set "
			    "TIERCACHE_SIM=PATH");
		return TIERCTL_EXIT_FAIL;
	}
	bool from_daemon = !hot_s;
	if (from_daemon) {
		int rc = advise_daemon_capacities(&hot, &warm);
		if (rc)
			return rc;
	}
	char sizes[200];
	uint64_t warm2 = warm ? 2 * warm : hot;
	snprintf(sizes, sizeof(sizes), "%llu:%llu,%llu:%llu,%llu:%llu", (unsigned long long)hot,
		 (unsigned long long)warm, (unsigned long long)(2 * hot), (unsigned long long)warm,
		 (unsigned long long)hot, (unsigned long long)warm2);
	char *args[16];
	int na = 0;
	args[na++] = sim;
	args[na++] = (char *)"--trace";
	args[na++] = (char *)trace;
	args[na++] = (char *)"--curve";
	args[na++] = (char *)"--csv";
	args[na++] = (char *)"--sizes";
	args[na++] = sizes;
	if (sample) {
		args[na++] = (char *)"--sample";
		args[na++] = (char *)sample;
	}
	if (policy) {
		args[na++] = (char *)"--policy";
		args[na++] = (char *)policy;
	}
	args[na] = NULL;
	char *out = NULL;
	size_t outlen = 0;
	int rc = advise_run_sim(args, &out, &outlen);
	if (rc < 0) {
		if (rc == -ENOEXEC)
			tierctl_err("advise: cannot run %s", sim);
		else if (rc == -E2BIG)
			tierctl_err("advise: %s printed more than expected", sim);
		else
			tierctl_err("advise: the simulator could not replay %s (its message is "
				    "above); fix the trace or the options and run again", trace);
		free(out);
		return TIERCTL_EXIT_FAIL;
	}
	struct advise_point pts[ADVISE_POINTS];
	memset(pts, 0, sizeof(pts));
	if (advise_parse_csv(out, pts) < 0 || !advise_best(&pts[0])) {
		tierctl_err("advise: %s printed a table tierctl cannot read (versions differ?)",
			    sim);
		free(out);
		return TIERCTL_EXIT_FAIL;
	}
	free(out);
	advise_words(trace, pts, from_daemon);
	return TIERCTL_EXIT_OK;
}
