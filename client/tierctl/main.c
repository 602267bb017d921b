/*
 * tierctl: the tiercache admin CLI. `tierctl [--socket PATH] COMMAND ...`.
 *
 * main() parses the global options, finds the subcommand in the table
 * below, has it check its command line (tierctl_fn with tc NULL), then
 * connects (unless the command runs offline) and hands over. Exit
 * codes: 0 ok, 1 the operation failed, 2 usage error (usage printed).
 * A new subcommand is one row here plus its function in a cmd_*.c file.
 *
 * Single-threaded.
 */
#include "tierctl.h"
#include "cmd_admin.h"
#include "cmd_advise.h"
#include "cmd_policy.h"
#include "cmd_trace.h"
#include "import.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const struct tierctl_cmd tierctl_cmds[] = {
	{
		.name = "status",
		.usage = "[--json]",
		.summary = "daemon, tiers, counters and datasets at a glance",
		.fn = tierctl_cmd_status,
	},
	{
		.name = "datasets",
		.usage = "[--json]",
		.summary = "configured datasets and what is resident",
		.fn = tierctl_cmd_datasets,
	},
	{
		.name = "ls",
		.usage = "[-l] DATASET[/DIR]",
		.summary = "list a directory of a dataset",
		.fn = tierctl_cmd_ls,
		.min_args = 1,
		.max_args = 1,
	},
	{
		.name = "stat",
		.usage = "[--json] DATASET/PATH",
		.summary = "size, mtime and chunk size of a file or directory",
		.fn = tierctl_cmd_stat,
		.min_args = 1,
		.max_args = 1,
	},
	{
		.name = "cat",
		.usage = "DATASET/PATH...",
		.summary = "write files to stdout, read through the cache",
		.fn = tierctl_cmd_cat,
		.min_args = 1,
		.max_args = -1,
	},
	{
		.name = "cluster",
		.usage = "status [--json] | drain [--wait] | undrain",
		.summary = "this node's cluster: members, leases, peers, egress per node and dataset; "
			   "drain: hand this node's chunks to their new homes before it leaves (admin)",
		.fn = tierctl_cmd_cluster,
		.min_args = 1,
		.max_args = 2,
	},
	{
		.name = "refresh",
		.usage = "[--json] DATASET",
		.summary = "rescan a dataset's source and report what changed",
		.fn = tierctl_cmd_refresh,
		.min_args = 1,
		.max_args = 1,
	},
	{
		.name = "policy",
		.usage = TIERCTL_POLICY_USAGE,
		.summary = TIERCTL_POLICY_SUMMARY,
		.fn = tierctl_cmd_policy,
		.min_args = 1,
		.max_args = -1,
	},
	{
		.name = "config",
		.usage = "show [--json] [SECTION]",
		.summary = "the daemon's effective configuration, defaults marked",
		.fn = tierctl_cmd_config,
		.min_args = 1,
		.max_args = 3,
	},
	{
		.name = "reload",
		.usage = "",
		.summary = "re-read the daemon's config file (admin; as SIGHUP)",
		.fn = tierctl_cmd_reload,
	},
	{
		.name = "warm",
		.usage = "[--tier hot|warm] [--verify] [--check] [--json] DATASET[/PATH]...",
		.summary = "load files into the cache ahead of a job (any reader may)",
		.fn = tierctl_cmd_warm,
		.min_args = 1,
		.max_args = -1,
	},
	{
		.name = "pin",
		.usage = "[--json] DATASET[/PATH]",
		.summary = "keep files resident: never demoted or evicted (admin)",
		.fn = tierctl_cmd_pin,
		.min_args = 1,
		.max_args = 1,
	},
	{
		.name = "unpin",
		.usage = "[--json] DATASET[/PATH]",
		.summary = "give pinned files back to the cache policy (admin)",
		.fn = tierctl_cmd_unpin,
		.min_args = 1,
		.max_args = 1,
	},
	{
		.name = "evict",
		.usage = "[--json] DATASET[/PATH]",
		.summary = "drop cached chunks now; pinned ones stay (admin)",
		.fn = tierctl_cmd_evict,
		.min_args = 1,
		.max_args = 1,
	},
	{
		.name = "demote",
		.usage = "[--json] DATASET[/PATH] --to warm",
		.summary = "move cached chunks from hot to warm (admin)",
		.fn = tierctl_cmd_demote,
	},
	{
		.name = "verify",
		.usage = "[--json] [DATASET]",
		.summary = "re-checksum resident chunks, drop bad ones (admin)",
		.fn = tierctl_cmd_verify,
		.max_args = 1,
	},
	{
		.name = "lifecycle",
		.usage = "run [--dry-run] [--older-than DUR] [--dataset NAME] [--as-of TIME] [--json]",
		.summary = "demote / drop data not read for a while (admin)",
		.fn = tierctl_cmd_lifecycle,
	},
	{
		.name = "trace",
		.usage = TIERCTL_TRACE_USAGE,
		.summary = TIERCTL_TRACE_SUMMARY,
		.fn = tierctl_cmd_trace,
		.min_args = 1,
		.max_args = -1,
	},
	{
		.name = "import",
		.usage = TIERCTL_IMPORT_USAGE,
		.summary = TIERCTL_IMPORT_SUMMARY,
		.fn = tierctl_import,
		.min_args = 2,
	},
	{
		.name = "advise",
		.usage = TIERCTL_ADVISE_USAGE,
		.summary = TIERCTL_ADVISE_SUMMARY,
		.fn = tierctl_cmd_advise,
		.offline = true, /* connects itself, only for the capacities */
	},
	{
		.name = "help",
		.usage = "[COMMAND]",
		.summary = "this text, or one command's usage",
		.fn = tierctl_cmd_help,
		.offline = true,
	},
	{.name = NULL},
};

const char *tierctl_socket_path;

const struct tierctl_cmd *tierctl_cmd_find(const char *name)
{
	for (const struct tierctl_cmd *c = tierctl_cmds; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

void tierctl_err(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout); /* keep the order of out and err on a shared terminal */
	fputs("tierctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int tierctl_fail(const char *what)
{
	int err = errno;
	const char *detail = tiercache_last_error();
	if (detail && *detail)
		tierctl_err("%s: %s: %s", what, tiercache_strerror(err), detail);
	else
		tierctl_err("%s: %s", what, tiercache_strerror(err));
	return TIERCTL_EXIT_FAIL;
}

int tierctl_usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("tierctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return TIERCTL_EXIT_USAGE;
}

int tierctl_parse_flags(int argc, char **argv, const struct tierctl_flag *flags, int *npos)
{
	int n = 0;
	bool opts = true;
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		if (opts && strcmp(a, "--") == 0) {
			opts = false;
			continue;
		}
		if (opts && a[0] == '-' && a[1] != '\0') {
			const struct tierctl_flag *f = flags;
			while (f && f->name && strcmp(f->name, a) != 0)
				f++;
			if (!f || !f->name)
				return tierctl_usage_error("%s: unknown option '%s'", argv[0], a);
			*f->set = true;
			continue;
		}
		argv[1 + n++] = a; /* positionals move forward, order kept */
	}
	*npos = n;
	return 0;
}

int tierctl_parse_json(int argc, char **argv, bool *json, int *npos)
{
	*json = false;
	const struct tierctl_flag flags[] = {{"--json", json}, {NULL, NULL}};
	return tierctl_parse_flags(argc, argv, flags, npos);
}

static void usage(FILE *f)
{
	fputs("usage: tierctl [--socket PATH] [--cluster] COMMAND [ARGS...]\n\ncommands:\n", f);
	for (const struct tierctl_cmd *c = tierctl_cmds; c->name; c++) {
		char head[96];
		snprintf(head, sizeof(head), "%s %s", c->name, c->usage);
		fprintf(f, "  %-32s %s\n", head, c->summary);
	}
	fprintf(f,
		"\noptions:\n"
		"  --socket PATH   the daemon's socket (default: $%s, else %s)\n"
		"  --cluster       pin, unpin, evict, demote, policy set, reload: apply on every node\n"
		"                  of the daemon's cluster (each applies it once, a node that is down\n"
		"                  when it comes back); prints the command's id in the stream\n"
		"  --help          this text\n"
		"  --version       print the version\n"
		"\nexit status: 0 ok, 1 the operation failed, 2 usage error\n",
		TIERCACHE_SOCKET_ENV, TIERCACHE_DEFAULT_SOCKET);
}

/* The table's argument count check (see struct tierctl_cmd). */
static bool args_ok(const struct tierctl_cmd *c, int argc, char **argv)
{
	if (c->max_args == 0)
		return true;
	int n = 0;
	bool opts = true;
	for (int i = 1; i < argc; i++) {
		if (opts && strcmp(argv[i], "--") == 0)
			opts = false;
		else if (!opts || argv[i][0] != '-' || argv[i][1] == '\0')
			n++;
	}
	return n >= c->min_args && (c->max_args < 0 || n <= c->max_args);
}

static void cmd_usage(FILE *f, const struct tierctl_cmd *c)
{
	fprintf(f, "usage: tierctl %s %s\n  %s\n", c->name, c->usage, c->summary);
}

int tierctl_cmd_help(struct tiercache *tc, int argc, char **argv)
{
	(void)tc;
	if (argc > 2)
		return tierctl_usage_error("help: too many arguments");
	if (argc == 2) {
		const struct tierctl_cmd *c = tierctl_cmd_find(argv[1]);
		if (!c)
			return tierctl_usage_error("help: unknown command '%s'", argv[1]);
		cmd_usage(stdout, c);
		return TIERCTL_EXIT_OK;
	}
	usage(stdout);
	return TIERCTL_EXIT_OK;
}

/* The command's own check of its command line, before connecting: it
 * runs on a copy of argv because the flag parsers reorder it. Returns 0 or
 * TIERCTL_EXIT_USAGE (problem and the command's usage printed). */
static int check_args(const struct tierctl_cmd *c, int argc, char **argv)
{
	char **copy = calloc((size_t)argc + 1, sizeof(*copy));
	if (!copy) {
		tierctl_err("out of memory");
		return TIERCTL_EXIT_FAIL;
	}
	memcpy(copy, argv, (size_t)argc * sizeof(*copy));
	optind = 0; /* a subcommand may use getopt on its own argv */
	int rc = c->fn(NULL, argc, copy);
	free(copy);
	if (rc == TIERCTL_EXIT_USAGE)
		cmd_usage(stderr, c);
	return rc;
}

#ifndef TIERCACHE_VERSION
#define TIERCACHE_VERSION "unknown"
#endif

/* May cmd go to the whole cluster (--cluster)? The admin broadcast's
 * ops only. */
static bool cluster_ok(const struct tierctl_cmd *c, int argc, char **argv)
{
	static const char *const ok[] = {"pin", "unpin", "evict", "demote", "reload"};
	for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++)
		if (strcmp(c->name, ok[k]) == 0)
			return true;
	return strcmp(c->name, "policy") == 0 && argc > 1 && strcmp(argv[1], "set") == 0;
}

int main(int argc, char **argv)
{
	const char *socket_path = NULL;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--socket") == 0 || strcmp(a, "-s") == 0) {
			if (++i == argc) {
				tierctl_usage_error("%s needs a PATH", a);
				usage(stderr);
				return TIERCTL_EXIT_USAGE;
			}
			socket_path = argv[i];
		} else if (strncmp(a, "--socket=", 9) == 0) {
			socket_path = a + 9;
		} else if (strcmp(a, "--cluster") == 0) {
			tierctl_cluster = true;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return TIERCTL_EXIT_OK;
		} else if (strcmp(a, "--version") == 0) {
			printf("tierctl %s\n", TIERCACHE_VERSION);
			return TIERCTL_EXIT_OK;
		} else if (strcmp(a, "--") == 0) {
			i++;
			break;
		} else {
			tierctl_usage_error("unknown option '%s'", a);
			usage(stderr);
			return TIERCTL_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		tierctl_usage_error("name a COMMAND (tierctl help lists them)");
		usage(stderr);
		return TIERCTL_EXIT_USAGE;
	}
	const struct tierctl_cmd *cmd = tierctl_cmd_find(argv[i]);
	if (!cmd) {
		tierctl_usage_error("unknown command '%s'", argv[i]);
		usage(stderr);
		return TIERCTL_EXIT_USAGE;
	}

	if (tierctl_cluster && !cluster_ok(cmd, argc - i, argv + i)) {
		tierctl_usage_error("--cluster applies to pin, unpin, evict, demote, policy set and reload "
				    "only (not '%s')", cmd->name);
		usage(stderr);
		return TIERCTL_EXIT_USAGE;
	}
	if (!args_ok(cmd, argc - i, argv + i)) {
		tierctl_usage_error("%s: wrong number of arguments", cmd->name);
		cmd_usage(stderr, cmd);
		return TIERCTL_EXIT_USAGE;
	}
	struct tiercache *tc = NULL;
	tierctl_socket_path = socket_path;
	if (!cmd->offline) {
		int rc = check_args(cmd, argc - i, argv + i);
		if (rc)
			return rc;
		tc = tiercache_connect(socket_path);
		if (!tc)
			return tierctl_fail("cannot connect to tiercached");
	}
	optind = 0; /* a subcommand may use getopt on its own argv */
	int rc = cmd->fn(tc, argc - i, argv + i);
	if (rc == TIERCTL_EXIT_SENT)
		rc = TIERCTL_EXIT_OK;
	tiercache_disconnect(tc);
	if (rc == TIERCTL_EXIT_USAGE)
		cmd_usage(stderr, cmd);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		tierctl_err("write error on standard output: %s", strerror(errno));
		return TIERCTL_EXIT_FAIL;
	}
	return rc;
}
