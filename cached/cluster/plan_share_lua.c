/*
 * The Lua scripts plan_share.c runs in Redis (each one atomic there): see
 * plan_share.h for the keys they use.
 */
#include "plan_share_lua.h"

/* Publish: drop the old version's pieces, write the new ones under a
 * fresh version, point the field at it. Returns {gen (a string: Lua
 * would print so large a number in %g form), now}. ARGV[5] "1": a
 * republish (Redis lost the plan): refused ({"0", now}) if the field is a
 * tombstone of the same list (a cancel kept while Redis was away got there
 * first). */
const char plan_share_publish_script[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"local ttl = tonumber(ARGV[2])\n"
	"local old = redis.call('HGET', KEYS[1], ARGV[1])\n"
	"if old and ARGV[5] == '1' and string.match(old, '^%d+ 0 ') and\n"
	"   string.match(old, ' (%d+)$') == string.match(ARGV[4], ' (%d+)$') then\n"
	"  return {'0', now}\n"
	"end\n"
	"if old then\n"
	"  local og, on = string.match(old, '^(%d+) (%d+) ')\n"
	"  if og then for i = 0, tonumber(on) - 1 do redis.call('DEL', ARGV[3] .. og .. ':' .. i) end end\n"
	"end\n"
	"local gen = string.format('%d', now * 1024 + redis.call('INCR', KEYS[2]) % 1024)\n"
	"local np = #ARGV - 5\n"
	"for i = 0, np - 1 do redis.call('SET', ARGV[3] .. gen .. ':' .. i, ARGV[6 + i], 'PX', ttl) end\n"
	"redis.call('HSET', KEYS[1], ARGV[1], gen .. ' ' .. np .. ' ' .. (now + ttl) .. ' ' .. now .. ' ' .. ARGV[4])\n"
	"return {gen, now}\n";

/* Refresh version ARGV[2]'s TTL: 1 done, 0 missing (publish again), -1
 * replaced or cancelled by another registration. */
const char plan_share_refresh_script[] =
	"local v = redis.call('HGET', KEYS[1], ARGV[1])\n"
	"if not v then return 0 end\n"
	"local g, np, rest = string.match(v, '^(%d+) (%d+) %d+ (.*)$')\n"
	"if g ~= ARGV[2] or np == '0' then return -1 end\n"
	"local ttl = tonumber(ARGV[3])\n"
	"for i = 0, tonumber(np) - 1 do\n"
	"  if redis.call('PEXPIRE', ARGV[4] .. g .. ':' .. i, ttl) == 0 then\n"
	"    redis.call('HDEL', KEYS[1], ARGV[1])\n"
	"    return 0\n"
	"  end\n"
	"end\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"redis.call('HSET', KEYS[1], ARGV[1], g .. ' ' .. np .. ' ' .. (now + ttl) .. ' ' .. rest)\n"
	"return 1\n";

/* Cancel: the pieces go, the field becomes a tombstone for one TTL.
 * ARGV[4] / ARGV[5]: "0 0" cancels whatever is there (a cancel sent at
 * once); else the cancelled version and its hash (a cancel kept while
 * Redis was down, sent later): only that registration is cancelled, or the
 * same list published again (a Redis restarted empty gets it republished
 * under a new version), not a newer one (-1); a missing field gets the
 * tombstone anyway, so that a republish after it is refused by its
 * refresh. */
const char plan_share_cancel_script[] =
	"local v = redis.call('HGET', KEYS[1], ARGV[1])\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"local tomb = ' 0 ' .. (now + tonumber(ARGV[2])) .. ' ' .. now .. ' 0 0 '\n"
	"if not v then\n"
	"  if ARGV[4] == '0' then return 0 end\n"
	"  redis.call('HSET', KEYS[1], ARGV[1], ARGV[4] .. tomb .. ARGV[5])\n"
	"  return 1\n"
	"end\n"
	"local g, np, h = string.match(v, '^(%d+) (%d+) %d+ %d+ %d+ %d+ (%d+)$')\n"
	"if not g then redis.call('HDEL', KEYS[1], ARGV[1]) return 0 end\n"
	"if ARGV[4] ~= '0' and g ~= ARGV[4] and h ~= ARGV[5] then return -1 end\n"
	"if np == '0' then return 1 end\n"
	"for i = 0, tonumber(np) - 1 do redis.call('DEL', ARGV[3] .. g .. ':' .. i) end\n"
	"redis.call('HSET', KEYS[1], ARGV[1], g .. tomb .. h)\n"
	"return 1\n";

/* List the index, dropping lapsed fields. */
const char plan_share_list_script[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"local all = redis.call('HGETALL', KEYS[1])\n"
	"local out = {}\n"
	"for i = 1, #all, 2 do\n"
	"  local exp = tonumber(string.match(all[i + 1], '^%d+ %d+ (%d+) ') or '0')\n"
	"  if exp < now then redis.call('HDEL', KEYS[1], all[i])\n"
	"  else out[#out + 1] = all[i]; out[#out + 1] = all[i + 1] end\n"
	"end\n"
	"return out\n";
