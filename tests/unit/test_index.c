/*
 * The RocksDB index, for real, in a temp directory: chunk records round
 * trip, delete, survive a reopen; undecodable records and records of the
 * old XXH64 format are dropped and counted; kv records are kept per
 * namespace; a write batch of chunk records lands whole at its commit, in
 * order; deferred deletes land before any later chunk write, a scan, or
 * the close, so a put of the same key after one wins.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rocksdb/c.h>

#include "index.h"
#include "unit_tmpdir.h"

struct seen {
	unsigned n;
	struct index_chunk last;
	char ds[80], path[256];
	uint64_t keys[16];
};

static int collect(void *arg, const struct index_chunk *c)
{
	struct seen *s = arg;
	if (s->n < 16)
		s->keys[s->n] = c->key;
	s->n++;
	s->last = *c;
	snprintf(s->ds, sizeof(s->ds), "%s", c->dataset);
	snprintf(s->path, sizeof(s->path), "%s", c->path);
	return 0;
}

static char dir[] = "/tmp/tc_index_test.XXXXXX";

static int setup(void **state)
{
	(void)state;
	return unit_tmpdir_make(dir);
}

static int teardown(void **state)
{
	(void)state;
	return unit_tmpdir_remove(dir);
}

static struct index *open_ix(void)
{
	struct index *ix = NULL;
	char err[256];
	assert_int_equal(index_open(&ix, dir, err, sizeof(err)), 0);
	return ix;
}

static void chunk_round_trip_and_reopen(void **state)
{
	(void)state;
	struct index *ix = open_ix();
	struct index_chunk c = {
		.key = 0x0123456789abcdefull, .tier = 1, .idx = 7, .len = 4096, .checksum = 0xfeedull,
		.atime_s = 1700000000, .src = {.size = 123456, .mtime_ns = -5, .version = 9},
		.dataset = "imagenet", .path = "train/a b/c.jpg",
	};
	assert_int_equal(index_chunk_put(ix, &c), 0);
	c.key = 42;
	c.idx = 8;
	assert_int_equal(index_chunk_put(ix, &c), 0);
	index_close(ix);

	ix = open_ix();
	struct seen s = {0};
	unsigned bad = 9;
	assert_int_equal(index_chunk_scan(ix, collect, &s, &bad), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(bad, 0);
	/* keys are stored big-endian: the scan is in key order */
	assert_true(s.keys[0] == 42 && s.keys[1] == 0x0123456789abcdefull);
	assert_int_equal(s.last.tier, 1);
	assert_int_equal(s.last.idx, 7);
	assert_int_equal(s.last.len, 4096);
	assert_true(s.last.checksum == 0xfeedull);
	assert_true(s.last.src.size == 123456 && s.last.src.mtime_ns == -5 && s.last.src.version == 9);
	assert_string_equal(s.ds, "imagenet");
	assert_string_equal(s.path, "train/a b/c.jpg");

	assert_int_equal(index_chunk_delete(ix, 42), 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(index_chunk_scan(ix, collect, &s, &bad), 0);
	assert_int_equal(s.n, 1);
	index_close(ix);
}

static void write_batch_lands_at_commit(void **state)
{
	(void)state;
	struct index *ix = open_ix();
	struct seen s = {0};
	unsigned bad = 0;
	/* records the tests before left (keys sort after these small ones) */
	assert_int_equal(index_chunk_scan(ix, collect, &s, &bad), 0);
	unsigned n0 = s.n;
	struct index_chunk c = {
		.key = 1, .tier = 1, .idx = 0, .len = 100, .checksum = 7,
		.dataset = "d", .path = "p", .seg = 3, .seg_off = 8192,
	};
	assert_int_equal(index_chunk_put(ix, &c), 0); /* key 1, before the batch */
	assert_int_equal(index_batch_begin(ix), 0);
	assert_int_equal(index_batch_begin(ix), -EBUSY); /* one batch at a time */
	c.key = 2;
	assert_int_equal(index_chunk_put(ix, &c), 0);
	c.key = 3;
	assert_int_equal(index_chunk_put(ix, &c), 0);
	assert_int_equal(index_chunk_delete(ix, 3), 0); /* in order: 3 ends deleted */
	assert_int_equal(index_chunk_delete(ix, 1), 0);
	/* kv records are not batched: visible at once */
	assert_int_equal(index_kv_put(ix, "ns", "k", "v", 1), 0);
	void *v = NULL;
	size_t n = 0;
	assert_int_equal(index_kv_get(ix, "ns", "k", &v, &n), 0);
	free(v);
	memset(&s, 0, sizeof(s));
	assert_int_equal(index_chunk_scan(ix, collect, &s, &bad), 0);
	assert_int_equal(s.n, n0 + 1); /* nothing of the batch yet: only key 1 */
	assert_true(s.keys[0] == 1);
	assert_int_equal(index_batch_commit(ix), 0);
	assert_int_equal(index_batch_commit(ix), 0); /* none open: nothing to do */
	memset(&s, 0, sizeof(s));
	assert_int_equal(index_chunk_scan(ix, collect, &s, &bad), 0);
	assert_int_equal(s.n, n0 + 1);
	assert_true(s.keys[0] == 2);
	/* a batch left open is committed by close */
	assert_int_equal(index_batch_begin(ix), 0);
	c.key = 4;
	assert_int_equal(index_chunk_put(ix, &c), 0);
	index_close(ix);
	ix = open_ix();
	memset(&s, 0, sizeof(s));
	assert_int_equal(index_chunk_scan(ix, collect, &s, &bad), 0);
	assert_int_equal(s.n, n0 + 2);
	assert_true(s.keys[0] == 2 && s.keys[1] == 4);
	assert_int_equal(index_chunk_delete(ix, 2), 0);
	assert_int_equal(index_chunk_delete(ix, 4), 0);
	assert_int_equal(index_kv_delete(ix, "ns", "k"), 0);
	index_close(ix);
}

/* n chunk records from a scan, their keys in s */
static unsigned scan_n(struct index *ix, struct seen *s)
{
	unsigned bad = 0;
	memset(s, 0, sizeof(*s));
	assert_int_equal(index_chunk_scan(ix, collect, s, &bad), 0);
	assert_int_equal(bad, 0);
	return s->n;
}

static void deferred_deletes_keep_order(void **state)
{
	(void)state;
	struct index *ix = open_ix();
	struct seen s;
	unsigned n0 = scan_n(ix, &s); /* what the tests before left */
	struct index_chunk c = {
		.key = 10, .tier = 0, .idx = 0, .len = 100, .checksum = 7,
		.dataset = "d", .path = "p", .seg = 5, .seg_off = 4096,
	};
	for (c.key = 10; c.key <= 12; c.key++)
		assert_int_equal(index_chunk_put(ix, &c), 0);
	assert_int_equal(index_deferred_count(ix), 0);
	assert_int_equal(index_chunk_delete_later(ix, 10), 0);
	assert_int_equal(index_chunk_delete_later(ix, 11), 0);
	assert_int_equal(index_deferred_count(ix), 2);
	/* 11 is written again after its delete: the delete lands first */
	c.key = 11;
	assert_int_equal(index_chunk_put(ix, &c), 0);
	assert_int_equal(index_deferred_count(ix), 0);
	assert_int_equal(scan_n(ix, &s), n0 + 2);
	assert_true(s.keys[0] == 11 && s.keys[1] == 12);
	/* a scan sees the deletes waiting */
	assert_int_equal(index_chunk_delete_later(ix, 12), 0);
	assert_int_equal(scan_n(ix, &s), n0 + 1);
	assert_true(s.keys[0] == 11);
	/* a batch opened after a deferred delete lands after it; one while
	 * a batch is open goes into the batch, in its order */
	assert_int_equal(index_chunk_delete_later(ix, 11), 0);
	assert_int_equal(index_batch_begin(ix), 0);
	assert_int_equal(index_deferred_count(ix), 0);
	c.key = 13;
	assert_int_equal(index_chunk_put(ix, &c), 0);
	c.key = 14;
	assert_int_equal(index_chunk_put(ix, &c), 0);
	assert_int_equal(index_chunk_delete_later(ix, 14), 0);
	assert_int_equal(index_deferred_count(ix), 0);
	assert_int_equal(index_batch_commit(ix), 0);
	assert_int_equal(scan_n(ix, &s), n0 + 1);
	assert_true(s.keys[0] == 13);
	/* the close writes what still waits */
	assert_int_equal(index_chunk_delete_later(ix, 13), 0);
	index_close(ix);
	ix = open_ix();
	assert_int_equal(scan_n(ix, &s), n0);
	/* past INDEX_DEFERRED_MAX waiting they land by themselves */
	for (c.key = 100; c.key < 100 + INDEX_DEFERRED_MAX; c.key++)
		assert_int_equal(index_chunk_put(ix, &c), 0);
	for (uint64_t k = 100; k < 100 + INDEX_DEFERRED_MAX; k++)
		assert_int_equal(index_chunk_delete_later(ix, k), 0);
	assert_int_equal(index_deferred_count(ix), 0);
	assert_int_equal(scan_n(ix, &s), n0);
	index_close(ix);
}

static void kv_namespaces(void **state)
{
	(void)state;
	struct index *ix = open_ix();
	void *v = NULL;
	size_t n = 0;
	assert_int_equal(index_kv_put(ix, "policy", "ds1", "epoch", 5), 0);
	assert_int_equal(index_kv_put(ix, "manifest", "ds1", "xyz", 3), 0);
	assert_int_equal(index_kv_get(ix, "policy", "ds1", &v, &n), 0);
	assert_int_equal(n, 5);
	assert_memory_equal(v, "epoch", 5);
	free(v);
	assert_int_equal(index_kv_get(ix, "policy", "nope", &v, &n), -ENOENT);
	assert_int_equal(index_kv_delete(ix, "policy", "ds1"), 0);
	assert_int_equal(index_kv_get(ix, "policy", "ds1", &v, &n), -ENOENT);
	/* the other namespace is untouched, and kv records are not chunks */
	assert_int_equal(index_kv_get(ix, "manifest", "ds1", &v, &n), 0);
	free(v);
	struct seen s = {0};
	unsigned bad;
	assert_int_equal(index_chunk_scan(ix, collect, &s, &bad), 0);
	assert_int_equal(s.n, 1);
	char longkey[5000];
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	assert_int_equal(index_kv_put(ix, "policy", longkey, "x", 1), -ENAMETOOLONG);
	index_close(ix);
}

/* A record written by a daemon of index format 1 (XXH64 checksums) is
 * dropped at the first scan, never handed to the daemon: its checksum could
 * not be verified. Written with RocksDB directly, as that daemon did. */
static void old_format_record_is_dropped(void **state)
{
	(void)state;
	char path[512], *rerr = NULL;
	snprintf(path, sizeof(path), "%s/index", dir);
	struct index *ix = open_ix();
	struct seen s = {0};
	unsigned bad = 0;
	assert_int_equal(index_chunk_scan(ix, collect, &s, &bad), 0);
	unsigned before = s.n; /* records of the tests before this one */
	struct index_chunk c = {
		.key = 7, .tier = 0, .idx = 0, .len = 10, .checksum = 1,
		.src = {.size = 10}, .dataset = "d", .path = "f",
	};
	assert_int_equal(index_chunk_put(ix, &c), 0);
	index_close(ix);

	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_t *db = rocksdb_open(o, path, &rerr);
	assert_non_null(db);
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	const char key[9] = {'c', 0, 0, 0, 0, 0, 0, 0, 7};
	size_t vn = 0;
	char *v = rocksdb_get(db, ro, key, sizeof(key), &vn, &rerr);
	assert_non_null(v);
	assert_true(vn > 1 && v[0] == 2); /* what this build writes */
	v[0] = 1;
	rocksdb_put(db, wo, key, sizeof(key), v, vn, &rerr);
	assert_null(rerr);
	rocksdb_free(v);
	rocksdb_readoptions_destroy(ro);
	rocksdb_writeoptions_destroy(wo);
	rocksdb_close(db);
	rocksdb_options_destroy(o);

	ix = open_ix();
	memset(&s, 0, sizeof(s));
	assert_int_equal(index_chunk_scan(ix, collect, &s, &bad), 0);
	assert_int_equal(s.n, before);
	assert_int_equal(bad, 1);
	assert_int_equal(index_chunk_scan(ix, collect, &s, &bad), 0);
	assert_int_equal(bad, 0); /* deleted, not just skipped */
	index_close(ix);
}

static void second_open_is_refused(void **state)
{
	(void)state;
	struct index *a = open_ix(), *b = NULL;
	char err[512] = "";
	/* RocksDB's lock: two daemons on one state_dir must not both run */
	assert_true(index_open(&b, dir, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "state_dir"));
	index_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(chunk_round_trip_and_reopen),
		cmocka_unit_test(kv_namespaces),
		cmocka_unit_test(write_batch_lands_at_commit),
		cmocka_unit_test(deferred_deletes_keep_order),
		cmocka_unit_test(old_format_record_is_dropped),
		cmocka_unit_test(second_open_is_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
