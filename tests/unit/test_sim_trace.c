/*
 * tiercache-sim traces (policy/sim/trace.c, gen.c): the CSV reader's
 * answers and its errors, epoch inference, write/read round trip, and the
 * generators' defining properties.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/gen.h"
#include "sim/trace.h"

static int read_str(struct trace *t, const char *text, char *err, size_t errlen)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(f);
	trace_init(t);
	int rc = trace_read_csv_stream(t, f, "t.csv", err, errlen);
	fclose(f);
	return rc;
}

static void test_csv_basic(void **state)
{
	(void)state;
	struct trace t;
	char err[256];
	const char *text = "object,size,rank,job\n"
			   "# comment\n"
			   "a,100,0,0\n"
			   "b,200,1,1\n"
			   "\n"
			   "a,100,0,0\n"
			   "shard-7/chunk-3,4096,0,1\r\n";
	assert_int_equal(read_str(&t, text, err, sizeof(err)), 0);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.nobj, 3);
	assert_int_equal(t.obj[0], t.obj[2]);
	assert_int_equal(t.size[t.obj[1]], 200);
	assert_int_equal(t.size[t.obj[3]], 4096);
	assert_int_equal(t.job[1], 1);
	assert_int_equal(t.rank[1], 1);
	assert_int_equal(t.njobs, 2);
	assert_int_equal(t.dataset_bytes, 100 + 200 + 4096);
	/* job 0 read a twice: its epoch moved on */
	assert_int_equal(t.epoch[0], 0);
	assert_int_equal(t.epoch[2], 1);
	assert_int_equal(t.epoch[1], 0);
	assert_int_equal(t.nepochs, 2);
	trace_free(&t);
}

static void test_csv_errors(void **state)
{
	(void)state;
	struct trace t;
	char err[256];
	assert_int_equal(read_str(&t, "a,100\nb\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.csv:2: need object,size[,rank[,job[,epoch]]]");
	trace_free(&t);
	assert_int_equal(read_str(&t, "a,10x\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.csv:1: size: \"10x\" is not a byte count");
	trace_free(&t);
	assert_int_equal(read_str(&t, "a,0\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "at least 1 byte"));
	trace_free(&t);
	assert_int_equal(read_str(&t, "a,1,0\nb,1\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.csv:2: 2 fields, earlier lines have 3");
	trace_free(&t);
	assert_int_equal(read_str(&t, "a,1,0,0,0,9\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 5 fields"));
	trace_free(&t);
	assert_int_equal(read_str(&t, "a,1,70000\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "rank"));
	trace_free(&t);
	assert_int_equal(read_str(&t, "a,99999999999999999999999\n", err, sizeof(err)), -EINVAL);
	trace_free(&t);
	assert_int_equal(read_str(&t, ",5\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "object: empty"));
	trace_free(&t);
	assert_int_equal(trace_read_csv(&t, "/nonexistent/x.csv", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/x.csv"));
	trace_free(&t);
}

/* The daemon's trace (tierctl trace): columns by the header's names, extra
 * columns ignored, empty rank/job/epoch unknown, escaped objects opaque. */
static void test_csv_daemon_header(void **state)
{
	(void)state;
	struct trace t;
	char err[256];
	const char *text = "object,size,rank,job,epoch,time_us,dataset,chunk,result\n"
			   "ds/a%2Cb.bin#0,1000,,,,5,ds,0,miss\n"
			   "ds/a%2Cb.bin#1,200,,,,9,ds,1,miss\n"
			   "ds/c.bin#0,300,1,0,,12,ds,0,unkept\n"
			   "ds/a%2Cb.bin#0,1000,,,,20,ds,0,hot\n";
	assert_int_equal(read_str(&t, text, err, sizeof(err)), 0);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.nobj, 3);
	assert_int_equal(t.obj[0], t.obj[3]);
	assert_int_equal(t.size[t.obj[1]], 200);
	assert_int_equal(t.rank[2], 1);
	assert_int_equal(t.rank[0], 0);
	assert_int_equal(t.job[0], 0);
	assert_false(t.has_epochs);
	/* untagged reads are job 0: reading a#0 again starts its epoch 1 */
	assert_int_equal(t.epoch[3], 1);
	trace_free(&t);

	/* columns in any order; unknown ones ignored */
	text = "object,result,weird,size\no1,hot,x,10\no2,miss,y,20\n";
	assert_int_equal(read_str(&t, text, err, sizeof(err)), 0);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.size[t.obj[1]], 20);
	trace_free(&t);

	/* an epoch on every line is used as given */
	text = "object,size,epoch,x\na,1,0,\nb,1,3,\n";
	assert_int_equal(read_str(&t, text, err, sizeof(err)), 0);
	assert_true(t.has_epochs);
	assert_int_equal(t.epoch[1], 3);
	trace_free(&t);
}

static void test_csv_daemon_header_errors(void **state)
{
	(void)state;
	struct trace t;
	char err[256];
	assert_int_equal(read_str(&t, "object,rank\na,1\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.csv:1: header: need columns \"object\" and \"size\"");
	trace_free(&t);
	assert_int_equal(read_str(&t, "object,size,size\na,1,1\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.csv:1: header: column \"size\" twice");
	trace_free(&t);
	assert_int_equal(read_str(&t, "object,size,x\na,1,z\nb,2\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.csv:3: 2 fields, the header has 3");
	trace_free(&t);
	assert_int_equal(read_str(&t, "object,size,x\na,1,z,q\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.csv:2: more than the header's 3 fields");
	trace_free(&t);
	/* size may not be empty; rank stays bounded */
	assert_int_equal(read_str(&t, "object,size,rank\na,,0\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.csv:2: size: \"\" is not a byte count");
	trace_free(&t);
	assert_int_equal(read_str(&t, "object,size,rank\na,5,70000\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.csv:2: rank: \"70000\" is not an integer in [0, 65535]"));
	trace_free(&t);
	/* a header of 33 columns */
	char big[400] = "object,size";
	for (int i = 0; i < 31; i++)
		strcat(big, ",x");
	strcat(big, "\n");
	assert_int_equal(read_str(&t, big, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 32 columns"));
	trace_free(&t);
}

static void test_csv_round_trip(void **state)
{
	(void)state;
	struct gen_opts o;
	struct trace a, b;
	char err[256];
	gen_opts_default(&o);
	o.kind = GEN_MULTIJOB;
	o.objects = 50;
	o.epochs = 3;
	o.jobs = 2;
	o.size_kind = GEN_SIZE_UNIFORM;
	o.size_a = 10;
	o.size_b = 90;
	trace_init(&a);
	assert_int_equal(gen_trace(&o, &a, err, sizeof(err)), 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(trace_write_csv(&a, f), 0);
	fclose(f);
	assert_int_equal(read_str(&b, buf, err, sizeof(err)), 0);
	assert_int_equal(b.n, a.n);
	assert_int_equal(b.nepochs, a.nepochs);
	for (size_t i = 0; i < a.n; i++) {
		assert_int_equal(b.size[b.obj[i]], a.size[a.obj[i]]);
		assert_int_equal(b.job[i], a.job[i]);
		assert_int_equal(b.epoch[i], a.epoch[i]);
	}
	free(buf);
	trace_free(&a);
	trace_free(&b);
}

static void gen(struct gen_opts *o, struct trace *t)
{
	char err[256];
	trace_init(t);
	assert_int_equal(gen_trace(o, t, err, sizeof(err)), 0);
}

static void test_gen_shuffle(void **state)
{
	(void)state;
	struct gen_opts o;
	struct trace t;
	gen_opts_default(&o);
	o.objects = 100;
	o.epochs = 4;
	gen(&o, &t);
	assert_int_equal(t.n, 400);
	assert_int_equal(t.nepochs, 4);
	/* every epoch is a permutation, and not the same one twice */
	int same = 0;
	for (uint32_t e = 0; e < 4; e++) {
		int seen[100] = { 0 };
		for (int i = 0; i < 100; i++) {
			assert_int_equal(t.epoch[e * 100 + i], e);
			seen[t.obj[e * 100 + i]]++;
			if (e)
				same += t.obj[e * 100 + i] == t.obj[(e - 1) * 100 + i];
		}
		for (int i = 0; i < 100; i++)
			assert_int_equal(seen[i], 1);
	}
	assert_true(same < 50);
	trace_free(&t);
}

/* DistributedSampler: per epoch the ranks split one permutation by
 * stride; together they cover it, each a different part every epoch. */
static void test_gen_ddp(void **state)
{
	(void)state;
	struct gen_opts o;
	struct trace all, node;
	gen_opts_default(&o);
	o.kind = GEN_DDP;
	o.objects = 102; /* not a multiple of 4: padded to 104 */
	o.epochs = 3;
	o.ranks = 4;
	o.view = -1;
	gen(&o, &all);
	assert_int_equal(all.n, 104 * 3);
	assert_int_equal(all.nranks, 4);
	for (uint32_t e = 0; e < 3; e++) {
		int seen[102] = { 0 };
		for (size_t i = e * 104; i < (e + 1) * 104; i++) {
			seen[all.obj[i]]++;
			assert_int_equal(all.rank[i], (i - e * 104) % 4);
		}
		for (int k = 0; k < 102; k++)
			assert_true(seen[k] >= 1 && seen[k] <= 2);
	}
	o.view = 2;
	gen(&o, &node);
	assert_int_equal(node.n, 26 * 3);
	/* the node's view is exactly rank 2's reads of the full trace */
	size_t j = 0;
	for (size_t i = 0; i < all.n; i++)
		if (all.rank[i] == 2)
			assert_int_equal(node.obj[j++], all.obj[i]);
	assert_int_equal(j, node.n);
	trace_free(&all);
	trace_free(&node);
}

static void test_gen_shards_sequential(void **state)
{
	(void)state;
	struct gen_opts o;
	struct trace t;
	gen_opts_default(&o);
	o.kind = GEN_SHARDS;
	o.shards = 10;
	o.chunks = 5;
	o.epochs = 2;
	o.readers = 1;
	gen(&o, &t);
	assert_int_equal(t.n, 100);
	assert_int_equal(t.nobj, 50);
	for (size_t i = 0; i < t.n; i += 5)
		for (size_t k = 0; k < 5; k++)
			assert_int_equal(t.obj[i + k], t.obj[i] + k);
	trace_free(&t);
}

static void test_gen_zipf_skewed(void **state)
{
	(void)state;
	struct gen_opts o;
	struct trace t;
	gen_opts_default(&o);
	o.kind = GEN_ZIPF;
	o.objects = 1000;
	o.accesses = 50000;
	o.alpha = 1.0;
	gen(&o, &t);
	int *count = calloc(1000, sizeof(*count));
	for (size_t i = 0; i < t.n; i++)
		count[t.obj[i]]++;
	int max = 0;
	for (int k = 0; k < 1000; k++)
		max = count[k] > max ? count[k] : max;
	/* the top object gets ~1/H(1000) = 13% of reads; uniform would be 0.1% */
	assert_true(max > 5000);
	free(count);
	trace_free(&t);
}

static void test_gen_sizes_and_errors(void **state)
{
	(void)state;
	struct gen_opts o;
	struct trace t;
	char err[256];
	gen_opts_default(&o);
	assert_int_equal(gen_size_parse(&o, "lognormal:1M:0.5", err, sizeof(err)), 0);
	assert_int_equal(o.size_kind, GEN_SIZE_LOGNORMAL);
	assert_int_equal(gen_size_parse(&o, "uniform:4K:1K", err, sizeof(err)), -EINVAL);
	assert_int_equal(gen_size_parse(&o, "pareto:1:2", err, sizeof(err)), -EINVAL);
	assert_int_equal(gen_size_parse(&o, "0", err, sizeof(err)), -EINVAL);
	assert_int_equal(gen_size_parse(&o, "uniform:1K:4K", err, sizeof(err)), 0);
	o.objects = 500;
	o.epochs = 1;
	gen(&o, &t);
	for (uint32_t k = 0; k < t.nobj; k++)
		assert_true(t.size[k] >= 1024 && t.size[k] <= 4096);
	trace_free(&t);
	uint64_t b;
	assert_true(gen_parse_bytes("64K", &b) && b == 65536);
	assert_true(gen_parse_bytes("1.5G", &b) && b == 1610612736ULL);
	assert_true(gen_parse_bytes("2MiB", &b) && b == 2097152);
	assert_false(gen_parse_bytes("12Q", &b));
	assert_false(gen_parse_bytes("-3", &b));
	o.kind = GEN_DDP;
	o.view = 9;
	o.ranks = 4;
	trace_init(&t);
	assert_int_equal(gen_trace(&o, &t, err, sizeof(err)), -EINVAL);
	trace_free(&t);
	assert_int_equal(gen_kind_parse("ddp"), GEN_DDP);
	assert_int_equal(gen_kind_parse("nope"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csv_basic),
		cmocka_unit_test(test_csv_errors),
		cmocka_unit_test(test_csv_daemon_header),
		cmocka_unit_test(test_csv_daemon_header_errors),
		cmocka_unit_test(test_csv_round_trip),
		cmocka_unit_test(test_gen_shuffle),
		cmocka_unit_test(test_gen_ddp),
		cmocka_unit_test(test_gen_shards_sequential),
		cmocka_unit_test(test_gen_zipf_skewed),
		cmocka_unit_test(test_gen_sizes_and_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
