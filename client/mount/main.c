/*
 * tiercache-mount: mount a dataset of tiercached read-only with FUSE.
 *
 *   tiercache-mount [--socket PATH] [-o OPTIONS] [-f] [-d] [-s]
 *                   DATASET[/SUBDIR] MOUNTPOINT
 *
 * main() parses the command line (our options with fuse_opt, the generic
 * FUSE ones with fuse_parse_cmdline, the rest go to the kernel as mount
 * options), checks that the daemon answers and the source is a directory
 * before mounting, so mistakes are reported on the terminal, then mounts,
 * goes to the background unless -f, and runs libfuse's multithreaded loop
 * until SIGTERM / SIGINT / SIGHUP or `fusermount3 -u`, after which it
 * unmounts and exits 0. Exit 1: could not start; 2: bad command line.
 *
 * Threads: single-threaded until the FUSE loop starts its workers.
 */
#include "tcmount.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nofile.h"
#include "tiercache/protocol.h"

#define EXIT_USAGE 2

enum {
	KEY_HELP,
	KEY_VERSION,
};

struct cli {
	struct tcm_opts o;
	char *mountpoint_arg;
	int nonopt;
	bool help;
	bool version;
	bool bad;
};

#define CLI_OPT(t, field) {t, offsetof(struct cli, field), 0}

static const struct fuse_opt cli_spec[] = {
	CLI_OPT("--socket=%s", o.socket),
	CLI_OPT("--socket %s", o.socket),
	CLI_OPT("reconnect_timeout=%lf", o.reconnect_timeout),
	CLI_OPT("load_timeout=%lf", o.load_timeout),
	CLI_OPT("entry_timeout=%lf", o.entry_timeout),
	CLI_OPT("attr_timeout=%lf", o.attr_timeout),
	CLI_OPT("negative_timeout=%lf", o.negative_timeout),
	CLI_OPT("connections=%u", o.connections),
	{"immutable", offsetof(struct cli, o.immutable), 1},
	CLI_OPT("read_ahead_kb=%u", o.read_ahead_kb),
	{"no_splice", offsetof(struct cli, o.no_splice), 1},
	CLI_OPT("passthrough=%s", o.passthrough),
	CLI_OPT("direct_io=%s", o.direct_io),
	CLI_OPT("job=%s", o.job),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END,
};

static void usage(FILE *f)
{
	fprintf(f, "usage: tiercache-mount [--socket PATH] [-o OPTION[,OPTION...]] [-f] [-d] [-s]\n"
		   "                       DATASET[/SUBDIR] MOUNTPOINT\n"
		   "       tiercache-mount --help | --version\n");
}

static void help(void)
{
	usage(stdout);
	printf("\n"
	       "Mount a dataset served by tiercached as a read-only directory tree, so\n"
	       "programs that read plain files read through the cache. Unmount with\n"
	       "`fusermount3 -u MOUNTPOINT`, or stop the process (SIGTERM / SIGINT).\n"
	       "\n"
	       "Arguments:\n"
	       "    DATASET[/SUBDIR]       the dataset (a [dataset NAME] of the daemon's\n"
	       "                           config), or a directory inside it\n"
	       "    MOUNTPOINT             an existing empty directory\n"
	       "\n"
	       "Options:\n"
	       "    --socket PATH          tiercached's socket (default: $TIERCACHE_SOCKET,\n"
	       "                           else " TIERCACHE_DEFAULT_SOCKET ")\n"
	       "    -f                     stay in the foreground (messages on stderr;\n"
	       "                           in the background they go to syslog)\n"
	       "    -d                     debug: -f, and log every FUSE request\n"
	       "    -s                     single-threaded (default: multithreaded)\n"
	       "    -h, --help             this text\n"
	       "    -V, --version          versions of tiercache-mount and libfuse\n"
	       "\n"
	       "Mount options (-o):\n"
	       "    reconnect_timeout=S    seconds a request waits for tiercached to come\n"
	       "                           back after it stopped or restarted; then it\n"
	       "                           fails with ETIMEDOUT (default %g, 0..86400)\n"
	       "    load_timeout=S         seconds the mount (and each request) waits for\n"
	       "                           a dataset that tiercached is still listing (a\n"
	       "                           daemon that has just started); then ETIMEDOUT\n"
	       "                           (default %g, 0..65535; 0 = fail at once)\n"
	       "    entry_timeout=S        seconds the kernel caches a name (default %g)\n"
	       "    attr_timeout=S         seconds the kernel caches size and mtime; a\n"
	       "                           changed file shows its new size after this or\n"
	       "                           at its next open (default %g)\n"
	       "    negative_timeout=S     seconds the kernel remembers that a name does\n"
	       "                           not exist; 0 = not at all (default %g)\n"
	       "    connections=N          connections to tiercached, 1..%u (default %u)\n"
	       "    immutable              the dataset does not change while mounted: the\n"
	       "                           kernel skips open and close requests (faster\n"
	       "                           small files, page cache always kept); a changed\n"
	       "                           source is seen only after revalidate_after +\n"
	       "                           attr_timeout + min(entry_timeout, attr_timeout),\n"
	       "                           a file open at that moment may mix versions, and\n"
	       "                           tiercached does not see re-reads (docs/mount.md)\n"
	       "    read_ahead_kb=N        kernel readahead window: sequential reads go\n"
	       "                           as 1 MiB requests, several in flight; needs\n"
	       "                           root, else the kernel's 128 stays; 0 = leave\n"
	       "                           it (default %u)\n"
	       "    no_splice              copy read bytes through the mount's memory\n"
	       "                           instead of splicing them from the chunk files\n"
	       "                           into the kernel (slower; for comparison)\n"
	       "    passthrough=auto|off   auto (default): when run as root on a kernel\n"
	       "                           with FUSE passthrough (>= 6.9), the kernel\n"
	       "                           reads a file that is one cached chunk (every\n"
	       "                           small file) from the cache's own file, with no\n"
	       "                           request to the mount and no second page cache;\n"
	       "                           anything else reads through the mount. off:\n"
	       "                           always through the mount\n"
	       "    direct_io=auto|large|off  files over 1 MiB read through the mount: auto\n"
	       "                           (default): with direct I/O (the program's\n"
	       "                           reads go straight from the cache's pages to\n"
	       "                           its buffer; no second page cache) for programs\n"
	       "                           that read in large pieces, learnt per thread;\n"
	       "                           large: always; off: through the page cache of\n"
	       "                           the mount. Needs root and kernel >= 6.6, else off\n"
	       "    job=JOB[:RANK]         the training job (and rank) this mount reads\n"
	       "                           for, as $TIERCACHE_JOB: its reads advance that\n"
	       "                           job's plans, and the files of a plan are\n"
	       "                           opened ahead, so a planned open costs no\n"
	       "                           round trip to tiercached (docs/plans.md)\n"
	       "    allow_other            let other users use the mount (off by default;\n"
	       "                           needs user_allow_other in /etc/fuse.conf unless\n"
	       "                           root). They read with the rights tiercached\n"
	       "                           grants the user who mounted.\n"
	       "    max_threads=N          FUSE worker threads at most (libfuse, default 10)\n"
	       "    max_idle_threads=N     idle FUSE worker threads kept (libfuse)\n"
	       "    clone_fd               one /dev/fuse fd per worker thread (libfuse)\n"
	       "    fsname=NAME            name in /proc/mounts (default tiercache:SOURCE)\n"
	       "\n"
	       "Always set: ro, default_permissions, subtype=tiercache. A dataset with\n"
	       "access = source shows its source's owners and modes; others show files\n"
	       "r--r--r-- and directories r-xr-xr-x, owned by the user who mounted.\n"
	       "Other generic FUSE mount options are passed to the kernel; see below.\n"
	       "\n",
	       TCM_DEFAULT_RECONNECT, TCM_DEFAULT_LOAD, TCM_DEFAULT_ENTRY, TCM_DEFAULT_ATTR, TCM_DEFAULT_NEGATIVE,
	       TCM_MAX_CONNECTIONS, TCM_DEFAULT_CONNECTIONS, TCM_DEFAULT_READ_AHEAD_KB);
	printf("libfuse's generic options:\n");
	fflush(stdout);
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

static int cli_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct cli *c = data;
	(void)outargs;
	switch (key) {
	case KEY_HELP:
		c->help = true;
		return 0;
	case KEY_VERSION:
		c->version = true;
		return 0;
	case FUSE_OPT_KEY_NONOPT:
		if (c->nonopt == 0) {
			c->nonopt++;
			c->o.source = strdup(arg);
			return 0; /* ours: not for fuse_parse_cmdline */
		}
		if (c->nonopt == 1) {
			c->nonopt++;
			return 1; /* the mountpoint: fuse_parse_cmdline takes it */
		}
		fprintf(stderr, "tiercache-mount: unexpected argument \"%s\"\n", arg);
		c->bad = true;
		return 0;
	default:
		return 1; /* generic FUSE option: keep */
	}
}

/* "/ds//sub/" -> "ds/sub". Returns NULL if nothing is left or a component
 * is "." or "..". */
static char *source_normalise(const char *in)
{
	char *out = malloc(strlen(in) + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	const char *p = in;
	while (*p) {
		while (*p == '/')
			p++;
		const char *s = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - s);
		if (n == 0)
			break;
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) {
			free(out);
			return NULL;
		}
		if (o)
			out[o++] = '/';
		memcpy(out + o, s, n);
		o += n;
	}
	out[o] = '\0';
	if (o == 0) {
		free(out);
		return NULL;
	}
	return out;
}

static bool in_range(const char *name, double v, double max)
{
	if (v >= 0 && v <= max)
		return true;
	fprintf(stderr, "tiercache-mount: -o %s=%g is out of range (use 0..%g)\n", name, v, max);
	return false;
}

static bool opts_check(struct tcm_opts *o)
{
	bool ok = in_range("reconnect_timeout", o->reconnect_timeout, 86400) &&
		  in_range("load_timeout", o->load_timeout, TC_F_WAIT_MAX_S) &&
		  in_range("entry_timeout", o->entry_timeout, 1e9) &&
		  in_range("attr_timeout", o->attr_timeout, 1e9) &&
		  in_range("negative_timeout", o->negative_timeout, 1e9);
	if (ok && (o->connections < 1 || o->connections > TCM_MAX_CONNECTIONS)) {
		fprintf(stderr, "tiercache-mount: -o connections=%u is out of range (use 1..%u)\n",
			o->connections, TCM_MAX_CONNECTIONS);
		ok = false;
	}
	if (ok && o->passthrough && strcmp(o->passthrough, "auto") != 0 &&
	    strcmp(o->passthrough, "off") != 0) {
		fprintf(stderr, "tiercache-mount: -o passthrough=%s is not known (use auto or off)\n",
			o->passthrough);
		ok = false;
	}
	if (ok && o->direct_io && strcmp(o->direct_io, "auto") != 0 &&
	    strcmp(o->direct_io, "large") != 0 && strcmp(o->direct_io, "off") != 0) {
		fprintf(stderr,
			"tiercache-mount: -o direct_io=%s is not known (use auto, large or off)\n",
			o->direct_io);
		ok = false;
	}
	if (ok && o->job) {
		char *end;
		errno = 0;
		(void)strtoull(o->job, &end, 0);
		bool bad = errno || end == o->job || *o->job == '-';
		if (!bad && *end == ':') {
			char *r = end + 1;
			unsigned long rank = strtoul(r, &end, 10);
			bad = errno || end == r || *r == '-' || rank >= TIERCACHE_RANK_ANY;
		}
		if (bad || *end) {
			fprintf(stderr, "tiercache-mount: -o job=%s is not JOB or JOB:RANK (JOB a 64-bit "
				"number, decimal or 0x hex; RANK a decimal rank)\n", o->job);
			ok = false;
		}
	}
	if (ok && o->read_ahead_kb > TCM_MAX_READ_AHEAD_KB) {
		fprintf(stderr, "tiercache-mount: -o read_ahead_kb=%u is out of range (use 0..%u)\n",
			o->read_ahead_kb, TCM_MAX_READ_AHEAD_KB);
		ok = false;
	}
	return ok;
}

/* The mount options we always set, and fsname unless the user gave one. */
static int add_mount_opts(struct fuse_args *args, const char *source)
{
	char *opts = NULL;
	char *fsname = NULL;
	bool has_fsname = false;
	for (int i = 0; i < args->argc; i++)
		if (strstr(args->argv[i], "fsname="))
			has_fsname = true;
	int rc = fuse_opt_add_opt(&opts, "ro") || fuse_opt_add_opt(&opts, "default_permissions") ||
		 fuse_opt_add_opt(&opts, "subtype=tiercache");
	if (!rc && !has_fsname) {
		size_t n = strlen(source) + 32;
		fsname = malloc(n);
		if (!fsname)
			rc = -1;
		else {
			snprintf(fsname, n, "fsname=tiercache:%s", source);
			rc = fuse_opt_add_opt_escaped(&opts, fsname);
		}
	}
	if (!rc)
		rc = fuse_opt_add_arg(args, "-o") || fuse_opt_add_arg(args, opts);
	free(fsname);
	free(opts);
	return rc ? -ENOMEM : 0;
}

#define LOAD_REPORT_S 5u /* a progress line this often while a dataset loads */

/* Stat the source, waiting up to -o load_timeout for a dataset that is
 * still loading, with a line on stderr every LOAD_REPORT_S seconds so
 * that whoever started the mount knows why it has not come up yet. The
 * daemon's detail of a wait that ran out carries the files listed so far. */
static int source_stat(struct tcm *m, struct tiercache_stat *st)
{
	struct tiercache *tc = m->pool.tc[0];
	double total = m->o.load_timeout, waited = 0;
	(void)tiercache_set_wait(tc, 0);
	int rc = tiercache_stat(tc, m->o.source, st);
	while (rc < 0 && total > 0 && waited < total &&
	       ((errno == EIO && strstr(tiercache_last_error(), "still loading")) ||
		errno == ETIMEDOUT)) {
		const char *d = tiercache_last_error(), *p = strchr(d, '(');
		unsigned long long listed = 0;
		char ds[TC_DATASET_NAME_MAX + 1];
		snprintf(ds, sizeof(ds), "%.*s", (int)strcspn(m->o.source, "/"), m->o.source);
		if (p && sscanf(p, "(%llu files", &listed) == 1)
			fprintf(stderr, "tiercache-mount: waiting for dataset %s to load (%llu files so "
				"far)...\n", ds, listed);
		else
			fprintf(stderr, "tiercache-mount: waiting for dataset %s to load...\n", ds);
		double slice = total - waited < LOAD_REPORT_S ? total - waited : LOAD_REPORT_S;
		unsigned s = slice < 1 ? 1 : (unsigned)slice;
		(void)tiercache_set_wait(tc, s);
		rc = tiercache_stat(tc, m->o.source, st);
		waited += s;
	}
	(void)tiercache_set_wait(tc, (unsigned)m->o.load_timeout);
	return rc;
}

/* Before mounting: the daemon answers and the source is a directory. */
static int source_check(struct tcm *m)
{
	struct tiercache_stat st;
	if (source_stat(m, &st) < 0) {
		int err = errno;
		const char *detail = tiercache_last_error();
		fprintf(stderr, "tiercache-mount: %s: %s%s%s\n", m->o.source, tiercache_strerror(err),
			*detail ? ": " : "", detail);
		return -err;
	}
	if (st.type != TIERCACHE_DIR) {
		fprintf(stderr, "tiercache-mount: %s: not a directory (mount a dataset or a "
				"directory of one)\n", m->o.source);
		return -ENOTDIR;
	}
	return 0;
}

static int run_loop(struct fuse_session *se, const struct fuse_cmdline_opts *fo)
{
	if (fo->singlethread)
		return fuse_session_loop(se);
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned)fo->clone_fd);
	/* UINT_MAX: not given on the command line, keep libfuse's default */
	if (fo->max_idle_threads != UINT_MAX)
		fuse_loop_cfg_set_idle_threads(cfg, fo->max_idle_threads);
	if (fo->max_threads != UINT_MAX && fo->max_threads != 0)
		fuse_loop_cfg_set_max_threads(cfg, fo->max_threads);
	int rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return rc;
}

/* The strings the option parser allocated. */
static void opts_free(struct tcm_opts *o)
{
	free(o->source);
	free(o->socket);
	free(o->passthrough);
	free(o->direct_io);
	free(o->job);
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_args kargs = FUSE_ARGS_INIT(0, NULL); /* the kernel's, for tcm_pt_mount */
	struct fuse_cmdline_opts fo = {0};
	struct cli c = {
		.o = {
			.reconnect_timeout = TCM_DEFAULT_RECONNECT,
			.load_timeout = TCM_DEFAULT_LOAD,
			.entry_timeout = TCM_DEFAULT_ENTRY,
			.attr_timeout = TCM_DEFAULT_ATTR,
			.negative_timeout = TCM_DEFAULT_NEGATIVE,
			.connections = TCM_DEFAULT_CONNECTIONS,
			.read_ahead_kb = TCM_DEFAULT_READ_AHEAD_KB,
		},
	};
	struct tcm m = {0};
	bool pool_open = false, nodes_open = false, mounted = false, signals = false;
	bool pt_open = false;
	int status = 1;

	if (fuse_opt_parse(&args, &c, cli_spec, cli_proc) != 0 || c.bad) {
		usage(stderr);
		status = EXIT_USAGE;
		goto out;
	}
	if (c.help) {
		help();
		status = 0;
		goto out;
	}
	if (c.version) {
		printf("tiercache-mount %s (libfuse %s)\n", TIERCACHE_VERSION, fuse_pkgversion());
		status = 0;
		goto out;
	}
	if (fuse_parse_cmdline(&args, &fo) != 0) {
		usage(stderr);
		status = EXIT_USAGE;
		goto out;
	}
	if (!c.o.source || !fo.mountpoint) {
		fprintf(stderr, "tiercache-mount: need DATASET[/SUBDIR] and MOUNTPOINT\n");
		usage(stderr);
		status = EXIT_USAGE;
		goto out;
	}
	m.o = c.o;
	c.o = (struct tcm_opts){0}; /* m owns its strings now */
	char *src = source_normalise(m.o.source);
	free(m.o.source);
	m.o.source = src;
	if (!m.o.source || strlen(m.o.source) >= TC_PATH_MAX) {
		fprintf(stderr, "tiercache-mount: DATASET[/SUBDIR] must name a dataset, without "
				"\".\" or \"..\" components\n");
		status = EXIT_USAGE;
		goto out;
	}
	if (!opts_check(&m.o)) {
		status = EXIT_USAGE;
		goto out;
	}
	m.o.debug = fo.debug;
	m.o.foreground = fo.foreground;
	m.dataset = strndup(m.o.source, strcspn(m.o.source, "/"));
	m.uid = getuid();
	m.gid = getgid();
	clock_gettime(CLOCK_REALTIME, &m.dir_time);
	if (!m.dataset)
		goto out;
	enum tcm_dio_mode dmode = !m.o.direct_io || strcmp(m.o.direct_io, "auto") == 0 ? TCM_DIO_AUTO
				  : strcmp(m.o.direct_io, "large") == 0	      ? TCM_DIO_LARGE
									      : TCM_DIO_OFF;
	if (tcm_dio_init(&m.dio, dmode) < 0)
		goto out;
	if (tcm_pt_init(&m.pt, !m.o.passthrough || strcmp(m.o.passthrough, "off") != 0,
			dmode != TCM_DIO_OFF) < 0)
		goto out;
	pt_open = true;
	tcm_log_setup(fo.debug ? TCM_DEBUG : TCM_WARN, false);
	tiercache_set_log(tcm_log_lib, NULL);
	/* every open handle holds its chunk files' descriptors */
	tcm_log(TCM_DEBUG, "nofile=%llu", (unsigned long long)tc_nofile_raise());

	/* options first: a typo is reported before anything else happens */
	if (add_mount_opts(&args, m.o.source) < 0)
		goto out;
	/* the kernel options, for mounting ourselves (fuse_session_new
	 * consumes them) */
	for (int i = 0; i < args.argc; i++) {
		if (fuse_opt_add_arg(&kargs, args.argv[i]) != 0)
			goto out;
		/* other users read: each open must reach the daemon (ops.c) */
		if (strstr(args.argv[i], "allow_other") || strstr(args.argv[i], "allow_root"))
			m.others = true;
	}
	if (m.others && m.o.immutable)
		tcm_log(TCM_INFO, "immutable: opens still reach tiercached, which checks the rights "
			"of each user of the mount (allow_other)");
	m.se = fuse_session_new(&args, &tcm_ops, sizeof(tcm_ops), &m);
	if (!m.se) {
		status = EXIT_USAGE; /* libfuse said why (e.g. an unknown option) */
		goto out;
	}
	{
		/* every connection of the pool (those made later for other
		 * users too) waits this long for a loading dataset */
		char val[32];
		snprintf(val, sizeof(val), "%u", (unsigned)m.o.load_timeout);
		setenv(TIERCACHE_LOAD_TIMEOUT_ENV, val, 1);
	}
	if (m.o.job) /* every connection of the mount carries the job (libtiercache) */
		setenv(TIERCACHE_JOB_ENV, m.o.job, 1);
	if (tcm_pool_open(&m.pool, m.o.socket, m.o.connections, m.o.reconnect_timeout) < 0)
		goto out;
	pool_open = true;
	m.pool.ahead = m.o.job != NULL;
	if (source_check(&m) < 0)
		goto out;
	if (tcm_nodes_init(&m.nodes, m.o.source) < 0)
		goto out;
	nodes_open = true;
	/* a listing answers lookups as long as the kernel would cache them */
	m.dircache = tcm_dircache_new(m.o.entry_timeout < m.o.attr_timeout ? m.o.entry_timeout
									     : m.o.attr_timeout,
				      m.o.negative_timeout);
	if (!m.dircache)
		goto out;
	if (fuse_set_signal_handlers(m.se) != 0)
		goto out;
	signals = true;
	/* as root: mount ourselves, so passthrough can be asked for */
	int prc = tcm_pt_mount(&m, &kargs, fo.mountpoint);
	if (prc < 0 && fuse_session_mount(m.se, fo.mountpoint) != 0)
		goto out;
	mounted = true;
	if (m.o.read_ahead_kb) {
		int rc = tcm_readahead_set(fo.mountpoint, m.o.read_ahead_kb);
		tcm_log(rc < 0 ? TCM_DEBUG : TCM_INFO, "mountpoint=%s read_ahead_kb=%u %s%s",
			fo.mountpoint, m.o.read_ahead_kb, rc < 0 ? "not set: " : "set",
			rc < 0 ? strerror(-rc) : "");
	}
	/* the pool's connections were made before the fork: libtiercache
	 * opens new ones in the child on first use */
	if (fuse_daemonize(fo.foreground) != 0)
		goto out;
	if (!fo.foreground)
		tcm_log_setup(fo.debug ? TCM_DEBUG : TCM_WARN, true);
	tcm_log(TCM_INFO, "source=%s mountpoint=%s mounted", m.o.source, fo.mountpoint);

	if (m.o.immutable && tcm_inval_start(&m) < 0)
		goto out;
	/* > 0: the signal that ended it, a clean stop too */
	int rc = run_loop(m.se, &fo);
	status = rc < 0 ? 1 : 0;
	unsigned long invals = tcm_inval_stop(&m);
	tcm_log(TCM_INFO, "source=%s mountpoint=%s rc=%d direct_opens=%lu opens=%lu "
			  "passthrough_opens=%lu read_requests=%lu immutable_opens=%lu "
			  "immutable_reuse=%lu invalidations=%lu unmounting", m.o.source,
		fo.mountpoint, rc, atomic_load(&m.dio.opens), atomic_load(&m.pt.all_opens),
		atomic_load(&m.pt.opens), atomic_load(&m.pt.reads), atomic_load(&m.imm_opens),
		atomic_load(&m.imm_reuse), invals);
out:
	(void)tcm_inval_stop(&m); /* a failure after it started */
	if (mounted && m.pt.mountpoint)
		tcm_pt_unmount(&m);
	else if (mounted)
		fuse_session_unmount(m.se);
	if (signals)
		fuse_remove_signal_handlers(m.se);
	if (m.se)
		fuse_session_destroy(m.se);
	if (pt_open)
		tcm_pt_free(&m.pt);
	tcm_dio_free(&m.dio);
	tcm_dircache_free(m.dircache);
	if (nodes_open)
		tcm_nodes_free(&m.nodes);
	if (pool_open)
		tcm_pool_close(&m.pool);
	free(m.dataset);
	opts_free(&m.o);
	opts_free(&c.o);
	free(fo.mountpoint);
	fuse_opt_free_args(&args);
	fuse_opt_free_args(&kargs);
	return status;
}
