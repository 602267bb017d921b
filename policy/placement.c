/*
 * Placement across tiers: see placement.h for the rules and the caller's
 * loop. Every decision is delegated to the receiving tier's admit(). Pure,
 * single-threaded, no I/O.
 */
#include "placement.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void placement_init(struct placement *pl, struct policy *hot, struct policy *warm)
{
	memset(pl, 0, sizeof(*pl));
	pl->tier[TIER_HOT] = hot;
	pl->tier[TIER_WARM] = warm;
	pl->demote = true;
	pl->promote = true;
	/* lru: demote=flat by default, exactly its one LRU of hot + warm with
	 * about one write per object (placement.h); the others keep demote=1
	 * (arc: 0.92-0.93 of demote=1's hits with flat in bench/epochs.sh,
	 * docs/policies.md, "arc under flat") */
	const struct policy *p = hot ? hot : warm;
	pl->demote_flat = p && strcmp(policy_name(p), "lru") == 0;
}

static int placement_bool(const char *key, const char *value, bool *out, char *err, size_t n)
{
	if (value && (strcmp(value, "1") == 0 || strcmp(value, "yes") == 0 ||
		      strcmp(value, "on") == 0 || strcmp(value, "true") == 0)) {
		*out = true;
		return 0;
	}
	if (value && (strcmp(value, "0") == 0 || strcmp(value, "no") == 0 ||
		      strcmp(value, "off") == 0 || strcmp(value, "false") == 0)) {
		*out = false;
		return 0;
	}
	snprintf(err, n, "placement: %s: \"%s\" is not 0 or 1", key, value ? value : "");
	return -EINVAL;
}

int placement_set(struct placement *pl, const char *key, const char *value, char *err,
		  size_t errlen)
{
	if (strcmp(key, "demote") == 0) {
		if (value && strcmp(value, "reread") == 0) {
			pl->demote = pl->demote_reread = true;
			pl->demote_flat = false;
			return 0;
		}
		if (value && strcmp(value, "flat") == 0) {
			pl->demote = pl->demote_flat = true;
			pl->demote_reread = false;
			return 0;
		}
		bool on;
		if (placement_bool(key, value, &on, err, errlen) < 0) {
			snprintf(err, errlen,
				 "placement: demote: \"%s\" is not 0, 1, reread or flat",
				 value ? value : "");
			return -EINVAL;
		}
		pl->demote = on;
		pl->demote_reread = pl->demote_flat = false;
		return 0;
	}
	if (strcmp(key, "promote") == 0)
		return placement_bool(key, value, &pl->promote, err, errlen);
	if (strcmp(key, "hot_max_size") == 0) {
		char *end = NULL;
		errno = 0;
		unsigned long long v = value && *value >= '0' && *value <= '9'
					       ? strtoull(value, &end, 10)
					       : 0;
		if (!value || !end || *end || errno) {
			snprintf(err, errlen, "placement: hot_max_size: \"%s\" is not a byte count",
				 value ? value : "");
			return -EINVAL;
		}
		pl->hot_max_size = v;
		return 0;
	}
	snprintf(err, errlen,
		 "placement: unknown tunable \"%s\" (tunables: demote promote hot_max_size)", key);
	return -EINVAL;
}

static bool placement_fits_hot(const struct placement *pl, uint64_t size)
{
	return pl->tier[TIER_HOT] && (!pl->hot_max_size || size <= pl->hot_max_size);
}

/* Tier t's admit(), with what is in flight to it counted as held: the
 * policy's own byte count is raised for the call and put back. */
static bool placement_admit(struct placement *pl, int t, uint64_t key, uint64_t size, uint64_t now)
{
	struct policy *p = pl->tier[t];
	uint64_t in = pl->inflight[t];
	p->bytes += in;
	bool ok = policy_admit(p, key, size, now);
	p->bytes -= in;
	return ok;
}

/* demote=flat: bytes tier t may take now (placement.h, room) */
static uint64_t flat_room(const struct placement *pl, int t)
{
	if (pl->room)
		return pl->room(pl->arg, t);
	uint64_t held = pl->tier[t]->bytes + pl->inflight[t];
	return held < pl->cap[t] ? pl->cap[t] - held : 0;
}

/* demote=flat: the entry tier t gives up next, or NULL */
static const struct pol_entry *flat_victim(struct placement *pl, int t, uint64_t now)
{
	if (pl->victim)
		return pl->victim(pl->arg, t, now);
	return policy_victim(pl->tier[t], now);
}

/* demote=flat: does a fill of size bytes go to warm first? Hot while it
 * has room, else warm while it has room, else the tier whose next victim
 * was read longer ago: the entry one cache of both would give up. */
static bool flat_fill_warm(struct placement *pl, uint64_t size, uint64_t now, bool count)
{
	if (flat_room(pl, TIER_HOT) >= size)
		return false;
	if (flat_room(pl, TIER_WARM) >= size)
		return true;
	const struct pol_entry *hv = flat_victim(pl, TIER_HOT, now);
	const struct pol_entry *wv = flat_victim(pl, TIER_WARM, now);
	if (!hv || !wv)
		return false; /* one holds nothing: in flight or pinned; as demote=1 */
	if (wv->atime >= hv->atime)
		return false;
	if (count)
		pl->fills_older++;
	return true;
}

/* The tiers a miss's fill asks, in order (TIER_NONE: none): warm then hot
 * when demote=flat's rule picks warm; else hot, then warm, while the size
 * fits hot; else warm alone. count: count a choice by the victims' ages
 * (fills_older). */
static void fill_order(struct placement *pl, uint64_t size, uint64_t now, bool count, int to[2])
{
	bool hot = placement_fits_hot(pl, size), warm = pl->tier[TIER_WARM] != NULL;
	if (pl->demote_flat && warm && hot && flat_fill_warm(pl, size, now, count)) {
		to[0] = TIER_WARM;
		to[1] = TIER_HOT;
	} else if (hot) {
		to[0] = TIER_HOT;
		to[1] = warm ? TIER_WARM : TIER_NONE;
	} else {
		to[0] = warm ? TIER_WARM : TIER_NONE;
		to[1] = TIER_NONE;
	}
}

int placement_fill(struct placement *pl, uint64_t key, uint64_t size, uint64_t now)
{
	int to[2];
	fill_order(pl, size, now, true, to);
	for (int i = 0; i < 2 && to[i] != TIER_NONE; i++) {
		if (placement_admit(pl, to[i], key, size, now)) {
			pl->fills[to[i]]++;
			return to[i];
		}
	}
	pl->refused++;
	return TIER_NONE;
}

int placement_fill_first(struct placement *pl, uint64_t size, uint64_t now)
{
	int to[2];
	fill_order(pl, size, now, false, to);
	return to[0];
}

int placement_fill_instead(struct placement *pl, int refused, uint64_t key, uint64_t size,
			   uint64_t now)
{
	if (refused < 0 || refused >= TIER_COUNT)
		return TIER_NONE;
	if (pl->fills[refused])
		pl->fills[refused]--;
	/* only the tiers after it: those before it were asked already (and
	 * said no) when placement_fill reached it */
	for (int t = refused + 1; t < TIER_COUNT; t++) {
		if (pl->tier[t] && placement_admit(pl, t, key, size, now)) {
			pl->fills[t]++;
			pl->instead++;
			return t;
		}
	}
	pl->refused++;
	return TIER_NONE;
}

bool placement_ahead_hot(struct placement *pl, uint64_t key, uint64_t size, uint64_t now)
{
	if (!placement_fits_hot(pl, size))
		return false;
	if (!placement_admit(pl, TIER_HOT, key, size, now)) {
		pl->ahead_refused++;
		return false;
	}
	return true;
}

int placement_hit(struct placement *pl, int t, struct pol_entry *e, uint64_t now)
{
	policy_hit(pl->tier[t], e, now);
	if (e->placed & POL_PLACED_AHEAD)
		e->placed &= (uint8_t)~POL_PLACED_AHEAD; /* the read it was loaded for */
	else
		e->placed |= POL_PLACED_REREAD;
	if (t != TIER_WARM || !pl->promote || !placement_fits_hot(pl, e->size))
		return t;
	/* Hot's admit() sees this read as a read hot did not serve: the
	 * same count of accesses hot would see if it had no warm below. */
	if (!placement_admit(pl, TIER_HOT, e->key, e->size, now))
		return t;
	pl->promoted++;
	return TIER_HOT;
}

int placement_demote(struct placement *pl, struct pol_entry *e, uint64_t now)
{
	/* Read once since it came in: copying it down would double the
	 * writes of every small object for a read that may never come. */
	if (pl->demote && pl->demote_reread && pl->tier[TIER_WARM] &&
	    !(e->placed & POL_PLACED_REREAD)) {
		pl->dropped++;
		pl->dropped_unread++;
		return TIER_NONE;
	}
	/* demote=flat: one cache of hot + warm would give up warm's victim
	 * for e only if e was read after it */
	if (pl->demote && pl->demote_flat && pl->tier[TIER_WARM] &&
	    flat_room(pl, TIER_WARM) < e->size) {
		const struct pol_entry *wv = flat_victim(pl, TIER_WARM, now);
		if (wv && wv->atime >= e->atime) {
			pl->dropped++;
			pl->dropped_older++;
			return TIER_NONE;
		}
	}
	if (pl->demote && pl->tier[TIER_WARM] &&
	    placement_admit(pl, TIER_WARM, e->key, e->size, now)) {
		pl->demoted++;
		return TIER_WARM;
	}
	pl->dropped++;
	return TIER_NONE;
}

void placement_demoted_insert(struct placement *pl, struct pol_entry *e, uint64_t now)
{
	if (pl->demote_flat)
		policy_insert_aged(pl->tier[TIER_WARM], e, now);
	else
		policy_insert(pl->tier[TIER_WARM], e, now);
}
