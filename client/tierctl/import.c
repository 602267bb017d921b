/*
 * tierctl import SRC_DIR DATASET: upload a local directory tree into the
 * pool / namespace / prefix of a rados dataset, then ask the daemon to
 * refresh the dataset's manifest.
 *
 * The dataset's Ceph parameters come from the daemon (TC_OP_DATASETS), so
 * the upload lands exactly where the daemon reads. File "a/b.bin" becomes
 * object PREFIX + "a/b.bin": a plain object (one write op for small files,
 * 4 MiB pieces above that), or a libradosstriper file above --striper-above
 * (default 64 MiB) or always when the dataset's layout is "striper".
 *
 * Re-running uploads only what changed: each uploaded file carries an xattr
 * "tiercache.src" = "SIZE MTIME_NS" of the local file (on the first object
 * of a striped file). It is cleared before an upload starts and set last,
 * so an interrupted upload is redone. A file that changes form (plain <->
 * striped) has its old form removed. Files deleted locally are not deleted
 * from the pool.
 *
 * Threads: the calling thread walks SRC_DIR, starts -j upload threads
 * (default 4) that take files in path order, and prints progress to stderr
 * until they finish: a "\r" line on a terminal, a plain line every 5 s
 * otherwise. Each upload thread keeps up to 4 writes of 4 MiB in flight.
 */
#include "import.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rados/librados.h>
#include <radosstriper/libradosstriper.h>

#include "tierctl.h"

/* Must match RADOS_SRC_XATTR in cached/backend_rados.h. */
#define SRC_XATTR "tiercache.src"
#define HEAD_SUFFIX ".0000000000000000" /* libradosstriper's first object */
#define PIECE (4u << 20)
#define WINDOW 4u
#define DEFAULT_JOBS 4u
#define MAX_JOBS 64u
#define DEFAULT_STRIPER_ABOVE (64ull << 20)
#define OP_TIMEOUT "120"

struct imp_file {
	char *rel;
	uint64_t size;
};

struct imp {
	/* the dataset, as the daemon reports it */
	char *dataset, *pool, *ns, *prefix, *layout, *ceph_conf, *client_id, *keyring;
	const char *src;
	int srcfd;
	unsigned jobs;
	uint64_t striper_above;
	rados_t cl;
	rados_ioctx_t io;

	struct imp_file *files;
	size_t nfiles, cap;
	uint64_t total_bytes;

	pthread_mutex_t lock; /* below, and stderr while workers run */
	pthread_cond_t cond;  /* a worker finished */
	size_t next;
	unsigned running;
	size_t uploaded, unchanged, failed;
	uint64_t processed; /* bytes of files done or skipped, and pieces sent */
	uint64_t sent;	    /* bytes written to Ceph */
	bool tty, line_shown;
	struct timespec t0;
};

struct worker {
	struct imp *im;
	pthread_t th;
	rados_striper_t st;
	char *buf[WINDOW];
};

/* ---- messages ---- */

static void imp_err(struct imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An error line from any thread; clears the progress line first. */
static void imp_err(struct imp *im, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&im->lock);
	if (im->line_shown) {
		fputs("\r\033[K", stderr);
		im->line_shown = false;
	}
	fputs("tierctl: import: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	pthread_mutex_unlock(&im->lock);
}

static double elapsed_s(const struct imp *im)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - im->t0.tv_sec) + (double)(now.tv_nsec - im->t0.tv_nsec) / 1e9;
}

/* Under im->lock. */
static void progress_print(struct imp *im, bool final)
{
	char done[32], total[32];
	tierctl_human_bytes(done, sizeof(done), im->processed);
	tierctl_human_bytes(total, sizeof(total), im->total_bytes);
	double t = elapsed_s(im);
	double rate = t > 0 ? (double)im->sent / t / 1e6 : 0;
	size_t files = im->uploaded + im->unchanged + im->failed;
	if (final && im->line_shown)
		fputs("\r\033[K", stderr);
	else if (im->tty && !final)
		fputs("\r", stderr);
	fprintf(stderr,
		"import: %zu/%zu files (%zu uploaded, %zu unchanged, %zu failed), %s/%s, "
		"%.1f MB/s%s",
		files, im->nfiles, im->uploaded, im->unchanged, im->failed, done, total, rate,
		im->tty && !final ? "\033[K" : "\n");
	im->line_shown = im->tty && !final;
}

/* ---- arguments and the dataset ---- */

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -EINVAL;
	unsigned shift = 0;
	switch (*end) {
	case 'K':
	case 'k':
		shift = 10;
		end++;
		break;
	case 'M':
	case 'm':
		shift = 20;
		end++;
		break;
	case 'G':
	case 'g':
		shift = 30;
		end++;
		break;
	case 'T':
	case 't':
		shift = 40;
		end++;
		break;
	default: break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static char *field_str(const struct proto_record *rec, const char *key)
{
	const struct proto_field *f = proto_record_find(rec, key);
	return strdup(f && f->type == TC_VAL_STR && f->v.s ? f->v.s : "");
}

/* Fill im's dataset fields from the daemon's "datasets" record set. */
static int dataset_fetch(struct tiercache *tc, struct imp *im, const char *name)
{
	struct proto_recset rs;
	int rc = tierctl_call_recset(tc, TC_OP_DATASETS, NULL, 0, "import: datasets", &rs);
	if (rc)
		return rc;
	const struct proto_section *sec = proto_recset_find(&rs, "datasets");
	const struct proto_record *rec = NULL;
	for (uint32_t i = 0; sec && i < sec->nrecords && !rec; i++) {
		const struct proto_field *f = proto_record_find(&sec->records[i], "name");
		if (f && f->type == TC_VAL_STR && f->v.s && strcmp(f->v.s, name) == 0)
			rec = &sec->records[i];
	}
	rc = TIERCTL_EXIT_FAIL;
	if (!rec) {
		tierctl_err("import: no dataset named '%s' (tierctl datasets lists them)", name);
		goto out;
	}
	char *backend = field_str(rec, "backend");
	bool rados = backend && strcmp(backend, "rados") == 0;
	if (!rados)
		tierctl_err("import: dataset '%s' has backend '%s', not rados: copy files into "
			    "its source directory instead",
			    name, backend ? backend : "?");
	free(backend);
	if (!rados)
		goto out;
	im->pool = field_str(rec, "pool");
	im->ns = field_str(rec, "namespace");
	im->prefix = field_str(rec, "prefix");
	im->layout = field_str(rec, "layout");
	im->ceph_conf = field_str(rec, "ceph_conf");
	im->client_id = field_str(rec, "client_id");
	im->keyring = field_str(rec, "keyring");
	if (!im->pool || !im->ns || !im->prefix || !im->layout || !im->ceph_conf ||
	    !im->client_id || !im->keyring) {
		tierctl_err("import: out of memory");
		goto out;
	}
	if (!im->pool[0]) {
		tierctl_err("import: dataset '%s': the daemon reports no pool", name);
		goto out;
	}
	rc = TIERCTL_EXIT_OK;
out:
	proto_recset_free(&rs);
	return rc;
}

static int ceph_connect(struct imp *im)
{
	char ent[96];
	const char *conf = im->ceph_conf[0] ? im->ceph_conf : "/etc/ceph/ceph.conf";
	snprintf(ent, sizeof(ent), "client.%s", im->client_id[0] ? im->client_id : "admin");
	int rc = rados_create2(&im->cl, "ceph", ent, 0);
	if (rc < 0) {
		im->cl = NULL;
		tierctl_err("import: cannot create a Ceph client as %s: %s", ent, strerror(-rc));
		return TIERCTL_EXIT_FAIL;
	}
	rc = rados_conf_read_file(im->cl, conf);
	if (rc < 0) {
		tierctl_err("import: dataset '%s': cannot read ceph_conf %s: %s", im->dataset, conf,
			    strerror(-rc));
		return TIERCTL_EXIT_FAIL;
	}
	if (im->keyring[0]) {
		if (access(im->keyring, R_OK) != 0) {
			tierctl_err("import: dataset '%s': cannot read keyring %s: %s", im->dataset,
				    im->keyring, strerror(errno));
			return TIERCTL_EXIT_FAIL;
		}
		rados_conf_set(im->cl, "keyring", im->keyring);
	}
	/* librados waits forever by default */
	rados_conf_set(im->cl, "rados_osd_op_timeout", OP_TIMEOUT);
	rados_conf_set(im->cl, "rados_mon_op_timeout", OP_TIMEOUT);
	rados_conf_set(im->cl, "client_mount_timeout", "30");
	rados_conf_set(im->cl, "log_to_stderr", "false");
	rados_conf_set(im->cl, "err_to_stderr", "false");
	rc = rados_connect(im->cl);
	if (rc < 0) {
		const char *why = rc == -EACCES || rc == -EPERM ? " (cephx: check the keyring)"
				  : rc == -ETIMEDOUT		? " (are the monitors up?)"
								: "";
		tierctl_err(
		    "import: dataset '%s': cannot connect to Ceph as %s (ceph_conf %s, keyring "
		    "%s): %s%s",
		    im->dataset, ent, conf, im->keyring[0] ? im->keyring : "from ceph_conf",
		    strerror(-rc), why);
		return TIERCTL_EXIT_FAIL;
	}
	rc = rados_ioctx_create(im->cl, im->pool, &im->io);
	if (rc < 0) {
		im->io = NULL;
		tierctl_err("import: dataset '%s': pool %s: %s", im->dataset, im->pool,
			    rc == -ENOENT ? "no such pool" : strerror(-rc));
		return TIERCTL_EXIT_FAIL;
	}
	rados_ioctx_set_namespace(im->io, im->ns[0] ? im->ns : NULL);
	return TIERCTL_EXIT_OK;
}

/* ---- walking SRC_DIR ---- */

static int files_add(struct imp *im, const char *rel, uint64_t size)
{
	if (im->nfiles == im->cap) {
		size_t nc = im->cap ? im->cap * 2 : 256;
		struct imp_file *nf = realloc(im->files, nc * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		im->files = nf;
		im->cap = nc;
	}
	char *s = strdup(rel);
	if (!s)
		return -ENOMEM;
	im->files[im->nfiles++] = (struct imp_file){.rel = s, .size = size};
	im->total_bytes += size;
	return 0;
}

/* Regular files under dirfd (which this takes over); symlinks and special
 * files are reported and skipped. Unreadable directories count as failed. */
static int walk(struct imp *im, int dirfd, const char *rel)
{
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		imp_err(im, "%s/%s: %s", im->src, rel, strerror(errno));
		im->failed++;
		return 0;
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (errno = 0, de = readdir(d))) {
		const char *nm = de->d_name;
		if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
			continue;
		char child[PATH_MAX];
		int n = snprintf(child, sizeof(child), "%s%s%s", rel, rel[0] ? "/" : "", nm);
		if (n < 0 || (size_t)n >= sizeof(child)) {
			imp_err(im, "%s/%s/%s: path too long, skipped", im->src, rel, nm);
			im->failed++;
			continue;
		}
		struct stat st;
		if (fstatat(dirfd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			imp_err(im, "%s/%s: %s", im->src, child, strerror(errno));
			im->failed++;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				imp_err(im, "%s/%s: %s", im->src, child, strerror(errno));
				im->failed++;
				continue;
			}
			rc = walk(im, fd, child);
		} else if (S_ISREG(st.st_mode)) {
			rc = files_add(im, child, (uint64_t)st.st_size);
		} else {
			imp_err(im, "%s/%s: not a regular file, skipped", im->src, child);
		}
	}
	if (rc == 0 && errno) {
		imp_err(im, "%s/%s: %s", im->src, rel, strerror(errno));
		im->failed++;
	}
	closedir(d);
	return rc;
}

static int cmp_file(const void *a, const void *b)
{
	return strcmp(((const struct imp_file *)a)->rel, ((const struct imp_file *)b)->rel);
}

/* ---- uploading one file ---- */

static void account(struct imp *im, uint64_t processed, uint64_t sent)
{
	pthread_mutex_lock(&im->lock);
	im->processed += processed;
	im->sent += sent;
	pthread_mutex_unlock(&im->lock);
}

static ssize_t pread_full(int fd, char *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Pieces [from, size) with up to WINDOW writes in flight (a ring of
 * buffers, reaped oldest first): plain aio writes of oid, or striper
 * writes. Returns 0 or -errno; *where says what failed ("read"/"write"). */
static int write_pieces(struct worker *w, int fd, const char *oid, bool striped, uint64_t from,
			uint64_t size, const char **where)
{
	struct imp *im = w->im;
	rados_completion_t comp[WINDOW];
	size_t len[WINDOW];
	unsigned head = 0, inflight = 0;
	uint64_t off = from;
	int rc = 0;
	while (inflight || (off < size && rc == 0)) {
		if (off < size && rc == 0 && inflight < WINDOW) {
			unsigned s = (head + inflight) % WINDOW;
			size_t n = size - off < PIECE ? (size_t)(size - off) : PIECE;
			ssize_t got = pread_full(fd, w->buf[s], n, off);
			if (got != (ssize_t)n) {
				rc = got < 0 ? (int)got : -EAGAIN; /* shrank meanwhile */
				*where = "read";
				continue;
			}
			rc = rados_aio_create_completion2(NULL, NULL, &comp[s]);
			if (rc == 0) {
				rc = striped
					 ? rados_striper_aio_write(w->st, oid, comp[s], w->buf[s],
								   n, off)
					 : rados_aio_write(im->io, oid, comp[s], w->buf[s], n, off);
				if (rc < 0)
					rados_aio_release(comp[s]);
			}
			if (rc < 0) {
				*where = "write";
				continue;
			}
			len[s] = n;
			off += n;
			inflight++;
			continue;
		}
		rados_aio_wait_for_complete(comp[head]);
		int r = rados_aio_get_return_value(comp[head]);
		rados_aio_release(comp[head]);
		if (r < 0 && rc == 0) {
			rc = r;
			*where = "write";
		} else if (r >= 0) {
			account(im, len[head], len[head]);
		}
		head = (head + 1) % WINDOW;
		inflight--;
	}
	return rc;
}

/* 0 uploaded, 1 unchanged, <0 failed (reported). */
static int upload_one(struct worker *w, const struct imp_file *f)
{
	struct imp *im = w->im;
	char *oid = NULL, *head = NULL;
	const char *where = "write";
	int fd = -1, rc;
	size_t olen = strlen(im->prefix) + strlen(f->rel) + sizeof(HEAD_SUFFIX);
	oid = malloc(olen);
	head = malloc(olen);
	if (!oid || !head) {
		rc = -ENOMEM;
		goto out;
	}
	snprintf(oid, olen, "%s%s", im->prefix, f->rel);
	snprintf(head, olen, "%s%s%s", im->prefix, f->rel, HEAD_SUFFIX);

	fd = openat(im->srcfd, f->rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		imp_err(im, "%s/%s: %s", im->src, f->rel, strerror(errno));
		goto out_counted;
	}
	uint64_t size = (uint64_t)st.st_size;
	char want[64];
	int wn = snprintf(want, sizeof(want), "%" PRIu64 " %" PRId64, size,
			  (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec);
	bool striped = strcmp(im->layout, "striper") == 0 || size > im->striper_above;

	char have[64];
	int hn = rados_getxattr(im->io, striped ? head : oid, SRC_XATTR, have, sizeof(have));
	if (hn == wn && memcmp(have, want, (size_t)wn) == 0) {
		/* the xattr survives an out-of-band `rados put` over the object:
		 * trust it only if the object still has the local size */
		uint64_t osize = 0;
		time_t omtime;
		int sr = striped ? rados_striper_stat(w->st, oid, &osize, &omtime)
				 : rados_stat(im->io, oid, &osize, &omtime);
		if (sr == 0 && osize == size) {
			rc = 1;
			goto out;
		}
	}

	/* one form per name: drop the other (and an older striped copy,
	 * whose layout or size may differ) */
	uint64_t psize;
	time_t pmtime;
	if (striped) {
		rc = rados_remove(im->io, oid);
		if (rc == 0 || rc == -ENOENT)
			rc = rados_striper_remove(w->st, oid);
	} else {
		rc = rados_stat(im->io, head, &psize, &pmtime);
		if (rc == 0)
			rc = rados_striper_remove(w->st, oid);
	}
	if (rc < 0 && rc != -ENOENT)
		goto out;

	bool marked = false; /* the xattr already says "uploaded" */
	if (striped) {
		if (size == 0)
			rc = rados_striper_write_full(w->st, oid, w->buf[0], 0);
		else
			rc = write_pieces(w, fd, oid, true, 0, size, &where);
	} else {
		/* the first piece replaces the object and clears the marker in
		 * one atomic op; a small file is complete with that op */
		size_t n = size < PIECE ? (size_t)size : PIECE;
		ssize_t got = pread_full(fd, w->buf[0], n, 0);
		if (got != (ssize_t)n) {
			rc = got < 0 ? (int)got : -EAGAIN;
			where = "read";
			goto out;
		}
		rados_write_op_t op = rados_create_write_op();
		if (!op) {
			rc = -ENOMEM;
			goto out;
		}
		marked = n == size;
		rados_write_op_write_full(op, w->buf[0], n);
		rados_write_op_setxattr(op, SRC_XATTR, marked ? want : "", marked ? (size_t)wn : 0);
		rc = rados_write_op_operate(op, im->io, oid, NULL, 0);
		rados_release_write_op(op);
		if (rc == 0)
			account(im, n, n);
		if (rc == 0 && n < size)
			rc = write_pieces(w, fd, oid, false, n, size, &where);
	}
	if (rc < 0)
		goto out;
	/* a file that changed while it was read is not marked as uploaded
	 * (a small one was written in one op: its marker comes off again) */
	struct stat st2;
	if (fstat(fd, &st2) < 0 || st2.st_size != st.st_size ||
	    st2.st_mtim.tv_sec != st.st_mtim.tv_sec || st2.st_mtim.tv_nsec != st.st_mtim.tv_nsec) {
		if (marked)
			rados_setxattr(im->io, oid, SRC_XATTR, "", 0);
		rc = -EAGAIN;
		where = "read";
		goto out;
	}
	if (!marked)
		rc = rados_setxattr(im->io, striped ? head : oid, SRC_XATTR, want, (size_t)wn);
out:
	if (rc < 0) {
		if (rc == -EAGAIN && strcmp(where, "read") == 0)
			imp_err(im, "%s/%s: changed while it was uploaded (run import again)",
				im->src, f->rel);
		else if (strcmp(where, "read") == 0)
			imp_err(im, "%s/%s: %s", im->src, f->rel, strerror(-rc));
		else
			imp_err(im, "%s -> pool %s%s%s object %s: %s%s", f->rel, im->pool,
				im->ns[0] ? " namespace " : "", im->ns, oid ? oid : "?",
				strerror(-rc),
				rc == -ETIMEDOUT ? " (is the cluster up? is it full?)" : "");
	}
out_counted:
	if (fd >= 0)
		close(fd);
	free(oid);
	free(head);
	return rc;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct imp *im = w->im;
	for (;;) {
		pthread_mutex_lock(&im->lock);
		size_t i = im->next < im->nfiles ? im->next++ : im->nfiles;
		pthread_mutex_unlock(&im->lock);
		if (i == im->nfiles)
			break;
		const struct imp_file *f = &im->files[i];
		int rc = upload_one(w, f);
		pthread_mutex_lock(&im->lock);
		if (rc == 1) {
			im->unchanged++;
			im->processed += f->size;
		} else if (rc == 0) {
			im->uploaded++;
		} else {
			im->failed++;
		}
		pthread_mutex_unlock(&im->lock);
	}
	pthread_mutex_lock(&im->lock);
	im->running--;
	pthread_cond_signal(&im->cond);
	pthread_mutex_unlock(&im->lock);
	return NULL;
}

/* ---- the command ---- */

int tierctl_import(struct tiercache *tc, int argc, char **argv)
{
	struct imp im = {.srcfd = -1, .jobs = DEFAULT_JOBS, .striper_above = DEFAULT_STRIPER_ABOVE};
	static const struct option longopts[] = {
	    {"jobs", required_argument, NULL, 'j'},
	    {"striper-above", required_argument, NULL, 'S'},
	    {NULL, 0, NULL, 0},
	};
	int opt;
	opterr = 0; /* our own messages, in tierctl's form */
	while ((opt = getopt_long(argc, argv, "+:j:", longopts, NULL)) != -1) {
		uint64_t v;
		switch (opt) {
		case 'j':
			if (parse_size(optarg, &v) < 0 || v < 1 || v > MAX_JOBS)
				return tierctl_usage_error("import: -j wants 1..%u, not '%s'",
							   MAX_JOBS, optarg);
			im.jobs = (unsigned)v;
			break;
		case 'S':
			if (parse_size(optarg, &v) < 0)
				return tierctl_usage_error(
				    "import: --striper-above: '%s' is not a size "
				    "(use 64M, 1G, ...)",
				    optarg);
			im.striper_above = v;
			break;
		case ':':
			return tierctl_usage_error("import: %s needs a value", argv[optind - 1]);
		default:
			if (optopt)
				return tierctl_usage_error("import: unknown option '-%c'", optopt);
			return tierctl_usage_error("import: unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return tierctl_usage_error("import: want SRC_DIR and DATASET");
	im.src = argv[optind];
	im.dataset = argv[optind + 1];
	if (!tc)
		return TIERCTL_EXIT_OK; /* the command line only (see tierctl_fn) */

	int rc = TIERCTL_EXIT_FAIL;
	struct worker *w = NULL;
	unsigned started = 0;
	pthread_mutex_init(&im.lock, NULL);
	pthread_cond_init(&im.cond, NULL);
	im.tty = isatty(STDERR_FILENO);

	im.srcfd = open(im.src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (im.srcfd < 0) {
		tierctl_err("import: %s: %s", im.src, strerror(errno));
		goto out;
	}
	rc = dataset_fetch(tc, &im, im.dataset);
	if (rc)
		goto out;
	rc = TIERCTL_EXIT_FAIL;
	if (ceph_connect(&im)) /* before the walk: fail fast */
		goto out;
	int dfd = dup(im.srcfd);
	if (dfd < 0 || walk(&im, dfd, "") < 0) {
		tierctl_err("import: %s: %s", im.src, strerror(dfd < 0 ? errno : ENOMEM));
		goto out;
	}
	if (im.nfiles)
		qsort(im.files, im.nfiles, sizeof(*im.files), cmp_file);

	clock_gettime(CLOCK_MONOTONIC, &im.t0);
	if (im.jobs > im.nfiles)
		im.jobs = im.nfiles ? (unsigned)im.nfiles : 1;
	w = calloc(im.jobs, sizeof(*w));
	if (!w) {
		tierctl_err("import: out of memory");
		goto out;
	}
	for (unsigned i = 0; i < im.jobs; i++) {
		w[i].im = &im;
		bool ok = rados_striper_create(im.io, &w[i].st) == 0;
		for (unsigned k = 0; ok && k < WINDOW; k++)
			ok = (w[i].buf[k] = malloc(PIECE)) != NULL;
		pthread_mutex_lock(&im.lock);
		im.running++;
		pthread_mutex_unlock(&im.lock);
		if (!ok || pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0) {
			pthread_mutex_lock(&im.lock);
			im.running--;
			pthread_mutex_unlock(&im.lock);
			tierctl_err("import: cannot start upload thread %u", i);
			break;
		}
		started++;
	}
	/* progress until the workers are done */
	pthread_mutex_lock(&im.lock);
	while (im.running) {
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		long step_ms = im.tty ? 500 : 5000;
		dl.tv_sec += step_ms / 1000;
		dl.tv_nsec += (step_ms % 1000) * 1000000L;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&im.cond, &im.lock, &dl) == ETIMEDOUT && im.running)
			progress_print(&im, false);
	}
	pthread_mutex_unlock(&im.lock);
	for (unsigned i = 0; i < started; i++)
		pthread_join(w[i].th, NULL);
	pthread_mutex_lock(&im.lock);
	if (started == 0)
		im.failed += im.nfiles;
	progress_print(&im, true);
	pthread_mutex_unlock(&im.lock);
	fprintf(stderr, "import: %s -> pool %s%s%s prefix '%s' in %.1f s\n", im.src, im.pool,
		im.ns[0] ? " namespace " : "", im.ns, im.prefix, elapsed_s(&im));

	/* whatever made it is worth showing: refresh even after failures */
	char *av[] = {"refresh", (char *)im.dataset, NULL};
	int rrc = tierctl_cmd_refresh(tc, 2, av);
	rc = im.failed || started < im.jobs ? TIERCTL_EXIT_FAIL : rrc;
out:
	if (w) {
		for (unsigned i = 0; i < im.jobs; i++) {
			if (w[i].st)
				rados_striper_destroy(w[i].st);
			for (unsigned k = 0; k < WINDOW; k++)
				free(w[i].buf[k]);
		}
		free(w);
	}
	if (im.io)
		rados_ioctx_destroy(im.io);
	if (im.cl)
		rados_shutdown(im.cl);
	if (im.srcfd >= 0)
		close(im.srcfd);
	for (size_t i = 0; i < im.nfiles; i++)
		free(im.files[i].rel);
	free(im.files);
	free(im.pool);
	free(im.ns);
	free(im.prefix);
	free(im.layout);
	free(im.ceph_conf);
	free(im.client_id);
	free(im.keyring);
	pthread_cond_destroy(&im.cond);
	pthread_mutex_destroy(&im.lock);
	return rc;
}
