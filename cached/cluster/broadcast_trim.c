/*
 * Did the admin stream lose entries this node had not read? (broadcast.h,
 * broadcast_trim_check). The stream is capped (XADD MAXLEN ~ 100000), so a
 * node down for long enough finds it trimmed past its stored position:
 * the entries between its position and the stream's first entry are gone
 * and were never applied here. XINFO STREAM says enough: the first
 * entry's id, the length, and (Redis >= 7) how many entries were ever
 * added. Entries were dropped only if more were added than remain; then a
 * position older than the first entry may have missed some. A Redis
 * restarted empty has added exactly what it holds: nothing was missed
 * (its new ids are newer than any position). Pure: no I/O, no state.
 */
#include "broadcast.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

/* "MS-SEQ" -> two numbers; false if it is not an id. */
static bool id_split(const char *s, size_t n, unsigned long long *ms, unsigned long long *seq)
{
	char buf[BROADCAST_ID_MAX + 1];
	if (!broadcast_id_valid(s, n))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return sscanf(buf, "%llu-%llu", ms, seq) == 2;
}

/* Is id a older than id b? */
static bool id_before(const char *a, size_t an, const char *b, size_t bn)
{
	unsigned long long am, as, bm, bs;
	if (!id_split(a, an, &am, &as) || !id_split(b, bn, &bm, &bs))
		return false;
	return am < bm || (am == bm && as < bs);
}

static bool key_is(const redisReply *k, const char *name)
{
	size_t n = strlen(name);
	return k && (k->type == REDIS_REPLY_STRING || k->type == REDIS_REPLY_STATUS) && k->str && k->len == n &&
	       memcmp(k->str, name, n) == 0;
}

int broadcast_trim_check(const struct redisReply *r, const char *pos, char *first, size_t fn)
{
	if (fn)
		first[0] = '\0';
	if (!r || r->type != REDIS_REPLY_ARRAY || (r->elements % 2) != 0 || r->elements > 64 ||
	    (r->elements && !r->element))
		return -EPROTO;
	long long length = -1, added = -1;
	const redisReply *fe = NULL, *last = NULL;
	for (size_t i = 0; i < r->elements; i += 2) {
		const redisReply *k = r->element[i], *v = r->element[i + 1];
		if (!v)
			return -EPROTO;
		if (key_is(k, "length") && v->type == REDIS_REPLY_INTEGER)
			length = v->integer;
		else if (key_is(k, "entries-added") && v->type == REDIS_REPLY_INTEGER)
			added = v->integer;
		else if (key_is(k, "first-entry"))
			fe = v;
		else if (key_is(k, "last-generated-id") && v->type == REDIS_REPLY_STRING && v->str &&
			 broadcast_id_valid(v->str, v->len))
			last = v;
	}
	if (length < 0)
		return -EPROTO;
	const redisReply *id = NULL;
	if (fe && fe->type == REDIS_REPLY_ARRAY && fe->elements >= 1 && fe->element && fe->element[0] &&
	    fe->element[0]->type == REDIS_REPLY_STRING && broadcast_id_valid(fe->element[0]->str, fe->element[0]->len))
		id = fe->element[0];
	if (id && fn > id->len) {
		memcpy(first, id->str, id->len);
		first[id->len] = '\0';
	}
	if (added < 0 || added <= length || strcmp(pos, "0-0") == 0)
		return 0; /* nothing was ever dropped (Redis < 7 cannot say), or it started on an empty
			   * stream and has read along */
	if (!id) /* emptied: everything up to the last id is gone */
		return last && id_before(pos, strlen(pos), last->str, last->len) ? 1 : 0;
	return id_before(pos, strlen(pos), id->str, id->len) ? 1 : 0;
}
