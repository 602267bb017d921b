/*
 * Tests of cached/cold/backend_rados.c against a REAL Ceph cluster (no mocks).
 * Run through tests/ceph/run-test.sh, which starts a throwaway cluster and
 * exports CEPH_CONF and CEPH_POOL; without them every test fails.
 *
 * Fixtures are written with librados and libradosstriper (and the `rados`
 * CLI), each test under its own object-name prefix. The last test stops the
 * OSD and starts it again, and leaves the cluster healthy for whatever runs
 * after it on the same cluster.
 *
 * Threads: the backend completes reads on librados threads; the tests wait
 * for them with a semaphore per read.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <rados/librados.h>
#include <radosstriper/libradosstriper.h>

#include "backend.h"
#include "backend_rados.h"
#include "config.h"
#include "unit_pattern.h"

#define MiB (1024u * 1024u)
#define HANG_GUARD_S 120 /* a read that never ends is a failure, not a wait */

static const char *g_conf, *g_pool;
static rados_t g_cl;
static rados_ioctx_t g_io;

/* ---- fixtures ---- */

static void put_plain(const char *ns, const char *oid, const void *buf, size_t n)
{
	rados_ioctx_set_namespace(g_io, ns);
	assert_int_equal(rados_write_full(g_io, oid, buf, n), 0);
	rados_ioctx_set_namespace(g_io, NULL);
}

/* Write a striped file with libradosstriper, optionally with its own layout. */
static void put_striped(const char *soid, const void *buf, size_t n, unsigned su, unsigned sc,
			unsigned os)
{
	rados_striper_t st;
	assert_int_equal(rados_striper_create(g_io, &st), 0);
	if (su) {
		assert_int_equal(rados_striper_set_object_layout_stripe_unit(st, su), 0);
		assert_int_equal(rados_striper_set_object_layout_stripe_count(st, sc), 0);
		assert_int_equal(rados_striper_set_object_layout_object_size(st, os), 0);
	}
	assert_int_equal(rados_striper_write_full(st, soid, buf, n), 0);
	rados_striper_destroy(st);
}

static void conf_fill(struct dataset_conf *dc, const char *name, const char *prefix, const char *ns,
		      const char *layout)
{
	memset(dc, 0, sizeof(*dc));
	snprintf(dc->name, sizeof(dc->name), "%s", name);
	snprintf(dc->backend, sizeof(dc->backend), "rados");
	snprintf(dc->ceph_conf, sizeof(dc->ceph_conf), "%s", g_conf);
	snprintf(dc->client_id, sizeof(dc->client_id), "admin");
	snprintf(dc->pool, sizeof(dc->pool), "%s", g_pool);
	snprintf(dc->rados_namespace, sizeof(dc->rados_namespace), "%s", ns ? ns : "");
	snprintf(dc->prefix, sizeof(dc->prefix), "%s", prefix ? prefix : "");
	snprintf(dc->layout, sizeof(dc->layout), "%s", layout ? layout : "plain");
	dc->chunk_size = 4 * MiB;
	dc->op_timeout_s = 10;
	dc->max_inflight = 8;
}

static void cold_init(struct cold *c, const char *name)
{
	memset(c, 0, sizeof(*c));
	c->ops = &cold_rados_ops;
	snprintf(c->dataset, sizeof(c->dataset), "%s", name);
}

static void open_ok(struct cold *c, const struct dataset_conf *dc)
{
	char err[512] = "";
	cold_init(c, dc->name);
	int rc = cold_open(c, dc, err, sizeof(err));
	if (rc != 0)
		fail_msg("open %s: %d %s", dc->name, rc, err);
}

/* ---- reads ---- */

struct waiter {
	struct cold_io io;
	sem_t sem;
};

static void waiter_done(struct cold_io *io)
{
	struct waiter *w = io->arg;
	sem_post(&w->sem);
}

static void waiter_start(struct cold *c, struct waiter *w, const char *path,
			 const struct cold_stat *expect, uint64_t off, size_t len, void *buf)
{
	memset(&w->io, 0, sizeof(w->io));
	sem_init(&w->sem, 0, 0);
	w->io.path = path;
	w->io.expect = *expect;
	w->io.off = off;
	w->io.len = len;
	w->io.buf = buf;
	w->io.done = waiter_done;
	w->io.arg = w;
	w->io.result = -EINPROGRESS;
	ssize_t rc = cold_read(c, &w->io);
	if (rc < 0) {
		w->io.result = rc;
		sem_post(&w->sem);
	}
}

static ssize_t waiter_wait(struct waiter *w)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += HANG_GUARD_S;
	int rc;
	while ((rc = sem_timedwait(&w->sem, &ts)) < 0 && errno == EINTR)
		;
	if (rc < 0)
		fail_msg("a read did not complete (hung)");
	sem_destroy(&w->sem);
	return w->io.result;
}

static ssize_t read_sync(struct cold *c, const char *path, const struct cold_stat *expect,
			 uint64_t off, size_t len, void *buf)
{
	struct waiter w;
	waiter_start(c, &w, path, expect, off, len, buf);
	return waiter_wait(&w);
}

/* ---- listing ---- */

struct listed {
	size_t n;
	char path[64][256];
	struct cold_stat st[64];
};

static int collect(void *arg, const char *path, const struct cold_stat *st)
{
	struct listed *l = arg;
	assert_true(l->n < 64);
	snprintf(l->path[l->n], sizeof(l->path[0]), "%s", path);
	l->st[l->n] = *st;
	l->n++;
	return 0;
}

static const struct cold_stat *listed_find(const struct listed *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->path[i], path) == 0)
			return &l->st[i];
	return NULL;
}

/* ---- tests ---- */

static void test_env(void **state)
{
	(void)state;
	fail_msg("CEPH_CONF and CEPH_POOL are not set: run this test through "
		 "tests/ceph/run-test.sh (it starts a throwaway Ceph cluster)");
}

static void test_list_prefix_and_stat(void **state)
{
	(void)state;
	char small[100], mid[300000];
	unit_fill_pattern(small, sizeof(small), 1);
	unit_fill_pattern(mid, sizeof(mid), 2);
	put_plain(NULL, "lp/a.bin", small, sizeof(small));
	put_plain(NULL, "lp/dir/b.bin", mid, sizeof(mid));
	put_plain(NULL, "lp/dir/sub/c.bin", small, 10);
	put_plain(NULL, "lp/empty", small, 0);
	put_plain(NULL, "lq/outside.bin", small, sizeof(small));
	put_plain(NULL, "lp//bad", small, 1); /* not a clean path: skipped */

	struct dataset_conf dc;
	struct cold c;
	conf_fill(&dc, "lp", "lp/", NULL, NULL);
	open_ok(&c, &dc);
	struct listed l = {0};
	assert_int_equal(cold_list(&c, collect, &l), 0);
	assert_int_equal(l.n, 4);
	const struct cold_stat *a = listed_find(&l, "a.bin");
	const struct cold_stat *b = listed_find(&l, "dir/b.bin");
	const struct cold_stat *cc = listed_find(&l, "dir/sub/c.bin");
	const struct cold_stat *e = listed_find(&l, "empty");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(cc);
	assert_non_null(e);
	assert_int_equal(a->size, sizeof(small));
	assert_int_equal(b->size, sizeof(mid));
	assert_int_equal(cc->size, 10);
	assert_int_equal(e->size, 0);
	assert_true(a->version > 0);
	assert_true(a->mtime_ns > 0);

	struct cold_stat st;
	assert_int_equal(cold_stat(&c, "dir/b.bin", &st), 0);
	assert_true(cold_stat_same(&st, b));
	assert_int_equal(cold_stat(&c, "nope.bin", &st), -ENOENT);
	assert_int_equal(cold_stat(&c, "dir", &st), -ENOENT);
	assert_int_equal(cold_stat(&c, "../lq/outside.bin", &st), -ENOENT);

	/* the empty file reads as 0 bytes */
	char buf[16];
	assert_int_equal(read_sync(&c, "empty", e, 0, sizeof(buf), buf), 0);
	cold_close(&c);
	assert_null(c.priv);
}

static void test_namespace(void **state)
{
	(void)state;
	char data[5000];
	unit_fill_pattern(data, sizeof(data), 3);
	put_plain("ns1", "np/x.bin", data, sizeof(data));
	put_plain("ns1", "np/y/z.bin", data, 10);
	put_plain(NULL, "np/default-only.bin", data, 20);

	struct dataset_conf dc;
	struct cold c;
	conf_fill(&dc, "ns", "np/", "ns1", NULL);
	open_ok(&c, &dc);
	struct listed l = {0};
	assert_int_equal(cold_list(&c, collect, &l), 0);
	assert_int_equal(l.n, 2);
	assert_non_null(listed_find(&l, "x.bin"));
	assert_non_null(listed_find(&l, "y/z.bin"));
	char buf[5000];
	assert_int_equal(read_sync(&c, "x.bin", listed_find(&l, "x.bin"), 0, sizeof(buf), buf),
			 sizeof(buf));
	assert_memory_equal(buf, data, sizeof(buf));
	cold_close(&c);

	conf_fill(&dc, "ns-default", "np/", NULL, NULL);
	open_ok(&c, &dc);
	memset(&l, 0, sizeof(l));
	assert_int_equal(cold_list(&c, collect, &l), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.path[0], "default-only.bin");
	cold_close(&c);
}

static void test_plain_partial_reads(void **state)
{
	(void)state;
	const size_t size = 10 * MiB + 12345, chunk = MiB;
	char *data = malloc(size), *buf = malloc(chunk);
	assert_non_null(data);
	assert_non_null(buf);
	unit_fill_pattern(data, size, 4);
	put_plain(NULL, "pr/big.bin", data, size);

	struct dataset_conf dc;
	struct cold c;
	conf_fill(&dc, "pr", "pr/", NULL, NULL);
	open_ok(&c, &dc);
	struct cold_stat st;
	assert_int_equal(cold_stat(&c, "big.bin", &st), 0);
	assert_int_equal(st.size, size);
	/* chunks 0, 3, 7 and the short last one; only those are read */
	const uint64_t idx[] = {0, 3, 7, 10};
	for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++) {
		uint64_t off = idx[i] * chunk;
		size_t want = off + chunk <= size ? chunk : size - off;
		memset(buf, 0xee, chunk);
		assert_int_equal(read_sync(&c, "big.bin", &st, off, chunk, buf), want);
		assert_memory_equal(buf, data + off, want);
	}
	/* an unaligned read, and one past the end */
	assert_int_equal(read_sync(&c, "big.bin", &st, 12345, 777, buf), 777);
	assert_memory_equal(buf, data + 12345, 777);
	assert_int_equal(read_sync(&c, "big.bin", &st, size + 10, 100, buf), 0);
	cold_close(&c);
	free(data);
	free(buf);
}

static void test_striper(void **state)
{
	(void)state;
	const size_t n1 = 9 * MiB + 4321; /* default layout: 4 MiB objects */
	const size_t n2 = 3 * MiB + 100;  /* su 64 KiB, 3 stripes, 256 KiB objects */
	const size_t n3 = 5 * MiB + 7;	  /* written by the rados CLI */
	char *d1 = malloc(n1), *d2 = malloc(n2), *d3 = malloc(n3), *buf = malloc(4 * MiB);
	assert_non_null(d1);
	assert_non_null(d2);
	assert_non_null(d3);
	assert_non_null(buf);
	unit_fill_pattern(d1, n1, 5);
	unit_fill_pattern(d2, n2, 6);
	unit_fill_pattern(d3, n3, 7);
	put_striped("sp/one.bin", d1, n1, 0, 0, 0);
	put_striped("sp/d/two.bin", d2, n2, 64 * 1024, 3, 256 * 1024);
	char tmpl[] = "/tmp/tc-rados-XXXXXX";
	int fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, d3, n3), (ssize_t)n3);
	close(fd);
	char cmd[PATH_MAX * 2];
	snprintf(cmd, sizeof(cmd), "rados -c '%s' -p '%s' --striper put sp/cli.bin '%s'", g_conf,
		 g_pool, tmpl);
	assert_int_equal(system(cmd), 0);
	unlink(tmpl);
	char small[1000];
	unit_fill_pattern(small, sizeof(small), 8);
	put_plain(NULL, "sp/plain.bin", small, sizeof(small));

	for (int pass = 0; pass < 2; pass++) {
		struct dataset_conf dc;
		struct cold c;
		conf_fill(&dc, "sp", "sp/", NULL, pass ? "striper" : "plain");
		open_ok(&c, &dc);
		struct listed l = {0};
		assert_int_equal(cold_list(&c, collect, &l), 0);
		/* logical files only: no ".000000000000000N" objects */
		assert_int_equal(l.n, 4);
		const struct cold_stat *s1 = listed_find(&l, "one.bin");
		const struct cold_stat *s2 = listed_find(&l, "d/two.bin");
		const struct cold_stat *s3 = listed_find(&l, "cli.bin");
		assert_non_null(s1);
		assert_non_null(s2);
		assert_non_null(s3);
		assert_non_null(listed_find(&l, "plain.bin"));
		assert_int_equal(s1->size, n1);
		assert_int_equal(s2->size, n2);
		assert_int_equal(s3->size, n3);

		/* chunk reads at 1 MiB offsets, crossing object and stripe
		 * boundaries, compared byte for byte */
		for (uint64_t off = 0; off < n1; off += MiB) {
			size_t want = off + MiB <= n1 ? MiB : n1 - off;
			assert_int_equal(read_sync(&c, "one.bin", s1, off, MiB, buf), want);
			assert_memory_equal(buf, d1 + off, want);
		}
		const uint64_t offs[] = {0, 65536 - 10, 200000, 3 * 65536 * 4 - 1, MiB, n2 - 50};
		for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
			size_t want = offs[i] + 300000 <= n2 ? 300000 : n2 - offs[i];
			assert_int_equal(read_sync(&c, "d/two.bin", s2, offs[i], 300000, buf),
					 want);
			assert_memory_equal(buf, d2 + offs[i], want);
		}
		assert_int_equal(read_sync(&c, "cli.bin", s3, 4 * MiB, 4 * MiB, buf), n3 - 4 * MiB);
		assert_memory_equal(buf, d3 + 4 * MiB, n3 - 4 * MiB);

		/* our reads take no striper lock: the version stays put */
		struct cold_stat again;
		assert_int_equal(cold_stat(&c, "one.bin", &again), 0);
		assert_true(cold_stat_same(&again, s1));
		cold_close(&c);
	}

	/* a fresh handle that never listed finds striped files on first read */
	struct dataset_conf dc;
	struct cold c;
	conf_fill(&dc, "sp2", "sp/", NULL, NULL);
	open_ok(&c, &dc);
	struct cold_stat st;
	assert_int_equal(cold_stat(&c, "cli.bin", &st), 0);
	cold_close(&c);
	open_ok(&c, &dc);
	assert_int_equal(read_sync(&c, "cli.bin", &st, 100, 1000, buf), 1000);
	assert_memory_equal(buf, d3 + 100, 1000);
	cold_close(&c);
	free(d1);
	free(d2);
	free(d3);
	free(buf);
}

/* Several threads submitting at once, as the loop and the workers do. */
struct submitter {
	pthread_t th;
	struct cold *c;
	struct waiter *w;
	const struct cold_stat *st;
	const char *path;
	char *bufs;
	size_t n, chunk, nchunks;
};

static void *submit_main(void *arg)
{
	struct submitter *s = arg;
	for (size_t i = 0; i < s->n; i++)
		waiter_start(s->c, &s->w[i], s->path, s->st, ((i * 5) % s->nchunks) * s->chunk,
			     s->chunk, s->bufs + i * s->chunk);
	return NULL;
}

static void test_many_inflight(void **state)
{
	(void)state;
	const size_t chunk = 256 * 1024, nchunks = 24, nreads = 96;
	char *data = malloc(chunk * nchunks);
	assert_non_null(data);
	unit_fill_pattern(data, chunk * nchunks, 9);
	put_plain(NULL, "mi/a.bin", data, chunk * nchunks);
	put_striped("mi/s.bin", data, chunk * nchunks, 0, 0, 0);

	struct dataset_conf dc;
	struct cold c;
	conf_fill(&dc, "mi", "mi/", NULL, NULL);
	dc.max_inflight = 3;
	open_ok(&c, &dc);
	struct cold_stat sa, ss;
	assert_int_equal(cold_stat(&c, "a.bin", &sa), 0);
	assert_int_equal(cold_stat(&c, "s.bin", &ss), 0);
	struct waiter *w = calloc(nreads, sizeof(*w));
	char *bufs = malloc(nreads * chunk);
	assert_non_null(w);
	assert_non_null(bufs);
	/* all submitted at once: the backend queues what exceeds 3 */
	for (size_t i = 0; i < nreads; i++) {
		size_t k = (i * 7) % nchunks;
		waiter_start(&c, &w[i], i % 2 ? "s.bin" : "a.bin", i % 2 ? &ss : &sa, k * chunk,
			     chunk, bufs + i * chunk);
	}
	for (size_t i = 0; i < nreads; i++) {
		size_t k = (i * 7) % nchunks;
		assert_int_equal(waiter_wait(&w[i]), chunk);
		assert_memory_equal(bufs + i * chunk, data + k * chunk, chunk);
	}

	/* the same from 4 threads at once */
	struct submitter sub[4];
	for (size_t t = 0; t < 4; t++) {
		sub[t] = (struct submitter){.c = &c,
					    .w = w + t * (nreads / 4),
					    .st = t % 2 ? &ss : &sa,
					    .path = t % 2 ? "s.bin" : "a.bin",
					    .bufs = bufs + t * (nreads / 4) * chunk,
					    .n = nreads / 4,
					    .chunk = chunk,
					    .nchunks = nchunks};
		assert_int_equal(pthread_create(&sub[t].th, NULL, submit_main, &sub[t]), 0);
	}
	for (size_t t = 0; t < 4; t++)
		assert_int_equal(pthread_join(sub[t].th, NULL), 0);
	for (size_t t = 0; t < 4; t++) {
		for (size_t i = 0; i < sub[t].n; i++) {
			size_t k = (i * 5) % nchunks;
			assert_int_equal(waiter_wait(&sub[t].w[i]), chunk);
			assert_memory_equal(sub[t].bufs + i * chunk, data + k * chunk, chunk);
		}
	}
	cold_close(&c);
	free(w);
	free(bufs);
	free(data);
}

static void test_overwrite_is_stale(void **state)
{
	(void)state;
	char v1[200000], v2[200000], buf[200000];
	unit_fill_pattern(v1, sizeof(v1), 10);
	unit_fill_pattern(v2, sizeof(v2), 11);
	put_plain(NULL, "ow/p.bin", v1, sizeof(v1));
	put_striped("ow/s.bin", v1, sizeof(v1), 0, 0, 0);

	struct dataset_conf dc;
	struct cold c;
	conf_fill(&dc, "ow", "ow/", NULL, NULL);
	open_ok(&c, &dc);
	struct listed l = {0};
	assert_int_equal(cold_list(&c, collect, &l), 0);
	struct cold_stat p1 = *listed_find(&l, "p.bin"), s1 = *listed_find(&l, "s.bin");
	assert_int_equal(read_sync(&c, "p.bin", &p1, 0, sizeof(buf), buf), sizeof(buf));
	assert_int_equal(read_sync(&c, "s.bin", &s1, 0, sizeof(buf), buf), sizeof(buf));

	/* same size, same second: only the version tells them apart */
	put_plain(NULL, "ow/p.bin", v2, sizeof(v2));
	put_striped("ow/s.bin", v2, sizeof(v2), 0, 0, 0);
	assert_int_equal(read_sync(&c, "p.bin", &p1, 0, sizeof(buf), buf), -ESTALE);
	assert_int_equal(read_sync(&c, "s.bin", &s1, 0, sizeof(buf), buf), -ESTALE);
	assert_int_equal(read_sync(&c, "s.bin", &s1, 1000, 10, buf), -ESTALE);

	/* a size or mtime differing from what was expected is stale too */
	struct cold_stat p2, s2;
	assert_int_equal(cold_stat(&c, "p.bin", &p2), 0);
	assert_int_equal(cold_stat(&c, "s.bin", &s2), 0);
	assert_true(p2.version != p1.version);
	assert_true(s2.version != s1.version);
	struct cold_stat odd = p2;
	odd.size++;
	assert_int_equal(read_sync(&c, "p.bin", &odd, 0, 100, buf), -ESTALE);
	odd = s2;
	odd.mtime_ns -= 5000000000LL;
	assert_int_equal(read_sync(&c, "s.bin", &odd, 0, 100, buf), -ESTALE);

	/* with the new version the new bytes come back */
	assert_int_equal(read_sync(&c, "p.bin", &p2, 0, sizeof(buf), buf), sizeof(buf));
	assert_memory_equal(buf, v2, sizeof(buf));
	assert_int_equal(read_sync(&c, "s.bin", &s2, 0, sizeof(buf), buf), sizeof(buf));
	assert_memory_equal(buf, v2, sizeof(buf));
	cold_close(&c);
}

static void test_missing_is_enoent(void **state)
{
	(void)state;
	char data[100], buf[100];
	unit_fill_pattern(data, sizeof(data), 12);
	put_plain(NULL, "ms/here.bin", data, sizeof(data));
	struct dataset_conf dc;
	struct cold c;
	conf_fill(&dc, "ms", "ms/", NULL, NULL);
	open_ok(&c, &dc);
	struct cold_stat st;
	assert_int_equal(cold_stat(&c, "here.bin", &st), 0);
	assert_int_equal(read_sync(&c, "gone.bin", &st, 0, sizeof(buf), buf), -ENOENT);
	assert_int_equal(rados_remove(g_io, "ms/here.bin"), 0);
	assert_int_equal(read_sync(&c, "here.bin", &st, 0, sizeof(buf), buf), -ENOENT);
	assert_int_equal(cold_stat(&c, "here.bin", &st), -ENOENT);
	cold_close(&c);
}

static void test_bad_keyring(void **state)
{
	(void)state;
	char dir[] = "/tmp/tc-keyring-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char kr[PATH_MAX], cmd[PATH_MAX * 2];
	snprintf(kr, sizeof(kr), "%s/wrong.keyring", dir);
	/* a well-formed keyring for client.admin with a key the cluster
	 * does not know */
	snprintf(cmd, sizeof(cmd),
		 "ceph-authtool --create-keyring '%s' --gen-key -n client.admin >/dev/null", kr);
	assert_int_equal(system(cmd), 0);

	struct dataset_conf dc;
	struct cold c;
	conf_fill(&dc, "badkey", "x/", NULL, NULL);
	dc.op_timeout_s = 5;
	snprintf(dc.keyring, sizeof(dc.keyring), "%s", kr);
	char err[512] = "";
	cold_init(&c, "badkey");
	assert_true(cold_open(&c, &dc, err, sizeof(err)) < 0);
	assert_null(c.priv);
	assert_non_null(strstr(err, "badkey"));
	assert_non_null(strstr(err, kr));
	print_message("bad keyring: %s\n", err);

	/* a keyring that is not there */
	snprintf(dc.keyring, sizeof(dc.keyring), "%s/missing.keyring", dir);
	err[0] = '\0';
	assert_true(cold_open(&c, &dc, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "badkey"));
	assert_non_null(strstr(err, dc.keyring));

	unlink(kr);
	rmdir(dir);
}

static void test_unreachable_then_retry(void **state)
{
	(void)state;
	/* a conf whose monitor port nobody listens on */
	char dir[] = "/tmp/tc-nomon-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char conf[PATH_MAX], kr[PATH_MAX];
	snprintf(conf, sizeof(conf), "%s/ceph.conf", dir);
	snprintf(kr, sizeof(kr), "%s", g_conf);
	char *slash = strrchr(kr, '/');
	assert_non_null(slash);
	snprintf(slash, sizeof(kr) - (size_t)(slash - kr), "/ceph.client.admin.keyring");
	FILE *f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f,
		"[global]\nmon host = v2:127.0.0.1:9\nauth client required = cephx\n"
		"keyring = %s\nlog file = /dev/null\n",
		kr);
	fclose(f);

	struct dataset_conf dc;
	struct cold c;
	conf_fill(&dc, "nomon", "x/", NULL, NULL);
	dc.op_timeout_s = 2;
	snprintf(dc.ceph_conf, sizeof(dc.ceph_conf), "%s", conf);
	char err[512] = "";
	cold_init(&c, "nomon");
	assert_true(cold_open(&c, &dc, err, sizeof(err)) < 0);
	assert_null(c.priv);
	assert_non_null(strstr(err, "nomon"));
	print_message("unreachable: %s\n", err);
	/* safe to call again, and it works once the cluster is reachable */
	assert_true(cold_open(&c, &dc, err, sizeof(err)) < 0);
	snprintf(dc.ceph_conf, sizeof(dc.ceph_conf), "%s", g_conf);
	assert_int_equal(cold_open(&c, &dc, err, sizeof(err)), 0);
	assert_non_null(c.priv);
	cold_close(&c);

	/* a pool that does not exist is named */
	snprintf(dc.pool, sizeof(dc.pool), "no-such-pool");
	assert_true(cold_open(&c, &dc, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "no-such-pool"));
	unlink(conf);
	rmdir(dir);
}

static pid_t osd_pid(void)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s", g_conf);
	char *slash = strrchr(path, '/');
	assert_non_null(slash);
	snprintf(slash, sizeof(path) - (size_t)(slash - path), "/run/osd.0.pid");
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read %s", path);
	long pid = 0;
	int ok = fscanf(f, "%ld", &pid);
	fclose(f);
	assert_int_equal(ok, 1);
	assert_true(pid > 1);
	return (pid_t)pid;
}

static void osd_start(void)
{
	char cmd[PATH_MAX * 2];
	snprintf(cmd, sizeof(cmd),
		 "env -u CEPH_KEYRING -u CEPH_ARGS ceph-osd -c '%s' -i 0 2>/dev/null", g_conf);
	if (system(cmd) != 0)
		fail_msg("could not restart the OSD: %s", cmd);
}

static void test_osd_down_and_back(void **state)
{
	(void)state;
	const size_t size = 3 * MiB;
	char *data = malloc(size), *buf = malloc(size);
	assert_non_null(data);
	assert_non_null(buf);
	unit_fill_pattern(data, size, 13);
	put_plain(NULL, "fd/p.bin", data, size);
	put_striped("fd/s.bin", data, size, 0, 0, 0);

	struct dataset_conf dc;
	struct cold c;
	conf_fill(&dc, "fault", "fd/", NULL, NULL);
	dc.op_timeout_s = 3;
	dc.max_inflight = 2;
	open_ok(&c, &dc);
	struct cold_stat sp, ss;
	assert_int_equal(cold_stat(&c, "p.bin", &sp), 0);
	assert_int_equal(cold_stat(&c, "s.bin", &ss), 0);
	assert_int_equal(read_sync(&c, "p.bin", &sp, 0, MiB, buf), MiB);

	/* a clean stop: memstore saves its objects for the restart */
	pid_t pid = osd_pid();
	assert_int_equal(kill(pid, SIGTERM), 0);
	for (int i = 0; i < 600 && kill(pid, 0) == 0; i++)
		usleep(100000);
	if (kill(pid, 0) == 0) {
		kill(pid, SIGKILL);
		fail_msg("the OSD did not stop on SIGTERM");
	}

	/* reads fail (op_timeout) instead of hanging, queued ones too */
	struct waiter w[5];
	for (int i = 0; i < 5; i++)
		waiter_start(&c, &w[i], i % 2 ? "s.bin" : "p.bin", i % 2 ? &ss : &sp,
			     (uint64_t)i * 100000, 100000, buf + (size_t)i * 100000);
	for (int i = 0; i < 5; i++) {
		ssize_t r = waiter_wait(&w[i]);
		if (r != -ETIMEDOUT && r != -EIO)
			fail_msg("read %d with the OSD down: %zd, want -ETIMEDOUT or -EIO", i, r);
	}
	struct cold_stat tmp;
	int rc = cold_stat(&c, "p.bin", &tmp);
	assert_true(rc == -ETIMEDOUT || rc == -EIO);

	osd_start();
	/* the same struct cold reads again once the PGs are active */
	ssize_t r = -1;
	for (int i = 0; i < 20 && r != (ssize_t)size; i++)
		r = read_sync(&c, "p.bin", &sp, 0, size, buf);
	assert_int_equal(r, size);
	assert_memory_equal(buf, data, size);
	memset(buf, 0, size);
	assert_int_equal(read_sync(&c, "s.bin", &ss, 0, size, buf), size);
	assert_memory_equal(buf, data, size);
	struct listed l = {0};
	assert_int_equal(cold_list(&c, collect, &l), 0);
	assert_int_equal(l.n, 2);
	cold_close(&c);
	free(data);
	free(buf);
}

int main(void)
{
	g_conf = getenv("CEPH_CONF");
	g_pool = getenv("CEPH_POOL");
	if (!g_conf || !*g_conf || !g_pool || !*g_pool) {
		const struct CMUnitTest env[] = {cmocka_unit_test(test_env)};
		return cmocka_run_group_tests_name("backend_rados", env, NULL, NULL);
	}
	if (rados_create2(&g_cl, "ceph", "client.admin", 0) < 0 ||
	    rados_conf_read_file(g_cl, g_conf) < 0 ||
	    rados_conf_set(g_cl, "rados_osd_op_timeout", "60") < 0 ||
	    rados_conf_set(g_cl, "rados_mon_op_timeout", "60") < 0 ||
	    rados_conf_set(g_cl, "client_mount_timeout", "60") < 0 || rados_connect(g_cl) < 0 ||
	    rados_ioctx_create(g_cl, g_pool, &g_io) < 0) {
		fprintf(stderr, "test_backend_rados: cannot connect to the cluster of %s pool %s\n",
			g_conf, g_pool);
		return 1;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_list_prefix_and_stat),
	    cmocka_unit_test(test_namespace),
	    cmocka_unit_test(test_plain_partial_reads),
	    cmocka_unit_test(test_striper),
	    cmocka_unit_test(test_many_inflight),
	    cmocka_unit_test(test_overwrite_is_stale),
	    cmocka_unit_test(test_missing_is_enoent),
	    cmocka_unit_test(test_bad_keyring),
	    cmocka_unit_test(test_unreachable_then_retry),
	    /* last: it stops and restarts the OSD */
	    cmocka_unit_test(test_osd_down_and_back),
	};
	int rc = cmocka_run_group_tests_name("backend_rados", tests, NULL, NULL);
	rados_ioctx_destroy(g_io);
	rados_shutdown(g_cl);
	return rc;
}
