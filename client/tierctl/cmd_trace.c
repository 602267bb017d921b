/*
 * tierctl trace start [--dataset D] [--max-bytes N] [--json] FILE
 * tierctl trace stop [--json]
 *
 * Record every chunk access the daemon serves into FILE, in the CSV format
 * `tiercache-sim --trace` reads (docs/admin.md, docs/simulator.md). The
 * daemon creates FILE itself (as its own user, mode 0600, never over an
 * existing file), so a relative FILE is made absolute here, against
 * tierctl's working directory. Payloads: cached/api/handlers_trace.c.
 *
 * Single-threaded (tierctl).
 */
#include "tierctl.h"
#include "cmd_trace.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "64M", "1G", "4096": bytes; -EINVAL on anything else. */
static int trace_parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	unsigned shift = 0;
	if (*end) {
		const char *u = strchr("KMGT", *end & ~0x20);
		if (!u || end[1])
			return -EINVAL;
		shift = 10u * (unsigned)(u - "KMGT" + 1);
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static void trace_print(const struct proto_recset *rs, bool json, const char *verb)
{
	if (json) {
		tierctl_render_json(stdout, rs);
		return;
	}
	const struct proto_section *s = proto_recset_find(rs, "trace");
	if (!s || !s->nrecords) {
		tierctl_render_human(stdout, rs);
		return;
	}
	const struct proto_record *r = &s->records[0];
	const struct proto_field *file = proto_record_find(r, "file");
	const struct proto_field *recs = proto_record_find(r, "records");
	const struct proto_field *bytes = proto_record_find(r, "file_bytes");
	const struct proto_field *why = proto_record_find(r, "reason");
	const struct proto_field *maxb = proto_record_find(r, "max_bytes");
	if (!file || file->type != TC_VAL_STR || !recs || recs->type != TC_VAL_U64 || !bytes ||
	    bytes->type != TC_VAL_U64) {
		tierctl_render_human(stdout, rs);
		return;
	}
	char hb[32];
	if (strcmp(verb, "start") == 0) {
		tierctl_human_bytes(hb, sizeof(hb), maxb && maxb->type == TC_VAL_U64 ? maxb->v.u : 0);
		printf("tracing into %s (at most %s; tierctl trace stop ends it)\n", file->v.s, hb);
		return;
	}
	tierctl_human_bytes(hb, sizeof(hb), bytes->v.u);
	/* records counts every row; accesses only reads (load rows are the
	 * prefetcher's events): both, so the count means what it says. A
	 * daemon before accesses existed: rows only. */
	const struct proto_field *acc = proto_record_find(r, "accesses");
	if (acc && acc->type == TC_VAL_U64 && acc->v.u <= recs->v.u)
		printf("%" PRIu64 " accesses and %" PRIu64 " load rows recorded, %" PRIu64
		       " bytes (%s) in %s\n",
		       acc->v.u, recs->v.u - acc->v.u, bytes->v.u, hb, file->v.s);
	else
		printf("%" PRIu64 " rows recorded, %" PRIu64 " bytes (%s) in %s\n", recs->v.u,
		       bytes->v.u, hb, file->v.s);
	if (why && why->type == TC_VAL_STR && why->v.s[0])
		printf("%s\n", why->v.s);
}

static int trace_start(struct tiercache *tc, int argc, char **argv)
{
	const char *dataset = "", *file = NULL;
	uint64_t max_bytes = 0;
	bool json = false, opts = true;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (opts && strcmp(a, "--") == 0) {
			opts = false;
		} else if (opts && strcmp(a, "--json") == 0) {
			json = true;
		} else if (opts && (strcmp(a, "--dataset") == 0 || strcmp(a, "--max-bytes") == 0)) {
			if (i + 1 >= argc)
				return tierctl_usage_error("trace start: %s needs a value", a);
			const char *v = argv[++i];
			if (a[2] == 'd') {
				if (!*v || strlen(v) > TC_DATASET_NAME_MAX || strchr(v, '/'))
					return tierctl_usage_error("trace start: '%s' is not a dataset name", v);
				dataset = v;
			} else if (trace_parse_size(v, &max_bytes) < 0 || max_bytes == 0) {
				return tierctl_usage_error("trace start: --max-bytes: '%s' is not a size "
							   "(use 4096, 64M, 1G)", v);
			}
		} else if (opts && a[0] == '-' && a[1]) {
			return tierctl_usage_error("trace start: unknown option '%s'", a);
		} else if (file) {
			return tierctl_usage_error("trace start: one FILE only ('%s' too)", a);
		} else {
			file = a;
		}
	}
	if (!file || !*file)
		return tierctl_usage_error("trace start: need the FILE to write");
	char abs[PATH_MAX];
	if (file[0] == '/') {
		if (strlen(file) >= sizeof(abs))
			return tierctl_usage_error("trace start: '%s' is too long a path", file);
		snprintf(abs, sizeof(abs), "%s", file);
	} else {
		char cwd[PATH_MAX];
		if (!tc)
			return TIERCTL_EXIT_OK; /* resolved once connected */
		if (!getcwd(cwd, sizeof(cwd))) {
			tierctl_err("trace start: cannot resolve '%s': the working directory: %s", file,
				    strerror(errno));
			return TIERCTL_EXIT_FAIL;
		}
		if ((size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, file) >= sizeof(abs)) {
			tierctl_err("trace start: '%s/%s' is too long a path", cwd, file);
			return TIERCTL_EXIT_FAIL;
		}
	}
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */
	struct proto_wr w;
	proto_wr_init(&w);
	proto_wr_begin(&w);
	proto_wr_str(&w, abs);
	proto_wr_str(&w, dataset);
	proto_wr_u64(&w, max_bytes);
	if (w.oom) {
		proto_wr_free(&w);
		tierctl_err("trace start: out of memory");
		return TIERCTL_EXIT_FAIL;
	}
	struct proto_recset rs;
	int rc = tierctl_call_recset(tc, TC_OP_TRACE_START, w.buf + TC_HDR_SIZE, w.len - TC_HDR_SIZE,
				     "trace start", &rs);
	proto_wr_free(&w);
	if (rc)
		return rc;
	trace_print(&rs, json, "start");
	proto_recset_free(&rs);
	return TIERCTL_EXIT_OK;
}

static int trace_stop(struct tiercache *tc, int argc, char **argv)
{
	bool json = false;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else
			return tierctl_usage_error("trace stop: unexpected argument '%s'", argv[i]);
	}
	if (!tc)
		return TIERCTL_EXIT_OK;
	struct proto_recset rs;
	int rc = tierctl_call_recset(tc, TC_OP_TRACE_STOP, NULL, 0, "trace stop", &rs);
	if (rc)
		return rc;
	trace_print(&rs, json, "stop");
	proto_recset_free(&rs);
	return TIERCTL_EXIT_OK;
}

int tierctl_cmd_trace(struct tiercache *tc, int argc, char **argv)
{
	if (argc < 2)
		return tierctl_usage_error("trace: use 'trace start ... FILE' or 'trace stop'");
	if (strcmp(argv[1], "start") == 0)
		return trace_start(tc, argc, argv);
	if (strcmp(argv[1], "stop") == 0)
		return trace_stop(tc, argc, argv);
	return tierctl_usage_error("trace: unknown action '%s' (start or stop)", argv[1]);
}
