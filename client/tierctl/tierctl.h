/*
 * tierctl internals: the subcommand table type, and the helpers every
 * subcommand shares (error messages, exit codes, record-set rendering).
 *
 * Adding a subcommand is one function `int fn(struct tiercache *tc, int
 * argc, char **argv)` in its own cmd_*.c file plus one row in the table in
 * main.c. argv[0] is the subcommand's name, so getopt works as usual (main
 * resets it). Single-threaded program.
 */
#ifndef TIERCACHE_TIERCTL_H
#define TIERCACHE_TIERCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "proto.h"
#include "tiercache.h"

enum tierctl_exit {
	TIERCTL_EXIT_OK = 0,
	TIERCTL_EXIT_FAIL = 1,  /* the operation failed */
	TIERCTL_EXIT_USAGE = 2, /* bad command line: main prints the usage */
	/* internal, never an exit code: a --cluster request was sent (the
	 * helper printed its id); the command stops there and main exits 0 */
	TIERCTL_EXIT_SENT = 100,
};

/* --cluster (main.c): the request goes to every node of the daemon's
 * cluster (TC_F_CLUSTER) instead of being applied on this one. */
extern bool tierctl_cluster;
/* Send op (req, len) with TC_F_CLUSTER and print "sent to the cluster as
 * ID": TIERCTL_EXIT_SENT, or EXIT_FAIL after "tierctl: WHAT: ...". */
int tierctl_cluster_send(struct tiercache *tc, unsigned op, const void *req, size_t len, const char *what);

/* A subcommand returns a tierctl_exit value. On TIERCTL_EXIT_USAGE it has
 * printed what was wrong (tierctl_usage_error) and main adds the usage.
 * main calls a command that needs the daemon twice: first with tc NULL
 * (on a copy of argv), where it checks its whole command line, options,
 * arguments and values, and returns OK or USAGE without any I/O; then
 * connected. So a usage error never needs a running daemon. */
typedef int (*tierctl_fn)(struct tiercache *tc, int argc, char **argv);

struct tierctl_cmd {
	const char *name;
	const char *usage;   /* arguments, shown after "tierctl NAME " */
	const char *summary; /* one line for `tierctl help` */
	tierctl_fn fn;
	bool offline;        /* runs without connecting (tc is NULL) */
	/* Positional arguments (words not starting with '-'), checked before
	 * connecting so a usage error never waits on the daemon. max_args 0:
	 * not checked here; -1: no upper bound. */
	int min_args, max_args;
};

/* --socket PATH, or NULL (the default); for offline commands that connect
 * only when they need to (advise). */
extern const char *tierctl_socket_path;

/* The table, in help order; ends with a row whose name is NULL. */
extern const struct tierctl_cmd tierctl_cmds[];
const struct tierctl_cmd *tierctl_cmd_find(const char *name);

/* ---- messages (stderr, prefixed "tierctl: ") ---- */
void tierctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "tierctl: WHAT: <strerror(errno)>[: <daemon detail>]"; returns EXIT_FAIL.
 * Call right after the failing tiercache_* call. */
int tierctl_fail(const char *what);
int tierctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A subcommand's flags: exact words ("--json", "-l") that set a bool. */
struct tierctl_flag {
	const char *name;
	bool *set;
};
/* Sort argv[1..argc) into flags (table ends with a NULL name) and
 * positional arguments, which end up in argv[1..1+*npos) in order. "--"
 * ends the flags. Returns 0, or TIERCTL_EXIT_USAGE for an unknown flag. */
int tierctl_parse_flags(int argc, char **argv, const struct tierctl_flag *flags, int *npos);
/* The same for the commands whose only flag is --json. */
int tierctl_parse_json(int argc, char **argv, bool *json, int *npos);

/* ---- rendering (render.c) ---- */
/* 1536 -> "1.5K"; below 1 KiB plain bytes ("512B"). */
void tierctl_human_bytes(char *buf, size_t n, uint64_t v);
/* A JSON string literal, quoted and escaped; bytes >= 0x80 pass as is. */
void tierctl_json_str(FILE *f, const char *s);
/* {"section": {...} | [...], ...}, fields in the daemon's order. */
void tierctl_render_json(FILE *f, const struct proto_recset *rs);
/* Objects as aligned "key  value" lines, arrays as tables; *_bytes keys
 * human readable. */
void tierctl_render_human(FILE *f, const struct proto_recset *rs);
/* nanoseconds since the epoch -> "2024-05-01 12:00:00.123456789 UTC" */
void tierctl_format_time(char *buf, size_t n, int64_t ns);

/* ---- shared request helpers (cmd_status.c) ---- */
/* Call op with payload (req, len) and parse the reply as a record set;
 * on failure print "tierctl: WHAT: ..." and return EXIT_FAIL. */
int tierctl_call_recset(struct tiercache *tc, unsigned op, const void *req, size_t len,
			const char *what, struct proto_recset *out);

/* ---- subcommands ---- */
int tierctl_cmd_status(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_datasets(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_refresh(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_ls(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_stat(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_cat(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_config(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_reload(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_help(struct tiercache *tc, int argc, char **argv);
int tierctl_cmd_cluster(struct tiercache *tc, int argc, char **argv);
/* cluster drain [--wait] | cluster undrain (cmd_drain.c); argv[0] is the subcommand. */
int tierctl_cluster_drain(struct tiercache *tc, int argc, char **argv);

#endif
