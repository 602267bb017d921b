/*
 * The RocksDB index, for real, in a temp directory: chunk records round
 * trip, delete, survive a reopen; undecodable records are dropped and
 * counted; kv records are kept per namespace.
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
		cmocka_unit_test(second_open_is_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
