/*
 * The cold backend contract: one suite, run once per backend, as libevent
 * runs its whole suite once per event method. Every test goes through the
 * public API of cached/cold/backend.h only (the inline wrappers; stat_async has
 * none, so through the ops table); the sources are made by the test.
 *
 *   test_cold_contract [posix]   a temp directory (the unit group)
 *   test_cold_contract rados     a fresh namespace of $CEPH_POOL on the
 *                                cluster of $CEPH_CONF (the Ceph group runs
 *                                it through tests/integration/t_rados_contract.sh)
 *   CMOCKA_TEST_FILTER=test_missing ...   one test only
 *
 * What every backend must do (backend.h states it):
 *   list        every regular file once, with its size, nested paths as
 *               "a/b/c"; stops when the callback returns non-zero, and
 *               still returns 0
 *   stat        size and version; cold_stat_same() until the source is
 *               rewritten, different after
 *   read        exactly the source bytes at any offset; fewer only at EOF,
 *               0 at or past it; -ESTALE when expect is not the version
 *   missing     stat and read: -ENOENT (the daemon drops a file on ENOENT);
 *               a directory where a file is expected is missing
 *   special     a FIFO (posix) where a file was: -EINVAL from stat and read,
 *               at once (never blocks), and not listed
 *   unreadable  stat and read: -EACCES (posix) or -EPERM (rados), never
 *               -ENOENT and never bytes
 *   outside     a path that leaves the dataset fails (posix -EXDEV, rados
 *               -ENOENT); it never reads the file there
 *   symlinks    (posix) a file or a directory on the path that is a symlink,
 *               in the tree or out of it: -ELOOP, never the bytes there
 *
 * Each test gets a fresh dataset (a new directory, a new object prefix)
 * and a handle opened on it. Threads: an async backend completes reads on
 * its own threads; the test waits on a semaphore per read.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <rados/librados.h>

#include "backend.h"
#include "backend_rados.h"
#include "config.h"
#include "cold_sources.h"
#include "unit_tmpdir.h"
#include "unit_pattern.h"

#define MiB (1024u * 1024u)
#define READ_LEN MiB		    /* one read; the big file is larger */
#define BIG_SIZE (2 * MiB + 12345u) /* three reads, the last one short */
#define HANG_GUARD_S 120	    /* a call that never returns fails, it does not wait */

static const struct src_ops *g_src;

/* ---- calls through the public API ---- */

struct waiter {
	struct cold_io io;
	sem_t sem;
};

static void waiter_done(struct cold_io *io)
{
	struct waiter *w = io->arg;
	sem_post(&w->sem);
}

static void sem_wait_guarded(sem_t *sem, const char *what)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += HANG_GUARD_S;
	int rc;
	while ((rc = sem_timedwait(sem, &ts)) < 0 && errno == EINTR)
		;
	if (rc < 0)
		fail_msg("%s did not complete (hung)", what);
}

/* One read, as the backend's caps say: blocking, or started and waited for. */
static ssize_t read_at(struct cold *c, const char *path, const struct cold_stat *expect,
		       uint64_t off, size_t len, void *buf)
{
	struct waiter w;
	memset(&w, 0, sizeof(w));
	w.io.path = path;
	w.io.expect = *expect;
	w.io.off = off;
	w.io.len = len;
	w.io.buf = buf;
	w.io.result = -EINPROGRESS;
	if (!(c->ops->caps & COLD_CAP_ASYNC))
		return cold_read(c, &w.io);
	w.io.done = waiter_done;
	w.io.arg = &w;
	sem_init(&w.sem, 0, 0);
	ssize_t rc = cold_read(c, &w.io);
	if (rc == 0)
		sem_wait_guarded(&w.sem, "a read");
	else
		w.io.result = rc; /* never started: done() is not called */
	sem_destroy(&w.sem);
	return w.io.result;
}

struct stat_waiter {
	struct cold_statio sio;
	sem_t sem;
};

static void stat_waiter_done(struct cold_statio *sio)
{
	struct stat_waiter *w = sio->arg;
	sem_post(&w->sem);
}

/* stat_async (optional in the ops; no inline wrapper in backend.h) */
static int stat_async_wait(struct cold *c, const char *path, struct cold_stat *st)
{
	struct stat_waiter w;
	memset(&w, 0, sizeof(w));
	w.sio.path = path;
	w.sio.done = stat_waiter_done;
	w.sio.arg = &w;
	sem_init(&w.sem, 0, 0);
	int rc = c->ops->stat_async(c, &w.sio);
	if (rc == 0) {
		sem_wait_guarded(&w.sem, "a stat_async");
		rc = w.sio.result;
		*st = w.sio.st;
	}
	sem_destroy(&w.sem);
	return rc;
}

#define LISTED_MAX 32

struct listed {
	size_t n;
	int stop_after; /* 0: never */
	char path[LISTED_MAX][128];
	struct cold_stat st[LISTED_MAX];
};

static int collect(void *arg, const char *path, const struct cold_stat *st)
{
	struct listed *l = arg;
	assert_true(l->n < LISTED_MAX);
	snprintf(l->path[l->n], sizeof(l->path[0]), "%s", path);
	l->st[l->n] = *st;
	l->n++;
	return l->stop_after && l->n >= (size_t)l->stop_after;
}

static const struct cold_stat *listed_find(const struct listed *l, const char *path)
{
	const struct cold_stat *found = NULL;
	for (size_t i = 0; i < l->n; i++) {
		if (strcmp(l->path[i], path) == 0) {
			assert_null(found); /* listed once */
			found = &l->st[i];
		}
	}
	return found;
}

/* ---- per-test setup: a fresh dataset and a handle on it ---- */

static unsigned g_seq;

static int src_setup(void **state)
{
	struct src *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	g_src->make(s, ++g_seq);
	cold_src_open_handle(&s->c, &s->dc);
	*state = s;
	return 0;
}

static int src_teardown(void **state)
{
	struct src *s = *state;
	cold_close(&s->c);
	g_src->destroy(s);
	free(s);
	return 0;
}

/* The files most tests start from. */
struct file {
	const char *path;
	size_t size;
	unsigned seed;
};

/* one file a line */
/* clang-format off */
static const struct file tree[] = {
	{"a.bin", 100, 1},
	{"dir/b.bin", 300000, 2},
	{"dir/sub/c.bin", 10, 3},
	{"empty", 0, 4},
	{"big.bin", BIG_SIZE, 5},
};
/* clang-format on */
#define NTREE (sizeof(tree) / sizeof(tree[0]))

static void put_file(struct src *s, const char *path, size_t size, unsigned seed)
{
	char *b = malloc(size ? size : 1);
	assert_non_null(b);
	unit_fill_pattern(b, size, seed);
	g_src->put(s, path, b, size);
	free(b);
}

static void put_tree(struct src *s)
{
	for (size_t i = 0; i < NTREE; i++)
		put_file(s, tree[i].path, tree[i].size, tree[i].seed);
}

/* Read all of path in READ_LEN pieces; 1 if it equals the pattern. */
static int reads_equal(struct cold *c, const char *path, const struct cold_stat *st, size_t size,
		       unsigned seed)
{
	char *want = malloc(size ? size : 1), *buf = malloc(READ_LEN);
	assert_non_null(want);
	assert_non_null(buf);
	unit_fill_pattern(want, size, seed);
	int same = 1;
	for (uint64_t off = 0; off < size || off == 0; off += READ_LEN) {
		size_t exp = size - off < READ_LEN ? size - off : READ_LEN;
		ssize_t r = read_at(c, path, st, off, READ_LEN, buf);
		if (r != (ssize_t)exp || memcmp(buf, want + off, exp) != 0) {
			print_message("%s at %llu: got %zd, want %zu bytes\n", path,
				      (unsigned long long)off, r, exp);
			same = 0;
			break;
		}
		if (size == 0)
			break;
	}
	free(want);
	free(buf);
	return same;
}

/* ---- the contract ---- */

/* list: exactly the files made, each once, with its size; stat agrees. */
static void test_list_exact(void **state)
{
	struct src *s = *state;
	put_tree(s);
	struct listed l = {0};
	assert_int_equal(cold_list(&s->c, collect, &l), 0);
	assert_int_equal(l.n, NTREE);
	for (size_t i = 0; i < NTREE; i++) {
		const struct cold_stat *ls = listed_find(&l, tree[i].path);
		if (!ls)
			fail_msg("%s: not listed", tree[i].path);
		assert_int_equal(ls->size, tree[i].size);
		if (s->c.ops->caps & COLD_CAP_VERSION)
			assert_true(ls->version != 0);
		struct cold_stat st;
		assert_int_equal(cold_stat(&s->c, tree[i].path, &st), 0);
		assert_true(cold_stat_same(&st, ls));
	}
}

/* list: a non-zero return from the callback stops it; list returns 0. */
static void test_list_stops(void **state)
{
	struct src *s = *state;
	put_tree(s);
	struct listed l = {.stop_after = 2};
	assert_int_equal(cold_list(&s->c, collect, &l), 0);
	assert_int_equal(l.n, 2);
}

/* list of an empty dataset: 0 files, not an error. */
static void test_list_empty(void **state)
{
	struct src *s = *state;
	struct listed l = {0};
	assert_int_equal(cold_list(&s->c, collect, &l), 0);
	assert_int_equal(l.n, 0);
}

/* stat: the version does not move while the source does not (reads
 * included: a read must not be a write). */
static void test_stat_stable(void **state)
{
	struct src *s = *state;
	put_tree(s);
	struct cold_stat a, b;
	assert_int_equal(cold_stat(&s->c, "dir/b.bin", &a), 0);
	assert_int_equal(a.size, 300000);
	assert_true(reads_equal(&s->c, "dir/b.bin", &a, 300000, 2));
	assert_int_equal(cold_stat(&s->c, "dir/b.bin", &b), 0);
	assert_true(cold_stat_same(&a, &b));
	if (s->c.ops->stat_async) {
		assert_int_equal(stat_async_wait(&s->c, "dir/b.bin", &b), 0);
		assert_true(cold_stat_same(&a, &b));
	}
}

/* read: exactly the source bytes at the start, the middle, across the
 * end, at and past EOF; a file larger than one read, an empty file. */
static void test_read_offsets(void **state)
{
	struct src *s = *state;
	put_tree(s);
	struct cold_stat st;
	assert_int_equal(cold_stat(&s->c, "big.bin", &st), 0);
	assert_int_equal(st.size, BIG_SIZE);
	assert_true(reads_equal(&s->c, "big.bin", &st, BIG_SIZE, 5));

	char *want = malloc(BIG_SIZE), *buf = malloc(READ_LEN);
	assert_non_null(want);
	assert_non_null(buf);
	unit_fill_pattern(want, BIG_SIZE, 5);
	const struct {
		uint64_t off;
		size_t len, got;
	} cases[] = {
		{0, 4096, 4096},	     /* start */
		{1234567, 777, 777},	     /* middle, unaligned */
		{MiB - 10, 20, 20},	     /* across a read-size boundary */
		{BIG_SIZE - 100, 1000, 100}, /* across the end */
		{BIG_SIZE, 1000, 0},	     /* at EOF */
		{BIG_SIZE + 4096, 1000, 0},  /* past EOF */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(buf, 0xee, READ_LEN);
		ssize_t r = read_at(&s->c, "big.bin", &st, cases[i].off, cases[i].len, buf);
		if (r != (ssize_t)cases[i].got)
			fail_msg("read at %llu len %zu: %zd, want %zu",
				 (unsigned long long)cases[i].off, cases[i].len, r, cases[i].got);
		assert_memory_equal(buf, want + cases[i].off, cases[i].got);
	}
	free(want);
	free(buf);

	assert_int_equal(cold_stat(&s->c, "empty", &st), 0);
	assert_int_equal(st.size, 0);
	char small[16];
	assert_int_equal(read_at(&s->c, "empty", &st, 0, sizeof(small), small), 0);
	assert_int_equal(cold_stat(&s->c, "dir/sub/c.bin", &st), 0);
	assert_true(reads_equal(&s->c, "dir/sub/c.bin", &st, 10, 3));
}

/* A changed source: a new version from stat and list, -ESTALE for a read
 * that expects the old one, the new bytes for one that expects the new. */
static void test_changed_source(void **state)
{
	struct src *s = *state;
	put_tree(s);
	struct cold_stat v1, v2, v3;
	assert_int_equal(cold_stat(&s->c, "a.bin", &v1), 0);
	assert_true(reads_equal(&s->c, "a.bin", &v1, 100, 1));

	/* another size */
	put_file(s, "a.bin", 5000, 11);
	assert_int_equal(cold_stat(&s->c, "a.bin", &v2), 0);
	assert_int_equal(v2.size, 5000);
	assert_false(cold_stat_same(&v1, &v2));
	char buf[5000];
	assert_int_equal(read_at(&s->c, "a.bin", &v1, 0, sizeof(buf), buf), -ESTALE);
	assert_true(reads_equal(&s->c, "a.bin", &v2, 5000, 11));

	/* the same size, other bytes */
	put_file(s, "a.bin", 5000, 12);
	assert_int_equal(cold_stat(&s->c, "a.bin", &v3), 0);
	assert_int_equal(v3.size, 5000);
	assert_false(cold_stat_same(&v2, &v3));
	if (s->c.ops->caps & COLD_CAP_VERSION)
		assert_true(v3.version != v2.version);
	assert_int_equal(read_at(&s->c, "a.bin", &v2, 0, sizeof(buf), buf), -ESTALE);
	assert_int_equal(read_at(&s->c, "a.bin", &v2, 100, 10, buf), -ESTALE);
	assert_true(reads_equal(&s->c, "a.bin", &v3, 5000, 12));

	struct listed l = {0};
	assert_int_equal(cold_list(&s->c, collect, &l), 0);
	const struct cold_stat *ls = listed_find(&l, "a.bin");
	assert_non_null(ls);
	assert_true(cold_stat_same(ls, &v3));
	if (s->c.ops->stat_async) {
		struct cold_stat sa;
		assert_int_equal(stat_async_wait(&s->c, "a.bin", &sa), 0);
		assert_true(cold_stat_same(&sa, &v3));
	}
}

/* A missing file: -ENOENT from stat and read, never an other error (the
 * daemon drops a file on ENOENT and only then). */
static void test_missing(void **state)
{
	struct src *s = *state;
	put_tree(s);
	struct cold_stat st, none = {0};
	char buf[100];
	assert_int_equal(cold_stat(&s->c, "nope.bin", &st), -ENOENT);
	assert_int_equal(cold_stat(&s->c, "nodir/nope.bin", &st), -ENOENT);
	assert_int_equal(read_at(&s->c, "nope.bin", &none, 0, sizeof(buf), buf), -ENOENT);
	assert_int_equal(read_at(&s->c, "nodir/nope.bin", &none, 0, sizeof(buf), buf), -ENOENT);
	if (s->c.ops->stat_async)
		assert_int_equal(stat_async_wait(&s->c, "nope.bin", &st), -ENOENT);

	/* removed after it was seen */
	assert_int_equal(cold_stat(&s->c, "a.bin", &st), 0);
	g_src->del(s, "a.bin");
	assert_int_equal(cold_stat(&s->c, "a.bin", &st), -ENOENT);
	assert_int_equal(read_at(&s->c, "a.bin", &st, 0, sizeof(buf), buf), -ENOENT);
	if (s->c.ops->stat_async)
		assert_int_equal(stat_async_wait(&s->c, "a.bin", &st), -ENOENT);
	struct listed l = {0};
	assert_int_equal(cold_list(&s->c, collect, &l), 0);
	assert_int_equal(l.n, NTREE - 1);
	assert_null(listed_find(&l, "a.bin"));
}

/* Not a regular file where one is expected: a "directory" (posix: a real
 * one; rados: a prefix of other objects) is a missing file; a FIFO (posix)
 * is refused with -EINVAL, and a call on it returns instead of blocking. */
static void test_not_a_file(void **state)
{
	struct src *s = *state;
	put_tree(s);
	struct cold_stat st, none = {0};
	char buf[100];
	assert_int_equal(cold_stat(&s->c, "dir", &st), -ENOENT);
	assert_int_equal(cold_stat(&s->c, "dir/sub", &st), -ENOENT);
	assert_int_equal(read_at(&s->c, "dir", &none, 0, sizeof(buf), buf), -ENOENT);
	if (!g_src->fifo)
		return;
	g_src->fifo(s, "pipe");
	alarm(HANG_GUARD_S); /* opening a FIFO without a writer would block: die, not hang */
	assert_int_equal(cold_stat(&s->c, "pipe", &st), -EINVAL);
	assert_int_equal(read_at(&s->c, "pipe", &none, 0, sizeof(buf), buf), -EINVAL);
	struct listed l = {0};
	assert_int_equal(cold_list(&s->c, collect, &l), 0);
	alarm(0);
	assert_int_equal(l.n, NTREE);
	assert_null(listed_find(&l, "pipe"));
}

/* A path that leads out of the dataset never reaches the file there (the
 * daemon checks client paths first; this is the backend's own guard). */
static void test_outside(void **state)
{
	struct src *s = *state;
	put_tree(s);
	/* posix: base/outside.bin, beside the dataset's root base/src */
	if (s->base[0]) {
		char full[PATH_MAX];
		int w = snprintf(full, sizeof(full), "%s/outside.bin", s->base);
		assert_true(w > 0 && (size_t)w < sizeof(full));
		FILE *f = fopen(full, "w");
		assert_non_null(f);
		fputs("outside", f);
		assert_int_equal(fclose(f), 0);
	}
	const char *bad[] = {"../outside.bin", "dir/../../outside.bin", "/etc/passwd"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cold_stat st, none = {0};
		char buf[64];
		int rc = cold_stat(&s->c, bad[i], &st);
		if (rc != -g_src->outside_errno)
			fail_msg("stat %s: %d, want %d", bad[i], rc, -g_src->outside_errno);
		none.size = 7; /* what the outside file would have */
		ssize_t r = read_at(&s->c, bad[i], &none, 0, sizeof(buf), buf);
		if (r != -g_src->outside_errno)
			fail_msg("read %s: %zd, want %d", bad[i], r, -g_src->outside_errno);
	}
}

/* posix: symlinks are no part of a dataset (list() skips them), and no
 * call follows one, in the tree or out of it, as a file or a directory on
 * the path. */
static void test_symlinks(void **state)
{
	struct src *s = *state;
	if (!s->base[0])
		skip(); /* rados: no symlinks */
	put_tree(s);
	char full[PATH_MAX], target[PATH_MAX + 32];
	int w = snprintf(target, sizeof(target), "%s/outside", s->base);
	assert_true(w > 0 && (size_t)w < sizeof(target));
	assert_int_equal(mkdir(target, 0755), 0);
	w = snprintf(target, sizeof(target), "%s/outside/secret.bin", s->base);
	assert_true(w > 0 && (size_t)w < sizeof(target));
	FILE *f = fopen(target, "w");
	assert_non_null(f);
	fputs("outside", f);
	assert_int_equal(fclose(f), 0);
	cold_src_posix_path(s, "link-out.bin", full, sizeof(full));
	assert_int_equal(symlink(target, full), 0);
	cold_src_posix_path(s, "link-in.bin", full, sizeof(full));
	assert_int_equal(symlink("a.bin", full), 0);
	w = snprintf(target, sizeof(target), "%s/outside", s->base);
	assert_true(w > 0 && (size_t)w < sizeof(target));
	cold_src_posix_path(s, "dirlink", full, sizeof(full));
	assert_int_equal(symlink(target, full), 0);
	cold_src_posix_path(s, "dirlink-in", full, sizeof(full));
	assert_int_equal(symlink("dir", full), 0);
	const char *bad[] = {"link-out.bin", "link-in.bin", "dirlink/secret.bin", "dirlink-in/sub/c.bin"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cold_stat st, none = {.size = 7};
		char buf[64];
		int rc = cold_stat(&s->c, bad[i], &st);
		if (rc != -ELOOP)
			fail_msg("stat %s: %d, want %d (ELOOP)", bad[i], rc, -ELOOP);
		ssize_t r = read_at(&s->c, bad[i], &none, 0, sizeof(buf), buf);
		if (r != -ELOOP)
			fail_msg("read %s: %zd, want %d (ELOOP)", bad[i], r, -ELOOP);
	}
	struct listed l = {0};
	assert_int_equal(cold_list(&s->c, collect, &l), 0);
	assert_int_equal(l.n, NTREE);
	assert_null(listed_find(&l, "link-in.bin"));
}

struct limited_arg {
	struct cold_stat denied_st; /* the real version: not the reason to fail */
};

static void limited_probe(struct cold *c, void *arg, struct limited_res *res)
{
	struct limited_arg *la = arg;
	struct cold_stat st;
	char buf[200];
	res->stat_ok = cold_stat(c, "ok.bin", &st);
	res->read_ok = res->stat_ok == 0 ? read_at(c, "ok.bin", &st, 0, sizeof(buf), buf) : -1;
	if (res->read_ok == 150) {
		char want[150];
		unit_fill_pattern(want, sizeof(want), 21);
		res->bytes_ok = memcmp(buf, want, sizeof(want)) == 0;
	}
	res->stat_denied = cold_stat(c, "secret.bin", &st);
	memset(buf, 0, sizeof(buf));
	res->read_denied = read_at(c, "secret.bin", &la->denied_st, 0, sizeof(buf), buf);
}

/* An unreadable file: stat and read fail with the backend's "may not"
 * errno (posix EACCES, rados EPERM: backend.h), never ENOENT and never
 * bytes, while a readable file beside it reads for the same identity. */
static void test_unreadable(void **state)
{
	struct src *s = *state;
	put_file(s, "ok.bin", 150, 21);
	put_file(s, "secret.bin", 150, 22);
	struct limited_arg la;
	assert_int_equal(cold_stat(&s->c, "secret.bin", &la.denied_st), 0);
	struct limited_res res;
	memset(&res, 0, sizeof(res));
	if (g_src->as_limited(s, "ok.bin", "secret.bin", limited_probe, &la, &res) != 0)
		skip();
	print_message("%s: limited identity: stat ok=%d denied=%d, read ok=%zd denied=%zd\n",
		      g_src->name, res.stat_ok, res.stat_denied, res.read_ok, res.read_denied);
	assert_int_equal(res.stat_ok, 0);
	assert_int_equal(res.read_ok, 150);
	assert_true(res.bytes_ok);
	assert_int_equal(res.stat_denied, -g_src->denied_errno);
	assert_int_equal(res.read_denied, -g_src->denied_errno);
	/* the privileged handle still reads it */
	assert_true(reads_equal(&s->c, "secret.bin", &la.denied_st, 150, 22));
}

/* quiesce: list and stat still work; an async backend refuses new reads
 * with -ESHUTDOWN. close: the handle is released, a second close is safe. */
static void test_quiesce_close(void **state)
{
	struct src *s = *state;
	put_tree(s);
	struct cold_stat st;
	assert_int_equal(cold_stat(&s->c, "a.bin", &st), 0);
	cold_quiesce(&s->c);
	struct cold_stat again;
	assert_int_equal(cold_stat(&s->c, "a.bin", &again), 0);
	assert_true(cold_stat_same(&st, &again));
	struct listed l = {0};
	assert_int_equal(cold_list(&s->c, collect, &l), 0);
	assert_int_equal(l.n, NTREE);
	char buf[100];
	ssize_t r = read_at(&s->c, "a.bin", &st, 0, sizeof(buf), buf);
	if ((s->c.ops->caps & COLD_CAP_ASYNC) && s->c.ops->quiesce)
		assert_int_equal(r, -ESHUTDOWN);
	else
		assert_int_equal(r, 100);
	cold_close(&s->c);
	assert_null(s->c.priv);
	cold_close(&s->c);
	assert_null(s->c.priv);
}

static const struct src_ops *const sources[] = {&cold_src_posix, &cold_src_rados};

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "posix";
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (strcmp(sources[i]->name, which) == 0)
			g_src = sources[i];
	if (!g_src || argc > 2) {
		fprintf(stderr, "usage: %s [posix|rados]\n", argv[0]);
		return 2;
	}
	if (g_src->init() < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_list_exact, src_setup, src_teardown),
		cmocka_unit_test_setup_teardown(test_list_stops, src_setup, src_teardown),
		cmocka_unit_test_setup_teardown(test_list_empty, src_setup, src_teardown),
		cmocka_unit_test_setup_teardown(test_stat_stable, src_setup, src_teardown),
		cmocka_unit_test_setup_teardown(test_read_offsets, src_setup, src_teardown),
		cmocka_unit_test_setup_teardown(test_changed_source, src_setup, src_teardown),
		cmocka_unit_test_setup_teardown(test_missing, src_setup, src_teardown),
		cmocka_unit_test_setup_teardown(test_not_a_file, src_setup, src_teardown),
		cmocka_unit_test_setup_teardown(test_outside, src_setup, src_teardown),
		cmocka_unit_test_setup_teardown(test_symlinks, src_setup, src_teardown),
		cmocka_unit_test_setup_teardown(test_unreadable, src_setup, src_teardown),
		cmocka_unit_test_setup_teardown(test_quiesce_close, src_setup, src_teardown),
	};
	char group[64];
	snprintf(group, sizeof(group), "cold_contract_%s", g_src->name);
	const char *only = getenv("CMOCKA_TEST_FILTER");
	if (only && *only)
		cmocka_set_test_filter(only);
	int rc = cmocka_run_group_tests_name(group, tests, NULL, NULL);
	g_src->fini();
	return rc;
}
