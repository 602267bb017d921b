/*
 * The manifest: path rules, lookups, directories implied by paths, and
 * paged listings that show each subdirectory once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "proto.h"

static struct manifest *build(const char *const *paths, size_t n)
{
	struct manifest *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	for (size_t i = 0; i < n; i++) {
		struct cold_stat st = {.size = i + 1, .mtime_ns = (int64_t)i};
		assert_int_equal(manifest_add(m, paths[i], &st, 0), 0);
	}
	manifest_sort(m);
	return m;
}

static void path_rules(void **state)
{
	(void)state;
	const char *good[] = {"a", "a/b", "a.b/c..d", ".hidden", "x/.y"};
	const char *bad[] = {"", "/a", "a//b", "a/", "./a", "a/./b", "../a", "a/..", "a/../b"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(manifest_path_valid(good[i], strlen(good[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(manifest_path_valid(bad[i], strlen(bad[i])));
	char name[300];
	memset(name, 'n', sizeof(name));
	assert_true(manifest_path_valid(name, 255));
	assert_false(manifest_path_valid(name, 256));
	assert_false(manifest_path_valid("a\0b", 3));
	/* invalid source names are skipped and counted, not served */
	struct manifest *m = calloc(1, sizeof(*m));
	struct cold_stat st = {0};
	assert_int_equal(manifest_add(m, "ok", &st, 0), 0);
	assert_int_equal(manifest_add(m, "../evil", &st, 0), 0);
	assert_int_equal(m->n, 1);
	assert_int_equal(m->skipped, 1);
	manifest_free(m);
}

static void lookups_and_dirs(void **state)
{
	(void)state;
	const char *p[] = {"b/x", "a.txt", "a/z", "a/y/1", "a/y/2", "a0"};
	struct manifest *m = build(p, 6);
	assert_non_null(manifest_find(m, "a/y/2"));
	assert_null(manifest_find(m, "a/y"));
	assert_null(manifest_find(m, "a/y/3"));
	assert_true(manifest_dir_exists(m, ""));
	assert_true(manifest_dir_exists(m, "a"));
	assert_true(manifest_dir_exists(m, "a/y"));
	assert_false(manifest_dir_exists(m, "a.txt"));
	assert_false(manifest_dir_exists(m, "c"));
	struct mf_entry *e = manifest_find(m, "a/z");
	e->gone = true; /* removed at the source */
	assert_null(manifest_find(m, "a/z"));
	manifest_free(m);
}

struct page {
	char names[64][32];
	bool dir[64];
	unsigned n, cap;
};

static int take(void *arg, const struct mf_dirent *de)
{
	struct page *pg = arg;
	if (pg->n == pg->cap)
		return 1;
	snprintf(pg->names[pg->n], sizeof(pg->names[0]), "%.*s", (int)de->namelen, de->name);
	pg->dir[pg->n++] = de->is_dir;
	return 0;
}

static void listing_pages(void **state)
{
	(void)state;
	const char *p[] = {"r/a", "r/b/1", "r/b/2", "r/b/3/x", "r/b.txt", "r/c", "r/d/e", "s/q"};
	struct manifest *m = build(p, 8);
	/* one page: subdirectories appear once, in order */
	struct page all = {.cap = 64};
	assert_int_equal(manifest_listdir(m, "r", 0, take, &all), 0);
	assert_int_equal(all.n, 5);
	const char *want[] = {"a", "b", "b.txt", "c", "d"};
	const bool want_dir[] = {false, true, false, false, true};
	for (unsigned i = 0; i < 5; i++) {
		/* strcmp order puts "b.txt" before "b/": compare as a set */
		bool found = false;
		for (unsigned j = 0; j < all.n; j++)
			if (strcmp(all.names[j], want[i]) == 0 && all.dir[j] == want_dir[i])
				found = true;
		assert_true(found);
	}
	/* pages of two: same entries, none twice */
	struct page got = {.cap = 64};
	uint32_t cookie = 0;
	unsigned pages = 0;
	do {
		struct page pg = {.cap = 2};
		cookie = manifest_listdir(m, "r", cookie, take, &pg);
		for (unsigned i = 0; i < pg.n; i++) {
			memcpy(got.names[got.n], pg.names[i], sizeof(pg.names[i]));
			got.dir[got.n++] = pg.dir[i];
		}
		pages++;
	} while (cookie && pages < 10);
	assert_int_equal(got.n, all.n);
	for (unsigned i = 0; i < got.n; i++)
		assert_string_equal(got.names[i], all.names[i]);
	/* the root lists the top-level directories */
	struct page root = {.cap = 64};
	manifest_listdir(m, "", 0, take, &root);
	assert_int_equal(root.n, 2);
	manifest_free(m);
}

/* The persisted record: what is encoded decodes to the same entries (gone
 * ones left out); damage of any kind is refused, not half-read. */
static void record_round_trip(void **state)
{
	(void)state;
	const char *p[] = {"b/x", "a.txt", "a/z"};
	struct manifest *m = build(p, 3), *back = NULL;
	m->v[1].gone = true; /* "a/z" after sorting */
	struct proto_wr w;
	proto_wr_init(&w);
	manifest_encode(m, &w);
	assert_false(w.oom);
	assert_int_equal(manifest_decode(w.buf, w.len, &back), 0);
	assert_int_equal(back->n, 2);
	assert_string_equal(back->v[0].path, "a.txt");
	assert_string_equal(back->v[1].path, "b/x");
	assert_int_equal(back->v[1].st.size, manifest_find(m, "b/x")->st.size);
	assert_int_equal(back->v[1].checked_ns, 0);
	manifest_free(back);

	/* every cut of the record is refused */
	for (size_t cut = 0; cut < w.len; cut++) {
		back = (void *)1;
		assert_int_equal(manifest_decode(w.buf, cut, &back), -EINVAL);
		assert_null(back);
	}
	/* a count the bytes cannot hold, another format */
	uint8_t *b = malloc(w.len);
	memcpy(b, w.buf, w.len);
	b[1] = 0xff;
	assert_int_equal(manifest_decode(b, w.len, &back), -EINVAL);
	memcpy(b, w.buf, w.len);
	b[0] = 9;
	assert_int_equal(manifest_decode(b, w.len, &back), -EINVAL);
	free(b);
	proto_wr_free(&w);

	/* a path twice, or one the path rules refuse */
	const char *twice[] = {"a", "a"};
	const char *evil[] = {"a", "../etc/passwd"};
	for (int k = 0; k < 2; k++) {
		const char *const *names = k ? evil : twice;
		proto_wr_init(&w);
		proto_wr_u8(&w, 1);
		proto_wr_u64(&w, 2);
		for (int i = 0; i < 2; i++) {
			proto_wr_str(&w, names[i]);
			proto_wr_u64(&w, 1);
			proto_wr_i64(&w, 2);
			proto_wr_u64(&w, 3);
		}
		assert_int_equal(manifest_decode(w.buf, w.len, &back), -EINVAL);
		proto_wr_free(&w);
	}
	manifest_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(path_rules),
		cmocka_unit_test(lookups_and_dirs),
		cmocka_unit_test(listing_pages),
		cmocka_unit_test(record_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
