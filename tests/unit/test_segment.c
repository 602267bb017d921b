/*
 * The segment store: items appended at assigned offsets and read back,
 * sealing at the segment size, items dying one by one until a sealed
 * segment is unlinked, a held descriptor still reading its bytes after the
 * unlink, and the start after a crash: an unrecorded segment deleted, a
 * recorded one kept (its unrecorded tail dead), files of other names left
 * alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "segment.h"
#include "tier.h"
#include "unit_tmpdir.h"

static char dir[] = "/tmp/tc_segment_test.XXXXXX";

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

static void fill_pattern(char *buf, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)((i * 31 + seed * 7) & 0xff);
}

/* Append one item of n bytes in domain dom; returns its segment and offset. */
static struct segment *append_in(struct segstore *s, uint64_t dom, unsigned seed, uint32_t n,
				 uint64_t *off)
{
	struct segment *g;
	char *buf = malloc(n);
	assert_non_null(buf);
	fill_pattern(buf, n, seed);
	assert_int_equal(segstore_assign(s, dom, n, &g, off), 0);
	assert_int_equal(segment_pwrite(g->wfd, buf, n, *off), 0);
	segment_write_end(s, g, n, true);
	free(buf);
	return g;
}

static struct segment *append(struct segstore *s, unsigned seed, uint32_t n, uint64_t *off)
{
	return append_in(s, 1, seed, n, off);
}

static void check_item(const char *path, unsigned seed, uint32_t n, uint64_t off)
{
	char *want = malloc(n), *got = malloc(n);
	assert_non_null(want);
	assert_non_null(got);
	fill_pattern(want, n, seed);
	assert_int_equal(tier_file_pread(path, got, n, off), 0);
	assert_memory_equal(want, got, n);
	free(want);
	free(got);
}

static void test_append_seal_read(void **state)
{
	(void)state;
	struct segstore s;
	char tp[256];
	snprintf(tp, sizeof(tp), "%s/t1", dir);
	mkdir(tp, 0750);
	assert_int_equal(segstore_init(&s, tp, "hot", 100000), 0);
	uint64_t off[10];
	struct segment *g[10];
	for (unsigned i = 0; i < 10; i++)
		g[i] = append(&s, i, 30000, &off[i]);
	/* 3 items per 100000-byte segment: 4 segments, the first 3 sealed */
	assert_int_equal(s.created, 4);
	assert_int_equal(s.sealed, 3);
	assert_ptr_equal(g[0], g[2]);
	assert_ptr_not_equal(g[2], g[3]);
	/* each item starts on a SEGMENT_ALIGN boundary (its padding a hole) */
	assert_int_equal(off[1], 32768);
	assert_int_equal(off[2], 65536);
	assert_int_equal(off[3], 0);
	for (unsigned i = 0; i < 10; i++)
		check_item(g[i]->path, i, 30000, off[i]);
	assert_int_equal(s.bytes_live, 300000);
	assert_int_equal(s.bytes_dead, 0);
	/* a client's descriptor reads at base + offset */
	int fd = segment_open_fd(g[4]);
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	close(fd);
	segstore_free(&s);
}

static void test_dead_and_unlink(void **state)
{
	(void)state;
	struct segstore s;
	char tp[256];
	snprintf(tp, sizeof(tp), "%s/t2", dir);
	mkdir(tp, 0750);
	assert_int_equal(segstore_init(&s, tp, "warm", 100000), 0);
	uint64_t off[4];
	struct segment *g[4];
	for (unsigned i = 0; i < 4; i++)
		g[i] = append(&s, 10 + i, 30000, &off[i]);
	struct segment *first = g[0];
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s", first->path);
	/* a client holds item 1's descriptor through the reclaim */
	int held = segment_open_fd(first);
	assert_true(held >= 0);
	segment_ref(first);
	assert_false(segment_item_dead(&s, first, 30000));
	assert_int_equal(s.bytes_dead, 30000);
	/* candidates: sealed, at most 70 % live */
	assert_ptr_equal(segstore_reclaim_candidate(&s, 70), first);
	assert_null(segstore_reclaim_candidate(&s, 50));
	assert_false(segment_item_dead(&s, first, 30000));
	assert_true(segment_item_dead(&s, first, 30000)); /* last item: unlinked */
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(s.reclaimed, 1);
	assert_int_equal(s.nsegs, 1);
	assert_int_equal(s.bytes_dead, 0);
	assert_int_equal(s.bytes_live, 30000);
	/* the held descriptor still reads item 1's bytes */
	char want[30000], got[30000];
	fill_pattern(want, sizeof(want), 11);
	assert_int_equal(pread(held, got, sizeof(got), (off_t)off[1]), (ssize_t)sizeof(got));
	assert_memory_equal(want, got, sizeof(got));
	close(held);
	assert_true(segment_unref(&s, first));
	/* the open segment with no live item is not a candidate (its bytes go
	 * with the segment, after its next item dies) */
	assert_false(segment_item_dead(&s, g[3], 30000));
	assert_null(segstore_reclaim_candidate(&s, 100));
	/* with a live item and dead bytes it is, and is sealed when chosen */
	uint64_t o;
	struct segment *n = append(&s, 40, 10000, &o);
	assert_ptr_equal(n, g[3]);
	assert_false(n->sealed);
	assert_null(segstore_reclaim_candidate(&s, 10));
	assert_ptr_equal(segstore_reclaim_candidate(&s, 50), n);
	assert_true(n->sealed);
	assert_true(segment_item_dead(&s, n, 10000)); /* last item: unlinked */
	segstore_free(&s);
}

/* keep(): records name segment 1 only */
static bool keep_one(void *arg, uint64_t id, uint64_t size)
{
	(void)size;
	return id == *(uint64_t *)arg;
}

static void test_reload_after_crash(void **state)
{
	(void)state;
	struct segstore s;
	char tp[256], other[PATH_MAX + 32], stale[PATH_MAX + 32];
	snprintf(tp, sizeof(tp), "%s/t3", dir);
	mkdir(tp, 0750);
	assert_int_equal(segstore_init(&s, tp, "hot", 100000), 0);
	uint64_t off[5];
	struct segment *g[5];
	for (unsigned i = 0; i < 5; i++)
		g[i] = append(&s, 20 + i, 30000, &off[i]);
	uint64_t id1 = g[0]->id;
	char path1[PATH_MAX + 64];
	snprintf(path1, sizeof(path1), "%s", g[0]->path);
	assert_int_equal(segment_sync(path1), 0);
	/* the crash: segment 2 was never synced and is cut short; a file of
	 * another naming and a half-named one are not ours */
	assert_int_equal(truncate(g[3]->path, 1000), 0);
	snprintf(other, sizeof(other), "%s/notes.txt", s.dir);
	snprintf(stale, sizeof(stale), "%s/seg-hot-zz", s.dir);
	FILE *f = fopen(other, "w");
	fputs("x", f);
	fclose(f);
	f = fopen(stale, "w");
	fclose(f);
	char path2[PATH_MAX + 64];
	snprintf(path2, sizeof(path2), "%s", g[3]->path);
	segstore_free(&s);

	assert_int_equal(segstore_init(&s, tp, "hot", 100000), 0);
	unsigned removed = 0;
	assert_int_equal(segstore_load(&s, keep_one, &id1, &removed), 0);
	assert_int_equal(removed, 1);
	assert_int_equal(access(path2, F_OK), -1);
	assert_int_equal(access(other, F_OK), 0);
	assert_int_equal(access(stale, F_OK), 0);
	struct segment *r = segstore_find(&s, id1);
	assert_non_null(r);
	assert_true(r->sealed);
	assert_int_equal(r->size, 65536 + 30000);
	/* only items 0 and 2 had records: item 1 is dead bytes */
	segment_adopt_item(&s, r, off[0], 30000);
	segment_adopt_item(&s, r, off[2], 30000);
	segstore_load_done(&s);
	assert_true(r->aligned);
	assert_int_equal(s.bytes_live, 60000);
	assert_int_equal(s.bytes_dead, 65536 + 30000 - 60000);
	check_item(r->path, 20, 30000, off[0]);
	check_item(r->path, 22, 30000, off[2]);
	/* new items never go into a segment found at start */
	uint64_t o;
	struct segment *n = append(&s, 99, 1000, &o);
	assert_ptr_not_equal(n, r);
	assert_true(n->id > id1);
	check_item(n->path, 99, 1000, o);
	/* reading past a truncated segment's end is an error, not short data */
	char b[100];
	assert_int_equal(tier_file_pread(r->path, b, sizeof(b), 65536 + 30000 - 50), -EIO);
	segstore_free(&s);
}

/* Items of different domains (datasets) never share a segment: a
 * descriptor of one reads no byte of the other's; each domain has its own
 * open segment, sealed on its own; an idle close and the next append
 * reopen the same segment. */
static void test_domains_apart(void **state)
{
	(void)state;
	struct segstore s;
	char tp[256];
	snprintf(tp, sizeof(tp), "%s/t4", dir);
	mkdir(tp, 0750);
	assert_int_equal(segstore_init(&s, tp, "hot", 100000), 0);
	uint64_t oa[4], ob[4];
	struct segment *a[4], *b[4];
	for (unsigned i = 0; i < 4; i++) {
		a[i] = append_in(&s, 11, i, 30000, &oa[i]);
		b[i] = append_in(&s, 22, 10 + i, 30000, &ob[i]);
	}
	for (unsigned i = 0; i < 4; i++)
		for (unsigned j = 0; j < 4; j++)
			assert_ptr_not_equal(a[i], b[j]);
	assert_ptr_equal(a[0], a[2]);
	assert_ptr_equal(b[0], b[2]);
	assert_int_equal(oa[1], 32768);
	assert_int_equal(ob[1], 32768);
	assert_int_equal(s.created, 4);
	assert_int_equal(s.sealed, 2);
	for (unsigned i = 0; i < 4; i++) {
		check_item(a[i]->path, i, 30000, oa[i]);
		check_item(b[i]->path, 10 + i, 30000, ob[i]);
	}
	/* idle: no write descriptor; the next append reopens the same one */
	segstore_idle_close(&s);
	assert_int_equal(a[3]->wfd, -1);
	uint64_t o;
	struct segment *g = append_in(&s, 11, 50, 1000, &o);
	assert_ptr_equal(g, a[3]);
	assert_int_equal(o, 32768);
	check_item(g->path, 50, 1000, o);
	check_item(a[3]->path, 3, 30000, oa[3]);
	segstore_seal_open(&s);
	assert_null(s.opens);
	segstore_free(&s);
}

/* The segment size follows the tier: at most 1/16 of it, at least 64K. */
static void test_size_for_tier(void **state)
{
	(void)state;
	assert_int_equal(segment_size_for(64ull << 20, 1ull << 40), 64ull << 20);
	assert_int_equal(segment_size_for(64ull << 20, 64ull << 20), 4ull << 20);
	assert_int_equal(segment_size_for(64ull << 20, 4ull << 20), 256ull << 10);
	assert_int_equal(segment_size_for(64ull << 20, 512ull << 10), 64ull << 10);
	assert_int_equal(segment_size_for(0, 1ull << 40), SEGMENT_SIZE_DEFAULT);
}

/* Candidates for a reclaim that ranks them itself: the deadest first, at
 * most k, only those with at most the given share live, none sealed by
 * the asking; segment_seal then seals the open one chosen. */
static void test_candidates_ranked(void **state)
{
	(void)state;
	struct segstore s;
	char tp[256];
	snprintf(tp, sizeof(tp), "%s/t5", dir);
	mkdir(tp, 0750);
	assert_int_equal(segstore_init(&s, tp, "hot", 102400), 0);
	struct segment *g[16];
	uint64_t off;
	/* 16 items of 20000 (each in a 20480-byte slot): segments of 5
	 * items, the fourth one open */
	for (unsigned i = 0; i < 16; i++)
		g[i] = append(&s, 60 + i, 20000, &off);
	struct segment *a = g[0], *b = g[5], *c = g[10], *open = g[15];
	assert_true(a->sealed && b->sealed && c->sealed);
	assert_false(open->sealed);
	assert_true(a != b && b != c && c != open);
	/* dead: a 1 item, b 3, c 2 */
	assert_false(segment_item_dead(&s, a, 20000));
	for (unsigned i = 0; i < 3; i++)
		assert_false(segment_item_dead(&s, b, 20000));
	for (unsigned i = 0; i < 2; i++)
		assert_false(segment_item_dead(&s, c, 20000));
	struct segment *out[8];
	assert_int_equal(segstore_reclaim_candidates(&s, 100, out, 8), 3);
	assert_ptr_equal(out[0], b);
	assert_ptr_equal(out[1], c);
	assert_ptr_equal(out[2], a);
	assert_int_equal(segstore_reclaim_candidates(&s, 100, out, 2), 2);
	assert_ptr_equal(out[0], b);
	assert_ptr_equal(out[1], c);
	/* b is 40 % live, c 60 %, a 80 % */
	assert_int_equal(segstore_reclaim_candidates(&s, 50, out, 8), 1);
	assert_ptr_equal(out[0], b);
	assert_int_equal(segstore_reclaim_candidates(&s, 10, out, 8), 0);
	/* a held one (a client holds an item's file) is no candidate: it
	 * would give nothing back until let go; again one once let go */
	b->holds = 1;
	assert_int_equal(segstore_reclaim_candidates(&s, 100, out, 8), 2);
	assert_ptr_equal(out[0], c);
	assert_ptr_equal(out[1], a);
	b->holds = 0;
	assert_int_equal(segstore_reclaim_candidates(&s, 100, out, 8), 3);
	assert_ptr_equal(out[0], b);
	/* the open one: a candidate once it has dead bytes and a live item,
	 * not sealed by being listed */
	append(&s, 90, 20000, &off);
	assert_false(segment_item_dead(&s, open, 20000));
	assert_int_equal(segstore_reclaim_candidates(&s, 100, out, 8), 4);
	assert_false(open->sealed);
	segment_seal(&s, open);
	assert_true(open->sealed);
	struct segment *next = append(&s, 91, 20000, &off);
	assert_true(next != open);
	segstore_free(&s);
}

/* Punching: an aligned item's range runs to the next boundary and counts
 * its length; the hole reads zeros and its neighbours keep their bytes;
 * the store's dead bytes and the segment's disk bytes fall by what was
 * counted; a segment found at start counts its holes as punched; an item
 * of a segment whose items were not all aligned gives back only the
 * blocks inside it. */
static void test_punch(void **state)
{
	(void)state;
	struct segstore s;
	char tp[256];
	snprintf(tp, sizeof(tp), "%s/t6", dir);
	mkdir(tp, 0750);
	assert_int_equal(segstore_init(&s, tp, "hot", 1 << 20), 0);
	assert_true(s.punch); /* the unit tests run on ext4 or tmpfs */
	uint64_t off[3];
	struct segment *g = NULL;
	for (unsigned i = 0; i < 3; i++)
		g = append(&s, 70 + i, 30000, &off[i]);
	assert_int_equal(off[1], 32768);
	uint64_t lo, hi, acct;
	assert_true(segment_punch_range(g, off[1], 30000, &lo, &hi, &acct));
	assert_int_equal(lo, 32768);
	assert_int_equal(hi, 65536);
	assert_int_equal(acct, 30000);
	assert_false(segment_item_dead(&s, g, 30000));
	assert_int_equal(s.bytes_dead, 30000);
	segment_punched(&s, g, acct);
	assert_int_equal(s.bytes_dead, 0);
	assert_int_equal(segment_disk_bytes(g), 60000);
	int fd = open(g->path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(segment_punch(fd, lo, hi), 0);
	assert_int_equal(segment_data_bytes(fd, 0, 65536 + 30000), 32768 + 30000);
	char z[30000], zero[30000];
	memset(zero, 0, sizeof(zero));
	assert_int_equal(pread(fd, z, sizeof(z), (off_t)off[1]), (ssize_t)sizeof(z));
	assert_memory_equal(z, zero, sizeof(z));
	close(fd);
	check_item(g->path, 70, 30000, off[0]);
	check_item(g->path, 72, 30000, off[2]);
	/* found at start: the hole counts as punched, and the item's range
	 * there counts what is below the file's size */
	uint64_t id = g->id;
	assert_int_equal(segment_sync(g->path), 0);
	segstore_free(&s);
	assert_int_equal(segstore_init(&s, tp, "hot", 1 << 20), 0);
	unsigned removed;
	assert_int_equal(segstore_load(&s, keep_one, &id, &removed), 0);
	struct segment *r = segstore_find(&s, id);
	assert_non_null(r);
	assert_int_equal(r->size, 65536 + 30000);
	assert_int_equal(r->punched, 32768); /* item 1's hole (item 0's padding shares its last block) */
	segment_adopt_item(&s, r, off[0], 30000);
	segment_adopt_item(&s, r, off[2], 30000);
	segstore_load_done(&s);
	assert_true(r->aligned);
	assert_true(segment_punch_range(r, off[2], 30000, &lo, &hi, &acct));
	assert_int_equal(lo, 65536);
	assert_int_equal(hi, 65536 + 32768);
	assert_int_equal(acct, 30000); /* its bytes below the size */
	/* an item off a boundary: only the blocks inside it */
	segment_adopt_item(&s, r, 100, 10000);
	assert_false(r->aligned);
	assert_true(segment_punch_range(r, 100, 10000, &lo, &hi, &acct));
	assert_int_equal(lo, 4096);
	assert_int_equal(hi, 8192);
	assert_int_equal(acct, 4096);
	assert_false(segment_punch_range(r, 100, 5000, &lo, &hi, &acct)); /* no whole block */
	segstore_free(&s);
}

/* Spare segment files (segment.h "spare"): asked for after each new
 * segment, created off the store (here by the test, as a worker would:
 * segment_file_create, then segstore_spare_done), taken by the next new
 * segment instead of a creation of its own; one not ready yet or that
 * failed leaves that segment to be created as before; an idle close and a
 * spare's take reopen it; freed, the spare's file is deleted; after a
 * crash, an empty spare no record names is deleted at start. */
static struct {
	struct segstore *s;
	uint64_t id;
	int asked;
} spare_req;

static bool spare_defer(void *arg, struct segstore *s, uint64_t id)
{
	(void)arg;
	spare_req.s = s;
	spare_req.id = id;
	spare_req.asked++;
	return true;
}

/* What the worker does (seg_close.c), rc_force < 0: it failed. */
static void spare_run(int rc_force)
{
	char path[PATH_MAX + 64];
	int wfd = -1, rfd = -1;
	segment_path(spare_req.s, spare_req.id, path, sizeof(path));
	int rc = rc_force < 0 ? rc_force : segment_file_create(spare_req.s->dir, path, &wfd, &rfd);
	segstore_spare_done(spare_req.s, spare_req.id, rc, wfd, rfd);
}

static bool keep_none(void *arg, uint64_t id, uint64_t size)
{
	(void)arg;
	(void)id;
	(void)size;
	return false;
}

static void test_spares(void **state)
{
	(void)state;
	struct segstore s;
	char tp[256], spath[PATH_MAX + 64];
	snprintf(tp, sizeof(tp), "%s/tspare", dir);
	mkdir(tp, 0750);
	assert_int_equal(segstore_init(&s, tp, "hot", 100000), 0);
	s.spare_make = spare_defer;
	memset(&spare_req, 0, sizeof(spare_req));
	uint64_t off[13];
	struct segment *g[13];
	for (unsigned i = 0; i < 3; i++)
		g[i] = append(&s, 40 + i, 30000, &off[i]);
	/* the first segment: created by the store itself; a spare asked for */
	assert_int_equal(s.created_on_loop, 1);
	assert_int_equal(spare_req.asked, 1);
	assert_true(spare_req.id != g[0]->id);
	spare_run(0);
	segment_path(&s, spare_req.id, spath, sizeof(spath));
	struct stat st;
	assert_int_equal(stat(spath, &st), 0);
	assert_int_equal(st.st_size, 0);
	/* the next new segment takes it: no creation of its own */
	uint64_t sid = spare_req.id;
	g[3] = append(&s, 43, 30000, &off[3]);
	assert_int_equal(g[3]->id, sid);
	assert_int_equal(s.spares_used, 1);
	assert_int_equal(s.created_on_loop, 1);
	assert_int_equal(spare_req.asked, 2); /* and the next one asked for */
	/* not ready yet when the segment seals: created as before */
	for (unsigned i = 4; i < 7; i++)
		g[i] = append(&s, 40 + i, 30000, &off[i]);
	assert_int_equal(s.created_on_loop, 2);
	assert_true(g[6]->id != spare_req.id);
	assert_int_equal(spare_req.asked, 2);
	spare_run(0); /* lands later: kept for the next */
	/* an idle close closes its append descriptor; the take reopens it */
	segstore_idle_close(&s);
	assert_int_equal(s.spare.wfd, -1);
	sid = spare_req.id;
	for (unsigned i = 7; i < 10; i++)
		g[i] = append(&s, 40 + i, 30000, &off[i]);
	assert_int_equal(g[9]->id, sid);
	assert_int_equal(s.spares_used, 2);
	/* a spare that failed (ENOSPC): the next segment is created as before */
	spare_run(-ENOSPC);
	assert_int_equal(s.spare_errors, 1);
	for (unsigned i = 10; i < 13; i++) /* 12: g[9]'s segment is full */
		g[i] = append(&s, 40 + i, 30000, &off[i]);
	assert_int_equal(s.created_on_loop, 3);
	assert_int_equal(s.spares_used, 2);
	for (unsigned i = 0; i < 13; i++)
		check_item(g[i]->path, 40 + i, 30000, off[i]);
	/* freed with a spare ready: its file is deleted */
	spare_run(0);
	segment_path(&s, spare_req.id, spath, sizeof(spath));
	assert_int_equal(access(spath, F_OK), 0);
	segstore_free(&s);
	assert_int_equal(access(spath, F_OK), -1);

	/* a crash with a spare ready: at start, the empty file that no record
	 * names is deleted like any unrecorded segment */
	assert_int_equal(segstore_init(&s, tp, "hot", 100000), 0);
	unsigned removed = 0;
	assert_int_equal(segstore_load(&s, keep_none, NULL, &removed), 0);
	segstore_load_done(&s);
	s.spare_make = spare_defer;
	append(&s, 1, 1000, &off[0]);
	spare_run(0);
	segment_path(&s, spare_req.id, spath, sizeof(spath));
	close(s.spare.wfd);
	close(s.spare.rfd);
	s.spare = (struct seg_spare){.wfd = -1, .rfd = -1}; /* the process died */
	segstore_free(&s);
	assert_int_equal(access(spath, F_OK), 0);
	assert_int_equal(segstore_init(&s, tp, "hot", 100000), 0);
	assert_int_equal(segstore_load(&s, keep_none, NULL, &removed), 0);
	assert_true(removed >= 1);
	assert_int_equal(access(spath, F_OK), -1);
	segstore_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_seal_read),
		cmocka_unit_test(test_spares),
		cmocka_unit_test(test_dead_and_unlink),
		cmocka_unit_test(test_reload_after_crash),
		cmocka_unit_test(test_domains_apart),
		cmocka_unit_test(test_size_for_tier),
		cmocka_unit_test(test_candidates_ranked),
		cmocka_unit_test(test_punch),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
