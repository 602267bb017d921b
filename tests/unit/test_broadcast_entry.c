/*
 * Unit tests of the admin stream entry parser (cached/cluster/
 * broadcast_entry.c) on hand-built hiredis replies: a good entry; ops out
 * of range or not broadcast; a payload at and past TC_FRAME_MAX; an odd
 * field count and too many fields; fields that are not strings; bad ids
 * (the entry is then not even skippable by id: -EPROTO); a missing op or
 * payload; an unknown field ignored; a "from" with control characters
 * made safe for logs. And broadcast_trim_check (broadcast_trim.c) on
 * XINFO STREAM replies: trimmed past a position or not, emptied, a Redis
 * restarted empty, Redis < 7, malformed replies.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "broadcast.h"
#include "tiercache/protocol.h"

/* ---- hand-built replies (freed as a tree) ---- */

static redisReply *str(const char *s, size_t n)
{
	redisReply *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->type = REDIS_REPLY_STRING;
	r->str = malloc(n + 1);
	assert_non_null(r->str);
	memcpy(r->str, s, n);
	r->str[n] = '\0';
	r->len = n;
	return r;
}

static redisReply *cstr(const char *s)
{
	return str(s, strlen(s));
}

static redisReply *integer(long long v)
{
	redisReply *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->type = REDIS_REPLY_INTEGER;
	r->integer = v;
	return r;
}

/* An array of n elements taken from the NULL-free list. */
static redisReply *arr(size_t n, ...)
{
	redisReply *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->type = REDIS_REPLY_ARRAY;
	r->elements = n;
	r->element = n ? calloc(n, sizeof(*r->element)) : NULL;
	va_list ap;
	va_start(ap, n);
	for (size_t i = 0; i < n; i++)
		r->element[i] = va_arg(ap, redisReply *);
	va_end(ap);
	return r;
}

static void tree_free(redisReply *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
		tree_free(r->element[i]);
	free(r->element);
	free(r->str);
	free(r);
}

/* [id, [op, OP, payload, P, from, F]] */
static redisReply *entry(const char *id, const char *op, const char *payload, size_t plen)
{
	return arr(2, cstr(id),
		   arr(6, cstr("op"), cstr(op), cstr("payload"), str(payload, plen), cstr("from"), cstr("n1")));
}

static int parse(redisReply *e, struct broadcast_entry *out, char *why)
{
	int rc = broadcast_entry_parse(e, out, why, 160);
	tree_free(e);
	return rc;
}

/* ---- tests ---- */

static void test_good(void **state)
{
	(void)state;
	struct broadcast_entry out;
	char why[160] = "";
	char op[8];
	snprintf(op, sizeof(op), "%u", (unsigned)TC_OP_EVICT);
	redisReply *e = entry("1700000000000-3", op, "abc", 3);
	assert_int_equal(broadcast_entry_parse(e, &out, why, sizeof(why)), 0);
	assert_string_equal(out.id, "1700000000000-3");
	assert_int_equal(out.op, TC_OP_EVICT);
	assert_int_equal(out.len, 3);
	assert_memory_equal(out.payload, "abc", 3);
	assert_string_equal(out.from, "n1");
	tree_free(e);
	/* an empty payload (RELOAD has none) */
	snprintf(op, sizeof(op), "%u", (unsigned)TC_OP_RELOAD);
	assert_int_equal(parse(entry("1-0", op, "", 0), &out, why), 0);
	assert_int_equal(out.len, 0);
}

static void test_op_range(void **state)
{
	(void)state;
	struct broadcast_entry out;
	char why[160];
	const char *bad[] = {"", "-1", "256", "1000", "99999", "17x", " 17", "+17", "0", "10" /* STATUS */,
			     "2" /* OPEN */, "31"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		assert_int_equal(parse(entry("1-1", bad[i], "x", 1), &out, why), -EINVAL);
		assert_non_null(strstr(why, "op"));
		assert_string_equal(out.id, "1-1"); /* skippable: the position moves past it */
	}
	char op[8];
	const uint8_t good[] = {TC_OP_PIN, TC_OP_UNPIN, TC_OP_EVICT, TC_OP_DEMOTE, TC_OP_POLICY_SET, TC_OP_RELOAD};
	for (size_t i = 0; i < sizeof(good); i++) {
		snprintf(op, sizeof(op), "%u", (unsigned)good[i]);
		assert_int_equal(parse(entry("1-1", op, "x", 1), &out, why), 0);
		assert_int_equal(out.op, good[i]);
	}
}

static void test_payload_bounds(void **state)
{
	(void)state;
	struct broadcast_entry out;
	char why[160];
	char op[8];
	snprintf(op, sizeof(op), "%u", (unsigned)TC_OP_PIN);
	char *big = malloc((size_t)TC_FRAME_MAX + 1);
	assert_non_null(big);
	memset(big, 'p', (size_t)TC_FRAME_MAX + 1);
	assert_int_equal(parse(entry("5-5", op, big, TC_FRAME_MAX), &out, why), 0);
	assert_int_equal(parse(entry("5-6", op, big, (size_t)TC_FRAME_MAX + 1), &out, why), -EINVAL);
	assert_non_null(strstr(why, "payload"));
	assert_string_equal(out.id, "5-6");
	free(big);
}

static void test_fields(void **state)
{
	(void)state;
	struct broadcast_entry out;
	char why[160];
	char op[8];
	snprintf(op, sizeof(op), "%u", (unsigned)TC_OP_PIN);
	/* odd count */
	assert_int_equal(parse(arr(2, cstr("2-0"), arr(3, cstr("op"), cstr(op), cstr("payload"))), &out, why),
			 -EINVAL);
	assert_string_equal(out.id, "2-0");
	/* more than 64 */
	redisReply *many = arr(0); /* filled below: arr() takes its elements as arguments */
	many->elements = 66;
	many->element = calloc(66, sizeof(*many->element));
	assert_non_null(many->element);
	for (size_t i = 0; i < 66; i += 2) {
		many->element[i] = cstr(i == 0 ? "op" : i == 2 ? "payload" : "x");
		many->element[i + 1] = cstr(i == 0 ? op : "v");
	}
	assert_int_equal(parse(arr(2, cstr("2-1"), many), &out, why), -EINVAL);
	/* a field that is not a string */
	assert_int_equal(parse(arr(2, cstr("2-2"), arr(4, cstr("op"), integer(17), cstr("payload"), cstr("x"))),
			       &out, why),
			 -EINVAL);
	assert_non_null(strstr(why, "not a string"));
	/* fields not an array */
	assert_int_equal(parse(arr(2, cstr("2-3"), cstr("op")), &out, why), -EINVAL);
	/* no op, no payload */
	assert_int_equal(parse(arr(2, cstr("2-4"), arr(2, cstr("payload"), cstr("x"))), &out, why), -EINVAL);
	assert_non_null(strstr(why, "no op"));
	assert_int_equal(parse(arr(2, cstr("2-5"), arr(2, cstr("op"), cstr(op))), &out, why), -EINVAL);
	assert_non_null(strstr(why, "no payload"));
	/* an unknown field is ignored; "from" is cut and made printable */
	assert_int_equal(parse(arr(2, cstr("2-6"), arr(8, cstr("op"), cstr(op), cstr("payload"), cstr("x"),
						     cstr("later"), cstr("v"), cstr("from"), str("a\"b\nc\x7f", 6))),
			       &out, why),
			 0);
	assert_string_equal(out.from, "a?b?c?");
}

static void test_bad_ids(void **state)
{
	(void)state;
	struct broadcast_entry out;
	char why[160];
	char op[8];
	snprintf(op, sizeof(op), "%u", (unsigned)TC_OP_PIN);
	const char *bad[] = {"", "-", "1-", "-1", "1", "a-1", "1-a", "1-1-1", "1 -1", "123456789012345678901-1",
			     "1-123456789012345678901"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_false(broadcast_id_valid(bad[i], strlen(bad[i])));
		assert_int_equal(parse(entry(bad[i], op, "x", 1), &out, why), -EPROTO);
		assert_string_equal(out.id, "");
	}
	assert_true(broadcast_id_valid("12345678901234567890-12345678901234567890", 41));
	/* an id with a NUL inside */
	assert_int_equal(parse(arr(2, str("1\0-1", 4), arr(4, cstr("op"), cstr(op), cstr("payload"), cstr("x"))),
			       &out, why),
			 -EPROTO);
	/* not an entry at all */
	assert_int_equal(parse(cstr("1-1"), &out, why), -EPROTO);
	assert_int_equal(parse(arr(1, cstr("1-1")), &out, why), -EPROTO);
	assert_int_equal(parse(arr(3, cstr("1-1"), arr(0), arr(0)), &out, why), -EPROTO);
	assert_int_equal(parse(arr(2, integer(1), arr(0)), &out, why), -EPROTO);
	assert_int_equal(broadcast_entry_parse(NULL, &out, why, sizeof(why)), -EPROTO);
}

static redisReply *nil(void)
{
	redisReply *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->type = REDIS_REPLY_NIL;
	return r;
}

/* XINFO STREAM's reply: length, entries-added (< 0: absent, Redis 6),
 * last-generated-id, first-entry (NULL: nil) */
static redisReply *xinfo(long long length, long long added, const char *last, const char *first)
{
	redisReply *fe = first ? arr(2, cstr(first), arr(2, cstr("op"), cstr("24"))) : nil();
	if (added < 0)
		return arr(6, cstr("length"), integer(length), cstr("last-generated-id"), cstr(last),
			   cstr("first-entry"), fe);
	return arr(8, cstr("length"), integer(length), cstr("entries-added"), integer(added),
		   cstr("last-generated-id"), cstr(last), cstr("first-entry"), fe);
}

static int trim(redisReply *r, const char *pos, char *first)
{
	int rc = broadcast_trim_check(r, pos, first, BROADCAST_ID_MAX + 1);
	tree_free(r);
	return rc;
}

static void test_trim(void **state)
{
	(void)state;
	char first[BROADCAST_ID_MAX + 1];
	/* nothing dropped: the position is before the first entry, all there */
	assert_int_equal(trim(xinfo(3, 3, "30-0", "10-0"), "5-0", first), 0);
	assert_string_equal(first, "10-0");
	/* dropped, but the position is still in the stream */
	assert_int_equal(trim(xinfo(2, 3, "30-0", "20-0"), "20-0", first), 0);
	assert_int_equal(trim(xinfo(2, 3, "30-0", "20-0"), "25-0", first), 0);
	/* trimmed past the position */
	assert_int_equal(trim(xinfo(1, 3, "30-0", "30-0"), "10-0", first), 1);
	assert_string_equal(first, "30-0");
	assert_int_equal(trim(xinfo(1, 3, "30-5", "30-5"), "30-4", first), 1);
	/* emptied: all up to the last id gone */
	assert_int_equal(trim(xinfo(0, 3, "30-0", NULL), "10-0", first), 1);
	assert_string_equal(first, "");
	assert_int_equal(trim(xinfo(0, 3, "30-0", NULL), "30-0", first), 0);
	/* Redis restarted empty: new entries only, nothing missed */
	assert_int_equal(trim(xinfo(2, 2, "900-1", "900-0"), "10-0", first), 0);
	/* a node that started on an empty stream */
	assert_int_equal(trim(xinfo(1, 3, "30-0", "30-0"), "0-0", first), 0);
	/* Redis < 7 cannot say */
	assert_int_equal(trim(xinfo(1, -1, "30-0", "30-0"), "10-0", first), 0);
	/* malformed */
	assert_int_equal(trim(cstr("x"), "10-0", first), -EPROTO);
	assert_int_equal(trim(arr(1, cstr("length")), "10-0", first), -EPROTO);
	assert_int_equal(trim(arr(2, cstr("length"), cstr("3")), "10-0", first), -EPROTO);
	assert_int_equal(broadcast_trim_check(NULL, "10-0", first, sizeof(first)), -EPROTO);
	/* a first entry whose id is not an id: treated as none */
	assert_int_equal(trim(xinfo(1, 3, "30-0", "bogus"), "10-0", first), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),	       cmocka_unit_test(test_op_range),
		cmocka_unit_test(test_payload_bounds), cmocka_unit_test(test_fields),
		cmocka_unit_test(test_bad_ids),	       cmocka_unit_test(test_trim),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
