/*
 * Unit tests of cached/cluster/handover.c: joining and draining members
 * are never homes; the previous home is the best member other than self
 * that may hold the chunk (up or draining), which is the old home after a
 * join (the newcomer's previous home) and the draining node after a drain;
 * previous homes are asked only while the cluster is in motion.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "handover.h"

#define KEYS 2000u

static struct member mem[4];
static struct home_node scratch[MEMBERS_MAX];

static void set(size_t i, const char *id, enum member_state st)
{
	memset(&mem[i], 0, sizeof(mem[i]));
	snprintf(mem[i].id, sizeof(mem[i].id), "%s", id);
	mem[i].capacity = 1000;
	mem[i].state = (uint8_t)st;
}

static uint64_t key(unsigned k)
{
	return (uint64_t)k * 0x9e3779b97f4a7c15ull + 12345;
}

static void test_not_homes(void **state)
{
	(void)state;
	set(0, "a", MEMBER_UP);
	set(1, "b", MEMBER_JOINING);
	set(2, "c", MEMBER_DRAINING);
	struct home_choice hc;
	for (unsigned k = 0; k < KEYS; k++) {
		handover_choose(mem, 3, "a", key(k), scratch, &hc);
		assert_int_equal(hc.home, 0);
		assert_int_equal(hc.second, -1);
		assert_int_equal(hc.prev, 2); /* c may hold it, b may not, a is self */
	}
	set(0, "a", MEMBER_JOINING);
	handover_choose(mem, 3, "a", key(1), scratch, &hc);
	assert_int_equal(hc.home, -1);
}

static void test_join(void **state)
{
	(void)state;
	/* before: a, b, c up; after: d up too */
	set(0, "a", MEMBER_UP);
	set(1, "b", MEMBER_UP);
	set(2, "c", MEMBER_UP);
	set(3, "d", MEMBER_UP);
	unsigned moved = 0;
	for (unsigned k = 0; k < KEYS; k++) {
		struct home_choice before, after;
		handover_choose(mem, 3, "d", key(k), scratch, &before);
		handover_choose(mem, 4, "d", key(k), scratch, &after);
		if (after.home == 3) {
			moved++;
			/* the newcomer's previous home is the old home */
			assert_int_equal(after.prev, before.home);
		} else {
			assert_int_equal(after.home, before.home); /* nothing else moves */
		}
	}
	/* about 1/4 moved */
	assert_true(moved > KEYS / 4 - KEYS / 10 && moved < KEYS / 4 + KEYS / 10);
}

static void test_drain(void **state)
{
	(void)state;
	set(0, "a", MEMBER_UP);
	set(1, "b", MEMBER_UP);
	set(2, "c", MEMBER_UP);
	unsigned moved = 0;
	for (unsigned k = 0; k < KEYS; k++) {
		struct home_choice before, after;
		mem[1].state = MEMBER_UP;
		handover_choose(mem, 3, "x", key(k), scratch, &before);
		mem[1].state = MEMBER_DRAINING;
		handover_choose(mem, 3, "x", key(k), scratch, &after);
		assert_int_not_equal(after.home, 1);
		if (before.home == 1) {
			moved++;
			/* the new home (as self) finds the draining node as previous home */
			struct home_choice at_new;
			handover_choose(mem, 3, mem[after.home].id, key(k), scratch, &at_new);
			assert_int_equal(at_new.home, after.home);
			assert_int_equal(at_new.prev, 1);
		} else {
			assert_int_equal(after.home, before.home);
		}
	}
	assert_true(moved > 0);
}

/* Previous homes are asked while a member joins or drains and within the
 * window after the list changed; a settled cluster asks nobody. */
static void test_asking(void **state)
{
	(void)state;
	set(0, "a", MEMBER_UP);
	set(1, "b", MEMBER_UP);
	set(2, "c", MEMBER_UP);
	assert_true(handover_asking(mem, 3, 1000, 1000, 500));   /* just changed */
	assert_true(handover_asking(mem, 3, 1499, 1000, 500));   /* inside the window */
	assert_false(handover_asking(mem, 3, 1500, 1000, 500));  /* settled */
	assert_false(handover_asking(mem, 3, 99999, 1000, 500));
	assert_false(handover_asking(mem, 3, 1000, 1000, 0));    /* window 0: never by time */
	assert_true(handover_asking(mem, 3, 999, 1000, 500));    /* a clock before the change */
	mem[1].state = MEMBER_JOINING;
	assert_true(handover_asking(mem, 3, 99999, 1000, 0));    /* a join in progress */
	mem[1].state = MEMBER_DRAINING;
	assert_true(handover_asking(mem, 3, 99999, 1000, 0));    /* a drain hands over through asks */
	assert_false(handover_asking(mem, 0, 99999, 1000, 500)); /* no list */
}

/* Only members other than self that hold chunks (reported use > 0) or
 * drain are worth a previous-home ask: in a fresh cluster nobody is. */
static void test_others_hold(void **state)
{
	(void)state;
	set(0, "a", MEMBER_UP);
	set(1, "b", MEMBER_JOINING);
	set(2, "c", MEMBER_UP);
	assert_false(handover_others_hold(mem, 3, "a")); /* no stats yet */
	snprintf(mem[2].stats, sizeof(mem[2].stats), "@used 0;ds 0 0 0 0;");
	assert_false(handover_others_hold(mem, 3, "a")); /* fresh: empty */
	snprintf(mem[0].stats, sizeof(mem[0].stats), "@used 4096;");
	assert_false(handover_others_hold(mem, 3, "a")); /* only self holds */
	assert_true(handover_others_hold(mem, 3, "c"));  /* for c, a does */
	snprintf(mem[1].stats, sizeof(mem[1].stats), "@used 4096;");
	assert_false(handover_others_hold(mem, 3, "a")); /* joining: not a previous home */
	snprintf(mem[2].stats, sizeof(mem[2].stats), "@used 1048576;ds 1 0 0 0;");
	assert_true(handover_others_hold(mem, 3, "a"));
	snprintf(mem[2].stats, sizeof(mem[2].stats), "garbage");
	assert_false(handover_others_hold(mem, 3, "a"));
	set(2, "c", MEMBER_DRAINING); /* a drain hands over through the asks */
	assert_true(handover_others_hold(mem, 3, "a"));
	assert_false(handover_others_hold(mem, 0, "a"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_homes),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_drain),
		cmocka_unit_test(test_asking),
		cmocka_unit_test(test_others_hold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
