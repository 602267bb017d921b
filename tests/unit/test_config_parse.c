/*
 * Unit tests of cached/conf/config.c, value parsers: sizes (64M, 1.5G, ...) and
 * durations (250ms, 5m, ...) with their bounds and rounding. No files.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "config_fixture.h"

/* ---- sizes and durations ---- */

static void test_parse_size(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int rc;
		uint64_t v;
	} cases[] = {
		{"0", 0, 0},
		{"4096", 0, 4096},
		{"4096B", 0, 4096},
		{"512K", 0, 512 << 10},
		{"512k", 0, 512 << 10},
		{"1KiB", 0, 1024},
		{"1KB", 0, 1024},
		{"64M", 0, UINT64_C(64) << 20},
		{"64G", 0, UINT64_C(64) << 30},
		{"64GiB", 0, UINT64_C(64) << 30},
		{"1T", 0, UINT64_C(1) << 40},
		{"2P", 0, UINT64_C(2) << 50},
		{"15E", 0, UINT64_C(15) << 60},
		{"1.5G", 0, UINT64_C(3) << 29},
		{"0.5K", 0, 512},
		{"1.3K", 0, 1331}, /* 1331.2, rounded down */
		{"1.000000001G", 0, (UINT64_C(1) << 30) + 1},
		{"18446744073709551615", 0, UINT64_MAX},
		{"17179869183G", 0, UINT64_C(17179869183) << 30},
		{"18446744073709551616", -ERANGE, 0},
		{"16E", -ERANGE, 0},
		{"17179869184G", -ERANGE, 0},
		{"15.5E", 0, UINT64_C(31) << 59},
		{"16.0E", -ERANGE, 0},
		{"", -EINVAL, 0},
		{"-1", -EINVAL, 0},
		{"+1", -EINVAL, 0},
		{"G", -EINVAL, 0},
		{"1.5", -EINVAL, 0}, /* a fraction of a byte */
		{"1.G", -EINVAL, 0},
		{".5G", -EINVAL, 0},
		{"1.0000000001G", -EINVAL, 0},
		{"1 G", -EINVAL, 0},
		{" 1G", -EINVAL, 0},
		{"1GG", -EINVAL, 0},
		{"1Q", -EINVAL, 0},
		{"1iB", -EINVAL, 0},
		{"1Gi", -EINVAL, 0},
		{"1GBB", -EINVAL, 0},
		{"0x10", -EINVAL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int rc = config_parse_size(cases[i].s, &v);
		if (rc != cases[i].rc || (rc == 0 && v != cases[i].v))
			print_error("size \"%s\": rc %d v %llu\n", cases[i].s, rc,
				    (unsigned long long)v);
		assert_int_equal(rc, cases[i].rc);
		if (rc == 0)
			assert_int_equal(v, cases[i].v);
		else
			assert_int_equal(v, 12345); /* untouched on error */
	}
}

static void test_parse_duration(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int rc;
		uint64_t ms;
	} cases[] = {
		{"0", 0, 0},
		{"250ms", 0, 250},
		{"30", 0, 30000},
		{"30s", 0, 30000},
		{"5m", 0, 300000},
		{"2h", 0, 7200000},
		{"1d", 0, 86400000},
		{"213503982334d", 0, UINT64_C(213503982334) * 86400000},
		{"18446744073709551615ms", 0, UINT64_MAX},
		{"213503982335d", -ERANGE, 0},
		{"18446744073709551616ms", -ERANGE, 0},
		{"18446744073709552s", -ERANGE, 0},
		{"", -EINVAL, 0},
		{"s", -EINVAL, 0},
		{"-5s", -EINVAL, 0},
		{"1.5s", -EINVAL, 0},
		{"5 s", -EINVAL, 0},
		{"5S", -EINVAL, 0},
		{"5sec", -EINVAL, 0},
		{"5w", -EINVAL, 0},
		{"5mss", -EINVAL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int rc = config_parse_duration_ms(cases[i].s, &v);
		if (rc != cases[i].rc || (rc == 0 && v != cases[i].ms))
			print_error("duration \"%s\": rc %d v %llu\n", cases[i].s, rc,
				    (unsigned long long)v);
		assert_int_equal(rc, cases[i].rc);
		if (rc == 0)
			assert_int_equal(v, cases[i].ms);
		else
			assert_int_equal(v, 12345);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
		T(test_parse_size),
		T(test_parse_duration),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
