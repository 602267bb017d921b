/*
 * Following one plan from the reads a daemon sees: which planned position a
 * read of a chunk key is, and how far the job has got.
 *
 * A DataLoader's workers read a few items out of order, and a sampler may
 * skip items, so the tracker does not insist on the exact next read: a read
 * matches the key's first unread position if that lies within `window`
 * positions of the job's position; the position is the first unread one,
 * except that once reads have gone more than `tolerance` positions past
 * it, the unread positions left behind count as skipped and the position
 * moves on. Positions are absolute from the plan's start (appending
 * continues them), like the plan store's (policy/plan.h).
 *
 * Each position carries a caller's u64 (aux: the daemon stores which file
 * and chunk it is). Memory follows the unread part: the read prefix is
 * compacted away as appends need room.
 *
 * Pure and single-threaded (the daemon's loop thread); no I/O.
 */
#ifndef TIERCACHE_PLAN_TRACK_H
#define TIERCACHE_PLAN_TRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keymap.h"

struct plan_track {
	uint64_t *keys;   /* positions [base, base + len) */
	uint64_t *aux;
	uint64_t *next;   /* the same key's next position, or UINT64_MAX */
	uint8_t *done;    /* read (positions >= pos only) */
	uint64_t base, len, cap;
	uint64_t pos;     /* first position neither read nor skipped */
	uint64_t hi;      /* one past the highest position read */
	uint64_t skipped; /* positions passed without being read */
	uint64_t matched; /* reads that matched a position */
	struct keymap first; /* key -> its first position >= pos not yet read */
	struct keymap last;  /* key -> its last position (to chain appends) */
	uint32_t window, tolerance;
};

void plan_track_init(struct plan_track *t, uint32_t window, uint32_t tolerance);
void plan_track_free(struct plan_track *t);
/* Add n positions at the end. 0 or -ENOMEM (then nothing was added). */
int plan_track_append(struct plan_track *t, const uint64_t *keys, const uint64_t *aux, size_t n);
/* Room for n more positions (and their keys in the maps) at once: a
 * caller that appends a known total in steps grows nothing in a step. 0
 * or -ENOMEM. */
int plan_track_reserve(struct plan_track *t, size_t n);
/* A read of key: true if it matched a planned position (*at set). The
 * position may move; compare plan_track_pos() before and after. */
bool plan_track_read(struct plan_track *t, uint64_t key, uint64_t *at);
/* true if key has an unread position within the window ahead (a read of
 * it now would match). */
bool plan_track_holds(const struct plan_track *t, uint64_t key);
/* Where the next unread position of key is, at any distance ahead:
 * true and *at set, or false. */
bool plan_track_find(const struct plan_track *t, uint64_t key, uint64_t *at);
/* Move the position to p (pos <= p <= end) without counting the positions
 * passed as read or skipped: a plan registered again after a daemon
 * restart resumes where its job is. */
void plan_track_seek(struct plan_track *t, uint64_t p);

static inline uint64_t plan_track_pos(const struct plan_track *t)
{
	return t->pos;
}

static inline uint64_t plan_track_end(const struct plan_track *t)
{
	return t->base + t->len;
}

/* For pos <= p < end. */
static inline uint64_t plan_track_key(const struct plan_track *t, uint64_t p)
{
	return t->keys[p - t->base];
}

static inline uint64_t plan_track_aux(const struct plan_track *t, uint64_t p)
{
	return t->aux[p - t->base];
}

static inline bool plan_track_done(const struct plan_track *t, uint64_t p)
{
	return t->done[p - t->base] != 0;
}

#endif
