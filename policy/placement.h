/*
 * Placement across tiers: where a fill goes (hot, warm, or nowhere), whether
 * a hot victim is demoted to warm or dropped, whether a warm hit is promoted
 * to hot. Pure decisions, no I/O: the caller (the daemon, tiercache-sim)
 * moves the bytes and keeps the per-tier policy instances in step.
 *
 * Tiers are exclusive: an entry lives in one tier at a time, so hot + warm
 * hold hot + warm bytes of distinct data. Every decision is the receiving
 * tier's own policy saying admit(): the policy that will have to keep the
 * entry decides whether it is worth keeping, against what it already holds.
 * That is what makes the rules right for every policy at once:
 *   - lru, arc: always admit, so fills go hot, hot victims go warm, warm
 *     hits come back hot: one LRU (ARC) over both tiers, hot at the front;
 *   - epoch: admits only into free or dead room, so each tier keeps its own
 *     stable subset and nothing churns between them;
 *   - clairvoyant: admits only what is needed before its own furthest
 *     victim, so the soonest-needed data settles on hot.
 *
 * demote=flat (hot and warm as one cache): the rules above keep one LRU
 * over both tiers, but every fill goes hot and every hot victim is copied
 * to warm: two writes per object. With demote=flat a fill goes to hot while
 * hot has room, else to warm while warm has room, else to the tier whose
 * next victim was read longer ago (pol_entry.atime): the fill takes the
 * room of the entry one cache of hot + warm bytes would give up. A hot
 * victim goes to warm only while warm has room or when it was read more
 * recently than warm's next victim (the one cache would keep it); else it
 * is dropped. Warm hits promote as before: a copy only of what is read
 * again. A demoted entry keeps the age of its last read in warm
 * (placement_demoted_insert), so for lru that is exactly one LRU of hot +
 * warm bytes, as demote=1 is, with about one write per object; every move
 * still needs the receiving tier's admit(). Other policies keep their own
 * order in warm: arc keeps a demoted entry on the list it was on (T1 or
 * T2) and takes it as demoted now (atime too), as demote=1 does; epoch
 * and clairvoyant insert it as read now and only pol_entry.atime, which
 * the rule compares, stays the real one.
 *
 * The caller's loop, with cap[] the byte budget of each tier:
 *
 *   hit in tier t:  to = placement_hit(pl, t, e, now)
 *                   if to != t: remove e from t, insert into `to`, make_room(to)
 *   miss:           to = placement_fill(pl, key, size, now)
 *                   while to != TIER_NONE and `to` has no room now (bytes in flight):
 *                       to = placement_fill_instead(pl, to, key, size, now)
 *                   if to != TIER_NONE: fill, insert into `to`, make_room(to)
 *   make_room(t):   while tier t holds more than cap[t]:
 *                       v = policy_victim(tier t)
 *                       if t == TIER_HOT and placement_demote(pl, v, now) == TIER_WARM:
 *                           move v to warm (remove, placement_demoted_insert),
 *                           then make_room(TIER_WARM)
 *                       else: remove v and drop its bytes
 *
 * Single-threaded (the daemon's loop thread), like the policies it asks.
 */
#ifndef TIERCACHE_POLICY_PLACEMENT_H
#define TIERCACHE_POLICY_PLACEMENT_H

#include "policy.h"
#include "tier_id.h"

enum {
	TIER_NONE = -1, /* not kept in any tier */
};

struct placement {
	struct policy *tier[TIER_COUNT]; /* NULL: that tier is not configured */
	uint64_t hot_max_size; /* larger entries skip hot (0: no limit) */
	bool demote;           /* hot victims may go to warm */
	bool demote_reread;    /* ... only those read again since they were
				* filled or moved in (demote=reread) */
	bool demote_flat;      /* demote=flat: hot + warm as one cache (above) */
	bool promote;          /* warm hits may move to hot */
	/* What demote=flat asks of the tiers, set by the caller: room(arg, t)
	 * is the bytes tier t may take now without giving up anything its
	 * policies keep (fills and moves in flight counted as held); victim
	 * (arg, t, now) the entry tier t gives up next, over every instance
	 * sharing the tier, or NULL. Either NULL: this placement's own
	 * policies, with cap[t] their budget (the simulator, the tests). */
	uint64_t (*room)(void *arg, int t);
	const struct pol_entry *(*victim)(void *arg, int t, uint64_t now);
	void *arg;
	uint64_t cap[TIER_COUNT];
	/* Bytes the caller has admitted to each tier and not inserted yet:
	 * fills and moves still in flight. Each tier's admit() counts them as
	 * held, so several admits in a row do not all take the same free
	 * room. A caller that inserts at once (the simulator) leaves them 0;
	 * one that fills asynchronously (the daemon) keeps them up to date. */
	uint64_t inflight[TIER_COUNT];
	uint64_t fills[TIER_COUNT], refused, demoted, dropped, promoted;
	uint64_t dropped_unread; /* of dropped: demote=reread, not read again */
	uint64_t dropped_older;  /* of dropped: demote=flat, read before warm's victim */
	uint64_t fills_older;    /* demote=flat fills sent to the tier with the older
				  * victim because neither had room */
	uint64_t instead; /* fills placement_fill_instead sent to a later tier */
	uint64_t ahead_refused; /* reads ahead hot's policy would not make room for */
};

/* Both tiers optional; promote and demote on, no size limit; demote=flat
 * when the policies are lru, demote=1 for the others. */
void placement_init(struct placement *pl, struct policy *hot, struct policy *warm);

/* Tunables: demote=0|1|reread|flat, promote=0|1, hot_max_size=BYTES.
 * demote=reread: a hot victim goes to warm (if warm's policy admits it)
 * only if it was hit since it was filled or last moved in; one read once
 * and never again is dropped, not copied. demote=flat: see above. -EINVAL
 * + err:
 *   placement: unknown tunable "x" (tunables: demote promote hot_max_size) */
int placement_set(struct placement *pl, const char *key, const char *value, char *err,
		  size_t errlen);

/* A read missed every tier: the tier its fill goes to, or TIER_NONE (serve
 * it from cold and keep nothing). Asks hot, then warm (demote=flat: warm
 * first when the rule above picks warm); counts as that read's access for
 * each policy it asks. */
int placement_fill(struct placement *pl, uint64_t key, uint64_t size, uint64_t now);
/* The tier placement_fill would ask first for a miss of size bytes, or
 * TIER_NONE: asks no policy to admit it and counts nothing (a caller that
 * must know where a fill would land before it starts one: the daemon's
 * prefetcher checks that tier's room). */
int placement_fill_first(struct placement *pl, uint64_t size, uint64_t now);

/* The tier placement_fill (or this) returned cannot take the entry at this
 * moment: the caller found no room there it may make without giving up
 * what that tier's policy keeps (its room is taken by fills and moves in
 * flight, files clients hold, chunks served unkept). Asks the tiers after
 * `refused` in order, as placement_fill does, and returns the same way;
 * `refused` no longer counts the fill. A caller that always has the room
 * (the simulator) never calls it. This is what keeps concurrency from
 * throwing away what the policies would keep: a chunk hot cannot take
 * right now goes to warm when warm's policy takes it. */
int placement_fill_instead(struct placement *pl, int refused, uint64_t key, uint64_t size,
			   uint64_t now);

/* A read ahead of the reader (no plan says when it is needed) would take
 * room hot's policy holds: may it? Asks hot's admit(), which counts it as
 * the coming read's access (that read then hits). lru, arc: yes, as for
 * the read itself; epoch: only into free or dead room, so reading ahead
 * never churns the subset it keeps. */
bool placement_ahead_hot(struct placement *pl, uint64_t key, uint64_t size, uint64_t now);

/* A read hit entry e in tier t: tells that tier's policy, and returns the
 * tier e should live in from now on (t: stay; TIER_HOT: promote). Marks e
 * read again (for demote=reread), except the first hit of an entry loaded
 * ahead of its read (policy_loaded_ahead): that is the read it was for. */
int placement_hit(struct placement *pl, int t, struct pol_entry *e, uint64_t now);

/* e was named by hot's victim(): TIER_WARM to demote it, TIER_NONE to drop.
 * The caller still removes it from hot either way. With demote=reread, e
 * must have been read again in hot (placement_hit) to be demoted; the
 * insert into warm clears that, so it needs a new hit to move again. With
 * demote=flat, warm must have room for it or e must have been read after
 * warm's next victim. */
int placement_demote(struct placement *pl, struct pol_entry *e, uint64_t now);

/* e, given up by hot and demoted (placement_demote said TIER_WARM), goes
 * into warm's policy. With demote=flat it keeps the age of its last read
 * (policy_insert_aged): a demotion is not a read, and one cache of hot +
 * warm orders it by that read; lru then is exactly one LRU of both tiers.
 * Otherwise it is inserted as read now (policy_insert), as always. */
void placement_demoted_insert(struct placement *pl, struct pol_entry *e, uint64_t now);

#endif
