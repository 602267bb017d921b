/*
 * The membership script's text and the parser of its reply (members.c;
 * split out so that tests can feed the parser hand-built replies).
 * Private to cached/cluster.
 *
 * The reply is one flat array: Redis' time in ms, then 7 elements per live
 * member: id, lease age (ms, integer), addr, capacity, state name,
 * incarnation (decimal strings), stats.
 */
#ifndef TIERCACHE_MEMBERS_REPLY_H
#define TIERCACHE_MEMBERS_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "members.h"

struct redisReply;

/* KEYS[1] the members sorted set; ARGV: id, addr, capacity, state,
 * incarnation, stats, lease_ms, the node hashes' key prefix. */
extern const char members_script[];

#define MEMBERS_REPLY_FIELDS 7u

/* Parse R into out[0..max) (sorted by id), *n members and Redis' *now_ms.
 * 0, or -EPROTO with what is wrong in why: nothing of out is to be used
 * then. Every count and length is bounded (MEMBERS_MAX, CONFIG_NAME_MAX,
 * the member fields' sizes). */
int members_parse_reply(const struct redisReply *r, struct member *out, size_t max, size_t *n,
			uint64_t *now_ms, char *why, size_t whyn);

/* enum member_state of NAME, or -1. */
int member_state_parse(const char *name, size_t len);

#endif
