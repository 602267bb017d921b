/*
 * Tier accounting and files: watermarks from percentages, reservations that
 * never overcommit, atomic publish, reconciliation of a directory with what
 * the index knows (temp files and orphans removed).
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

#include "tier.h"
#include "unit_tmpdir.h"

static char dir[] = "/tmp/tc_tier_test.XXXXXX";

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

static void make_tier(struct tier *t, const char *name, uint64_t cap, unsigned hi, unsigned lo)
{
	struct tier_conf tc = {.present = true, .capacity = cap, .high_water = hi, .low_water = lo};
	char err[256], id[TIER_ID_LEN + 1];
	snprintf(tc.path, sizeof(tc.path), "%s/%s", dir, name);
	assert_int_equal(tier_setup(t, TIER_HOT, &tc, id, err, sizeof(err)), 0);
	assert_int_equal(strlen(id), TIER_ID_LEN);
}

static void watermarks_and_reservations(void **state)
{
	(void)state;
	struct tier t;
	make_tier(&t, "acct", 1000, 90, 70);
	assert_int_equal(t.high_bytes, 900);
	assert_int_equal(t.low_bytes, 700);
	assert_true(tier_reserve(&t, 600));
	assert_false(tier_reserve(&t, 401)); /* would pass capacity */
	assert_true(tier_reserve(&t, 400));
	assert_int_equal(tier_free(&t), 0);
	assert_true(tier_over_high(&t));
	tier_commit(&t, 600);
	assert_int_equal(t.used, 600);
	assert_int_equal(t.reserved, 400);
	tier_unreserve(&t, 400);
	assert_int_equal(tier_free(&t), 400);
	assert_false(tier_over_high(&t));
	/* no overflow in the percentage arithmetic for huge tiers */
	struct tier big;
	make_tier(&big, "big", UINT64_MAX / 2, 95, 90);
	assert_true(big.high_bytes > big.low_bytes && big.high_bytes < big.capacity);
}

static void publish_is_atomic_and_complete(void **state)
{
	(void)state;
	struct tier t;
	char tmp[4200], fin[4200], buf[5000];
	make_tier(&t, "publish", 1 << 20, 90, 70);
	memset(buf, 'z', sizeof(buf));
	tier_tmp_path(&t, 0xabcdefull, tmp, sizeof(tmp));
	tier_chunk_path(&t, 0xabcdefull, fin, sizeof(fin));
	int fd = -1;
	assert_int_equal(tier_file_write(tmp, fin, buf, sizeof(buf), &fd), 0);
	assert_true(fd >= 0);
	close(fd);
	struct stat st;
	assert_int_equal(stat(fin, &st), 0);
	assert_int_equal(st.st_size, sizeof(buf));
	assert_int_equal(access(tmp, F_OK), -1); /* renamed away */
	char back[5000];
	assert_int_equal(tier_file_read(fin, back, sizeof(back)), 0);
	assert_memory_equal(back, buf, sizeof(buf));
	/* a file shorter than the index says is an error, not short data */
	char more[6000];
	assert_true(tier_file_read(fin, more, sizeof(more)) < 0);
	/* two temp names for the same key never collide */
	char tmp2[4200];
	tier_tmp_path(&t, 0xabcdefull, tmp2, sizeof(tmp2));
	assert_string_not_equal(tmp, tmp2);
}

static uint64_t keep_key;

static bool known(void *arg, struct tier *t, uint64_t key, uint64_t size)
{
	(void)arg;
	(void)t;
	return key == keep_key && size == 3;
}

static void reconcile_removes_orphans_and_temps(void **state)
{
	(void)state;
	struct tier t;
	char p[4200];
	make_tier(&t, "reconcile", 1 << 20, 90, 70);
	int fd;
	keep_key = 0x1111;
	const uint64_t keys[] = {0x1111, 0x2222, 0x3333};
	for (int i = 0; i < 3; i++) {
		tier_chunk_path(&t, keys[i], p, sizeof(p));
		fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0640);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, i == 2 ? "abcd" : "abc", i == 2 ? 4 : 3), i == 2 ? 4 : 3);
		close(fd);
	}
	snprintf(p, sizeof(p), "%s/tmp/half-written.tmp", t.path);
	fd = open(p, O_CREAT | O_WRONLY, 0640);
	close(fd);
	snprintf(p, sizeof(p), "%s/chunks/00/not-a-chunk-name", t.path);
	fd = open(p, O_CREAT | O_WRONLY, 0640);
	close(fd);
	unsigned orphans = 0;
	assert_int_equal(tier_reconcile(&t, known, NULL, &orphans), 0);
	assert_int_equal(orphans, 2); /* 0x2222, 0x3333 (unknown); not the odd name */
	tier_chunk_path(&t, 0x1111, p, sizeof(p));
	assert_int_equal(access(p, F_OK), 0);
	tier_chunk_path(&t, 0x2222, p, sizeof(p));
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/tmp/half-written.tmp", t.path);
	assert_int_equal(access(p, F_OK), -1);
	/* a file the daemon did not name is not the daemon's to delete */
	snprintf(p, sizeof(p), "%s/chunks/00/not-a-chunk-name", t.path);
	assert_int_equal(access(p, F_OK), 0);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0640);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* The marker: written into an empty directory and kept across restarts;
 * a foreign non-empty directory, or the other tier's, is refused and
 * left as it was. */
static void marker_claims_only_empty_directories(void **state)
{
	(void)state;
	struct tier t;
	struct tier_conf tc = {.present = true, .capacity = 1 << 20, .high_water = 90, .low_water = 70};
	char err[512], id1[TIER_ID_LEN + 1], id2[TIER_ID_LEN + 1], p[4200];
	snprintf(tc.path, sizeof(tc.path), "%s/marked", dir);
	assert_int_equal(tier_setup(&t, TIER_HOT, &tc, id1, err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/%s", tc.path, TIER_MARKER);
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(tier_setup(&t, TIER_HOT, &tc, id2, err, sizeof(err)), 0);
	assert_string_equal(id1, id2); /* the same directory: the same id */
	assert_int_equal(tier_check_layout(tc.path, "hot"), 0);
	assert_int_equal(tier_check_layout(tc.path, "warm"), -ENOENT);
	/* the warm tier pointed at hot's directory */
	assert_int_equal(tier_setup(&t, TIER_WARM, &tc, id2, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "hot tier's directory"));

	/* a directory with someone's files */
	snprintf(tc.path, sizeof(tc.path), "%s/foreign", dir);
	assert_int_equal(mkdir(tc.path, 0750), 0);
	snprintf(p, sizeof(p), "%s/notes.txt", tc.path);
	write_file(p, "mine");
	assert_int_equal(tier_setup(&t, TIER_HOT, &tc, id1, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "is not empty and has no tiercache marker"));
	assert_int_equal(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/chunks", tc.path);
	assert_int_equal(access(p, F_OK), -1); /* nothing created in it */
	snprintf(p, sizeof(p), "%s/%s", tc.path, TIER_MARKER);
	assert_int_equal(access(p, F_OK), -1);

	/* an install from before markers: chunks/ and tmp/ only */
	snprintf(tc.path, sizeof(tc.path), "%s/old", dir);
	assert_int_equal(mkdir(tc.path, 0750), 0);
	snprintf(p, sizeof(p), "%s/chunks", tc.path);
	assert_int_equal(mkdir(p, 0750), 0);
	snprintf(p, sizeof(p), "%s/tmp", tc.path);
	assert_int_equal(mkdir(p, 0750), 0);
	assert_int_equal(tier_setup(&t, TIER_HOT, &tc, id1, err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/%s", tc.path, TIER_MARKER);
	assert_int_equal(access(p, F_OK), 0);

	/* a file of the marker's name that is no marker */
	snprintf(tc.path, sizeof(tc.path), "%s/fake", dir);
	assert_int_equal(mkdir(tc.path, 0750), 0);
	snprintf(p, sizeof(p), "%s/%s", tc.path, TIER_MARKER);
	write_file(p, "hello\n");
	assert_int_equal(tier_setup(&t, TIER_HOT, &tc, id1, err, sizeof(err)), -EEXIST);
}

/* The room the disk has bounds reservations and moves the watermarks; a
 * failed tier takes nothing. */
static void room_and_failure(void **state)
{
	(void)state;
	struct tier t;
	make_tier(&t, "room", 1000, 90, 70);
	assert_int_equal(tier_capacity_now(&t), 1000);
	tier_set_room(&t, 500);
	assert_int_equal(tier_capacity_now(&t), 500);
	assert_int_equal(t.high_bytes, 450);
	assert_int_equal(t.low_bytes, 350);
	assert_false(tier_reserve(&t, 501));
	assert_true(tier_reserve(&t, 500));
	tier_unreserve(&t, 500);
	tier_set_room(&t, 5000); /* more disk than capacity: capacity rules */
	assert_int_equal(tier_capacity_now(&t), 1000);
	assert_int_equal(t.high_bytes, 900);
	tier_set_failed(&t, "read-only file system");
	assert_true(t.failed);
	assert_int_equal(t.fail_count, 1);
	assert_int_equal(tier_free(&t), 0);
	assert_false(tier_reserve(&t, 1));
	tier_set_ok(&t);
	assert_true(tier_reserve(&t, 1));
	assert_int_equal(tier_probe(t.path), 0);
	char p[4200];
	snprintf(p, sizeof(p), "%s/tmp", t.path);
	assert_int_equal(rmdir(p), 0);
	assert_true(tier_probe(t.path) < 0); /* nowhere to write */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(watermarks_and_reservations),
		cmocka_unit_test(publish_is_atomic_and_complete),
		cmocka_unit_test(reconcile_removes_orphans_and_temps),
		cmocka_unit_test(marker_claims_only_empty_directories),
		cmocka_unit_test(room_and_failure),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
