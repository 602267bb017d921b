/*
 * tierctl warm DATASET[/PATH ...] [--tier hot|warm] [--verify] [--check]
 * [--json]: load files into the cache ahead of a job (--check: load
 * nothing, only report what is resident).
 *
 * The client walks the targets (STAT, LISTDIR), then asks the daemon to
 * warm each file WARM_RANGE chunks at a time (TC_OP_WARM), so progress
 * moves in small steps and ^C stops within one step. Chunks already
 * resident cost nothing: re-running an interrupted warmup resumes it.
 * Then one check pass (TC_WARM_F_CHECK) counts what is resident now, per
 * tier: later files may have pushed earlier ones out, and the report must
 * say what is true at the end, not what was true along the way. Any chunk
 * not resident (on the asked tier, with --tier) is a failure: exit 1 and
 * how much is missing, and why where the daemon said (each failed chunk's
 * reason: no room, a cold read error, a checksum...).
 *
 * --verify: the daemon re-reads each chunk and checks its checksum; a bad
 * one is dropped and read again from the cold store (then checked again).
 * Reported as such; exit 0 if everything is resident with the right bytes
 * in the end, 1 if a chunk could not be read again or is missing.
 *
 * Progress on stderr: a bar redrawn in place on a terminal, else a plain
 * line every few seconds. Single-threaded (tierctl).
 */
#include "cmd_admin.h"
#include "tierctl.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WARM_RANGE 8u        /* chunks per WARM request */
#define WARM_FILES_MAX (1u << 24)
#define WARM_DEPTH_MAX 64    /* directory levels walked */

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct wfile {
	char *path;
	uint64_t size;
};

struct warm {
	struct tiercache *tc;
	struct wfile *v;
	size_t n, cap;
	uint64_t total;
	uint32_t chunk_size;
	/* totals of the warm pass */
	uint64_t done, filled, checked_chunks, bad_chunks, bad_bytes, failed_bytes;
	uint64_t refetched_chunks, failed_chunks;
	struct tierctl_fails fails; /* why chunks failed, by reason */
	size_t errors;
	/* the check pass */
	uint64_t hot, warm, missing;
	/* progress */
	bool tty;
	double t0, last_print;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int add_file(struct warm *w, const char *path, uint64_t size)
{
	if (w->n >= WARM_FILES_MAX) {
		tierctl_err("warm: more than %u files; warm a directory at a time", WARM_FILES_MAX);
		return -E2BIG;
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 256;
		struct wfile *v = realloc(w->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		w->v = v;
		w->cap = cap;
	}
	if (!(w->v[w->n].path = strdup(path)))
		return -ENOMEM;
	w->v[w->n++].size = size;
	w->total += size;
	return 0;
}

static int walk(struct warm *w, const char *dir, int depth)
{
	if (depth > WARM_DEPTH_MAX) {
		tierctl_err("warm: %s: directories nested deeper than %d levels", dir, WARM_DEPTH_MAX);
		return -ELOOP;
	}
	struct tiercache_dir *d = tiercache_opendir(w->tc, dir);
	if (!d) {
		char what[TC_PATH_MAX + 16];
		snprintf(what, sizeof(what), "warm %s", dir);
		tierctl_fail(what);
		return -EIO;
	}
	int rc = 0;
	const struct tiercache_dirent *e;
	errno = 0;
	while (rc == 0 && (e = tiercache_readdir(d))) {
		char *p;
		if (asprintf(&p, "%s/%s", dir, e->name) < 0) {
			rc = -ENOMEM;
			break;
		}
		rc = e->type == TIERCACHE_DIR ? walk(w, p, depth + 1) : add_file(w, p, e->size);
		free(p);
		errno = 0;
	}
	if (rc == 0 && errno) {
		char what[TC_PATH_MAX + 16];
		snprintf(what, sizeof(what), "warm %s", dir);
		tierctl_fail(what);
		rc = -EIO;
	}
	tiercache_closedir(d);
	return rc;
}

static void fmt_eta(char *buf, size_t n, double s)
{
	if (s < 0 || s > 360000)
		snprintf(buf, n, "--:--");
	else if (s >= 3600)
		snprintf(buf, n, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
	else
		snprintf(buf, n, "%d:%02d", (int)s / 60, (int)s % 60);
}

static void progress(struct warm *w, bool final)
{
	double t = now_s();
	if (!final && t - w->last_print < (w->tty ? 0.2 : 5.0))
		return;
	w->last_print = t;
	double el = t - w->t0;
	double rate = el > 0 ? (double)w->done / el : 0;
	double pct = w->total ? 100.0 * (double)w->done / (double)w->total : 100.0;
	char done[32], total[32], r[32], eta[32];
	tierctl_human_bytes(done, sizeof(done), w->done);
	tierctl_human_bytes(total, sizeof(total), w->total);
	tierctl_human_bytes(r, sizeof(r), (uint64_t)rate);
	fmt_eta(eta, sizeof(eta), rate > 0 ? (double)(w->total - w->done) / rate : -1);
	if (w->tty) {
		char bar[31];
		int fillw = (int)(pct * 30 / 100);
		for (int i = 0; i < 30; i++)
			bar[i] = i < fillw ? '#' : '.';
		bar[30] = '\0';
		fprintf(stderr, "\r[%s] %5.1f%% %s/%s %s/s ETA %s  ", bar, pct, done, total, r, eta);
		if (final)
			fputc('\n', stderr);
	} else {
		fprintf(stderr, "warm: %s of %s (%.1f%%) %s/s ETA %s\n", done, total, pct, r, eta);
	}
	fflush(stderr);
}

/* One WARM request; its "result" record into *out (caller frees rs). */
static int warm_call(struct warm *w, const char *path, uint8_t tier, uint8_t flags, uint32_t first,
		     uint32_t count, struct proto_recset *rs, const struct proto_record **out)
{
	struct proto_wr pw;
	char what[TC_PATH_MAX + 16];
	snprintf(what, sizeof(what), "warm %s", path);
	proto_wr_init(&pw);
	proto_wr_begin(&pw);
	proto_wr_str(&pw, path);
	proto_wr_u8(&pw, tier);
	proto_wr_u8(&pw, flags);
	proto_wr_u32(&pw, first);
	proto_wr_u32(&pw, count);
	int rc = pw.oom ? TIERCTL_EXIT_FAIL
			: tierctl_call_recset(w->tc, TC_OP_WARM, pw.buf + TC_HDR_SIZE,
					      pw.len - TC_HDR_SIZE, what, rs);
	proto_wr_free(&pw);
	if (rc)
		return rc;
	const struct proto_section *sec = proto_recset_find(rs, "result");
	if (!sec || sec->nrecords != 1) {
		proto_recset_free(rs);
		tierctl_err("%s: malformed reply from tiercached", what);
		return TIERCTL_EXIT_FAIL;
	}
	*out = &sec->records[0];
	return 0;
}

static void warm_file(struct warm *w, const struct wfile *f, uint8_t tier, uint8_t flags)
{
	uint32_t cs = w->chunk_size;
	uint64_t nchunks = f->size ? (f->size + cs - 1) / cs : 0;
	uint64_t before = w->done;
	for (uint64_t first = 0; first < nchunks && !interrupted; first += WARM_RANGE) {
		struct proto_recset rs;
		const struct proto_record *r;
		if (warm_call(w, f->path, tier, flags, (uint32_t)first, WARM_RANGE, &rs, &r)) {
			w->errors++;
			break;
		}
		w->done += tierctl_field_u64(r, "selected_bytes");
		w->filled += tierctl_field_u64(r, "filled_bytes");
		w->checked_chunks += tierctl_field_u64(r, "checked_chunks");
		w->bad_chunks += tierctl_field_u64(r, "bad_chunks");
		w->bad_bytes += tierctl_field_u64(r, "bad_bytes");
		w->failed_bytes += tierctl_field_u64(r, "failed_bytes");
		w->failed_chunks += tierctl_field_u64(r, "failed_chunks");
		w->refetched_chunks += tierctl_field_u64(r, "refetched_chunks");
		tierctl_fails_add(&w->fails, &rs);
		proto_recset_free(&rs);
		progress(w, false);
	}
	if (!interrupted)
		w->done = before + f->size; /* an error skips the rest of the file */
}

/* What is resident now, per tier. */
static void check_file(struct warm *w, const struct wfile *f)
{
	struct proto_recset rs;
	const struct proto_record *r;
	if (!f->size)
		return;
	if (warm_call(w, f->path, TC_TIER_NONE, TC_WARM_F_CHECK, 0, 0, &rs, &r)) {
		w->missing += f->size;
		return;
	}
	w->hot += tierctl_field_u64(r, "hot_bytes");
	w->warm += tierctl_field_u64(r, "warm_bytes");
	w->missing += tierctl_field_u64(r, "missing_bytes");
	proto_recset_free(&rs);
}

static void line(const char *label, uint64_t v)
{
	char h[32];
	tierctl_human_bytes(h, sizeof(h), v);
	printf("  %-18s %8s  (%" PRIu64 " bytes)\n", label, h, v);
}

int tierctl_cmd_warm(struct tiercache *tc, int argc, char **argv)
{
	const char *tier_s = NULL;
	bool verify = false, json = false, check_only = false;
	int rc = tierctl_take_option(&argc, argv, "--tier", &tier_s);
	if (rc)
		return rc;
	const struct tierctl_flag flags[] = {
		{"--verify", &verify},
		{"--json", &json},
		{"--check", &check_only},
		{NULL, NULL},
	};
	int npos;
	if ((rc = tierctl_parse_flags(argc, argv, flags, &npos)))
		return rc;
	if (!npos)
		return tierctl_usage_error("warm: name at least one DATASET[/PATH]");
	uint8_t tier = TC_TIER_NONE;
	if (tier_s) {
		if (strcmp(tier_s, "hot") == 0)
			tier = TC_TIER_HOT;
		else if (strcmp(tier_s, "warm") == 0)
			tier = TC_TIER_WARM;
		else
			return tierctl_usage_error("warm: unknown tier '%s' (use --tier hot or --tier warm)",
						   tier_s);
	}
	for (int i = 1; i <= npos; i++)
		if (!*argv[i] || argv[i][0] == '/' || strlen(argv[i]) >= TC_PATH_MAX)
			return tierctl_usage_error("warm: '%s' is not DATASET or DATASET/PATH (relative)",
						   argv[i]);
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */

	struct warm w = {.tc = tc, .tty = isatty(STDERR_FILENO) == 1};
	for (int i = 1; i <= npos && rc == 0; i++) {
		struct tiercache_stat st;
		char t[TC_PATH_MAX];
		snprintf(t, sizeof(t), "%s", argv[i]);
		for (size_t n = strlen(t); n > 1 && t[n - 1] == '/';)
			t[--n] = '\0';
		if (tiercache_stat(tc, t, &st) < 0) {
			char what[TC_PATH_MAX + 16];
			snprintf(what, sizeof(what), "warm %s", t);
			rc = tierctl_fail(what);
			break;
		}
		if (w.chunk_size && st.chunk_size != w.chunk_size) {
			tierctl_err("warm: name targets of one dataset per run (%s has another chunk size)", t);
			rc = TIERCTL_EXIT_FAIL;
			break;
		}
		w.chunk_size = st.chunk_size;
		if (st.type == TIERCACHE_DIR)
			rc = walk(&w, t, 0) < 0 ? TIERCTL_EXIT_FAIL : 0;
		else
			rc = add_file(&w, t, st.size) < 0 ? TIERCTL_EXIT_FAIL : 0;
	}
	if (rc == 0 && !w.chunk_size) {
		tierctl_err("warm: the daemon reported chunk size 0");
		rc = TIERCTL_EXIT_FAIL;
	}
	if (rc) {
		for (size_t i = 0; i < w.n; i++)
			free(w.v[i].path);
		free(w.v);
		return rc;
	}

	struct sigaction sa = {.sa_handler = on_interrupt}, old_int, old_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	w.t0 = w.last_print = now_s();
	uint8_t wf = verify ? TC_WARM_F_VERIFY : 0;
	for (size_t i = 0; i < w.n && !interrupted && !check_only; i++)
		warm_file(&w, &w.v[i], tier, wf);
	if (!check_only)
		progress(&w, true);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	bool was_interrupted = interrupted;
	for (size_t i = 0; i < w.n; i++)
		check_file(&w, &w.v[i]);

	uint64_t off_tier = tier == TC_TIER_HOT ? w.warm : tier == TC_TIER_WARM ? w.hot : 0;
	/* a bad chunk read again from the cold store and resident now is a
	 * success (reported); one that failed, or anything missing, is not */
	bool complete = !was_interrupted && !w.missing && !off_tier && !w.errors;
	if (json) {
		printf("{\"files\": %zu, \"bytes\": %" PRIu64 ", \"hot_bytes\": %" PRIu64
		       ", \"warm_bytes\": %" PRIu64 ", \"missing_bytes\": %" PRIu64
		       ", \"filled_bytes\": %" PRIu64 ", \"checked_chunks\": %" PRIu64
		       ", \"bad_chunks\": %" PRIu64 ", \"refetched_chunks\": %" PRIu64
		       ", \"failed_chunks\": %" PRIu64 ", \"errors\": %zu, \"interrupted\": %s"
		       ", \"complete\": %s}\n",
		       w.n, w.total, w.hot, w.warm, w.missing, w.filled, w.checked_chunks, w.bad_chunks,
		       w.refetched_chunks, w.failed_chunks, w.errors, was_interrupted ? "true" : "false",
		       complete ? "true" : "false");
	} else {
		printf("warm: %zu files\n", w.n);
		line("total", w.total);
		line("resident on hot", w.hot);
		line("resident on warm", w.warm);
		line("not resident", w.missing);
		line("read from cold", w.filled);
		if (verify)
			printf("  %-18s %8" PRIu64 " chunks checked, %" PRIu64 " bad, %" PRIu64
			       " read again from cold\n",
			       "verified", w.checked_chunks, w.bad_chunks, w.refetched_chunks);
	}
	for (size_t i = 0; i < w.n; i++)
		free(w.v[i].path);
	free(w.v);
	char h[32];
	if (was_interrupted) {
		tierctl_err("warm: interrupted; run the same command again to resume (resident "
			    "chunks are skipped)");
		return TIERCTL_EXIT_FAIL;
	}
	if (w.refetched_chunks)
		tierctl_err("warm: %" PRIu64 " chunks failed their checksum and were read again from "
			    "the cold store%s",
			    w.refetched_chunks,
			    w.fails.n ? "" : "; all are resident now with the right bytes");
	if (w.bad_chunks > w.refetched_chunks)
		tierctl_err("warm: %" PRIu64 " chunks failed their checksum and could not be read "
			    "again (below)",
			    w.bad_chunks - w.refetched_chunks);
	tierctl_fails_print(&w.fails, "warm");
	if (w.missing && w.failed_chunks) {
		tierctl_human_bytes(h, sizeof(h), w.missing);
		tierctl_err("warm: %s (%" PRIu64 " bytes) of %" PRIu64 " is NOT resident (see the "
			    "failures above)",
			    h, w.missing, w.total);
	} else if (w.missing) {
		tierctl_human_bytes(h, sizeof(h), w.missing);
		tierctl_err("warm: %s (%" PRIu64 " bytes) of %" PRIu64 " is NOT resident: the tiers "
			    "have no room for it (free room with tierctl evict or unpin, or warm less)",
			    h, w.missing, w.total);
	} else if (w.failed_chunks) {
		tierctl_err("warm: %" PRIu64 " chunks failed along the way (above), though all is "
			    "resident now",
			    w.failed_chunks);
	}
	if (off_tier) {
		tierctl_human_bytes(h, sizeof(h), off_tier);
		tierctl_err("warm: %s is resident on %s, not on the asked tier %s (no room there)", h,
			    tier == TC_TIER_HOT ? "warm" : "hot", tier_s);
	}
	if (w.errors)
		tierctl_err("warm: %zu requests failed (see above)", w.errors);
	return complete ? TIERCTL_EXIT_OK : TIERCTL_EXIT_FAIL;
}
