/*
 * tiercache-sim --curve: options, sizes, output and the plot. See
 * curve_cli.h; the curve itself is curve.c. Single-threaded.
 */
#include "curve_cli.h"

#include "curve.h"
#include "find_tool.h"
#include "gen.h"
#include "report.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CURVE_EX_USAGE 64
#define CURVE_DEFAULT_POINTS 10
/* Above this many accesses, sample unless --sample says otherwise. */
#define CURVE_AUTO_SAMPLE_ACCESSES ((size_t)4 << 20)

int curve_cli_opt(struct curve_cli *cc, int which, const char *arg)
{
	switch (which) {
	case CURVE_OPT_CURVE: cc->on = true; break;
	case CURVE_OPT_SIZES: cc->sizes = arg; break;
	case CURVE_OPT_POINTS: cc->points = arg; break;
	case CURVE_OPT_SAMPLE: cc->sample = arg; break;
	case CURVE_OPT_WARM_SHARE: cc->warm_share = arg; break;
	case CURVE_OPT_PLOT: cc->plot = arg; break;
	case CURVE_OPT_CSV: cc->csv = true; break;
	default: return -EINVAL;
	}
	return 0;
}

/* "64G", "512M", "12.5%" of the data set; more than 0 bytes. */
static bool curve_cli_size(const char *s, size_t n, uint64_t dataset, uint64_t *out)
{
	char buf[64];
	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (buf[n - 1] == '%') {
		char *end = NULL;
		double pct = strtod(buf, &end);
		if (end != buf + n - 1 || !(pct > 0 && pct <= 1e6))
			return false;
		*out = (uint64_t)((double)dataset * pct / 100.0 + 0.5);
		return *out > 0;
	}
	return gen_parse_bytes(buf, out) && *out > 0;
}

static bool curve_cli_double(const char *s, double lo, double hi, double *out)
{
	char *end = NULL;
	if (!s || !*s)
		return false;
	double v = strtod(s, &end);
	if (*end || !(v >= lo && v <= hi))
		return false;
	*out = v;
	return true;
}

/* The points: --sizes, or --points fractions of the data set. */
static int curve_cli_sizes(const struct curve_cli *cc, const struct trace *t, double share,
			   uint64_t *hot, uint64_t *warm, size_t *n)
{
	*n = 0;
	if (!cc->sizes) {
		uint64_t np = CURVE_DEFAULT_POINTS;
		char *end = NULL;
		if (cc->points) {
			np = strtoull(cc->points, &end, 10);
			if (*cc->points < '0' || *cc->points > '9' || *end || np < 1 ||
			    np > CURVE_MAX_POINTS) {
				fprintf(stderr, "tiercache-sim: --points: \"%s\" is not an integer "
						"in [1, %d]\n", cc->points, CURVE_MAX_POINTS);
				return -EINVAL;
			}
		}
		for (uint64_t k = 1; k <= np; k++) {
			uint64_t s = (uint64_t)((double)t->dataset_bytes * (double)k / (double)np + 0.5);
			curve_split(s ? s : 1, share, &hot[*n], &warm[*n]);
			(*n)++;
		}
		return 0;
	}
	for (const char *s = cc->sizes; *s;) {
		size_t len = strcspn(s, ",");
		const char *colon = memchr(s, ':', len);
		if (*n == CURVE_MAX_POINTS) {
			fprintf(stderr, "tiercache-sim: --sizes: at most %d sizes\n", CURVE_MAX_POINTS);
			return -EINVAL;
		}
		bool ok;
		if (colon) {
			size_t wl = len - (size_t)(colon - s) - 1;
			warm[*n] = 0; /* HOT:0 is a point without a warm tier */
			ok = curve_cli_size(s, (size_t)(colon - s), t->dataset_bytes, &hot[*n]) &&
			     ((wl == 1 && colon[1] == '0') ||
			      curve_cli_size(colon + 1, wl, t->dataset_bytes, &warm[*n]));
		} else {
			uint64_t total;
			ok = curve_cli_size(s, len, t->dataset_bytes, &total);
			if (ok)
				curve_split(total, share, &hot[*n], &warm[*n]);
		}
		if (!ok || !hot[*n]) {
			fprintf(stderr,
				"tiercache-sim: --sizes: \"%.*s\" is not a cache size (64G, 512M, "
				"12.5%% of the data set, or HOT:WARM such as 30M:72M)\n",
				(int)len, s);
			return -EINVAL;
		}
		(*n)++;
		s += len;
		if (*s == ',')
			s++;
	}
	if (!*n) {
		fprintf(stderr, "tiercache-sim: --sizes: no size given\n");
		return -EINVAL;
	}
	return 0;
}

/* The plotter: $TIERCACHE_PLOT_CURVE, tiercache-plot-curve beside this
 * program (installed), or scripts/plot-curve of the source tree this
 * program was built in (BUILD/bin/tiercache-sim). */
static int curve_cli_plotter(char *path, size_t n)
{
	static const char *const names[] = {"tiercache-plot-curve", "../../../scripts/plot-curve",
					    NULL};
	return tc_find_tool("TIERCACHE_PLOT_CURVE", names, path, n);
}

static int curve_cli_plot(const struct curve_cli *cc, const struct report_info *ri,
			  const struct curve *c)
{
	char plotter[PATH_MAX + 64], csv[PATH_MAX];
	if (curve_cli_plotter(plotter, sizeof(plotter)) < 0) {
		fprintf(stderr,
			"tiercache-sim: --plot: cannot find the plotter (tiercache-plot-curve next "
			"to tiercache-sim, or scripts/plot-curve); set TIERCACHE_PLOT_CURVE=PATH\n");
		return 1;
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(csv, sizeof(csv), "%s/tiercache-curve.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int fd = mkstemp(csv);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "tiercache-sim: --plot: cannot write a temporary file in %s: %s\n",
			tmp && *tmp ? tmp : "/tmp", strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(csv);
		}
		return 1;
	}
	report_curve_csv(f, ri, c);
	if (fclose(f) != 0) {
		fprintf(stderr, "tiercache-sim: --plot: %s: %s\n", csv, strerror(errno));
		unlink(csv);
		return 1;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execl(plotter, plotter, csv, cc->plot, ri->source, (char *)NULL);
		fprintf(stderr, "tiercache-sim: --plot: cannot run %s: %s\n", plotter,
			strerror(errno));
		_exit(126);
	}
	int status = 0, rc = 1;
	if (pid < 0)
		fprintf(stderr, "tiercache-sim: --plot: cannot start the plotter: %s\n",
			strerror(errno));
	else if (waitpid(pid, &status, 0) < 0)
		fprintf(stderr, "tiercache-sim: --plot: %s\n", strerror(errno));
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		rc = 0;
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		fprintf(stderr, "tiercache-sim: --plot: python3 is not installed "
				"(apt-get install python3 python3-matplotlib)\n");
	else
		fprintf(stderr, "tiercache-sim: --plot: %s failed; %s not written\n", plotter,
			cc->plot);
	unlink(csv);
	return rc;
}

int curve_cli_main(const struct curve_cli *cc, const struct trace *t,
		   const struct curve_cli_run *run)
{
	uint64_t hot[CURVE_MAX_POINTS], warm[CURVE_MAX_POINTS], h = 0, w = 0;
	double share = 0, sample = 1;
	char err[512];
	size_t n;
	struct curve c = { 0 };
	int rc = CURVE_EX_USAGE;

	if (run->hot && !curve_cli_size(run->hot, strlen(run->hot), t->dataset_bytes, &h)) {
		fprintf(stderr, "tiercache-sim: --hot: \"%s\" is not a size (64G, 512M, 12.5%%)\n",
			run->hot);
		return rc;
	}
	if (run->warm && !curve_cli_size(run->warm, strlen(run->warm), t->dataset_bytes, &w)) {
		fprintf(stderr, "tiercache-sim: --warm: \"%s\" is not a size (64G, 512M, 12.5%%)\n",
			run->warm);
		return rc;
	}
	if (h)
		share = (double)w / (double)(h + w);
	if (cc->warm_share && !curve_cli_double(cc->warm_share, 0, 0.99, &share)) {
		fprintf(stderr, "tiercache-sim: --warm-share: \"%s\" is not a number in [0, 0.99]\n",
			cc->warm_share);
		return rc;
	}
	if (cc->sample) {
		if (!curve_cli_double(cc->sample, 1e-9, 1, &sample) || sample <= 0) {
			fprintf(stderr, "tiercache-sim: --sample: \"%s\" is not a rate in (0, 1] "
					"(0.01 keeps about 1%% of the objects)\n", cc->sample);
			return rc;
		}
	} else if (t->n > CURVE_AUTO_SAMPLE_ACCESSES) {
		sample = (double)CURVE_AUTO_SAMPLE_ACCESSES / (double)t->n;
	}
	if (curve_cli_sizes(cc, t, share, hot, warm, &n) < 0)
		return rc;

	struct curve_opts o = {
		.hot = hot,
		.warm = warm,
		.npoints = n,
		.policies = run->policies,
		.tunables = run->tunables,
		.npolicies = run->npolicies,
		.plan_epochs = run->plan_epochs,
		.prefetch_window = run->prefetch_window,
		.placement = run->placement,
		.sample = sample,
		.no_opt = run->no_opt,
	};
	int crc = curve_run(t, &o, &c, err, sizeof(err));
	if (crc < 0) {
		fprintf(stderr, "tiercache-sim: --curve: %s\n", err);
		rc = crc == -EINVAL || crc == -ENOENT ? CURVE_EX_USAGE : 1;
		goto out;
	}
	struct report_info ri = { .source = run->source, .t = t };
	double shown_share = cc->sizes && strchr(cc->sizes, ':') ? -1 : share;
	if (run->json)
		report_curve_json(stdout, &ri, &c, shown_share);
	else if (cc->csv)
		report_curve_csv(stdout, &ri, &c);
	else
		report_curve_table(stdout, &ri, &c, shown_share);
	rc = 0;
	if (cc->plot) {
		rc = curve_cli_plot(cc, &ri, &c);
		if (rc == 0 && !run->json && !cc->csv)
			printf("\nplot: %s\n", cc->plot);
	}
	if (fflush(stdout) != 0)
		rc = 1;
out:
	curve_free(&c);
	return rc;
}
