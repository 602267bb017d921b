/*
 * One admin stream entry as XREAD returns it (broadcast.h): a defensive
 * parser, as Redis is not trusted more than a client. Pure: no I/O, no
 * state; unit-tested in tests/unit/test_broadcast_entry.c.
 */
#include "broadcast.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "tiercache/protocol.h"

bool broadcast_op_allowed(uint8_t op)
{
	switch (op) {
	case TC_OP_PIN:
	case TC_OP_UNPIN:
	case TC_OP_EVICT:
	case TC_OP_DEMOTE:
	case TC_OP_POLICY_SET:
	case TC_OP_RELOAD:
		return true;
	default:
		return false;
	}
}

/* "MS-SEQ": two decimal numbers of at most 20 digits each. */
bool broadcast_id_valid(const char *s, size_t n)
{
	if (n == 0 || n > BROADCAST_ID_MAX)
		return false;
	size_t i = 0, d = 0;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		d++;
	if (d == 0 || d > 20 || i >= n || s[i] != '-')
		return false;
	size_t d2 = 0;
	for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		d2++;
	return d2 > 0 && d2 <= 20 && i == n;
}

static bool is_str(const redisReply *r)
{
	return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) && r->str;
}

static bool field_is(const redisReply *r, const char *name)
{
	size_t n = strlen(name);
	return is_str(r) && r->len == n && memcmp(r->str, name, n) == 0;
}

int broadcast_entry_parse(const struct redisReply *e, struct broadcast_entry *out, char *why,
			  size_t whylen)
{
	memset(out, 0, sizeof(*out));
	if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !e->element || !is_str(e->element[0]) ||
	    !broadcast_id_valid(e->element[0]->str, e->element[0]->len)) {
		snprintf(why, whylen, "not a stream entry (expected [ID, [FIELD, VALUE, ...]])");
		return -EPROTO;
	}
	memcpy(out->id, e->element[0]->str, e->element[0]->len);
	out->id[e->element[0]->len] = '\0';
	const redisReply *f = e->element[1];
	if (!f || f->type != REDIS_REPLY_ARRAY || (f->elements % 2) != 0 || f->elements > 64 ||
	    (f->elements && !f->element)) {
		snprintf(why, whylen, "its fields are not FIELD VALUE pairs");
		return -EINVAL;
	}
	bool have_op = false, have_payload = false;
	for (size_t i = 0; i < f->elements; i += 2) {
		const redisReply *k = f->element[i], *v = f->element[i + 1];
		if (!is_str(k) || !is_str(v)) {
			snprintf(why, whylen, "field %zu is not a string", i / 2);
			return -EINVAL;
		}
		if (field_is(k, "op")) {
			unsigned long x = 0;
			size_t j = 0;
			for (; j < v->len && j < 4 && v->str[j] >= '0' && v->str[j] <= '9'; j++)
				x = x * 10 + (unsigned long)(v->str[j] - '0');
			if (j == 0 || j != v->len || x > 255 || !broadcast_op_allowed((uint8_t)x)) {
				snprintf(why, whylen, "op \"%.*s\" is not an admin op the cluster broadcasts",
					 (int)(v->len > 16 ? 16 : v->len), v->str);
				return -EINVAL;
			}
			out->op = (uint8_t)x;
			have_op = true;
		} else if (field_is(k, "payload")) {
			if (v->len > TC_FRAME_MAX) {
				snprintf(why, whylen, "payload of %zu bytes (at most %u)", (size_t)v->len,
					 TC_FRAME_MAX);
				return -EINVAL;
			}
			out->payload = v->str;
			out->len = v->len;
			have_payload = true;
		} else if (field_is(k, "from")) {
			size_t n = v->len > CONFIG_NAME_MAX ? CONFIG_NAME_MAX : v->len;
			memcpy(out->from, v->str, n);
			out->from[n] = '\0';
			for (size_t j = 0; j < n; j++)
				if ((unsigned char)out->from[j] < 0x20 || out->from[j] == '"' || out->from[j] == 0x7f)
					out->from[j] = '?'; /* it goes into logs and status */
		}
		/* other fields: a newer version's, ignored */
	}
	if (!have_op || !have_payload) {
		snprintf(why, whylen, "no %s field", have_op ? "payload" : "op");
		return -EINVAL;
	}
	return 0;
}
