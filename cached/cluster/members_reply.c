/*
 * The membership script (run by EVAL at every heartbeat) and the defensive
 * parser of what it returns (members_reply.h). Redis is shared with every
 * node and anything that can reach it, so the reply is checked like any
 * input from a socket: counts, lengths, charsets and numbers, and a reply
 * that fails any check is refused whole.
 */
#include "members_reply.h"

#include <ctype.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Time from Redis (TIME), so that no two nodes' clocks are compared. A
 * member whose lease is older than lease_ms is removed with its hash; the
 * hash also expires by itself after 3 leases, should no node run the
 * script for a while. A member listed without its hash (expired) is left
 * out of the answer. */
const char members_script[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"local lease = tonumber(ARGV[7])\n"
	"local prefix = ARGV[8]\n"
	"redis.call('ZADD', KEYS[1], now, ARGV[1])\n"
	"redis.call('HSET', prefix .. ARGV[1], 'addr', ARGV[2], 'capacity', ARGV[3],\n"
	"           'state', ARGV[4], 'incarnation', ARGV[5], 'stats', ARGV[6])\n"
	"redis.call('PEXPIRE', prefix .. ARGV[1], lease * 3)\n"
	"local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - lease))\n"
	"for _, id in ipairs(old) do\n"
	"  redis.call('ZREM', KEYS[1], id)\n"
	"  redis.call('DEL', prefix .. id)\n"
	"end\n"
	"local live = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')\n"
	"local out = {now}\n"
	"for i = 1, #live, 2 do\n"
	"  local id = live[i]\n"
	"  local h = redis.call('HMGET', prefix .. id, 'addr', 'capacity', 'state',\n"
	"                       'incarnation', 'stats')\n"
	"  if h[1] and h[2] and h[3] and h[4] and h[5] then\n"
	"    local age = now - tonumber(live[i + 1])\n"
	"    if age < 0 then age = 0 end\n"
	"    out[#out + 1] = id\n"
	"    out[#out + 1] = age\n"
	"    for j = 1, 5 do out[#out + 1] = h[j] end\n"
	"  end\n"
	"end\n"
	"return out\n";

int member_state_parse(const char *name, size_t len)
{
	for (int st = MEMBER_UP; st <= MEMBER_DRAINING; st++) {
		const char *s = member_state_name((enum member_state)st);
		if (strlen(s) == len && memcmp(s, name, len) == 0)
			return st;
	}
	return -1;
}

/* A string element of at most max bytes (and no NUL inside). */
static const struct redisReply *str_elem(const struct redisReply *r, size_t max)
{
	if (r->type != REDIS_REPLY_STRING || r->len > max || !r->str || memchr(r->str, '\0', r->len))
		return NULL;
	return r;
}

/* A decimal u64 of 1..20 digits, nothing else. */
static int parse_u64(const struct redisReply *r, uint64_t *out)
{
	uint64_t v = 0;
	if (!str_elem(r, 20) || r->len == 0)
		return -EPROTO;
	for (size_t i = 0; i < r->len; i++) {
		unsigned d = (unsigned)(r->str[i] - '0');
		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -EPROTO;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static bool id_ok(const char *s, size_t n)
{
	if (n < 1 || n > CONFIG_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return false;
	return true;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const struct member *)a)->id, ((const struct member *)b)->id);
}

#define BAD(...)                                                                                   \
	do {                                                                                       \
		snprintf(why, whyn, __VA_ARGS__);                                                  \
		return -EPROTO;                                                                    \
	} while (0)

int members_parse_reply(const struct redisReply *r, struct member *out, size_t max, size_t *n,
			uint64_t *now_ms, char *why, size_t whyn)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1)
		BAD("not an array with the time first");
	if ((r->elements - 1) % MEMBERS_REPLY_FIELDS)
		BAD("%zu elements, not 1 + 7 per member", r->elements);
	size_t count = (r->elements - 1) / MEMBERS_REPLY_FIELDS;
	if (count > MEMBERS_MAX || count > max)
		BAD("%zu members (at most %u)", count, MEMBERS_MAX);
	if (r->element[0]->type != REDIS_REPLY_INTEGER || r->element[0]->integer < 0)
		BAD("the time is not a non-negative integer");
	*now_ms = (uint64_t)r->element[0]->integer;
	for (size_t i = 0; i < count; i++) {
		struct redisReply *const *e = &r->element[1 + i * MEMBERS_REPLY_FIELDS];
		struct member *m = &out[i];
		const struct redisReply *s;
		memset(m, 0, sizeof(*m));
		if (!(s = str_elem(e[0], CONFIG_NAME_MAX)) || !id_ok(s->str, s->len))
			BAD("member %zu: bad id", i);
		memcpy(m->id, s->str, s->len);
		if (e[1]->type != REDIS_REPLY_INTEGER || e[1]->integer < 0)
			BAD("member %s: bad lease age", m->id);
		m->lease_age_ms = (uint64_t)e[1]->integer;
		if (!(s = str_elem(e[2], sizeof(m->addr) - 1)) || s->len == 0)
			BAD("member %s: bad addr", m->id);
		memcpy(m->addr, s->str, s->len);
		if (parse_u64(e[3], &m->capacity) < 0)
			BAD("member %s: bad capacity", m->id);
		int st = e[4]->type == REDIS_REPLY_STRING ? member_state_parse(e[4]->str, e[4]->len) : -1;
		if (st < 0)
			BAD("member %s: bad state", m->id);
		m->state = (uint8_t)st;
		if (parse_u64(e[5], &m->incarnation) < 0)
			BAD("member %s: bad incarnation", m->id);
		if (!(s = str_elem(e[6], sizeof(m->stats) - 1)))
			BAD("member %s: bad stats", m->id);
		memcpy(m->stats, s->str, s->len);
	}
	qsort(out, count, sizeof(*out), by_id);
	for (size_t i = 1; i < count; i++)
		if (strcmp(out[i - 1].id, out[i].id) == 0)
			BAD("member %s listed twice", out[i].id);
	*n = count;
	return 0;
}
